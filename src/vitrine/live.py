"""Live plans: what they declare, the preview before a paid call, the ceiling during it.

A live plan states its workload and its power before a request is sent
(:class:`WorkloadPreview`, :class:`PowerStatement`), refuses to spend without confirmation
(:func:`require_paid_confirmation`), meters and caps its spend (:class:`SpendCeiling`,
:class:`MeteredModel`), and leaves a receipt per session (:class:`ReceiptStore`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vitrine._lazy import lazy_exports

if TYPE_CHECKING:
    from vitrine._budget import (
        BudgetReached as BudgetReached,
        MeteredModel as MeteredModel,
        Price as Price,
        PriceTableError as PriceTableError,
        SpendCeiling as SpendCeiling,
        SpendMeter as SpendMeter,
        load_price_table as load_price_table,
    )
    from vitrine._cost import (
        CONFIRM_FLAG as CONFIRM_FLAG,
        confirmation_refusal as confirmation_refusal,
    )
    from vitrine._plans.base import (
        FunctionPlan as FunctionPlan,
        Plan as Plan,
        PlanKind as PlanKind,
        RepetitionRule as RepetitionRule,
    )
    from vitrine._plans.terminal import TerminalRule as TerminalRule
    from vitrine._plans.workload import (
        PowerStatement as PowerStatement,
        WorkloadPreview as WorkloadPreview,
        require_paid_confirmation as require_paid_confirmation,
    )
    from vitrine._progress import (
        NodeStatus as NodeStatus,
        SuiteNode as SuiteNode,
        Timeline as Timeline,
    )
    from vitrine.reports._live import (
        LiveProgress as LiveProgress,
    )
    from vitrine.store._receipts import (
        ReceiptStore as ReceiptStore,
        new_session_id as new_session_id,
    )

__getattr__, __dir__ = lazy_exports(__name__)

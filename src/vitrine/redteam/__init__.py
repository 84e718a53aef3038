"""The red team: attacks as data, campaigns with an enforced model-call ceiling, deterministic
detectors with an optional judge fallback, static cases, adaptive attackers, findings that
need a human sign-off, and JSON / JUnit / SARIF exports.

Names load on first use; importing this package costs nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vitrine._lazy import lazy_exports

if TYPE_CHECKING:
    from vitrine.redteam._attacks import (
        load_attacks as load_attacks,
    )
    from vitrine.redteam._campaign import (
        CampaignConfig as CampaignConfig,
        plan_attacks as plan_attacks,
        run_campaign as run_campaign,
    )
    from vitrine.redteam._judge import (
        ChatModelSafetyJudge as ChatModelSafetyJudge,
    )
    from vitrine.redteam._ledger import (
        WorkloadCeiling as WorkloadCeiling,
    )
    from vitrine.redteam._model import (
        CampaignResult as CampaignResult,
        Intensity as Intensity,
        ModelWrapper as ModelWrapper,
        Probe as Probe,
        Surface as Surface,
        Target as Target,
        TargetFactory as TargetFactory,
        TargetReply as TargetReply,
        ToolUse as ToolUse,
        classify as classify,
    )
    from vitrine.redteam._providers import (
        redteam_config as redteam_config,
    )

__getattr__, __dir__ = lazy_exports(__name__)

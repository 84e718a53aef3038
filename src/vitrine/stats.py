"""The statistics vitrine reports: intervals, exact tests, power, multiplicity, stopping rules.

Every function here is exact where an exact answer exists (binomial tails, the sign test,
Clopper-Pearson) and says so where it is not (Wilson's score interval is an approximation).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vitrine._lazy import lazy_exports

if TYPE_CHECKING:
    from vitrine._multiplicity import (
        PairedDifference as PairedDifference,
        benjamini_hochberg as benjamini_hochberg,
        holm as holm,
        paired_difference as paired_difference,
    )
    from vitrine._power import (
        AllPassDesign as AllPassDesign,
        PairedDesign as PairedDesign,
        WilsonDesign as WilsonDesign,
        all_pass_power as all_pass_power,
        cases_needed as cases_needed,
        min_detectable_rate as min_detectable_rate,
        min_detectable_win_rate as min_detectable_win_rate,
        paired_power as paired_power,
        repetitions_needed as repetitions_needed,
    )
    from vitrine._sequential import (
        Curtailment as Curtailment,
        SequentialResult as SequentialResult,
        SequentialSignTest as SequentialSignTest,
        all_pass_curtailment as all_pass_curtailment,
        session_curtailment as session_curtailment,
        sign_test_curtailment as sign_test_curtailment,
        wilson_curtailment as wilson_curtailment,
    )
    from vitrine._sequential_eval import (
        SequentialComparison as SequentialComparison,
        compare_sequentially as compare_sequentially,
        compare_sequentially_with as compare_sequentially_with,
        pooled_against_reference as pooled_against_reference,
    )
    from vitrine._stats import (
        Interval as Interval,
        binomial_tail_p as binomial_tail_p,
        clopper_pearson as clopper_pearson,
        floor_comparison_p as floor_comparison_p,
        min_attainable_one_sided_p as min_attainable_one_sided_p,
        min_attainable_p as min_attainable_p,
        pass_hat_k as pass_hat_k,
        rule_of_three as rule_of_three,
        sign_test_p as sign_test_p,
        underpowered_by_construction as underpowered_by_construction,
        wilson_interval as wilson_interval,
    )

__getattr__, __dir__ = lazy_exports(__name__)

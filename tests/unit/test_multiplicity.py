"""Holm and Benjamini-Hochberg against independent computations; the paired difference's
Newcombe interval against the formula worked out another way, and its coverage simulated."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from vitrine._multiplicity import benjamini_hochberg, holm, paired_difference

RNG = np.random.default_rng(27)
FAMILIES = [
    [float(p) for p in RNG.uniform(0, 1, int(RNG.integers(1, 8))) ** RNG.uniform(0.5, 4)]
    for _ in range(40)
]


def closed_testing_holm(ps: list[float]) -> list[float]:
    """Holm as closed testing with Bonferroni: the worst intersection containing each i."""
    m = len(ps)
    out = []
    for i in range(m):
        worst = 0.0
        for size in range(1, m + 1):
            for subset in itertools.combinations(range(m), size):
                if i in subset:
                    worst = max(worst, min(1.0, size * min(ps[j] for j in subset)))
        out.append(worst)
    return out


def step_up_rejections(ps: list[float], q: float) -> set[int]:
    """BH's step-up rule: reject the k smallest, k the largest with p_(k) <= k q / m."""
    m = len(ps)
    order = sorted(range(m), key=lambda i: ps[i])
    k = max((r + 1 for r in range(m) if ps[order[r]] <= (r + 1) * q / m), default=0)
    return set(order[:k])


@pytest.mark.parametrize("ps", FAMILIES)
def test_holm_equals_closed_testing_with_bonferroni(ps):
    assert holm(ps) == pytest.approx(closed_testing_holm(ps), abs=1e-12)


@pytest.mark.parametrize("ps", FAMILIES)
def test_bh_adjusted_values_reproduce_the_step_up_rule_at_every_level(ps):
    adjusted = benjamini_hochberg(ps)
    for q in (0.01, 0.05, 0.1, 0.25, 0.5):
        assert {i for i, a in enumerate(adjusted) if a <= q} == step_up_rejections(ps, q)


def test_against_statsmodels_when_it_is_installed():
    multitest = pytest.importorskip("statsmodels.stats.multitest")
    for ps in FAMILIES:
        assert holm(ps) == pytest.approx(list(multitest.multipletests(ps, method="holm")[1]))
        bh = multitest.multipletests(ps, method="fdr_bh")[1]
        assert benjamini_hochberg(ps) == pytest.approx(list(bh))


def test_adjustment_refuses_a_non_probability():
    with pytest.raises(ValueError, match="p-value 1"):
        holm([0.1, 1.5])


def wilson_roots(x: int, n: int, z: float) -> tuple[float, float]:
    """The Wilson bounds as the roots of (p - x/n)^2 = z^2 p (1 - p) / n."""
    phat = x / n
    # (1 + z^2/n) p^2 - (2 phat + z^2/n) p + phat^2 = 0
    roots = np.roots([1 + z * z / n, -(2 * phat + z * z / n), phat * phat])
    low, high = sorted(float(r.real) for r in roots)
    return max(0.0, low), min(1.0, high)


def newcombe_independently(a: int, b: int, c: int, d: int) -> tuple[float, float, float]:
    n = a + b + c + d
    z = 1.959963984540054
    ref = [1] * a + [1] * b + [0] * c + [0] * d
    chal = [1] * a + [0] * b + [1] * c + [0] * d
    p1, p2 = np.mean(ref), np.mean(chal)
    l1, u1 = wilson_roots(a + b, n, z)
    l2, u2 = wilson_roots(a + c, n, z)
    constant = np.std(ref) == 0 or np.std(chal) == 0
    phi = 0.0 if constant else float(np.corrcoef(ref, chal)[0, 1])
    if phi > 0:
        # Newcombe's correction: phi* = (AD - BC - n/2) / sqrt(EFGH), and 0 when that is < 0;
        # corrcoef's phi times sqrt(EFGH) is AD - BC.
        margins = math.sqrt((a + b) * (c + d) * (a + c) * (b + d))
        phi = max(0.0, phi * margins - n / 2) / margins
    theta = p2 - p1
    lower = theta - math.sqrt(
        max(0.0, (p2 - l2) ** 2 - 2 * phi * (p2 - l2) * (u1 - p1) + (u1 - p1) ** 2)
    )
    upper = theta + math.sqrt(
        max(0.0, (u2 - p2) ** 2 - 2 * phi * (u2 - p2) * (p1 - l1) + (p1 - l1) ** 2)
    )
    return theta, lower, upper


TABLES = [tuple(int(x) for x in RNG.integers(0, 12, 4)) for _ in range(40)] + [
    (5, 0, 0, 0),
    (0, 0, 3, 0),
    (0, 4, 0, 4),
    (2, 1, 1, 2),
]


@pytest.mark.parametrize("table", TABLES)
def test_the_newcombe_interval_matches_the_formula_worked_out_independently(table):
    if sum(table) == 0:
        assert paired_difference(*table) is None
        return
    got = paired_difference(*table)
    assert got is not None
    theta, lower, upper = newcombe_independently(*table)
    assert (got.estimate, got.lower, got.upper) == pytest.approx((theta, lower, upper), abs=1e-9)
    assert -1.0 <= got.lower <= got.estimate <= got.upper <= 1.0


def test_a_concordant_small_table_does_not_collapse_to_a_point():
    got = paired_difference(2, 0, 0, 2)
    assert got is not None and got.lower < 0 < got.upper


def test_the_interval_covers_the_true_difference_about_as_often_as_it_says():
    rng = np.random.default_rng(3)
    coverages = []
    for _ in range(30):
        cells = rng.dirichlet([1, 1, 1, 1])
        truth = (cells[0] + cells[2]) - (cells[0] + cells[1])
        draws = rng.multinomial(40, cells, size=1500)
        hits = 0
        for a, b, c, d in draws:
            result = paired_difference(int(a), int(b), int(c), int(d))
            assert result is not None
            hits += result.lower <= truth <= result.upper
        coverages.append(hits / len(draws))
    # Newcombe's method 10 is close to nominal on average, rarely far below it.
    assert 0.935 <= float(np.mean(coverages)) <= 0.985
    assert min(coverages) >= 0.88

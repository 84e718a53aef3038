from math import comb

import pytest
from hypothesis import given, strategies as st

from vitrine._floors import ChanceFloor, FloorKind, FloorNotDerivableError


def test_not_derivable_requires_a_reason():
    with pytest.raises(ValueError, match="needs a reason"):
        ChanceFloor.not_derivable("  ")


def test_reading_a_not_derivable_value_explains_why():
    floor = ChanceFloor.not_derivable("deterministic invariant: no random-draw population")
    assert not floor.derivable
    assert floor.describe() == "NOT DERIVABLE"
    with pytest.raises(FloorNotDerivableError, match="deterministic invariant"):
        _ = floor.value


def test_uniform_choice_and_priors():
    assert ChanceFloor.uniform_choice(4).value == 0.25
    assert ChanceFloor.prior_rate(0.1, "last quarter's audit").kind is FloorKind.PRIOR_RATE
    assert ChanceFloor.empirical_policy(0.3, "random-sku policy").value == 0.3
    with pytest.raises(ValueError, match="name where the prior comes from"):
        ChanceFloor.prior_rate(0.1, "")
    with pytest.raises(ValueError, match="at least one option"):
        ChanceFloor.uniform_choice(0)
    with pytest.raises(ValueError, match="rate in"):
        ChanceFloor(FloorKind.PRIOR_RATE, 1.5)


@given(
    st.integers(1, 60).flatmap(
        lambda n: st.tuples(st.just(n), st.integers(0, n), st.integers(1, n))
    )
)
def test_hypergeometric_floors_match_closed_forms(args):
    population, marked, draws = args
    at_least_one = ChanceFloor.hypergeometric_at_least_one(population, marked, draws).value
    avoids = ChanceFloor.hypergeometric_avoids_all(population, marked, draws).value
    expected_avoid = comb(population - marked, draws) / comb(population, draws)
    assert avoids == pytest.approx(expected_avoid)
    assert at_least_one == pytest.approx(1 - expected_avoid)


def test_floor_round_trips():
    for floor in (ChanceFloor.not_derivable("why"), ChanceFloor.uniform_choice(3)):
        assert ChanceFloor.from_dict(floor.to_dict()) == floor

"""The fact layer: quantities, polarity and names, and the falsification the probes rely on."""

from __future__ import annotations

import pytest

from vitrine.rag.facts import (
    Quantity,
    extract_facts,
    falsify,
    quantity_conflicts,
    unsupported_facts,
)
from vitrine.rag.metrics import answer_correctness


def test_quantities_are_normalised_with_their_units():
    facts = extract_facts(
        "Orders up to CHF 3,000 are due within 30 days; a two-year warranty; open 08:00, "
        "9.9 percent interest, 20'000 mAh."
    )
    assert {
        Quantity("3000", "chf"),
        Quantity("30", "day"),
        Quantity("2", "year"),
        Quantity("08:00", "time"),
        Quantity("9.9", "percent"),
        Quantity("20000", "mah"),
    } <= facts.quantities


def test_falsify_moves_numbers_and_flips_polarity():
    assert falsify("You can withdraw within 30 days.") == "You can withdraw within 91 days."
    assert falsify("Warranty repairs are free of charge.") == "Warranty repairs are charged."
    assert falsify("Hygiene items cannot be returned.") == "Hygiene items can be returned."
    assert falsify("No. We do not deliver abroad.") == "Yes. We do deliver abroad."


def test_a_moved_number_is_not_in_the_context():
    context = "You can withdraw from any online purchase within 30 days of delivery."
    assert unsupported_facts("You can withdraw within 30 days.", context, context) == []
    problems = unsupported_facts("You can withdraw within 91 days.", context, context)
    assert problems == ["number 91 day is not in the cited context"]


def test_a_flipped_negation_or_antonym_differs_from_the_aligned_sentence():
    source = "Opened consumables are excluded from the right of withdrawal."
    assert unsupported_facts(
        "Opened consumables are included in the right of withdrawal.", source, source
    ) == ["says 'included' where the context says 'excluded'"]
    negated = "Vinegar is not covered by the warranty."
    assert unsupported_facts("Vinegar is covered by the warranty.", negated, negated) == [
        "negation differs from the context sentence it restates (the claim drops it)"
    ]


def test_a_name_missing_from_the_context_is_unsupported():
    context = "Brunello espresso machines have a three-year guarantee."
    assert unsupported_facts("The Klangfeld machines have a three-year guarantee.", context) == [
        "name 'klangfeld' is not in the cited context"
    ]


def test_only_a_replaced_value_conflicts_not_an_extra_one():
    reference = extract_facts("Standard delivery costs CHF 7.90.")
    extra = extract_facts("Standard delivery costs CHF 7.90 and express CHF 12.90.")
    replaced = extract_facts("Standard delivery costs CHF 68.90.")
    assert quantity_conflicts(extra, reference) == []
    assert quantity_conflicts(replaced, reference) == [
        "chf: the answer says 68.9, the reference 7.9"
    ]


def test_correctness_is_zero_on_a_conflict_and_mixes_similarity_and_numbers_otherwise():
    reference = "The diagnosis costs CHF 49, credited against the repair price."
    value, evidence = answer_correctness("The diagnosis costs CHF 110.", reference, 0.9)
    assert value == 0.0 and evidence["conflicts"]
    value, evidence = answer_correctness("The diagnosis costs CHF 49.", reference, 0.8)
    # terms: {diagn, costs, chf, credi, again, repai, price} of which 3 are used
    assert evidence["reference_terms_used"] == pytest.approx(3 / 7, abs=1e-4)
    assert value == pytest.approx((0.8 + 3 / 7 + 1.0) / 3)
    value, _ = answer_correctness("Yes, you can.", "No. Hygiene products cannot be returned.", 0.9)
    assert value == 0.0
    value, _ = answer_correctness("Gift cards are refunded as e-gift cards.", "A gift card.", 0.7)
    assert value == pytest.approx((0.7 + 1.0) / 2)  # no number in the reference

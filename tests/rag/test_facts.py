"""The fact layer: quantities, polarity and names, and the falsification the probes rely on."""

from __future__ import annotations

import pytest

from vitrine.rag._facts import (
    Quantity,
    extract_facts,
    falsify,
    quantity_conflicts,
)
from vitrine.rag._metrics import answer_correctness


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
    # similarity, reference terms, answer sentences about the reference (1 of 1), numbers
    assert evidence["answer_sentences_on_reference"] == 1.0
    assert value == pytest.approx((0.8 + 3 / 7 + 1.0 + 1.0) / 4)
    value, _ = answer_correctness("Yes, you can.", "No. Hygiene products cannot be returned.", 0.9)
    assert value == 0.0
    value, _ = answer_correctness("Gift cards are refunded as e-gift cards.", "A gift card.", 0.7)
    assert value == pytest.approx((0.7 + 1.0 + 1.0) / 3)  # no number in the reference

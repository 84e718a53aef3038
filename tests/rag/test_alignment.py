"""Claims read against the sentence they restate: numbers, names, polarity and predicates."""

from __future__ import annotations

from vitrine.rag._alignment import align, claim_problems, knowledge_entities, reference_conflicts

PAGE = [
    "Standard delivery costs CHF 7.90 and takes 2 to 3 working days.",
    "Express delivery costs CHF 12.90 and arrives the next working day.",
    "We accept TWINT, Visa, Mastercard and PostFinance Card.",
    "We do not accept cash on delivery.",
    "The workshop lends you a replacement machine during a warranty repair.",
    "Hygiene products cannot be returned once the seal is broken.",
]
ENTITIES = knowledge_entities(PAGE)


def problems(claim: str, question: str = "") -> list[str]:
    return claim_problems(
        claim,
        align(claim, PAGE, ENTITIES),
        evidence=" ".join(PAGE),
        question=question,
        entities=ENTITIES,
    )


def test_the_knowledge_base_names_its_entities():
    assert {"TWINT", "Visa", "Mastercard", "PostFinance"} <= ENTITIES
    assert "Standard" not in ENTITIES  # only ever sentence-initial


def test_a_claim_aligns_to_the_sentence_it_restates_whatever_its_number():
    aligned = align("Standard delivery costs CHF 12.90.", PAGE, ENTITIES)
    assert aligned.sentences == (PAGE[0],)
    assert aligned.restates


def test_a_number_from_elsewhere_on_the_page_is_caught_at_its_sentence():
    assert problems("Standard delivery costs CHF 7.90.") == []
    assert problems("Standard delivery costs CHF 12.90.") == [
        "says 12.9 chf where the context sentence it restates says 7.9 chf"
    ]
    assert problems("Standard delivery costs CHF 19.90.")[0] == (
        "number 19.9 chf is not in the cited context"
    )


def test_a_name_not_in_the_context_is_caught():
    assert problems("You can pay with PayPal.") == ["name 'PayPal' is not in the cited context"]


def test_a_negation_added_or_dropped_is_caught_at_the_word_it_governs():
    assert problems("Hygiene products cannot be returned once the seal is broken.") == []
    assert problems("Hygiene products can be returned once the seal is broken.") == [
        "drops the negation of 'retur' in the context sentence it restates"
    ]
    assert problems("The workshop does not lend you a replacement machine.") == [
        "negates 'lend', which the context sentence it restates does not"
    ]


def test_a_swapped_verb_is_caught_and_an_inflection_is_not():
    assert problems("The workshop sells you a replacement machine during a warranty repair.") == [
        "says 'sells' where the context sentence says 'lends'"
    ]
    assert (
        problems("The workshop lending you a replacement machine during a warranty repair.") == []
    )


def test_another_name_from_the_same_sentence_conflicts_with_the_reference():
    reference = "Yes, TWINT is accepted, along with the major cards."
    assert reference_conflicts(reference, reference, entities=ENTITIES) == []
    assert reference_conflicts(
        "Yes, Visa is accepted, along with the major cards.", reference, entities=ENTITIES
    ) == ["says 'Visa' where the reference says 'TWINT'"]
    # the context alone cannot see it: Visa is in the sentence that lists TWINT
    assert problems("Yes, Visa is accepted.") == []


def test_a_swapped_clause_value_conflicts_even_beside_a_right_one():
    reference = "Freight delivery costs CHF 39; assembly costs an extra CHF 49."
    answer = "Freight delivery costs CHF 95; assembly costs an extra CHF 49."
    assert reference_conflicts(answer, reference) == ["says 95 chf where the reference says 39 chf"]
    # an extra value beside the reference's own is no conflict
    extra = "Freight delivery costs CHF 39; express freight costs CHF 95."
    assert reference_conflicts(extra, reference) == []

"""The checkable facts of a sentence: quantities, polarity and names, extracted without a model.

Sentence similarity cannot see a wrong fact: "returns are free within 91 days" embeds almost
exactly like "within 30 days", and "repairs are charged" like "repairs are free of charge". The
non-LLM faithfulness and correctness forms therefore compare the facts themselves:

- **quantities**: every number with its unit (``CHF 49``, ``30 days``, ``9.9 percent``,
  ``two-year`` = 2 year, ``08:00``), normalised so "CHF 3,000" equals "CHF 3000";
- **polarity**: negation words (not, no, never, cannot, ...) and a few antonym pairs a
  falsification flips (free / charged, included / excluded, always / never);
- **names**: capitalised words inside a sentence (TWINT, Brunello, Germany).

:func:`falsify` is the adversarial rewrite the calibration and the tests use as the negative
class: it moves every number and flips every polarity word, so a metric that cannot tell the
two apart is caught.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = [
    "Facts",
    "Quantity",
    "extract_facts",
    "falsify",
    "quantity_conflicts",
]

_WORD_NUMBERS = {
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
}
_UNITS = {
    "chf": "chf",
    "franc": "chf",
    "francs": "chf",
    "%": "percent",
    "percent": "percent",
    "per cent": "percent",
    "day": "day",
    "days": "day",
    "working day": "day",
    "working days": "day",
    "week": "week",
    "weeks": "week",
    "month": "month",
    "months": "month",
    "year": "year",
    "years": "year",
    "hour": "hour",
    "hours": "hour",
    "minute": "minute",
    "minutes": "minute",
    "km": "km",
    "wh": "wh",
    "mah": "mah",
    "kg": "kg",
}
_NUMBER = r"\d+(?:[.,']\d+)*"
_NUMBER_WORD = "|".join(_WORD_NUMBERS)
_UNIT_WORD = "|".join(sorted((re.escape(u) for u in _UNITS), key=len, reverse=True))
_TIME = re.compile(r"\b(\d{1,2}):(\d{2})\b")
_PREFIXED = re.compile(rf"\bCHF\s*({_NUMBER})", re.IGNORECASE)
_SUFFIXED = re.compile(
    rf"(?<![\w.,'])({_NUMBER}|{_NUMBER_WORD})(?:\s*-\s*|\s*)({_UNIT_WORD})?(?![\w])",
    re.IGNORECASE,
)

_NEGATIONS = frozenset(
    [
        "no",
        "not",
        "never",
        "cannot",
        "can't",
        "won't",
        "don't",
        "doesn't",
        "isn't",
        "aren't",
        "wasn't",
        "none",
        "nothing",
        "neither",
        "nor",
    ]
)
# Pairs a falsification flips without any negation word. Checked in both directions.
_ANTONYMS = (
    ("free", "charged"),
    ("included", "excluded"),
    ("always", "never"),
    ("accepted", "refused"),
    ("before", "after"),
)
_WORD = re.compile(r"[A-Za-z][\w'’-]*")


@dataclass(frozen=True, slots=True, order=True)
class Quantity:
    """A number and its canonical unit ("" for a bare number, "time" for 08:00)."""

    value: str
    unit: str

    def __str__(self) -> str:
        return f"{self.value} {self.unit}".strip()


@dataclass(frozen=True, slots=True)
class Facts:
    quantities: frozenset[Quantity]
    negated: bool
    polar_words: frozenset[str]  # the antonym-pair words present
    names: frozenset[str]  # casefolded capitalised words that are not sentence-initial

    @property
    def values(self) -> frozenset[str]:
        return frozenset(q.value for q in self.quantities)


def _normalise_number(text: str) -> str:
    lowered = text.casefold()
    if lowered in _WORD_NUMBERS:
        return str(_WORD_NUMBERS[lowered])
    digits = re.sub(r"[,'](?=\d{3}\b)", "", text)  # thousands separators: 3,000 and 20'000
    digits = digits.replace(",", ".")
    if "." in digits:
        digits = digits.rstrip("0").rstrip(".")
    return digits


def _quantities(text: str) -> set[Quantity]:
    found: set[Quantity] = set()
    masked = text
    for match in _TIME.finditer(text):
        found.add(Quantity(f"{int(match.group(1)):02d}:{match.group(2)}", "time"))
    masked = _TIME.sub(" ", masked)
    for match in _PREFIXED.finditer(masked):
        found.add(Quantity(_normalise_number(match.group(1)), "chf"))
    masked = _PREFIXED.sub(" ", masked)
    for match in _SUFFIXED.finditer(masked):
        number, unit = match.group(1), match.group(2)
        canonical = _UNITS.get(unit.casefold(), "") if unit else ""
        if not canonical and not number[0].isdigit():
            continue  # "one of the" is not a quantity; "one year" is
        found.add(Quantity(_normalise_number(number), canonical))
    return found


def _names(text: str) -> set[str]:
    names: set[str] = set()
    sentence_start = True
    for match in _WORD.finditer(text):
        word = match.group(0)
        preceding = text[: match.start()].rstrip()
        if preceding.endswith((".", "!", "?", ":", ";")) or not preceding:
            sentence_start = True
        if not sentence_start and word[0].isupper() and word != "I":
            names.add(re.sub(r"['’]s$", "", word.casefold()))
        sentence_start = False
    return names


_VERDICT = re.compile(r"^\s*(?:yes|no)\b[.,;:!]?\s*", re.IGNORECASE)


def extract_facts(text: str) -> Facts:
    # A leading "No." answers the question; it does not negate the sentence that follows.
    words = {w.casefold().replace("’", "'") for w in _WORD.findall(_VERDICT.sub("", text))}
    polar = {w for pair in _ANTONYMS for w in pair if w in words}
    return Facts(
        frozenset(_quantities(text)),
        bool(words & _NEGATIONS),
        frozenset(polar),
        frozenset(_names(text)),
    )


def quantity_conflicts(answer: Facts, reference: Facts) -> list[str]:
    """Units for which the answer states values and none of them is the reference's value.

    An extra amount next to the right one is not a conflict ("CHF 7.90, express CHF 12.90");
    a replaced one is ("CHF 49" answered as "CHF 110").
    """
    conflicts = []
    units = {q.unit for q in reference.quantities if q.unit} & {
        q.unit for q in answer.quantities if q.unit
    }
    for unit in sorted(units):
        wanted = {q.value for q in reference.quantities if q.unit == unit}
        given = {q.value for q in answer.quantities if q.unit == unit}
        if not wanted & given:
            conflicts.append(
                f"{unit}: the answer says {', '.join(sorted(given))}, "
                f"the reference {', '.join(sorted(wanted))}"
            )
    return conflicts


_FLIPS = {
    "cannot": "can",
    "can't": "can",
    "do not": "do",
    "does not": "does",
    "is not": "is",
    "are not": "are",
    "not ": "",
    "never": "always",
    "free of charge": "charged",
    "free": "charged",
    "excluded": "included",
}
# One pass, so a flipped word is never flipped back; a leading Yes/No is swapped too.
_FLIP = re.compile(
    r"^(?:Yes|No)\b|\b(?:"
    + "|".join(re.escape(k) for k in sorted(_FLIPS, key=len, reverse=True))
    + ")",
)


def _flip(match: re.Match[str]) -> str:
    word = match.group(0)
    if word in ("Yes", "No"):
        return "No" if word == "Yes" else "Yes"
    return _FLIPS[word]


def falsify(text: str, *, shift: int = 61) -> str:
    """``text`` with every number moved by ``shift`` and every polarity word flipped.

    30 days becomes 91 days, "free of charge" becomes "charged", "cannot" becomes "can". The
    result reads as fluently as the original and embeds close to it, which is the point.
    """

    def move(match: re.Match[str]) -> str:
        raw = match.group(0)
        normal = _normalise_number(raw)
        try:
            value = float(normal)
        except ValueError:
            return raw
        moved = value + shift
        return str(int(moved)) if moved.is_integer() else f"{moved:.2f}"

    return _FLIP.sub(_flip, re.sub(_NUMBER, move, text))


def fact_bearing(texts: Iterable[str]) -> bool:
    """Whether any of ``texts`` has a number or a polarity word a falsification could change."""
    return any(falsify(t) != t for t in texts)

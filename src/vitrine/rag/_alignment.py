"""Claims read against the sentence they restate, not against the whole page.

A fact checked against every retrieved chunk at once passes when it is merely *somewhere* on
the page: "standard delivery costs CHF 12.90" is not what the page says, although 12.90 is on
it (for express); "you can pay with Visa" restates the sentence that lists TWINT, Visa and
Mastercard, which is no answer to "can I pay with TWINT?". So each claim is first aligned to the
context sentence(s) it restates, by the words they share (numbers and names left out, so a
changed number cannot pick its own sentence), and its facts must agree with *those* sentences:

- **numbers**: every number of the claim is in an aligned sentence;
- **names**: every name of the claim (a word the knowledge base itself writes capitalised and
  never in lower case, or a capitalised word inside the claim) is in an aligned sentence;
- **polarity**: a claim that restates its sentence keeps its negation and its side of an
  antonym pair (free / charged, always / never);
- **predicates**: a claim that restates its sentence word for word but one content word
  replaced ("lends" for "sells") states another fact; the replaced word is reported.

The same comparison against the reference answer (:func:`reference_conflicts`) adds what a
context check cannot see: an answer that names another of the page's options than the one the
question is about.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

from vitrine.rag._chunking import split_sentences
from vitrine.rag._facts import Facts, extract_facts, quantity_conflicts

__all__ = [
    "STOPWORDS",
    "Alignment",
    "align",
    "claim_problems",
    "content_words",
    "knowledge_entities",
    "reference_conflicts",
    "stems",
]

STOPWORDS = frozenset(
    re.findall(
        r"\w+",
        """a an and are as at be by can do does for from has have how i if in is it its of on or
        our than that the their them then there these they this to up was we what when where
        which who will with within you your yours not no yes only also any all per""",
    )
)


def _wordset(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Words that carry polarity are compared as polarity, not as predicates.
_POLARITY = _wordset(
    "not no never always cannot can't won't don't doesn't isn't aren't none nothing neither "
    "nor free charged included excluded accepted refused before after"
)
_TOKEN = re.compile(r"[A-Za-z][\w'’-]*|\d+(?:[.,']\d+)*")
_CAPITALISED = re.compile(r"[A-Z][\w'’-]*")
# Share of a claim's content stems an aligned sentence must hold for the claim to *restate* it:
# only a restatement may be held to the sentence's polarity and words.
RESTATES = 0.7


def content_words(text: str) -> set[str]:
    """Lower-cased words and numbers minus stop words: what a claim asserts."""
    return {w for w in re.findall(r"[\w.,]*\w", text.casefold()) if w not in STOPWORDS}


def _stem(word: str) -> str:
    return word.casefold().replace("’", "'").rstrip("s")[:5]


def stems(text: str) -> set[str]:
    """Content words without numbers, a plural s, or more than five letters: "collect" meets
    "collection", "returns" meets "returned"."""
    return {_stem(w) for w in content_words(text) if not w[0].isdigit()}


def _sequence(text: str, *, polar: bool = False) -> list[tuple[str, str]]:
    """(stem, word) of the content words in order, numbers and (unless ``polar``) polarity
    words left out."""
    out = []
    for token in _TOKEN.findall(text):
        lowered = token.casefold().replace("’", "'")
        if token[0].isdigit() or lowered in STOPWORDS or (not polar and lowered in _POLARITY):
            continue
        out.append((_stem(token), token))
    return out


def _key(text: str, entities: Collection[str] = frozenset()) -> set[str]:
    names = {_stem(n) for n in _names(text, entities)}
    return {s for s, _ in _sequence(text)} - names


def knowledge_entities(texts: Iterable[str]) -> frozenset[str]:
    """The names a knowledge base uses: words it writes capitalised inside a sentence and never
    in lower case (TWINT, Visa, Brunello, Zurich; not "Express", which it also writes "express").
    """
    capitalised: set[str] = set()
    lower: set[str] = set()
    for text in texts:
        for match in _TOKEN.finditer(text):
            word = match.group(0)
            if word[0].isdigit():
                continue
            if word[0].islower():
                lower.add(word.casefold())
                continue
            before = text[: match.start()].rstrip()
            if before and not before.endswith((".", "!", "?", ":", ";", "\n", "#", "-", "*")):
                capitalised.add(word)
    return frozenset(w for w in capitalised if w.casefold() not in lower and len(w) > 1)


# Dates, not names: a weekday an answer works out ("a Wednesday order arrives on Thursday").
_CALENDAR = _wordset(
    "Monday Tuesday Wednesday Thursday Friday Saturday Sunday January February March April May "
    "June July August September October November December"
)


_UNIT_WORDS = frozenset(("chf", "wh", "mah", "km", "kg", "eur", "usd"))


def _names(text: str, entities: Collection[str]) -> set[str]:
    """Names in ``text``: known entities anywhere, other capitalised words inside a sentence."""
    found: set[str] = set()
    for match in _TOKEN.finditer(text):
        word = re.sub(r"['’]s$", "", match.group(0))
        if word in _CALENDAR or word.casefold() in _UNIT_WORDS:
            continue
        if word in entities:
            found.add(word)
            continue
        before = text[: match.start()].rstrip()
        inside = bool(before) and not before.endswith((".", "!", "?", ":", ";"))
        if inside and _CAPITALISED.fullmatch(word) and word != "I":
            found.add(word)
    return found


def _has_word(text: str, word: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(word)}(?!\w)", text, re.IGNORECASE) is not None


@dataclass(frozen=True, slots=True)
class Alignment:
    """The sentences a claim restates, and how much of the claim they hold."""

    sentences: tuple[str, ...]
    coverage: float  # share of the claim's key stems found in them
    pool: tuple[str, ...] = ()  # every sentence it was chosen from

    @property
    def text(self) -> str:
        return " ".join(self.sentences)

    @property
    def restates(self) -> bool:
        return bool(self.sentences) and self.coverage >= RESTATES


def align(
    claim: str, sentences: Sequence[str], entities: Collection[str] = frozenset()
) -> Alignment:
    """The sentence sharing most of the claim's words, then any further sentence that adds at
    least two more of them (a claim drawn from two sentences). Numbers, names' digits and
    polarity words do not count, so a wrong number cannot choose the sentence it came from."""
    want = _key(claim, entities)
    if not want or not sentences:
        return Alignment((), 0.0, tuple(sentences))
    keys = [_key(s, entities) for s in sentences]
    chosen: list[int] = []
    covered: set[str] = set()
    while len(chosen) < len(sentences):
        best, gain, share = -1, 0, 0.0
        for i, key in enumerate(keys):
            if i in chosen:
                continue
            g = len((want - covered) & key)
            s = g / len(key) if key else 0.0
            if g > gain or (g == gain and g and s > share):
                best, gain, share = i, g, s
        if best < 0 or gain < (1 if not chosen else 2):
            break
        chosen.append(best)
        covered |= want & keys[best]
    chosen.sort()
    return Alignment(
        tuple(sentences[i] for i in chosen), len(covered) / len(want), tuple(sentences)
    )


# Words a paraphrase swaps freely: a changed one is no changed fact.
_LOOSE = _wordset(
    "us me them him her his its it's under via like such into onto over about through during "
    "while than then there here so but yet each every some most many more less other another "
    "same any just even still already usually generally"
)


def _substitutions(claim: str, source: str, allowed: Collection[str]) -> list[tuple[str, str]]:
    """(claim word, source word) where a restating claim keeps the source's words around one
    position and swaps the word there for another the source (and the question) lacks."""
    ours = [(s, w) for s, w in _sequence(claim, polar=True) if w.casefold() not in _LOOSE]
    theirs = [(s, w) for s, w in _sequence(source, polar=True) if w.casefold() not in _LOOSE]
    source_stems = {s for s, _ in theirs}
    matcher = difflib.SequenceMatcher(
        a=[s for s, _ in ours], b=[s for s, _ in theirs], autojunk=False
    )
    if matcher.ratio() < RESTATES:
        return []  # not a restatement: a paraphrase may word anything differently
    codes = matcher.get_opcodes()
    swaps = []
    for n, (tag, i1, i2, j1, j2) in enumerate(codes):
        if tag != "replace" or i2 - i1 != 1 or j2 - j1 != 1:
            continue
        # In place: the words beside the swap are the source's own (or the claim ends there).
        before = codes[n - 1][0] == "equal" if n > 0 else None
        after = codes[n + 1][0] == "equal" if n + 1 < len(codes) else None
        if before is False or after is False or not (before or after):
            continue
        (new_stem, new), (old_stem, old) = ours[i1], theirs[j1]
        if new_stem in source_stems or new_stem in allowed:
            continue
        if new_stem[:4] == old_stem[:4]:
            continue  # an inflection ("deliver" for "delivered"), not another predicate
        nearby = {s for s, _ in ours[max(0, i1 - 3) : i1 + 4]}
        if old_stem in nearby:
            continue  # the source's word is still there, moved: "tap water is hard"
        swaps.append((new, old))
    return swaps


def _unit_conflicts(claim: str, source: str) -> list[tuple[str, str]]:
    """(claim values, source values) per unit both state and share no value of: "CHF 12.90"
    restating a sentence that says "CHF 7.90". An extra value beside the right one is none."""
    ours, theirs = extract_facts(claim).quantities, extract_facts(source).quantities
    out = []
    for unit in sorted({q.unit for q in ours} & {q.unit for q in theirs}):
        mine = {q.value for q in ours if q.unit == unit}
        others = {q.value for q in theirs if q.unit == unit}
        if not mine & others:
            label = f" {unit}" if unit else ""
            out.append((", ".join(sorted(mine)) + label, ", ".join(sorted(others)) + label))
    return out


def claim_problems(
    claim: str,
    alignment: Alignment,
    *,
    evidence: str,
    question: str = "",
    entities: Collection[str] = frozenset(),
    source: str = "the context sentence",
) -> list[str]:
    """The facts of ``claim`` that its cited context, or the sentence it restates, contradicts.

    ``evidence`` is every cited sentence. A number or name of the claim must be in it at all
    (else it came from nowhere); and where the aligned sentence states a number of the same
    unit, or names something the claim does not, the claim's number or name must be the
    sentence's (else it was taken from elsewhere on the page, or swapped). Polarity and
    predicate are compared with the aligned sentence (:func:`_restatement_problems`).
    """
    facts, everywhere = extract_facts(claim), extract_facts(evidence)
    problems = [
        f"number {q} is not in the cited context"
        for q in sorted(facts.quantities)
        if q.value not in everywhere.values
    ]
    asked = _names(question, entities)
    ours = _names(claim, entities) - asked
    problems.extend(
        f"name {name!r} is not in the cited context"
        for name in sorted(ours)
        if not _has_word(evidence, name)
    )
    # Numbers clause by clause: "delivered for CHF 95; assembly costs CHF 49" restates two
    # sentences, and the 49 of the second must not vouch for the 95 of the first.
    clauses = _CLAUSE.split(claim)
    for clause in clauses:
        part = alignment if len(clauses) == 1 else align(clause, alignment.pool, entities)
        if part.text:
            problems.extend(
                f"says {mine} where {source} it restates says {theirs}"
                for mine, theirs in _unit_conflicts(clause, part.text)
            )
    return problems + _restatement_problems(claim, alignment, question, source)


def _stated(values: str, facts: Facts) -> bool:
    """Whether any of the reference's ``values`` (as :func:`_unit_conflicts` lists them) is
    among the answer's numbers: then the clause's other value is an extra, not a swap."""
    return any(v.split()[0] in facts.values for v in values.split(", "))


_CLAUSE = re.compile(r"\s*;\s+")


_NEGATORS = _wordset(
    "not no never cannot can't won't don't doesn't isn't aren't wasn't none nothing"
)
_VERDICT_PREFIX = re.compile(r"^\s*(?:yes|no)\b[.,;:!]?\s*", re.IGNORECASE)
_AUXILIARY = _wordset("be been being get got go only always ever")
_SCOPE = 4  # words: how far a negation reaches, and how near a word's neighbours are


def _polarity_view(text: str) -> list[tuple[str, bool, frozenset[str]]]:
    """Per content word: (stem, negated, neighbour stems). A word is negated when a negation
    stands before it with only function words between ("cannot be returned", "is not
    covered"; in "do not accept cash" only "accept" is); a leading "No." answers the question
    and negates nothing."""
    tokens = [t.casefold().replace("’", "'") for t in _TOKEN.findall(_VERDICT_PREFIX.sub("", text))]
    content = [
        i
        for i, t in enumerate(tokens)
        if t not in STOPWORDS and t not in _NEGATORS and not t[0].isdigit()
    ]
    view = []
    for i in content:
        negated = False
        for j in range(i - 1, max(-1, i - 1 - _SCOPE), -1):
            if tokens[j] in _NEGATORS:
                negated = True
                break
            if tokens[j] not in STOPWORDS and tokens[j] not in _AUXILIARY:
                break  # another content word stands between: the negation is not this one's
        near = frozenset(_stem(tokens[j]) for j in content if j != i and abs(j - i) <= _SCOPE)
        view.append((_stem(tokens[i]), negated, near))
    return view


def _polarity_flips(claim: str, source: str) -> list[tuple[str, bool]]:
    """(stem, negated in the claim) for each word the claim and the source both state about
    the same neighbours, negated in one and not in the other."""
    theirs = _polarity_view(source)
    flips = []
    for stem, negated, near in _polarity_view(claim):
        same = [n for s, n, around in theirs if s == stem and around & near]
        if same and all(n != negated for n in same):
            flips.append((stem, negated))
    return list(dict.fromkeys(flips))


def _restatement_problems(
    claim: str, alignment: Alignment, question: str, source: str
) -> list[str]:
    """Polarity and predicate of a claim against the sentences it restates: a word negated in
    one and stated plainly in the other, one side of an antonym pair for the other, and (when
    the claim restates them closely) one content word swapped in place for another."""
    if not alignment.sentences:
        return []
    problems = [
        f"negates {stem!r}, which {source} it restates does not"
        if negated
        else f"drops the negation of {stem!r} in {source} it restates"
        for stem, negated in _polarity_flips(claim, alignment.text)
    ]
    ours, known = extract_facts(claim), extract_facts(alignment.text)
    for word in sorted(ours.polar_words - known.polar_words if alignment.restates else ()):
        opposite = _opposite(word)
        if opposite and opposite in known.polar_words:
            problems.append(f"says {word!r} where {source} says {opposite!r}")
    problems.extend(
        f"says {new!r} where {source} says {old!r}"
        for new, old in _substitutions(claim, alignment.text, stems(question))
    )
    return problems


_PAIRS = (
    ("free", "charged"),
    ("included", "excluded"),
    ("always", "never"),
    ("accepted", "refused"),
    ("before", "after"),
)


def _opposite(word: str) -> str | None:
    for a, b in _PAIRS:
        if word == a:
            return b
        if word == b:
            return a
    return None


_LEADING_VERDICT = re.compile(r"^\s*(yes|no)\b", re.IGNORECASE)


def reference_conflicts(
    answer: str,
    reference: str,
    *,
    question: str = "",
    entities: Collection[str] = frozenset(),
) -> list[str]:
    """Where ``answer`` contradicts the reference answer: a replaced quantity (over the whole
    answer, or in a clause that restates a reference clause when the answer nowhere states the
    reference's value), the opposite yes/no, and, for an answer sentence that restates a
    reference sentence, a flipped polarity or a word (a name, a verb) swapped in place."""
    got, wanted = extract_facts(answer), extract_facts(reference)
    conflicts = quantity_conflicts(got, wanted)
    said, expected = _LEADING_VERDICT.match(answer), _LEADING_VERDICT.match(reference)
    if expected and said and said.group(1).casefold() != expected.group(1).casefold():
        conflicts.append(
            f"the reference answers {expected.group(1)!r}, the answer {said.group(1)!r}"
        )
    sentences = split_sentences(reference)
    clauses = [c for s in sentences for c in _CLAUSE.split(s)]
    for claim in split_sentences(answer):
        alignment = align(claim, sentences, entities)
        conflicts.extend(_restatement_problems(claim, alignment, question, "the reference"))
        for clause in _CLAUSE.split(claim):
            part = align(clause, clauses, entities)
            if part.restates:
                conflicts.extend(
                    f"says {mine} where the reference says {theirs}"
                    for mine, theirs in _unit_conflicts(clause, part.text)
                    if not _stated(theirs, got)
                )
    return list(dict.fromkeys(conflicts))

"""The budget an answer says it kept to, held to the budget the customer has.

Both architectures close an answer by restating what they honoured ("I kept to what you told
me: within your CHF 49.90 budget"). The ``budget`` rule holds the offered items to the budget;
this one holds the words: every amount the answer calls *your* budget must be the budget the
customer stated last, or, when they stated none, the one on their profile (read from the
persona's data field), and an answer to a customer with neither must not name one. A budget
restated rounded ("CHF 50" for CHF 49.90) tells the customer a limit they never set.

The amount is read from the answer's own words and compared as a number, so "CHF 250",
"CHF 250.00" and "CHF 250.-" state the same budget.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

from vitrine_shop.domain import Persona

__all__ = ["profile_budget", "stated_budget_problems"]

_AMOUNT = r"(\d{1,6}(?:[.,]\d{1,2})?)(?:\.-)?"
# "your CHF 49.90 budget", "your 80 CHF budget", "your budget of CHF 80", "your budget (CHF 80)"
_YOUR_BUDGET = re.compile(
    rf"(?i)\byour\s+(?:(?:chf|fr\.)\s*{_AMOUNT}|{_AMOUNT}\s*(?:chf|francs?))\s+budget\b"
    rf"|\byour\s+budget\s+(?:of\s+|\(\s*)?(?:chf|fr\.)\s*{_AMOUNT}"
)


def _decimal(raw: str) -> Decimal | None:
    try:
        return Decimal(raw.replace(",", "."))
    except InvalidOperation:
        return None


def profile_budget(persona: Persona | None) -> Decimal | None:
    """The budget on the customer's profile, from the data field; None when there is none."""
    raw = (persona.constraints.get("budget_chf") if persona is not None else None) or ""
    return _decimal(raw.strip()) if raw.strip() else None


def stated_budget_problems(
    answer: str, latest: Decimal | None, persona: Persona | None
) -> list[str]:
    """Each budget ``answer`` attributes to the customer that is not theirs.

    ``latest`` is the budget the customer stated last (the invariants' own reader of their
    turns); without one, the profile's budget is the one the customer has.
    """
    has = latest if latest is not None else profile_budget(persona)
    problems: list[str] = []
    for match in _YOUR_BUDGET.finditer(answer):
        raw = next(group for group in match.groups() if group)
        said = _decimal(raw)
        if said is None or said == has:
            continue
        if has is None:
            problems.append(f"the answer names a CHF {said} budget the customer never set")
        else:
            problems.append(f"the answer restates the budget as CHF {said}; it is CHF {has}")
    return problems

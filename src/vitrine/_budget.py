"""A spend ceiling for a whole session: calls, tokens and cost, from what providers report.

Per-request output-token ceilings bound one reply; a :class:`SpendCeiling` bounds the session.
Every model request of the session goes through one :class:`SpendMeter` (wrap each model in a
:class:`MeteredModel`). Before a request starts the meter admits it or refuses it with
:class:`BudgetReached`; a refused request is never sent, so a trial that meets a spent budget
ends not measured, with "budget" as its reason, and no new trial can start once the ceiling
is reached.

The bound, stated and tested: calls never exceed ``max_calls`` (a call is counted when it is
admitted); tokens and cost exceed their ceiling by at most what the request that crossed it and
the requests still in flight at that moment spend themselves, each bounded by its own prompt
and its output-token ceiling. Usage is the provider's own report; a reply without one cannot
be counted, so under a token or cost ceiling it stops the session instead of being guessed at.
Cost is computed from a user-declared price table (USD per million input and output tokens,
per model); a model with no declared price cannot be given a cost ceiling.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vitrine.errors import BudgetReached, InvalidArgumentError, PriceTableError, UsageError

if TYPE_CHECKING:
    from vitrine._bench.model import Arm, Case
    from vitrine._bench.response import SubjectResponse
    from vitrine.providers._base import ChatCompletion, ChatModel, ChatRequest, Provenance

__all__ = [
    "BudgetReached",
    "MeteredModel",
    "Price",
    "PriceTableError",
    "SpendCeiling",
    "SpendMeter",
    "budget_gated",
    "load_price_table",
]


@dataclass(frozen=True, slots=True)
class Price:
    """USD per million tokens, as the provider bills them."""

    input_per_million: float
    output_per_million: float

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        return (
            input_tokens * self.input_per_million + output_tokens * self.output_per_million
        ) / 1e6


@dataclass(frozen=True, slots=True)
class SpendCeiling:
    """The session's ceilings; None for a ceiling that is not set."""

    max_calls: int | None = None
    max_tokens: int | None = None
    max_cost: float | None = None

    def __post_init__(self) -> None:
        for name in ("max_calls", "max_tokens"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or value < 1):
                raise InvalidArgumentError(
                    f"{name} must be a whole number of at least 1, got {value!r}"
                )
        cost = self.max_cost
        if cost is not None and not (math.isfinite(cost) and cost > 0):
            raise InvalidArgumentError(
                f"max_cost must be a positive number of US dollars, got {cost!r}"
            )

    @property
    def any(self) -> bool:
        return any(v is not None for v in (self.max_calls, self.max_tokens, self.max_cost))

    def to_dict(self) -> dict[str, Any]:
        return {
            "max_calls": self.max_calls,
            "max_tokens": self.max_tokens,
            "max_cost_usd": self.max_cost,
        }


def load_price_table(path: Path) -> dict[str, Price]:
    """``{"model": {"input_per_million": 0.15, "output_per_million": 0.60}, ...}`` from JSON."""
    where = repr(str(path)[:120])
    try:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise PriceTableError(f"price table {where}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise PriceTableError(
            f"price table {where}: cannot be read ({type(exc).__name__})"
        ) from None
    except json.JSONDecodeError as exc:
        raise PriceTableError(
            f"price table {where}: not JSON ({exc.msg} at line {exc.lineno})"
        ) from None
    if not isinstance(raw, dict) or not raw:
        raise PriceTableError(f"price table {where}: must be a non-empty JSON object of models")
    table: dict[str, Price] = {}
    for model, entry in raw.items():
        shown = repr(model)[:60]
        if not isinstance(entry, dict):
            raise PriceTableError(f"price table {where}: {shown} must map to an object")
        values = []
        for key in ("input_per_million", "output_per_million"):
            value = entry.get(key)
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not math.isfinite(value)
                or value < 0
            ):
                raise PriceTableError(
                    f"price table {where}: {shown} needs {key} as a non-negative number of US "
                    f"dollars, got {value!r}"[:300]
                )
            values.append(float(value))
        table[str(model)] = Price(*values)
    return table


class SpendMeter:
    """Counts a session's admitted calls, reported tokens and their cost against a ceiling.

    The session runs on one event loop, so admission and recording need no lock: nothing
    yields between the check and the count.
    """

    def __init__(self, ceiling: SpendCeiling, prices: Mapping[str, Price] | None = None) -> None:
        self.ceiling = ceiling
        self.prices = dict(prices or {})
        self.calls = 0
        self.refused = 0
        self.input_tokens = 0
        self.output_tokens = 0
        self.cost = 0.0
        self.unreported = 0
        self.in_flight = 0
        self.max_in_flight = 0
        # The requests still open when a ceiling was first reached, and their output ceilings:
        # all that can still be spent past it.
        self.open_at_reach = 0
        self.open_output_ceiling_at_reach = 0
        self._open_ceilings: list[int] = []
        self._reached: str | None = None

    def price_of(self, model: str) -> Price | None:
        """The declared price of ``model``: by its id, or by its name after ``provider:``."""
        if model in self.prices:
            return self.prices[model]
        return self.prices.get(model.partition(":")[2]) if ":" in model else None

    def unpriced(self, models: Mapping[str, str]) -> list[str]:
        """The roles whose model has no declared price, as "role model" strings."""
        return [
            f"the {role} model {name!r}"
            for role, name in models.items()
            if self.price_of(name) is None
        ]

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    @property
    def reached(self) -> str | None:
        """Why no new request may start, or None while the budget has room."""
        if self._reached is not None:
            return self._reached
        c = self.ceiling
        why = None
        if c.max_calls is not None and self.calls >= c.max_calls:
            why = f"{self.calls} call(s) reached --max-calls {c.max_calls}"
        elif c.max_tokens is not None and self.tokens >= c.max_tokens:
            why = f"{self.tokens:,} reported token(s) reached --max-tokens {c.max_tokens:,}"
        elif c.max_cost is not None and self.cost >= c.max_cost:
            why = f"${self.cost:.4f} reached --max-cost {c.max_cost:g}"
        elif self.unreported and (c.max_tokens is not None or c.max_cost is not None):
            why = "a reply reported no usage, so the token or cost ceiling cannot be enforced"
        if why is not None:
            self._reached = why
            self.open_at_reach = self.in_flight
            self.open_output_ceiling_at_reach = sum(self._open_ceilings)
        return why

    def metered(self, **models: ChatModel) -> dict[str, MeteredModel]:
        """Each of ``models`` (by role: ``subject=..., judge=...``) with every request counted
        against this meter.

        A cost ceiling needs a declared price for every model it would pay for: refused here,
        before any call (a :class:`~vitrine.UsageError`, exit 2), never estimated.
        """
        if self.ceiling.max_cost is not None:
            missing = self.unpriced({role: model.model_id for role, model in models.items()})
            if missing:
                raise UsageError(
                    f"--max-cost cannot be enforced: {' and '.join(missing)} has no declared "
                    "price in --price-table, so its cost is unknown; declare it or use "
                    "--max-tokens"
                )
        return {role: MeteredModel(model, self) for role, model in models.items()}

    def admit(self, max_output_tokens: int) -> None:
        """Count a request that is about to start, or refuse it with :class:`BudgetReached`."""
        why = self.reached
        if why is not None:
            self.refused += 1
            raise BudgetReached(f"budget: {why}")
        self.calls += 1
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        self._open_ceilings.append(max_output_tokens)

    def record(self, model: str, max_output_tokens: int, completion: ChatCompletion | None) -> None:
        """A request ended (``completion`` None when it failed): count what it reported."""
        self.in_flight -= 1
        self._open_ceilings.remove(max_output_tokens)
        if completion is not None and completion.usage is None:
            self.unreported += 1
        elif completion is not None and completion.usage is not None:
            usage = completion.usage
            self.input_tokens += usage.input_tokens
            self.output_tokens += usage.output_tokens
            price = self.price_of(model)
            if price is not None:
                self.cost += price.cost(usage.input_tokens, usage.output_tokens)
        # Checked now, so the in-flight snapshot is taken when the ceiling is crossed.
        _ = self.reached

    def to_dict(self) -> dict[str, Any]:
        return {
            "ceiling": self.ceiling.to_dict(),
            "spent": {
                "calls": self.calls,
                "input_tokens": self.input_tokens,
                "output_tokens": self.output_tokens,
                "tokens": self.tokens,
                "cost_usd": round(self.cost, 6) if self.ceiling.max_cost is not None else None,
                "replies_without_usage": self.unreported,
            },
            "refused_requests": self.refused,
            "reached": self._reached,
            "max_in_flight": self.max_in_flight,
            "bound": (
                "calls never exceed --max-calls; tokens and cost exceed their ceiling by at "
                "most what the request that crossed it and the requests still open then spend "
                "(each bounded by its prompt and its output-token ceiling)"
            ),
            "open_requests_at_reach": self.open_at_reach,
            "open_output_ceiling_at_reach": self.open_output_ceiling_at_reach,
        }


class MeteredModel:
    """A :class:`~vitrine.providers.ChatModel` whose every request passes the meter."""

    def __init__(self, inner: ChatModel, meter: SpendMeter) -> None:
        self.inner = inner
        self.meter = meter

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def provenance(self) -> Provenance:
        return self.inner.provenance

    async def complete(self, request: ChatRequest) -> ChatCompletion:
        ceiling = request.max_output_tokens
        self.meter.admit(ceiling)
        completion = None
        try:
            completion = await self.inner.complete(request)
        finally:
            self.meter.record(self.inner.model_id, ceiling, completion)
        return completion


def budget_gated(arm: Arm, meter: SpendMeter) -> Arm:
    """``arm`` with a trial gate: once ``meter`` is spent, a new trial ends at once, not
    measured, with "budget" as its reason. Same id and metadata, so its runs compare as before.

    The gate stops new trials; counting the spend is the models' part (wrap them in
    :class:`MeteredModel` with the same meter).
    """
    from vitrine._bench.model import Arm  # noqa: PLC0415 - the runner's model loads on use

    async def subject(case: Case) -> SubjectResponse:
        why = meter.reached
        if why is not None:
            raise BudgetReached(f"not measured: budget ({why})")
        return await arm.respond(case)

    return Arm(arm.arm_id, subject, arm.metadata)

"""``vitrine power``: the planning question alone, before anything runs or is spent.

``vitrine power paired``: the paired comparison (eval03, the two-sided sign test over the
discordant collapsed pairs). State the discordance rate, and a win rate, a number of cases,
or both: the power at those, the smallest detectable win rate at the target power, and the
cases that reach it.

``vitrine power wilson``: the stochastic plans' rule (eval04/eval05). State a number of
repetitions, a true whole-trial success rate, or both: the pass chance, the smallest rate that
passes at the target power, and the repetitions that reach it.

Nothing is called; the answer is printed (``--json`` for a document) and the exit is 0, or 2
for a refused argument.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from vitrine._commandline import USAGE, CommandRefusal, RefusingParser, run_command

__all__ = ["build_parser", "main"]

PROG = "vitrine power"
_DESCRIPTION = (
    "What a design can detect, before anything runs or is spent. paired: the two-sided sign "
    "test over the discordant collapsed pairs (state --discordance, and --win-rate, --cases or "
    "both). wilson: the Wilson lower-bound rule (state --repetitions, --rate or both). Prints "
    "the power, the smallest detectable effect at --target power, and the size that reaches it."
)


def _rate(*, open_ends: bool = False) -> Any:
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a number, got {text[:40]!r}") from None
        inside = 0.0 < value < 1.0 if open_ends else 0.0 <= value <= 1.0
        if not inside:
            bounds = "strictly between 0 and 1" if open_ends else "between 0 and 1"
            raise argparse.ArgumentTypeError(f"must lie {bounds}, got {text[:40]!r}")
        return value

    return parse


def _whole(minimum: int) -> Any:
    def parse(text: str) -> int:
        if not text.strip().isdigit() or len(text.strip()) > 6:
            raise argparse.ArgumentTypeError(f"must be a whole number, got {text[:40]!r}")
        value = int(text)
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {value}")
        return value

    return parse


def build_parser() -> argparse.ArgumentParser:
    parser = RefusingParser(prog=PROG, description=_DESCRIPTION)
    kinds = parser.add_subparsers(dest="kind", metavar="paired|wilson", required=True)
    paired = kinds.add_parser(
        "paired", help="the paired comparison's sign test (eval03)", description=_DESCRIPTION
    )
    paired.add_argument(
        "--discordance",
        type=_rate(open_ends=True),
        required=True,
        help="the chance that a case's two collapsed cells differ",
    )
    paired.add_argument(
        "--win-rate",
        type=_rate(),
        help="the chance that a discordant case favours the challenger (0.5: no difference)",
    )
    paired.add_argument("--cases", type=_whole(1), help="paired cases in the design")
    paired.add_argument("--alpha", type=_rate(open_ends=True), default=0.05)
    wilson = kinds.add_parser(
        "wilson",
        help="the stochastic plans' Wilson rule (eval04/eval05)",
        description=_DESCRIPTION,
    )
    wilson.add_argument("--repetitions", type=_whole(1))
    wilson.add_argument(
        "--rate", type=_rate(), help="the true whole-trial success rate of a scenario"
    )
    wilson.add_argument("--floor", type=_rate(), default=0.50)
    wilson.add_argument("--confidence", type=_rate(open_ends=True), default=0.95)
    for sub in (paired, wilson):
        sub.add_argument(
            "--target",
            type=_rate(open_ends=True),
            default=0.80,
            help="the power a design should reach (default 0.80)",
        )
        sub.add_argument("--json", action="store_true", help="print a JSON document")
    return parser


def _paired(args: argparse.Namespace) -> tuple[dict[str, Any], list[str]]:
    from vitrine import _power as power, _stats as stats  # noqa: PLC0415 - scipy loads on use

    if args.win_rate is None and args.cases is None:
        raise CommandRefusal("state --win-rate, --cases or both: there is nothing to plan", USAGE)
    doc: dict[str, Any] = {
        "rule": "two-sided sign test over the discordant collapsed pairs",
        "discordance": args.discordance,
        "win_rate": args.win_rate,
        "cases": args.cases,
        "alpha": args.alpha,
        "target_power": args.target,
    }
    lines = [f"paired sign test, alpha {args.alpha:g}, discordance {args.discordance:g}"]
    if args.cases is not None:
        min_p = stats.min_attainable_p(args.cases)
        doc["min_attainable_p"] = min_p
        doc["can_reach_alpha"] = min_p <= args.alpha
        lines.append(f"  {args.cases} case(s): minimum attainable p {min_p:.4g}")
        if min_p > args.alpha:
            lines.append(
                f"  CANNOT REACH SIGNIFICANCE: no outcome of {args.cases} case(s) gives "
                f"p <= {args.alpha:g}"
            )
        mde = power.min_detectable_win_rate(args.cases, args.discordance, args.alpha, args.target)
        doc["min_detectable_win_rate"] = mde
        lines.append(
            f"  smallest win rate detected with {args.target:.0%} power: "
            + ("none, at any win rate" if mde is None else f"{mde:.4f}")
        )
    if args.win_rate is not None:
        if args.cases is not None:
            value = power.paired_power(args.cases, args.discordance, args.win_rate, args.alpha)
            doc["power"] = value
            lines.append(f"  power at win rate {args.win_rate:g}: {value:.4f}")
        needed = power.cases_needed(args.discordance, args.win_rate, args.alpha, args.target)
        doc["cases_needed"] = needed
        lines.append(
            f"  cases needed for {args.target:.0%} power at win rate {args.win_rate:g}: "
            + (f"more than {power.MAX_SEARCH:,}" if needed is None else str(needed))
        )
    return doc, lines


def _wilson(args: argparse.Namespace) -> tuple[dict[str, Any], list[str]]:
    from vitrine import _power as power  # noqa: PLC0415

    if args.rate is None and args.repetitions is None:
        raise CommandRefusal("state --rate, --repetitions or both: there is nothing to plan", USAGE)
    doc: dict[str, Any] = {
        "rule": "Wilson lower bound of whole-trial successes >= floor",
        "repetitions": args.repetitions,
        "rate": args.rate,
        "floor": args.floor,
        "confidence": args.confidence,
        "target_power": args.target,
    }
    lines = [f"Wilson {args.confidence:.0%} lower bound >= {args.floor:g}"]
    if args.repetitions is not None:
        s_min = power.wilson_min_successes(args.repetitions, args.floor, args.confidence)
        doc["min_successes"] = s_min
        doc["can_pass"] = s_min is not None
        if s_min is None:
            lines.append(
                f"  CANNOT PASS: {args.repetitions} repetition(s) keep the lower bound below "
                f"{args.floor:g} even if all succeed"
            )
        else:
            lines.append(
                f"  {args.repetitions} repetition(s): pass with at least {s_min} successes"
            )
        mdr = power.min_detectable_rate(args.repetitions, args.floor, args.confidence, args.target)
        doc["min_detectable_rate"] = mdr
        lines.append(
            f"  smallest true rate passing with {args.target:.0%} chance: "
            + ("none" if mdr is None else f"{mdr:.4f}")
        )
    if args.rate is not None:
        if args.repetitions is not None:
            value = power.wilson_power(args.repetitions, args.rate, args.floor, args.confidence)
            doc["power"] = value
            lines.append(f"  pass chance at true rate {args.rate:g}: {value:.4f}")
        needed = power.repetitions_needed(args.rate, args.floor, args.confidence, args.target)
        doc["repetitions_needed"] = needed
        if needed is None:
            why = (
                "none: a rate at or below the floor does not pass"
                if args.rate <= args.floor
                else f"more than {power.MAX_SEARCH:,}"
            )
        else:
            why = str(needed)
        lines.append(f"  repetitions needed for {args.target:.0%} at rate {args.rate:g}: {why}")
    return doc, lines


def _handle(args: argparse.Namespace) -> int:
    doc, lines = _paired(args) if args.kind == "paired" else _wilson(args)
    if args.json:
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
    else:
        sys.stdout.write("\n".join(lines) + "\n")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return run_command(PROG, build_parser(), sys.argv[1:] if argv is None else argv, _handle)

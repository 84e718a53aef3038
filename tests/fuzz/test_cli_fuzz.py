"""Bad arguments to every vitrine command are refused in one sentence, never with a traceback.

Hypothesis builds argument lists for ``vitrine`` and each subcommand, each holding at least
one argument that no command may accept: an unknown flag, a number that is nan, infinite,
negative or thousands of digits long, an empty or control-character value, a directory where
a file is expected (or the reverse), a suite that does not exist, flags combined wrongly. Each
list runs in-process through :func:`vitrine._cli.main` and must end with exit 2 (bad
arguments) or 4 (infrastructure), at most one ``error:`` line, no ``Traceback`` anywhere and
nothing written to the sandbox. ``serve`` is only ever given arguments it must refuse, so no
server stays up; an example still running after :data:`fuzz_support.EXAMPLE_LIMIT_S` fails the
test rather than hanging the battery.
"""

from __future__ import annotations

import pytest
from fuzz_support import Budget, Sandbox, run_in_process
from hypothesis import HealthCheck, given, settings, strategies as st

from vitrine._cli import SUBCOMMANDS

# Part of the ordinary test run (no opt-in flag); the marker lets it be selected or skipped.
pytestmark = pytest.mark.fuzz

FILE, FOLDER, MISSING, UNDER_FILE = "<file>", "<folder>", "<missing>", "<under-file>"

CONTROL = st.sampled_from(["\x00", "\n", "\r\n", "\x1b[31m", "\x7f", "\u2028", "\t"])
BAD_NUMBER = st.sampled_from(
    ["nan", "NaN", "inf", "-inf", "1e999", "-1", "", " ", "x", "0x10", "9" * 5000]
) | st.builds(lambda control: f"1{control}2", CONTROL)
BAD_TEXT = st.sampled_from(["", " "]) | CONTROL | st.just("x" * 5000)
BAD_SUITE = st.sampled_from(
    ["", "nope", "nope:SUITE", "os:path", "vitrine:nothing", ":", "a" * 300, "\x00:x"]
)
BAD_CHOICE = st.sampled_from(["nope", "", "\x1b[0m", "AGENT"])
FILE_EXPECTED = st.sampled_from([FOLDER, UNDER_FILE])  # a report or model file
FOLDER_EXPECTED = st.sampled_from([FILE, UNDER_FILE])  # a store or output folder
UNKNOWN_FLAG = st.from_regex(r"--zz[a-z-]{0,12}", fullmatch=True)

Pairs = list[tuple[str, st.SearchStrategy[str]]]

# Per command: the fixed prefix and the options it must refuse with the values given.
SPECS: dict[str, tuple[list[str], Pairs]] = {
    "vitrine": (
        ["--all"],
        [
            ("--repetitions", BAD_NUMBER),
            ("--suite", BAD_SUITE),
            ("--provider", BAD_CHOICE),
            ("--judge-provider", BAD_CHOICE),
            ("--json-report", FILE_EXPECTED),
            ("--html-report", FILE_EXPECTED),
            ("--output", FOLDER_EXPECTED),
            ("--scenario", BAD_TEXT),
            ("--executor", BAD_CHOICE),
            ("--ray-address", BAD_TEXT),  # without --executor ray: refused, never dialled
            ("--max-calls", BAD_NUMBER | st.just("0")),
            ("--max-tokens", BAD_NUMBER | st.just("0")),
            ("--max-cost", BAD_NUMBER | st.just("0")),
            ("--price-table", FILE_EXPECTED),
        ],
    ),
    "vitrine --eval-plan": (
        [],
        [("--eval-plan", BAD_TEXT | st.just("no-such-plan")), ("--repetitions", BAD_NUMBER)],
    ),
    "serve": (
        ["serve"],
        [
            ("--port", BAD_NUMBER | st.sampled_from(["0", "65536", "99999"])),
            ("--host", st.sampled_from(["", "999.1.1.1", "1.2.3.4.5", "\x00"])),
            ("--rate-limit", BAD_NUMBER | st.sampled_from(["0", "1e-300", "1e300"])),
            ("--rate-burst", BAD_NUMBER | st.sampled_from(["0", "0.5", "1e300"])),
            ("--reply-timeout", BAD_NUMBER | st.sampled_from(["0", "3601"])),
            ("--max-sessions", BAD_NUMBER | st.just("0")),
            ("--sessions-per-client", BAD_NUMBER | st.just("0")),
            ("--max-output-tokens", BAD_NUMBER | st.just("0")),
            ("--architecture", BAD_CHOICE),
            ("--provider", BAD_CHOICE),
            ("--log-file", FILE_EXPECTED),
            ("--forwarded-allow-ips", st.sampled_from(["", ",", "example.org", "1.2.3.4/99"])),
            ("--suite", BAD_SUITE),
        ],
    ),
    "runs": (
        ["runs", "list"],
        [
            ("--limit", BAD_NUMBER | st.just("0")),
            ("--output", FOLDER_EXPECTED),
            ("--verdict", BAD_CHOICE),
        ],
    ),
    "runs sweep": (
        ["runs", "sweep"],
        [("--older-than", BAD_NUMBER), ("--output", FOLDER_EXPECTED)],
    ),
    "power": (
        ["power", "paired"],
        [
            ("--discordance", BAD_NUMBER | st.sampled_from(["0", "1", "1.5"])),
            ("--win-rate", BAD_NUMBER | st.just("1.01")),
            ("--cases", BAD_NUMBER | st.just("0")),
            ("--alpha", BAD_NUMBER | st.just("1")),
            ("--target", BAD_NUMBER | st.just("0")),
        ],
    ),
    "ci": (
        ["ci", "init"],
        [
            ("--dir", FOLDER_EXPECTED),
            ("--layers", BAD_CHOICE),
            ("--install", BAD_CHOICE),
            ("--suite", BAD_SUITE),
        ],
    ),
    "mutants": (
        ["mutants"],
        [
            ("--jobs", BAD_NUMBER | st.just("0")),
            ("--timeout", BAD_NUMBER | st.just("0")),
            ("--only", BAD_TEXT | st.just(",,")),
            ("--output", FOLDER_EXPECTED),
            ("--json-report", FILE_EXPECTED),
            ("--suite", BAD_SUITE),
        ],
    ),
    "redteam": (
        ["redteam", "run"],
        [
            ("--target", BAD_CHOICE),
            ("--provider", BAD_CHOICE),
            ("--output", FOLDER_EXPECTED),
            ("--suite", BAD_SUITE),
        ],
    ),
    "redteam adaptive": (
        ["redteam", "adaptive"],
        [
            ("--strategy", BAD_CHOICE),
            ("--max-turns", BAD_NUMBER | st.just("0")),
            ("--attacker", BAD_CHOICE),
        ],
    ),
    "board": (
        ["board"],
        [
            ("--port", BAD_NUMBER | st.sampled_from(["65536", "99999"])),
            ("--store", FOLDER_EXPECTED),
        ],
    ),
    "board export": (["board", "export", FOLDER], [("--max-runs", BAD_NUMBER)]),
    # Parse-level values only: rag's later checks are still changing.
    "rag": (
        ["rag", "eval"],
        [
            ("--top-k", BAD_NUMBER | st.just("0")),
            ("--limit", BAD_NUMBER),
            ("--embedding-mode", BAD_CHOICE),
            ("--items", BAD_CHOICE),
            ("--provider", BAD_CHOICE),
        ],
    ),
}


def _place(token: str, sandbox: Sandbox) -> str:
    return {
        FILE: str(sandbox.plain_file),
        FOLDER: str(sandbox.folder),
        MISSING: str(sandbox.missing),
        UNDER_FILE: str(sandbox.plain_file / "child"),
    }.get(token, token)


@st.composite
def bad_arguments(draw: st.DrawFn, command: str) -> list[str]:
    prefix, pairs = SPECS[command]
    chosen = draw(
        st.lists(st.sampled_from(pairs), min_size=1, max_size=3, unique_by=lambda p: p[0])
    )
    argv = list(prefix)
    for flag, values in chosen:
        argv += [flag, draw(values)]
    if draw(st.booleans()):
        argv.insert(draw(st.integers(len(prefix), len(argv))), draw(UNKNOWN_FLAG))
    return argv


def test_every_subcommand_has_a_fuzz_spec() -> None:
    covered = {SPECS[name][0][0] for name in SPECS if SPECS[name][0]}
    assert set(SUBCOMMANDS) <= covered


@pytest.mark.parametrize("command", sorted(SPECS))
@settings(
    max_examples=60,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_bad_arguments_are_refused_in_one_sentence(
    command: str, data: st.DataObject, sandbox: Sandbox, fuzz_budget: Budget
) -> None:
    argv = [_place(token, sandbox) for token in data.draw(bad_arguments(command))]
    if fuzz_budget.spent:
        return  # the battery's minute is used up; the remaining examples are skipped
    try:
        code, out, err = run_in_process(argv)
        written = sandbox.written()
    finally:
        sandbox.clear()  # one example's leftovers must not fail the next
    shown = repr(argv)[:300]
    assert code in (2, 4), f"{shown}: exit {code}\n{err[-800:]}"
    assert sum("error:" in line for line in err.splitlines()) <= 1, f"{shown}:\n{err[-800:]}"
    assert "Traceback" not in out + err, f"{shown}:\n{err[-2000:]}"
    assert written == [], f"{shown} wrote {written[:3]}"


# Arguments the battery once found accepted (each ran a whole campaign before failing, or
# succeeded): pinned so they stay refused whatever the generator draws next time.
FOUND = [
    ["redteam", "run", "--suite", ""],
    ["redteam", "run", "--output", FILE],
    ["redteam", "run", "--output", UNDER_FILE],
    ["mutants", "--suite", ""],
    ["mutants", "--output", FILE],
    ["mutants", "--json-report", UNDER_FILE],
    ["runs", "list", "--verdict", "nope"],
    ["ci", "init", "--layers", ""],
    ["serve", "--rate-limit", "nan"],
    ["serve", "--rate-burst", "inf"],
    ["serve", "--rate-limit", "1e-300"],
    ["serve", "--log-file", FOLDER],
    ["serve", "--host", "999.1.1.1"],
]

# Flags that are each fine alone and wrong together.
COMBINED = [
    ["--all", "--eval-plan", "offline-suite"],
    ["--self-test", "--controls-only"],
    ["--ablate-catalogue", "--controls-only"],
    ["--all", "--live-subjects-and-judge"],
    ["--list-plans", "--all"],
    ["serve", "--regress", "repeat-owned", "--architecture", "workflow"],
    ["serve", "--sessions-per-client", "2000", "--max-sessions", "1000"],
    ["serve", "--trust-forwarded", "--forwarded-allow-ips", ""],
    ["redteam", "run", "--no-judge", "--provider", "openai"],
    ["redteam", "adaptive", "--strategy", "goat", "--max-turns", "0"],
    ["mutants", "--list", "--jobs", "2"],
    ["mutants", "--json-report", "same.json", "--html-report", "same.json"],
    ["ci", "init", "--layers", "offline,nope"],
]


@pytest.mark.parametrize("argv", FOUND + COMBINED, ids=" ".join)
def test_known_bad_arguments_stay_refused(argv: list[str], sandbox: Sandbox) -> None:
    try:
        code, out, err = run_in_process([_place(token, sandbox) for token in argv])
        written = sandbox.written()
    finally:
        sandbox.clear()
    assert code in (2, 4), err[-800:]
    assert err.count("error:") == 1 and "Traceback" not in out + err
    assert written == []

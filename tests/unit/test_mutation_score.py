"""The pure parts of benchmarks/mutation_score.py: the copy, the equivalence filter, the score.

The cosmic-ray run itself is exercised by running the script; these pin down what decides the
published figure without needing the tool installed.
"""

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

_PATH = Path(__file__).resolve().parents[2] / "benchmarks" / "mutation_score.py"
_SPEC = importlib.util.spec_from_file_location("mutation_score", _PATH)
assert _SPEC is not None and _SPEC.loader is not None
mutation_score = importlib.util.module_from_spec(_SPEC)
sys.modules["mutation_score"] = mutation_score
_SPEC.loader.exec_module(mutation_score)

LAZY = """from __future__ import annotations

class Row(Model):
    price: int | None = None

def pick(limit: int | None = None) -> str | None:
    return limit | 2

CHECKS: dict[str, int | None] = {}

@dataclass(frozen=True, slots=True)
class Point:
    x: int

@functools.lru_cache(maxsize=4096)
def cached(n: int) -> int:
    return n + 1
"""


def test_only_what_nobody_evaluates_or_only_speed_depends_on_is_set_aside():
    spans = mutation_score.unevaluated_spans(LAZY)
    inside = mutation_score._inside
    assert inside((6, 20), spans)  # the parameter's `int | None`
    assert inside((6, 42), spans)  # the return annotation
    assert not inside((7, 17), spans)  # `limit | 2` in the body is behaviour
    assert not inside((4, 15), spans)  # a field annotation: pydantic evaluates it
    assert inside((9, 18), spans)  # a module variable's annotation
    assert inside((11, 31), spans)  # slots=True
    assert not inside((11, 25), spans)  # frozen=True is behaviour
    assert inside((15, 31), spans)  # maxsize=4096
    assert not inside((17, 15), spans)  # `n + 1`
    eager = LAZY.replace("from __future__ import annotations\n", "")
    assert not inside((6, 20), mutation_score.unevaluated_spans(eager))
    assert not inside((9, 18), mutation_score.unevaluated_spans(eager))
    assert inside((10, 31), mutation_score.unevaluated_spans(eager))  # speed, either way


def test_the_score_excludes_errored_mutants_and_counts_timeouts_against_it():
    tally = mutation_score.Tally(killed=6, survived=2, timed_out=2, errored=5, killed_by_exit={})
    assert tally.total == 15
    assert tally.score == pytest.approx(6 / 10)
    nothing_judged = mutation_score.Tally(0, 0, 0, 3, {})
    assert nothing_judged.score is None


def test_a_survivor_is_described_by_its_changed_line():
    diff = "--- mutation diff ---\n--- a/x.py\n+++ b/x.py\n@@ -3 +3 @@\n-    a < b\n+    a <= b\n"
    assert mutation_score._changed_lines(diff) == ("a < b", "a <= b")
    assert mutation_score._changed_lines(None) == ("", "")


def test_the_kill_cause_is_read_from_the_suite_runner_mark():
    assert mutation_score._kill_cause("noise\nmutation-suite-exit=offline:4\n") == "offline:4"
    assert mutation_score._kill_cause(None) == "unknown"


def _git(cwd, *args):
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def test_the_copy_holds_tracked_and_untracked_files_but_not_ignored_ones(tmp_path):
    project, copy = tmp_path / "project", tmp_path / "copy"
    (project / "src").mkdir(parents=True)
    (project / "src" / "kept.py").write_text("x = 1\n")
    (project / ".gitignore").write_text("store/\n")
    _git(project, "init", "-q")
    _git(project, "add", ".")
    (project / "src" / "new.py").write_text("y = 2\n")  # untracked, not ignored
    (project / "store").mkdir()
    (project / "store" / "run.json").write_text("{}")
    mutation_score.copy_project(project, copy)
    copied = sorted(p.relative_to(copy).as_posix() for p in copy.rglob("*") if p.is_file())
    assert copied == [".gitignore", "src/kept.py", "src/new.py"]


def test_an_unknown_revision_is_refused_with_a_sentence(tmp_path):
    _git(tmp_path, "init", "-q")
    with pytest.raises(mutation_score.Refusal, match="cannot archive revision 'nope'"):
        mutation_score.copy_project(tmp_path, tmp_path / "copy", "nope")


def test_a_module_outside_the_project_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exit_info:
        mutation_score.main(["--module", "shop/src/vitrine_shop/nowhere.py"])
    assert exit_info.value.code == 2
    assert "not a Python module of this project" in capsys.readouterr().err


def _result(**counts: int) -> dict:
    survivor = {"file": "m.py", "line": 3, "operator": "Op", "original": "a", "mutated": "b"}
    other = {**survivor, "line": 9, "original": "c", "mutated": "d"}
    return {
        "sampled": 10,
        "errored": 1,
        "killed": 6,
        "survived": 2,
        **counts,
        "survivors": [survivor, other],
    }


def test_the_non_equivalent_score_leaves_out_only_the_survivors_read_as_equivalent():
    equivalents = [
        {"file": "m.py", "operator": "Op", "original": "a", "mutated": "b", "reason": "why"},
        # the same file and operator on another line text: not this survivor
        {"file": "m.py", "operator": "Op", "original": "x", "mutated": "b", "reason": "why"},
    ]
    scored = mutation_score.with_equivalents(_result(), equivalents)
    assert [s["line"] for s in scored["equivalent_survivors"]] == [3]
    assert scored["equivalent_survivors"][0]["reason"] == "why"
    assert scored["non_equivalent_score"] == round(6 / (10 - 1 - 1), 4)
    assert mutation_score.with_equivalents(_result(), [])["non_equivalent_score"] == round(6 / 9, 4)


def test_the_shipped_list_of_equivalent_mutants_is_well_formed_and_gives_each_a_reason():
    listed = mutation_score._equivalents(mutation_score.EQUIVALENT_FILE)
    assert listed and all(e["reason"].strip() for e in listed)
    files = {e["file"] for e in listed}
    assert files <= set(mutation_score.MODULES)


def test_a_malformed_list_of_equivalent_mutants_is_refused_with_exit_2(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"equivalent": [{"file": "m.py"}]}')
    saved = tmp_path / "result.json"
    saved.write_text("{}")
    code = mutation_score.main(["--equivalent", str(bad), "--from-result", str(saved)])
    assert code == 2

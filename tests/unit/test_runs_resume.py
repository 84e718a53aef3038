"""`vitrine runs resume` and `vitrine.store.resume_unsealed`: a run a killed process left
unsealed is found and finished into one sealed, verifiable run, each case exactly once."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import pytest

import vitrine
from vitrine._bench.results import ScenarioRow
from vitrine._outcomes import Observation
from vitrine.store import RunStore, load_run
from vitrine.store._command import main as runs_main
from vitrine.store._errors import ResumeMismatchError

BENCHMARK_MODULE = """
from vitrine import Arm, BenchmarkDefinition, Case, ChanceFloor, Observation, SubjectResponse
from vitrine import admit, check

CALLS = []
FLOOR = ChanceFloor.not_derivable("a deterministic predicate")


@check("names-case")
def names_case(case, response):
    ok = case.id in (response.answer or "")
    return Observation.measured(ok, ok)


async def subject(case):
    CALLS.append(case.id)
    return SubjectResponse(answer=f"answer for {case.id}")


DEFINITION = BenchmarkDefinition(
    "resume-cli", "1.0.0", [Case(f"case-{i}", i) for i in range(6)], [admit(names_case, FLOOR)]
)


def build():
    return DEFINITION, [Arm("arm-a", subject), Arm("arm-b", subject)]


def other():
    changed = BenchmarkDefinition("resume-cli", "2.0.0", DEFINITION.cases, DEFINITION.checks)
    return changed, Arm("arm-a", subject)
"""

KEPT = ("case-0", "case-1", "case-2")


@pytest.fixture
def bench(tmp_path, monkeypatch):
    """The benchmark module, importable as ``resume_bench`` for the command and the test."""
    (tmp_path / "resume_bench.py").write_text(BENCHMARK_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("resume_bench", None)
    import resume_bench  # type: ignore[import-not-found]

    yield resume_bench
    sys.modules.pop("resume_bench", None)


def interrupted_run(root: Path, bench, arm_id: str = "arm-a") -> Path:
    """What a process killed after three trials leaves: a manifest, three trials, no seal."""
    writer = RunStore(root).create_run(bench.DEFINITION, arm_id)
    for case_id in KEPT:
        rows = [ScenarioRow(case_id, "names-case", Observation.measured(True, True))]
        writer.record_trial(
            case_id, rows, duration_ms=1.0, error=None, response={"answer_preview": case_id}
        )
    writer.close()
    return writer.run_dir


def test_the_command_resumes_the_unsealed_run_to_a_sealed_run_with_every_case_once(
    tmp_path, bench, capsys
):
    root = tmp_path / "store"
    run_dir = interrupted_run(root, bench)

    code = runs_main(["resume", "--store", str(root), "--benchmark", "resume_bench:build"])

    assert code == 0
    assert f"resumed {run_dir.name}: 6 cases, verdict PASS" in capsys.readouterr().out
    sealed = load_run(run_dir)  # verifies the seal
    assert sealed.complete
    assert Counter(row.case_id for row in sealed.rows) == {f"case-{i}": 1 for i in range(6)}
    assert sorted(bench.CALLS) == ["case-3", "case-4", "case-5"]  # finished trials not rerun
    assert runs_main(["unsealed", "--output", str(root)]) == 0


def test_with_nothing_unsealed_the_command_says_so_and_exits_0(tmp_path, capsys):
    root = tmp_path / "store"

    assert runs_main(["resume", "--output", str(root)]) == 0
    assert "no unsealed run" in capsys.readouterr().out


def test_several_unsealed_runs_without_a_run_id_exit_2_listing_them(tmp_path, bench, capsys):
    root = tmp_path / "store"
    first = interrupted_run(root, bench, "arm-a")
    second = interrupted_run(root, bench, "arm-b")

    code = runs_main(["resume", "--output", str(root), "--benchmark", "resume_bench:build"])

    err = capsys.readouterr().err
    assert code == 2
    assert "2 runs are unsealed" in err and first.name in err and second.name in err
    assert not bench.CALLS
    assert (
        runs_main(
            ["resume", second.name, "--output", str(root), "--benchmark", "resume_bench:build"]
        )
        == 0
    )
    assert load_run(second).complete
    with pytest.raises(vitrine.VitrineError, match="never sealed"):
        load_run(first)


def test_an_unsealed_run_without_its_benchmark_is_refused_with_exit_2(tmp_path, bench, capsys):
    root = tmp_path / "store"
    run_dir = interrupted_run(root, bench)

    assert runs_main(["resume", "--output", str(root)]) == 2
    err = capsys.readouterr().err
    assert run_dir.name in err and "--benchmark MODULE:ATTR" in err


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("resume_bench:other", "would mix two benchmarks"),
        ("resume_bench:missing", "has no attribute 'missing'"),
        ("resume_bench", "expects MODULE:ATTR"),
        ("resume_bench:CALLS", "not (BenchmarkDefinition, arms)"),
        ("no_such_module_xyz:build", "no module named"),
    ],
)
def test_a_wrong_benchmark_is_refused_with_exit_2_and_the_run_stays_unsealed(
    tmp_path, bench, capsys, spec, message
):
    root = tmp_path / "store"
    run_dir = interrupted_run(root, bench)

    assert runs_main(["resume", "--output", str(root), "--benchmark", spec]) == 2
    assert message in capsys.readouterr().err
    assert load_run(run_dir, allow_incomplete=True).complete is False


def test_a_sealed_run_named_is_nothing_to_resume_and_an_unknown_one_is_refused(
    tmp_path, bench, capsys
):
    root = tmp_path / "store"
    run_dir = interrupted_run(root, bench)
    vitrine.store.resume_unsealed(root, *bench.build())

    assert runs_main(["resume", run_dir.name, "--output", str(root)]) == 0
    assert "already sealed" in capsys.readouterr().out
    assert runs_main(["resume", "2020-01-01_00-00-00_00000000", "--output", str(root)]) == 2
    assert "is not in the store" in capsys.readouterr().err


def test_the_api_resumes_the_one_unsealed_run_and_refuses_a_foreign_arm(tmp_path, bench):
    root = tmp_path / "store"
    run_dir = interrupted_run(root, bench, "arm-b")
    definition, arms = bench.build()

    with pytest.raises(ResumeMismatchError, match="arm 'arm-b'"):
        vitrine.store.resume_unsealed(root, definition, arms[0])
    (result,) = vitrine.store.resume_unsealed(root, definition, arms)

    assert result.run_dir == str(run_dir) and result.complete
    assert vitrine.store.find_unsealed(root) == ()
    assert vitrine.store.resume_unsealed(root, definition, arms) == ()

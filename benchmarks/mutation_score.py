"""An independent mutation score for the shop's decision modules, measured with cosmic-ray.

Run: python benchmarks/mutation_score.py [--sample N] [--seed S] [--timeout S]
         [--with-behaviour] [--revision REV] [--module PATH ...] [--output DIR]
(cosmic-ray comes with the ``mutation`` extra: pip install -e '.[mutation]')

The registered mutants (docs/mutants.md) are bugs we chose to plant; this is
the check on that choice. cosmic-ray's own operators (comparison, boolean, arithmetic, constant,
break/continue... replacements) plant mechanical faults in the modules below, a seeded random
sample of them is run, and each mutant is judged by the offline suite: ``vitrine --all``
exiting 0 means the mutant survived, any other exit means it was killed (an infrastructure
exit, 4, is retried once first). ``--with-behaviour`` adds the behaviour tests over a real
service for every mutant the offline suite missed (about 110 s each instead of about 8 s).

The working tree is never touched: the project's files (tracked and untracked, not ignored; or
a commit's tree with ``--revision``) are copied into a temporary folder, mutated there with
``PYTHONPATH=src`` and a private ``VITRINE_HOME`` store, and the folder is removed afterwards.
The unmutated copy must pass first: a score over a suite that already fails would count every
mutant as killed.

Score = killed / (total - errored). A timed-out mutant is neither killed nor errored: it counts
against the score, because a loaded machine can time out a healthy run too. Survivors that were
read against the source and found equivalent are listed, each with its reason, in
``benchmarks/equivalent_mutants.json`` (matched by file, operator and the line before and after,
not by line number); the non-equivalent score leaves them out of the denominator:
killed / (total - errored - equivalent). ``--from-result FILE`` prints both figures for a result
already written, without running a mutant. The result, with
every survivor (file:line, operator, the mutated line), is written to ``mutation-score.json``
in the output folder. Exit codes: 0 measured, 2 bad arguments, 4 infrastructure.
"""

from __future__ import annotations

import argparse
import ast
import io
import json
import os
import random
import shlex
import shutil
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
TOOL = "cosmic-ray"
# The modules that decide what the customer is offered (the served assistant and its front desk
# included); data loading, prompts and the evaluation suite itself are left out, since a mutant of
# a check is not a fault of the subject.
MODULES = (
    "shop/src/vitrine_shop/agent.py",
    "shop/src/vitrine_shop/tools.py",
    "shop/src/vitrine_shop/operations.py",
    "shop/src/vitrine_shop/screen.py",
    "shop/src/vitrine_shop/purchase_claims.py",
    "shop/src/vitrine_shop/memory.py",
    "shop/src/vitrine_shop/interests.py",
    "shop/src/vitrine_shop/front_desk.py",
    "shop/src/vitrine_shop/served_assistant.py",
    "shop/src/vitrine_shop/workflow/graph.py",
    "shop/src/vitrine_shop/workflow/context.py",
    "shop/src/vitrine_shop/workflow/discovery.py",
    "shop/src/vitrine_shop/workflow/attempts.py",
    "shop/src/vitrine_shop/workflow/shop_workflow.py",
    "shop/src/vitrine_shop/workflow/stages/schemas.py",
    "shop/src/vitrine_shop/workflow/stages/messages.py",
    "shop/src/vitrine_shop/workflow/stages/code_paths.py",
    "shop/src/vitrine_shop/workflow/stages/presentation.py",
)
# Sized on a two-core machine shared with other work, where one mutant costs about 8 s with
# the offline suite alone (150 mutants: 1,183 s, plus 83 s for the unmutated run), so the
# default stays near 20 minutes; `--sample 300` (about 40 minutes) is still there.
DEFAULT_SAMPLE = 200
MIN_TIMEOUT_S = 60.0
EXIT_OK, EXIT_USAGE, EXIT_INFRA = 0, 2, 4
RESULT_FILE = "mutation-score.json"
EQUIVALENT_FILE = REPO / "benchmarks" / "equivalent_mutants.json"
# The line the suite runner prints so that a kill can be told apart by its cause.
_EXIT_MARK = "mutation-suite-exit="


class Refusal(Exception):
    """A reason the measure cannot be taken, already phrased for the user."""


@dataclass(frozen=True, slots=True)
class Survivor:
    """One mutant the suite did not notice."""

    file: str
    line: int
    operator: str
    original: str
    mutated: str


@dataclass(frozen=True, slots=True)
class Tally:
    """The outcome census of the sampled mutants."""

    killed: int
    survived: int
    timed_out: int
    errored: int
    killed_by_exit: dict[str, int]

    @property
    def total(self) -> int:
        return self.killed + self.survived + self.timed_out + self.errored

    @property
    def score(self) -> float | None:
        """killed / (total - errored); None when no mutant produced a verdict."""
        judged = self.total - self.errored
        return None if judged == 0 else self.killed / judged


# ----------------------------------------------------------------------------------------------
# The suite one mutant is judged by (runs inside the copy, as cosmic-ray's test command)


def run_suite_once(with_behaviour: bool) -> int:
    """``vitrine --all``, then optionally the behaviour tests; prints which stage decided."""
    command = [sys.executable, "-m", "vitrine", "--all"]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode == EXIT_INFRA:
        # An infrastructure exit may be the loaded machine's doing rather than the mutant's (it
        # happened once to the unmutated suite): one retry, so that load does not count as a kill.
        result = subprocess.run(command, capture_output=True, text=True, check=False)
    offline = result.returncode
    if offline != 0:
        # The suite's own last words say why; kept short, since every kill stores them.
        print("\n".join((result.stdout + result.stderr).strip().splitlines()[-3:]))
    print(f"{_EXIT_MARK}offline:{offline}")
    if offline != 0 or not with_behaviour:
        return offline
    code = _behaviour_tests()
    print(f"{_EXIT_MARK}behaviour:{code}")
    return code


def _behaviour_tests() -> int:
    from vitrine.service._process import running_service

    store = Path(os.environ["VITRINE_HOME"]) / "behaviour"
    store.mkdir(parents=True, exist_ok=True)
    try:
        with running_service(log_path=store / "service.log") as url:
            env = {**os.environ, "EVAL_API_URL": url, "VITRINE_REQUIRE_SERVICE": "1"}
            pytest = [sys.executable, "-m", "pytest", "tests/behaviour", "-m", "not adversarial"]
            flags = ["-x", "-q", "-p", "no:randomly", "-p", "no:cacheprovider"]
            return subprocess.run(
                [*pytest, *flags, "--vitrine-report", str(store)],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                check=False,
            ).returncode
    except (RuntimeError, TimeoutError):
        # A service that cannot start under the mutant is the mutant's doing: killed.
        return 1


# ----------------------------------------------------------------------------------------------
# The isolated copy


def _project_files(root: Path) -> list[Path]:
    """Tracked and untracked files that git does not ignore: the tree as it is now."""
    try:
        listing = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=root,
            capture_output=True,
            check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        raise Refusal(f"cannot list the project's files with git ({type(exc).__name__})") from exc
    names = [n for n in listing.decode().split("\0") if n]
    return [Path(n) for n in names if (root / n).is_file()]


def copy_project(root: Path, destination: Path, revision: str | None = None) -> int:
    """Copy the project's files under ``destination``; returns how many were copied.

    Without ``revision`` the working tree as it is now, uncommitted edits included; with one,
    that commit's tree exactly as ``git archive`` gives it.
    """
    if revision is not None:
        return _extract_revision(root, destination, revision)
    files = _project_files(root)
    for relative in files:
        target = destination / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / relative, target)
    return len(files)


def _extract_revision(root: Path, destination: Path, revision: str) -> int:
    try:
        archive = subprocess.run(
            ["git", "archive", "--format=tar", revision],
            cwd=root,
            capture_output=True,
            check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        raise Refusal(f"git cannot archive revision {revision!r}: is it a commit?") from exc
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        members = [m for m in tar.getmembers() if m.isfile()]
        tar.extractall(destination, filter="data")
    return len(members)


def _environment(workdir: Path, store: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VITRINE_", "EVAL_API"))}
    # The copy's sources come first, ahead of the editable install of the working tree.
    env.update(
        PYTHONPATH=os.pathsep.join([str(workdir / "src"), str(workdir / "shop" / "src")]),
        VITRINE_HOME=str(store),
        PYTHONHASHSEED="0",
    )
    # No bytecode cache: a mutant written within the same second as its original could
    # otherwise be served from a stale .pyc.
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def _suite_command(runner: Path, with_behaviour: bool) -> list[str]:
    command = [sys.executable, str(runner), "--suite-once"]
    return [*command, "--with-behaviour"] if with_behaviour else command


def _baseline(workdir: Path, env: Mapping[str, str], command: Sequence[str]) -> float:
    """Seconds the unmutated suite takes; refuses when it does not pass or is not the copy."""
    probe = [sys.executable, "-c", "import vitrine_shop; print(vitrine_shop.__file__)"]
    located = subprocess.run(
        probe, cwd=workdir, env=env, capture_output=True, text=True, check=False
    )
    if not located.stdout.strip().startswith(str(workdir)):
        raise Refusal("the copy's sources are not the ones imported: PYTHONPATH is overridden")
    started = time.perf_counter()
    result = subprocess.run(
        command,
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    elapsed = time.perf_counter() - started
    if result.returncode != 0:
        said = " ".join((result.stdout + result.stderr).split())[-300:] or "no output"
        raise Refusal(
            f"the unmutated suite exits {result.returncode} ({said}): a score over a suite "
            "that already fails would count every mutant as killed"
        )
    return elapsed


# ----------------------------------------------------------------------------------------------
# cosmic-ray: configure, enumerate, sample, execute, read back


def _cosmic_ray(workdir: Path, env: Mapping[str, str], *arguments: str) -> None:
    command = [sys.executable, "-m", "cosmic_ray.cli", *arguments]
    result = subprocess.run(
        command, cwd=workdir, env=env, capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        tail = (result.stderr or result.stdout).strip().splitlines()[-1:] or ["no output"]
        raise Refusal(f"cosmic-ray {arguments[0]} exited {result.returncode}: {tail[0]}")


def _write_config(workdir: Path, modules: Sequence[str], timeout_s: float, command: str) -> Path:
    from cosmic_ray.config import ConfigDict, serialize_config  # type: ignore[import-untyped]

    config = ConfigDict()
    config["module-path"] = list(modules)
    config["timeout"] = timeout_s
    config["excluded-modules"] = []
    config["test-command"] = command
    config["distributor"] = ConfigDict(name="local")
    path = workdir / "cosmic-ray.toml"
    path.write_text(serialize_config(config))
    return path


Span = tuple[tuple[int, int], tuple[int, int]]


# Keyword arguments whose every value behaves alike for code that never introspects its own
# objects: a dataclass's __slots__ (memory) and a cache's size (speed).
_SPEED_ONLY: dict[str, str] = {"dataclass": "slots", "lru_cache": "maxsize"}


def _callee(node: ast.Call) -> str:
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def unevaluated_spans(source: str) -> list[Span]:
    """Where a mutant is equivalent by construction: annotations nobody evaluates, and
    arguments that change speed or memory only.

    Under ``from __future__ import annotations`` a signature's annotation, and a variable's
    outside a class body, is a string nobody reads at run time here, so a mutant inside one
    (``Path | None`` -> ``Path & None``) changes nothing. Class-body annotations are kept:
    pydantic and dataclasses evaluate those. A dataclass's ``slots=`` and an ``lru_cache``'s
    ``maxsize=`` are set aside everywhere.
    """
    tree = ast.parse(source)
    lazy = any(
        isinstance(node, ast.ImportFrom)
        and node.module == "__future__"
        and any(alias.name == "annotations" for alias in node.names)
        for node in tree.body
    )
    in_class = {
        id(statement)
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef)
        for statement in node.body
    }
    spans: list[ast.expr] = []
    for node in ast.walk(tree):
        if lazy and isinstance(node, ast.arg) and node.annotation is not None:
            spans.append(node.annotation)
        elif lazy and isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.returns:
            spans.append(node.returns)
        elif lazy and isinstance(node, ast.AnnAssign) and id(node) not in in_class:
            spans.append(node.annotation)
        elif isinstance(node, ast.Call) and _callee(node) in _SPEED_ONLY:
            spans += [k.value for k in node.keywords if k.arg == _SPEED_ONLY[_callee(node)]]
    return [
        ((n.lineno, n.col_offset), (n.end_lineno or n.lineno, n.end_col_offset or 0)) for n in spans
    ]


def _inside(position: tuple[int, int], spans: Sequence[Span]) -> bool:
    return any(start <= position < end for start, end in spans)


def sample_mutants(session: Path, workdir: Path, size: int, seed: int) -> tuple[int, int, int]:
    """Skip the equivalent and the unsampled mutants; returns (sampled, equivalent, enumerated).

    The sample is drawn from the remaining mutants in a stable order (file, operator,
    occurrence), so the same sources, size and seed always select the same mutants.
    """
    from cosmic_ray.work_db import WorkDB, use_db  # type: ignore[import-untyped]
    from cosmic_ray.work_item import WorkerOutcome, WorkResult  # type: ignore[import-untyped]

    spans: dict[str, list[Span]] = {}
    with use_db(str(session), WorkDB.Mode.open) as db:
        every = list(db.work_items)
        for item in every:
            module = str(item.mutations[0].module_path)
            if module not in spans:
                spans[module] = unevaluated_spans((workdir / module).read_text("utf-8"))
        items = sorted(
            (
                w
                for w in every
                if not _inside(
                    tuple(w.mutations[0].start_pos), spans[str(w.mutations[0].module_path)]
                )
            ),
            key=lambda w: (
                str(w.mutations[0].module_path),
                w.mutations[0].operator_name,
                w.mutations[0].occurrence,
            ),
        )
        chosen = {w.job_id for w in random.Random(seed).sample(items, min(size, len(items)))}
        rest = [w.job_id for w in every if w.job_id not in chosen]
        if rest:
            db.set_multiple_results(rest, WorkResult(worker_outcome=WorkerOutcome.SKIPPED))
    return len(chosen), len(every) - len(items), len(every)


def _execute(workdir: Path, env: Mapping[str, str], config: Path, session: Path, n: int) -> None:
    """Run cosmic-ray's sequential executor, printing progress while it works."""
    done = threading.Event()
    started = time.perf_counter()

    def report() -> None:
        while not done.wait(30):
            try:
                finished = _finished(session)
            except Exception:  # the executor may be writing the database: skip this tick
                continue
            elapsed = time.perf_counter() - started
            eta = elapsed / finished * (n - finished) if finished else float("nan")
            print(f"  {finished}/{n} mutants run, {elapsed:.0f} s elapsed, about {eta:.0f} s left")

    reporter = threading.Thread(target=report, daemon=True)
    reporter.start()
    try:
        _cosmic_ray(workdir, env, "exec", str(config), str(session))
    finally:
        done.set()
        reporter.join()


def _finished(session: Path) -> int:
    from cosmic_ray.work_db import WorkDB, use_db
    from cosmic_ray.work_item import WorkerOutcome

    with use_db(str(session), WorkDB.Mode.open) as db:
        completed = db.completed_work_items
    return sum(1 for _, r in completed if r.worker_outcome != WorkerOutcome.SKIPPED)


def _changed_lines(diff: str | None) -> tuple[str, str]:
    removed = [line[1:].strip() for line in (diff or "").splitlines() if line[:1] == "-"]
    added = [line[1:].strip() for line in (diff or "").splitlines() if line[:1] == "+"]
    original = next((r for r in removed if not r.startswith("--")), "")
    mutated = next((a for a in added if not a.startswith("++")), "")
    return original, mutated


def _kill_cause(output: str | None) -> str:
    marks = [line for line in (output or "").splitlines() if line.startswith(_EXIT_MARK)]
    return marks[-1][len(_EXIT_MARK) :] if marks else "unknown"


def read_results(session: Path) -> tuple[Tally, list[Survivor]]:
    """The census of the run mutants and the survivors, from cosmic-ray's session database."""
    from cosmic_ray.work_db import WorkDB, use_db
    from cosmic_ray.work_item import TestOutcome, WorkerOutcome

    counts: Counter[str] = Counter()
    causes: Counter[str] = Counter()
    survivors: list[Survivor] = []
    with use_db(str(session), WorkDB.Mode.open) as db:
        for item, result in db.completed_work_items:
            if result.worker_outcome == WorkerOutcome.SKIPPED:
                continue
            normal = result.worker_outcome == WorkerOutcome.NORMAL
            if not normal or result.test_outcome == TestOutcome.INCOMPETENT:
                counts["errored"] += 1
            elif result.test_outcome == TestOutcome.SURVIVED:
                counts["survived"] += 1
                spec = item.mutations[0]
                original, mutated = _changed_lines(result.diff)
                survivors.append(
                    Survivor(
                        str(spec.module_path),
                        int(spec.start_pos[0]),
                        str(spec.operator_name).removeprefix("core/"),
                        original,
                        mutated,
                    )
                )
            elif result.output == "timeout":
                counts["timed_out"] += 1
            else:
                counts["killed"] += 1
                causes[_kill_cause(result.output)] += 1
    tally = Tally(
        counts["killed"], counts["survived"], counts["timed_out"], counts["errored"], dict(causes)
    )
    return tally, sorted(survivors, key=lambda s: (s.file, s.line, s.operator))


# ----------------------------------------------------------------------------------------------
# The command


@dataclass(frozen=True, slots=True)
class Options:
    sample: int
    seed: int
    timeout_s: float | None
    with_behaviour: bool
    output: Path
    modules: tuple[str, ...]
    revision: str | None


def _tool_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("cosmic-ray")
    except PackageNotFoundError as exc:
        raise Refusal(
            "cosmic-ray is not installed: pip install -e '.[mutation]' adds the pinned version"
        ) from exc


def measure(options: Options) -> dict[str, Any]:
    """Copy, check the baseline, enumerate, sample, execute and read back; the result document."""
    version = _tool_version()
    with tempfile.TemporaryDirectory(prefix="vitrine-mutation-") as tmp:
        workdir, store = Path(tmp) / "project", Path(tmp) / "store"
        copied = copy_project(REPO, workdir, options.revision)
        env = _environment(workdir, store)
        # The suite runner lives beside the copy, not in it: a committed revision may predate it.
        runner = Path(tmp) / "suite_runner.py"
        shutil.copy2(__file__, runner)
        suite = _suite_command(runner, options.with_behaviour)
        source = f"revision {options.revision}" if options.revision else "the working tree"
        print(f"copied {copied} files of {source}; checking the unmutated suite passes...")
        baseline_s = _baseline(workdir, env, suite)
        # Three times the healthy run, since a mutant may legitimately make the suite slower.
        timeout_s = options.timeout_s or max(MIN_TIMEOUT_S, 3 * baseline_s)
        config = _write_config(workdir, options.modules, timeout_s, shlex.join(suite))
        session = workdir / "session.sqlite"
        _cosmic_ray(workdir, env, "init", str(config), str(session))
        sampled, equivalent, enumerated = sample_mutants(
            session, workdir, options.sample, options.seed
        )
        print(
            f"baseline {baseline_s:.1f} s; {enumerated} mutants, {equivalent} in unevaluated "
            f"signature annotations set aside; running {sampled} (seed {options.seed}, "
            f"timeout {timeout_s:.0f} s each)"
        )
        started = time.perf_counter()
        _execute(workdir, env, config, session, sampled)
        duration_s = time.perf_counter() - started
        tally, survivors = read_results(session)
    return {
        "tool": TOOL,
        "tool_version": version,
        "source": options.revision or "working tree",
        "modules": list(options.modules),
        "test_command": "vitrine --all" + (" + behaviour tests" if options.with_behaviour else ""),
        "seed": options.seed,
        "enumerated": enumerated,
        "equivalent_annotations": equivalent,
        "sampled": sampled,
        "timeout_s": round(timeout_s, 1),
        "baseline_s": round(baseline_s, 2),
        "duration_s": round(duration_s, 1),
        "killed": tally.killed,
        "survived": tally.survived,
        "timed_out": tally.timed_out,
        "errored": tally.errored,
        "killed_by_exit": tally.killed_by_exit,
        "score": None if tally.score is None else round(tally.score, 4),
        "survivors": [asdict(s) for s in survivors],
    }


def _positive(kind: type[int] | type[float]) -> Any:
    def parse(text: str) -> int | float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        if value <= 0:
            raise argparse.ArgumentTypeError(f"must be greater than 0, got {text}")
        return value

    return parse


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--sample",
        type=_positive(int),
        default=DEFAULT_SAMPLE,
        metavar="N",
        help=f"mutants to run, drawn at random (default {DEFAULT_SAMPLE})",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the sample (default 0)")
    parser.add_argument(
        "--timeout",
        type=_positive(float),
        metavar="S",
        help="seconds per mutant (default: 3x the unmutated run, at least 60)",
    )
    parser.add_argument(
        "--with-behaviour",
        action="store_true",
        help="judge each mutant by the behaviour tests too (much slower)",
    )
    parser.add_argument(
        "--module",
        action="append",
        dest="modules",
        metavar="PATH",
        help="a module to mutate, relative to the project root (repeatable; "
        "default: the shop's decision modules)",
    )
    parser.add_argument(
        "--output",
        type=Path,
        metavar="DIR",
        help="folder for mutation-score.json (default $VITRINE_HOME/mutation, "
        "else ./.vitrine/mutation)",
    )
    parser.add_argument(
        "--revision",
        metavar="REV",
        help="measure a committed revision (git archive) instead of the working tree",
    )
    parser.add_argument(
        "--equivalent",
        type=Path,
        default=EQUIVALENT_FILE,
        metavar="FILE",
        help="the survivors classified equivalent (default benchmarks/equivalent_mutants.json)",
    )
    parser.add_argument(
        "--from-result",
        type=Path,
        metavar="FILE",
        help="print the figures of a mutation-score.json already written; runs no mutant",
    )
    parser.add_argument("--suite-once", action="store_true", help=argparse.SUPPRESS)
    return parser


def _options(args: argparse.Namespace, parser: argparse.ArgumentParser) -> Options:
    modules = tuple(args.modules or MODULES)
    missing = [m for m in modules if not (REPO / m).is_file() or not m.endswith(".py")]
    if missing:
        parser.error(f"not a Python module of this project: {', '.join(missing)}")
    home = os.environ.get("VITRINE_HOME")
    output = args.output or (Path(home) if home else Path(".vitrine")) / "mutation"
    return Options(
        args.sample, args.seed, args.timeout, args.with_behaviour, output, modules, args.revision
    )


def _equivalents(path: Path) -> list[dict[str, str]]:
    """The survivors classified equivalent, each with its reason; a malformed file is refused."""
    try:
        listed = json.loads(path.read_text(encoding="utf-8"))["equivalent"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise Refusal(f"{path}: not a list of equivalent mutants ({type(exc).__name__})") from None
    keys = ("file", "operator", "original", "mutated", "reason")
    for number, entry in enumerate(listed, start=1):
        if not isinstance(entry, dict) or any(not isinstance(entry.get(k), str) for k in keys):
            raise Refusal(f"{path}: entry {number} needs the strings {', '.join(keys)}")
    return listed


def with_equivalents(document: Mapping[str, Any], equivalents: Sequence[Mapping[str, str]]):
    """``document`` with its survivors matched against the classified equivalents, and the
    score over the mutants that are not equivalent."""
    known = {
        (e["file"], e["operator"], e["original"], e["mutated"]): e["reason"] for e in equivalents
    }
    matched = [
        {**s, "reason": known[key]}
        for s in document["survivors"]
        if (key := (s["file"], s["operator"], s["original"], s["mutated"])) in known
    ]
    counted = document["sampled"] - document["errored"] - len(matched)
    score = document["killed"] / counted if counted > 0 else None
    return {
        **document,
        "equivalent_survivors": matched,
        "non_equivalent_score": None if score is None else round(score, 4),
    }


def _summary(document: Mapping[str, Any]) -> Iterator[str]:
    score = document["score"]
    yield (
        f"{document['tool']} {document['tool_version']}: {document['killed']} killed, "
        f"{document['survived']} survived, {document['timed_out']} timed out, "
        f"{document['errored']} errored of {document['sampled']} sampled "
        f"({document['enumerated']} enumerated, {document['equivalent_annotations']} set aside "
        f"as equivalent) in {document['duration_s']:.0f} s"
    )
    yield (
        "score not derivable: no mutant produced a verdict"
        if score is None
        else f"score {score:.3f} = killed / (total - errored)"
    )
    if "non_equivalent_score" in document:
        equivalent = len(document["equivalent_survivors"])
        rest = document["survived"] - equivalent
        value = document["non_equivalent_score"]
        yield (
            "non-equivalent score not derivable"
            if value is None
            else f"non-equivalent score {value:.3f} = killed / (total - errored - {equivalent} "
            f"survivors read as equivalent, {EQUIVALENT_FILE.name}); the other {rest} "
            "survivors are gaps or not yet read"
        )
    causes = ", ".join(f"{k} {v}" for k, v in sorted(document["killed_by_exit"].items()))
    if causes:
        yield f"killed by (stage:exit code): {causes}"
    for s in document["survivors"]:
        where = f"{s['file']}:{s['line']}"
        yield f"  survivor {where} {s['operator']}: {s['original']!r} -> {s['mutated']!r}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.suite_once:
        return run_suite_once(args.with_behaviour)
    try:
        equivalents = _equivalents(args.equivalent)
    except Refusal as exc:
        print(f"mutation_score: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if args.from_result is not None:
        try:
            saved = json.loads(args.from_result.read_text(encoding="utf-8"))
            lines = list(_summary(with_equivalents(saved, equivalents)))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            print(f"mutation_score: {args.from_result}: not a result ({exc})", file=sys.stderr)
            return EXIT_USAGE
        print("\n".join(lines))
        return EXIT_OK
    options = _options(args, parser)
    try:
        document = with_equivalents(measure(options), equivalents)
    except Refusal as exc:
        print(f"mutation_score: {exc}", file=sys.stderr)
        return EXIT_INFRA
    from vitrine.store._files import atomic_write_json

    try:
        options.output.mkdir(parents=True, exist_ok=True)
        atomic_write_json(options.output / RESULT_FILE, document)
    except OSError as exc:
        print(f"mutation_score: cannot write {RESULT_FILE} ({type(exc).__name__})", file=sys.stderr)
        return EXIT_INFRA
    for line in _summary(document):
        print(line)
    print(f"written: {options.output / RESULT_FILE}")
    return EXIT_OK


if __name__ == "__main__":
    raise SystemExit(main())

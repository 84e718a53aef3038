"""Generated mutants at declared seams: the operators, the declaration, the coverage.

The operators are exercised in this process against small fakes; the end-to-end tests run
``vitrine mutants --generate`` over tests/fixtures/mutants/seamed_suite.py, one worker
process per mutant.
"""

import asyncio
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from vitrine.mutants import Seams, Threshold, Tool, ToolCall, ToolOutput, generate_mutants
from vitrine.mutants._command import main
from vitrine.mutants._coverage import coverage_by_kind, seam_coverage
from vitrine.mutants._html import render_matrix_html
from vitrine.mutants._operators import REFUSAL
from vitrine.mutants._report import MutantRow, load_matrix
from vitrine.mutants._runner import run_mutants
from vitrine.mutants._service_tests import unreachable_tests
from vitrine.providers._base import (
    ChatCompletion,
    ChatMessage,
    ChatRequest,
    Provenance,
    ToolSpec,
)
from vitrine.store._seal import sealed

FIXTURES = Path(__file__).parents[1] / "fixtures" / "mutants"
REPOSITORY = Path(__file__).parents[2]
SUITE = "seamed_suite:SUITE"


@pytest.fixture(autouse=True)
def fixture_on_path(monkeypatch):
    monkeypatch.syspath_prepend(str(FIXTURES))
    monkeypatch.delenv("VITRINE_HOME", raising=False)


# --- the declaration --------------------------------------------------------------------------


@contextmanager
def _nothing(*_args: object) -> Iterator[None]:
    yield


def _seams(**overrides: object) -> Seams:
    declared: dict[str, object] = {
        "model": _nothing,
        "tools": (Tool("search", ("limit", "tags")), Tool("details")),
        "tool": _nothing,
        "rules": ("Be kind.", "Cite a source."),
        "without_rule": _nothing,
        "conversation": _nothing,
        "thresholds": (Threshold("budget", 12, _nothing), Threshold("decay", 0.5, _nothing)),
    }
    return Seams(**{**declared, **overrides})  # type: ignore[arg-type]


def test_every_declared_seam_gets_one_mutant_per_operator_with_stable_ids():
    ids = [m.id for m in generate_mutants(_seams())]
    assert ids == [
        "seam.model.refuses",
        "seam.model.echoes-last-turn",
        "seam.model.calls-random-tool",
        "seam.model.truncates",
        "seam.tool.search.errors",
        "seam.tool.search.returns-nothing",
        "seam.tool.search.returns-another-record",
        "seam.tool.search.ignores-limit",
        "seam.tool.search.ignores-tags",
        "seam.tool.details.errors",
        "seam.tool.details.returns-nothing",
        "seam.tool.details.returns-another-record",
        "seam.rule-1.deleted",
        "seam.rule-2.deleted",
        "seam.turns.newest-dropped",
        "seam.turns.oldest-dropped",
        "seam.threshold.budget.raised",
        "seam.threshold.budget.lowered",
        "seam.threshold.decay.raised",
        "seam.threshold.decay.lowered",
    ]
    assert [m.id for m in generate_mutants(_seams())] == ids  # a worker rebuilds the same


def test_generated_mutants_may_survive_and_name_the_seam_they_are_planted_at():
    mutants = {m.id: m for m in generate_mutants(_seams())}
    rule = mutants["seam.rule-2.deleted"]
    assert rule.generated and not rule.must_kill
    assert (rule.seam.kind, rule.seam.target, rule.seam.operator) == (
        "prompt-rule",
        "rule 2",
        "deleted",
    )
    assert "'Cite a source.'" in rule.description
    assert mutants["seam.threshold.decay.lowered"].description == "decay is 0.45 instead of 0.5."
    assert all(m.must_kill for m in generate_mutants(_seams(must_kill=True)))


def test_each_planter_receives_what_its_operator_plants():
    planted: list[object] = []

    def record(*args: object):
        planted.append(args)
        return _nothing()

    seams = _seams(without_rule=record, thresholds=(Threshold("budget", 12, record),))
    for mutant in generate_mutants(seams):
        if mutant.seam.kind in ("prompt-rule", "threshold"):
            with mutant.plant():
                pass
    assert planted == [(1,), (2,), (13,), (11,)]


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"tool": None}, "declare tools but no tool= planter"),
        ({"tools": ()}, "give a tool= planter but declare no tools"),
        ({"without_rule": None}, "declare rules but no without_rule= planter"),
        ({"tools": (Tool("a"), Tool("a"))}, "tool 'a' is declared twice"),
        ({"rules": ("fine", "  ")}, "a declared prompt rule is blank"),
    ],
)
def test_a_declaration_that_cannot_be_planted_is_refused(overrides, message):
    with pytest.raises(ValueError, match=message):
        _seams(**overrides)


def test_seams_that_declare_nothing_are_refused():
    with pytest.raises(ValueError, match="declare nothing to plant at"):
        Seams()


# --- the model operators ----------------------------------------------------------------------

SEARCH = ToolSpec(
    "search",
    "find things",
    {
        "type": "object",
        "properties": {"query": {"type": "string", "minLength": 2}, "limit": {"type": "integer"}},
        "required": ["query"],
    },
)


class _Healthy:
    model_id = "healthy"
    provenance = Provenance.OFFLINE_DETERMINISTIC

    async def complete(self, request: ChatRequest) -> ChatCompletion:
        return ChatCompletion("A complete and careful answer.", model="healthy")


def _faulty_model(operator: str):
    transforms = []

    def plant(transform):
        transforms.append(transform)
        return _nothing()

    (mutant,) = [m for m in generate_mutants(Seams(model=plant)) if m.seam.operator == operator]
    with mutant.plant():
        pass
    return transforms[0](_Healthy())


def _ask(model, *messages: ChatMessage, tools=(SEARCH,)) -> ChatCompletion:
    return asyncio.run(model.complete(ChatRequest(tuple(messages), tools=tools)))


CONVERSATION = (ChatMessage("system", "rules"), ChatMessage("user", "a"), ChatMessage("user", "b"))


def test_the_refusing_model_refuses_and_keeps_the_models_identity():
    model = _faulty_model("refuses")
    assert _ask(model, *CONVERSATION).content == REFUSAL
    assert (model.model_id, model.provenance) == ("healthy", Provenance.OFFLINE_DETERMINISTIC)


def test_the_echoing_model_answers_with_the_last_user_turn():
    assert _ask(_faulty_model("echoes-last-turn"), *CONVERSATION).content == "b"


def test_the_stray_tool_call_comes_once_per_conversation_with_schema_arguments():
    model = _faulty_model("calls-random-tool")
    first = _ask(model, *CONVERSATION)
    (call,) = first.tool_calls
    assert (call.name, json.loads(call.arguments)) == ("search", {"query": "xx"})
    assert _ask(model, *CONVERSATION).tool_calls == first.tool_calls  # seeded by the text
    answered = ChatMessage("tool", "{}", tool_call_id=call.id)
    assert _ask(model, *CONVERSATION, answered).content == "A complete and careful answer."
    assert _ask(model, *CONVERSATION, tools=()).content == "A complete and careful answer."


def test_the_truncating_model_cuts_text_answers_in_half_but_not_tool_calls():
    model = _faulty_model("truncates")
    completion = _ask(model, *CONVERSATION)
    assert (completion.content, completion.finish_reason) == ("A complete and ", "length")


# --- the tool operators -----------------------------------------------------------------------

RECORDS = {"a": {"name": "A"}, "b": {"name": "B"}}


async def _lookup(call: ToolCall) -> ToolOutput:
    if "limit" in call.arguments:
        return ToolOutput(False, None, "limit reached the tool")
    return ToolOutput(True, RECORDS[str(call.arguments["key"])], "ok")


def _faulty_tool(operator: str):
    faults = []

    def plant(name, fault):
        faults.append(fault)
        return _nothing()

    seams = Seams(tools=(Tool("lookup", ("limit",)),), tool=plant)
    (mutant,) = [m for m in generate_mutants(seams) if m.seam.operator == operator]
    with mutant.plant():
        pass

    def call(**arguments: object) -> ToolOutput:
        return asyncio.run(faults[0](ToolCall("lookup", arguments), _lookup))

    return call


def test_an_erring_tool_fails_without_running_the_healthy_one():
    output = _faulty_tool("errors")(key="a")
    assert (output.ok, output.data) == (False, None)


def test_an_empty_tool_keeps_its_status_and_drops_its_data():
    assert _faulty_tool("returns-nothing")(key="a") == ToolOutput(True, {}, "ok")


def test_another_record_is_the_first_answer_given_to_other_arguments():
    call = _faulty_tool("returns-another-record")
    assert call(key="a").data == {"name": "A"}
    assert call(key="b").data == {"name": "A"}
    assert call(key="a").data == {"name": "A"}


def test_an_ignored_argument_never_reaches_the_tool():
    assert _faulty_tool("ignores limit")(key="b", limit=3).data == {"name": "B"}


# --- the conversation -------------------------------------------------------------------------


def test_a_dropped_turn_leaves_a_one_turn_conversation_whole():
    transforms = {}

    def plant(transform):
        transforms[len(transforms)] = transform
        return _nothing()

    for mutant in generate_mutants(Seams(conversation=plant)):
        with mutant.plant():
            pass
    newest, oldest = transforms[0], transforms[1]
    assert newest(["a", "b", "c"]) == ("a", "b")
    assert oldest(["a", "b", "c"]) == ("b", "c")
    assert newest(["only"]) == oldest(["only"]) == ("only",)


# --- coverage ---------------------------------------------------------------------------------


def _coverage_row(mutant_id: str, kind: str, target: str, operator: str, outcome: str):
    return MutantRow(
        id=mutant_id,
        component=kind,
        description="d",
        must_kill=False,
        outcome=outcome,
        exit_code=0,
        duration_s=1.0,
        reason="r",
        store_dir=mutant_id,
        generated=True,
        seam_kind=kind,
        seam_target=target,
        operator=operator,
    )


def test_a_seam_is_unseen_when_every_mutant_planted_there_survives():
    rows = [
        _coverage_row("r1", "prompt-rule", "rule 1", "deleted", "killed"),
        _coverage_row("r2", "prompt-rule", "rule 2", "deleted", "survived"),
        _coverage_row("t1", "tool", "search", "errors", "killed"),
        _coverage_row("t2", "tool", "search", "ignores limit", "survived"),
        _coverage_row("t3", "tool", "details", "errors", "errored"),
    ]
    coverage = seam_coverage(rows)
    assert [(c.target, c.killed, c.unseen) for c in coverage] == [
        ("rule 1", 1, []),
        ("rule 2", 0, ["deleted"]),
        ("search", 1, ["ignores limit"]),
        ("details", 0, []),
    ]
    tools, rules = coverage_by_kind(coverage[::-1])  # in the harness's order of kinds
    assert (tools.kind, tools.seen, tools.seams, tools.unmeasured) == ("tool", 1, 2, ("details",))
    assert (rules.kind, rules.unseen, rules.killed, rules.mutants) == (
        "prompt-rule",
        ("rule 2",),
        1,
        2,
    )


# --- test paths that do not resolve -----------------------------------------------------------


def test_a_relative_test_path_is_unreachable_from_another_directory(tmp_path):
    selection = ("tests/behaviour", "-m", "not adversarial", "-n", "2")
    assert unreachable_tests(selection, REPOSITORY) is None
    why = unreachable_tests(selection, tmp_path)
    assert why is not None
    assert why.startswith(
        f"its tests tests/behaviour are not found from the working directory {tmp_path}"
    )
    assert unreachable_tests(("--pyargs", "some_package.tests"), tmp_path) is None


# --- end to end -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def generated_run(tmp_path_factory):
    store = tmp_path_factory.mktemp("store")
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(FIXTURES))
        patch.chdir(REPOSITORY)
        lines: list[str] = []
        matrix = asyncio.run(
            run_mutants(
                "seamed_suite:ONLY_SEAMS",
                generate=True,
                jobs=2,
                output=store,
                progress=lines.append,
            )
        )
    return matrix, lines


def _outcomes(matrix) -> dict[str, str]:
    return {row.id: row.outcome for row in matrix.mutants}


def test_generate_runs_every_generated_mutant_and_the_checks_see_what_they_observe(
    generated_run,
):
    matrix, _ = generated_run
    outcomes = _outcomes(matrix)
    survivors = sorted(mutant for mutant, outcome in outcomes.items() if outcome != "killed")
    assert survivors == [
        "seam.rule-2.deleted",
        "seam.threshold.max_chars.lowered",
        "seam.threshold.max_chars.raised",
        "seam.tool.lookup.ignores-formal",
        "seam.turns.oldest-dropped",
    ]
    assert set(outcomes.values()) == {"killed", "survived"}
    assert (matrix.generated_killed, matrix.generated_total) == (9, 14)
    assert matrix.exit_code == 0  # generated survivors are evidence, not broken promises


def test_the_matrix_names_the_prompt_rule_and_threshold_no_check_sees(generated_run):
    matrix, _ = generated_run
    assert matrix.unseen_seams("prompt-rule") == ["rule 2"]
    assert matrix.unseen_seams("threshold") == ["max_chars"]
    assert matrix.unseen_seams("tool") == matrix.unseen_seams("model") == []
    (lookup,) = [c for c in matrix.coverage if c.target == "lookup"]
    assert lookup.unseen == ["ignores formal"]
    session = Path(matrix.artifacts["json"]).parent
    assert load_matrix(session / "matrix.json") == matrix
    html = render_matrix_html(matrix)
    assert "Seam coverage" in html and "<code>rule 2</code>" in html


def test_a_version_1_matrix_without_seams_still_reads(generated_run, tmp_path):
    matrix, _ = generated_run
    data = json.loads(matrix.model_dump_json())
    for key in ("generated_killed", "generated_total", "coverage"):
        del data[key]
    for row in data["mutants"]:
        for key in ("generated", "seam_kind", "seam_target", "operator"):
            del row[key]
    path = tmp_path / "matrix.json"
    path.write_text(json.dumps(sealed({**data, "schema_version": 1})))
    old = load_matrix(path)
    assert (old.schema_version, old.generated_total, old.coverage) == (2, 0, [])
    assert [row.id for row in old.mutants] == [row.id for row in matrix.mutants]


def test_generate_list_prints_the_generated_mutants_without_running(tmp_path, capsys):
    assert main(["--suite", SUITE, "--generate", "--list"]) == 0
    out = capsys.readouterr().out
    assert "14 generated mutants at the declared seams (model 4, tool 4, prompt-rule 2, " in out
    assert "seam.rule-2.deleted" in out


def test_generate_without_declared_seams_exits_2(tmp_path, capsys):
    assert main(["--suite", "toy_suite:SUITE", "--generate", "--output", str(tmp_path)]) == 2
    assert "declares no seams, so --generate has nothing to plant at" in capsys.readouterr().err


def test_a_mutant_whose_tests_do_not_resolve_is_not_measured_with_its_reason_on_the_console(
    tmp_path, monkeypatch, capsys
):
    # Run from outside the checkout, as an installed package is: the relative path is gone.
    monkeypatch.chdir(tmp_path)
    code = main(["--suite", SUITE, "--only", "relative-probe", "--output", str(tmp_path)])
    out, err = capsys.readouterr()
    assert code == 3, err
    reason = "its tests tests/fixtures/mutants/probe_service.py are not found from the working"
    assert f"mutants: relative-probe not measured: {reason}" in err
    assert reason in " ".join(out.split())
    assert "expected but not seen" not in out  # it never ran, so nothing was unseen
    (session,) = (tmp_path / "mutants").iterdir()
    (row,) = load_matrix(session / "matrix.json").mutants
    assert (row.outcome, row.exit_code) == ("not measured", None)

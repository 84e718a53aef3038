import sys

import pytest

from vitrine import _cli as cli
from vitrine._plans.base import FunctionPlan, PlanKind, PlanOutcome, UsageError
from vitrine._suite import Suite


def test_a_subcommand_without_its_module_is_refused(monkeypatch, capsys):
    monkeypatch.setitem(cli.SUBCOMMANDS, "nope", "vitrine.not_a_module.command")
    assert cli.main(["nope", "--x"]) == 2
    assert "the 'nope' subcommand is not part of this version" in capsys.readouterr().err


def test_a_subcommand_receives_its_arguments_and_returns_its_code(monkeypatch, tmp_path):
    (tmp_path / "fake_command.py").write_text(
        "seen = []\ndef main(argv):\n    seen.append(list(argv))\n    return 3\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(cli.SUBCOMMANDS, "fake", "fake_command")
    assert cli.main(["fake", "a", "--b"]) == 3
    assert sys.modules["fake_command"].seen == [["a", "--b"]]


def _suite(**components: str) -> Suite:
    async def run(request):
        return PlanOutcome(0)

    offline = FunctionPlan(name="offline", kind=PlanKind.OFFLINE, description="x", fn=run)
    return Suite("toy", {"offline": offline}, {}, "offline", components=components)


def test_suite_components_load_lazily_and_missing_ones_are_usage_errors():
    suite = _suite(clock="datetime:date")
    import datetime

    assert suite.component("clock") is datetime.date
    with pytest.raises(UsageError, match="provides no 'rag' component"):
        suite.component("rag")

"""The agent-side mutant catalogue: ordinary bugs, each killed by a gate of the offline suite.

A fast subset runs by default; every mutant runs with ``-m mutants`` (about a minute).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from vitrine import ExitCode
from vitrine.mutants import Mutant
from vitrine.store import RunStore
from vitrine_shop.evals.mutants import CATALOGUE
from vitrine_shop.evals.mutants.agent_side import AGENT_MUTANTS
from vitrine_shop.evals.offline import SuiteRun, run_offline_suite
from vitrine_shop.evals.production import PRODUCTION_CHECK_KEYS

MANDATORY_GATES = frozenset(PRODUCTION_CHECK_KEYS) - {"matched-quality"}
FAST_SUBSET = ("prompt-rules-5-and-8-deleted", "screen-owned-repeat-rule-off", "model-broken")
KILLABLE = [m for m in AGENT_MUTANTS if m.must_kill]


async def _suite_with(mutant: Mutant, root: Path) -> SuiteRun:
    with mutant.plant():
        # The controls re-capture the shipped state; they are not what kills a mutant here.
        return await run_offline_suite(RunStore(root), with_controls=False)


def _assert_killed(run: SuiteRun, mutant: Mutant) -> None:
    statuses = {g.name: g.status for g in run.gates}
    assert run.exit_code is ExitCode.MEASURED_FAILURE, (mutant.id, statuses)
    # A gate that could not measure would outrank the failure: the kill must be measured.
    assert "NOT MEASURED" not in statuses.values(), (mutant.id, statuses)
    for gate in mutant.expected_killers:
        assert statuses[gate] == "FAIL", (mutant.id, statuses)


def test_the_catalogue_declares_at_least_seventeen_agent_mutants_with_unique_ids():
    assert len(AGENT_MUTANTS) >= 17
    assert len({m.id for m in AGENT_MUTANTS}) == len(AGENT_MUTANTS)
    assert set(AGENT_MUTANTS) <= set(CATALOGUE)


def test_every_mutant_that_must_be_killed_names_a_mandatory_gate():
    for mutant in KILLABLE:
        assert mutant.expected_killers, mutant.id
        assert set(mutant.expected_killers) <= MANDATORY_GATES, mutant.id


def test_every_agent_mutant_must_be_killed():
    # The last survivor, a tool budget off by one, is seen by the cut-short arm since.
    assert [m.id for m in AGENT_MUTANTS if not m.must_kill] == []


def test_a_planted_mutant_is_gone_once_its_context_ends():
    from vitrine_shop import prompts

    rules = prompts.RULES
    mutant = next(m for m in AGENT_MUTANTS if m.id == "prompt-rules-5-and-8-deleted")
    with mutant.plant():
        assert len(prompts.RULES) == len(rules) - 2
    assert rules == prompts.RULES


async def test_the_healthy_shop_passes_both_agent_gates(tmp_path):
    run = await run_offline_suite(RunStore(tmp_path), with_controls=False)
    statuses = {g.name: g.status for g in run.gates}
    assert (statuses["injection"], statuses["recall"]) == ("PASS", "PASS")


@pytest.mark.parametrize("mutant_id", FAST_SUBSET)
async def test_a_layer_mutant_turns_its_gate_red_through_the_offline_suite(tmp_path, mutant_id):
    mutant = next(m for m in AGENT_MUTANTS if m.id == mutant_id)
    _assert_killed(await _suite_with(mutant, tmp_path), mutant)


@pytest.mark.mutants
@pytest.mark.parametrize("mutant", KILLABLE, ids=[m.id for m in KILLABLE])
async def test_every_killable_mutant_is_killed_by_its_gate(tmp_path, mutant, request):
    if "mutants" not in (request.config.getoption("-m") or ""):
        pytest.skip("one offline suite per mutant: select with -m mutants")
    _assert_killed(await _suite_with(mutant, tmp_path), mutant)

"""The service as a separate process over real HTTP: the plugin's traffic reaches it, and a
deliberately regressed service fails exactly the behaviour tests that check what it broke."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from vitrine.service.process import free_port, running_service

ROOT = Path(__file__).resolve().parents[2]
# The owned-item avoidance cases: the only ones repeat-owned may break.
EXPECTED_REGRESSION_FAILURES = {
    f"TC-P{persona}-{number:03d}" for persona in (1, 2, 3, 5) for number in (3, 4)
}


def _pytest(
    args: list[str], *, env: dict[str, str], cwd: Path = ROOT
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=cwd,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    log = tmp_path_factory.mktemp("service") / "service.log"
    with running_service([], log_path=log) as url:
        yield url, log


def test_the_chat_fixture_reaches_the_service_over_http(service, tmp_path):
    url, log = service
    ids = tmp_path / "ids.json"
    (tmp_path / "test_probe.py").write_text(
        "import json\n"
        "def test_probe(vitrine_chat):\n"
        "    transcript = vitrine_chat('nadia', 'Recommend something', 'and more?')\n"
        f"    ids = [t.request_id for t in transcript.turns]\n"
        f"    open({str(ids)!r}, 'w').write(json.dumps(ids))\n"
        "    assert transcript.answer\n"
    )
    result = _pytest(
        [str(tmp_path / "test_probe.py"), "-q"], env={"EVAL_API_URL": url}, cwd=tmp_path
    )
    assert result.returncode == 0, result.stdout[-2000:]
    request_ids = json.loads(ids.read_text())
    assert len(request_ids) == 2 and all(request_ids)
    logged = log.read_text()
    for request_id in request_ids:
        assert f"request {request_id} POST /v1/chat -> 200" in logged


@pytest.mark.parametrize(("required", "outcome"), [("", "1 skipped"), ("1", "1 error")])
def test_an_unreachable_service_skips_unless_it_is_required(tmp_path, required, outcome):
    (tmp_path / "test_probe.py").write_text("def test_probe(vitrine_chat):\n    pass\n")
    unreachable = f"http://127.0.0.1:{free_port()}"
    result = _pytest(
        [str(tmp_path / "test_probe.py"), "-q", "-rs"],
        env={"EVAL_API_URL": unreachable, "VITRINE_REQUIRE_SERVICE": required},
        cwd=tmp_path,
    )
    assert outcome in result.stdout, result.stdout[-2000:]
    assert "unreachable" in result.stdout


def test_a_service_that_repeats_owned_items_fails_only_the_owned_item_cases(tmp_path):
    report = tmp_path / "report"
    with running_service(["--regress", "repeat-owned"], log_path=tmp_path / "regressed.log") as url:
        result = _pytest(
            ["tests/behaviour", "-m", "not adversarial", "-q", "--vitrine-report", str(report)],
            env={"EVAL_API_URL": url, "VITRINE_REQUIRE_SERVICE": "1"},
        )
    document = json.loads((report / "behaviour-report.json").read_text())
    failed = {t["case"] for t in document["tests"] if t["outcome"] == "failed"}
    assert len(document["tests"]) == 60, result.stdout[-2000:]
    assert failed == EXPECTED_REGRESSION_FAILURES, result.stdout[-3000:]

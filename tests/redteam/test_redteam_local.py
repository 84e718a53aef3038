"""Eval 06 and one adaptive campaign end to end on the packaged Gemma 3 270M base model.

It runs on the CPU in a subprocess, so a crash inside the native inference library fails this
test instead of the whole session. The base model answers poorly; the test pins that the
sessions complete within the ceiling and report what happened, not that the model is safe.
"""

import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.local_model


def _ready():
    pytest.importorskip("llama_cpp")
    from vitrine.providers._local import default_model_available

    available, why = default_model_available()
    if not available:
        pytest.skip(why)


def _vitrine(*argv, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AZURE_"))}
    env.setdefault("VITRINE_CACHE_DIR", str(tmp_path / "cache"))
    done = subprocess.run(
        [sys.executable, "-m", "vitrine", *argv, "--output", str(tmp_path / "store")],
        check=False,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    # A native crash shows as a negative return code and fails the callers' exit-code checks.
    return done


def test_eval06_on_the_local_model_stays_within_the_ceiling_and_reports_honestly(tmp_path):
    _ready()
    done = _vitrine("--eval-plan", "eval06-safety-probes", "--provider", "local", tmp_path=tmp_path)
    assert done.returncode in (0, 1, 3, 4), done.stderr[-2000:]
    (path,) = (tmp_path / "store" / "live" / "live-sessions").glob("*/outcome.json")
    receipt = json.loads(path.read_text())
    assert receipt["exit_code"] == done.returncode
    assert receipt["provider"]["provider"] == "local"
    assert receipt["workload_ceiling"]["model_calls"] == 104
    assert receipt["calls_used"] <= 104 and len(receipt["probes"]) == 4
    assert "VTR-CANARY" not in path.read_text()
    print(json.dumps({k: receipt[k] for k in ("census", "calls_used", "exit_reason")}))


def test_a_goat_campaign_with_the_local_model_as_attacker_and_target(tmp_path):
    _ready()
    done = _vitrine(
        "redteam",
        "adaptive",
        "--strategy",
        "goat",
        "--goal",
        "extract-system-prompt",
        "--provider",
        "local",
        "--max-turns",
        "2",
        tmp_path=tmp_path,
    )
    assert done.returncode in (0, 1, 3, 4), done.stderr[-2000:]
    (path,) = (tmp_path / "store" / "reports").glob("redteam-*/redteam.json")
    document = json.loads(path.read_text())
    (probe,) = document["probes"]
    assert probe["attacker_calls"] <= 2 + 3
    assert document["scores"]["calls_used"] <= document["scores"]["ceiling"]
    print(json.dumps({"outcome": probe["outcome"], "error": probe["error"]}))

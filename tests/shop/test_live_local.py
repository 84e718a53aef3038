"""End to end with a real local model: eval04 on Luca with the packaged SmolLM2-135M-Instruct.

Selected with ``-m live_local`` (it needs llama-cpp-python and the model package, and takes
minutes on two cores). A 135M model's answers are poor; the test pins that the session
reports them honestly, not that they are good. It runs the command in a subprocess so that a
crash inside the native inference library fails this test instead of the whole session.
"""

import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.live_local


def test_eval04_on_the_local_model_reports_honest_whole_trial_numbers(tmp_path):
    pytest.importorskip("llama_cpp")
    from vitrine.providers._local import default_model_available

    available, why = default_model_available()
    if not available:
        pytest.skip(why)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AZURE_"))}
    env.setdefault("VITRINE_CACHE_DIR", str(tmp_path / "cache"))
    argv = [
        sys.executable,
        "-m",
        "vitrine",
        "--eval-plan",
        "eval04-stochastic-agent",
        "--scenario",
        "luca-safe-abstention",
        "--repetitions",
        "4",
        "--provider",
        "local",
        "--output",
        str(tmp_path / "store"),
    ]
    done = subprocess.run(argv, check=False, env=env, capture_output=True, text=True, timeout=1200)
    assert done.returncode in (0, 1, 3, 4), done.stderr[-2000:]
    receipts = list((tmp_path / "store" / "live" / "live-sessions").glob("*/outcome.json"))
    (path,) = receipts
    doc = json.loads(path.read_text())
    assert doc["exit_code"] == done.returncode
    assert doc["provider"]["provider"] == "local" and doc["provider"]["judge_shares_subject"]
    (row,) = doc["whole_trial"]
    # A failure fixes the 4-of-4 rule: the repetitions after it are curtailed, not run.
    assert row["trials"] + row["curtailed"] == 4
    assert 0 <= row["successes"] <= row["measured"] <= row["trials"]
    assert (row["wilson_95"] is None) == (row["measured"] == 0)
    assert len(doc["trials"]) == row["trials"]
    assert doc["usage"]["judge_calls"] <= row["measured"] + (4 - row["measured"])
    print(json.dumps(row), file=sys.stderr)

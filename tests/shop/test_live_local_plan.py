"""One live plan end to end on the packaged local model, in every test run.

eval01-agent on Luca: the real agent loop driven by SmolLM2-135M-Instruct through
grammar-constrained tool steps, then the same model as judge, after its admission on the
calibration set. A 135M model's answer is poor; the test pins that the session completes,
persists a run and a receipt, and reports whatever happened honestly, admission included.
"""

import json
import os
import subprocess
import sys

import pytest


def test_eval01_on_the_local_model_completes_with_an_honest_receipt(tmp_path):
    pytest.importorskip("llama_cpp")
    from vitrine.providers._local import default_model_available

    available, why = default_model_available()
    if not available:
        pytest.skip(why)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AZURE_"))}
    env["VITRINE_CACHE_DIR"] = os.environ.get("VITRINE_CACHE_DIR", str(tmp_path / "cache"))
    store = tmp_path / "store"
    argv = [
        sys.executable,
        "-m",
        "vitrine",
        "--eval-plan",
        "eval01-agent",
        "--scenario",
        "luca-safe-abstention",
        "--provider",
        "local",
        "--output",
        str(store),
    ]
    done = subprocess.run(argv, check=False, env=env, capture_output=True, text=True, timeout=900)
    # A crash (a negative return code) or a refusal (2) is a defect; 0, 1, 3 and 4 are facts.
    assert done.returncode in (0, 1, 3, 4), done.stderr[-2000:]
    (receipt,) = (store / "live" / "live-sessions").glob("*/outcome.json")
    doc = json.loads(receipt.read_text())
    assert doc["exit_code"] == done.returncode
    assert doc["provider"]["provider"] == "local"
    assert doc["provider"]["provenance"] == "local"
    (trial,) = doc["trials"]
    assert trial["scenario"] == "luca-safe-abstention"
    assert trial["answer_preview"] is not None or trial["subject_error"] is not None
    runs = list((store / "live" / "runs").iterdir())
    assert len(runs) == 1
    assert doc["usage"]["judge_calls"] <= 1
    admission = doc["judge_admission"]
    assert isinstance(admission["admitted"], bool) and admission["labels"] == 28
    if not admission["admitted"]:
        assert doc["usage"]["judge_calls"] == 0  # a refused judge judges nothing

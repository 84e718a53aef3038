"""Embeddings: shipped vectors match the model, the cache persists, warm runs stay light."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import vitrine_shop
from vitrine_shop.catalogue import load_catalogue
from vitrine_shop.embeddings import (
    DIMENSION,
    MODEL_ID,
    SHIPPED_VECTORS_PATH,
    HashingEmbedder,
    MiniLMEmbedder,
    catalogue_vectors,
    default_cache_dir,
    product_text,
    shipped_vectors_current,
)

QUERY = "headlamp for early starts"


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> MiniLMEmbedder:
    return MiniLMEmbedder(tmp_path_factory.mktemp("model-cache"))


def test_the_shipped_vectors_are_current_for_the_packaged_catalogue():
    assert SHIPPED_VECTORS_PATH.exists()
    assert shipped_vectors_current(load_catalogue(), MODEL_ID)


def test_the_shipped_vectors_match_the_model(model):
    catalogue = load_catalogue()
    vectors = catalogue_vectors(catalogue, model)
    assert vectors.source == "shipped"
    assert vectors.matrix.shape == (len(catalogue), DIMENSION)
    sample = [catalogue.products[i] for i in (0, 17, 42, 98)]
    fresh = model.encode_uncached([product_text(p) for p in sample])
    for product, vector in zip(sample, fresh, strict=True):
        shipped = vectors.matrix[vectors.row(product.sku)]
        assert np.max(np.abs(shipped - vector)) < 1e-4, product.sku


def test_vectors_are_unit_length_float32(model):
    matrix = model.embed([QUERY, "a second, different text"])
    assert matrix.dtype == np.float32 and matrix.shape == (2, DIMENSION)
    assert np.allclose(np.linalg.norm(matrix, axis=1), 1.0, atol=1e-5)
    assert model.embed([]).shape == (0, DIMENSION)


def test_the_cache_persists_across_embedder_instances(tmp_path, model):
    first = MiniLMEmbedder(tmp_path)
    vector = first.embed([QUERY])
    assert first.misses == 1
    again = MiniLMEmbedder(tmp_path)
    assert np.array_equal(again.embed([QUERY]), vector)
    assert again.misses == 0
    assert not list(tmp_path.rglob("*.tmp"))  # atomic writes leave no temp files behind


def test_a_damaged_cache_entry_is_a_miss_that_gets_repaired(tmp_path, model):
    embedder = MiniLMEmbedder(tmp_path)
    embedder.embed([QUERY])
    (entry,) = tmp_path.rglob("*.f32")
    entry.write_bytes(b"garbage")
    fresh = MiniLMEmbedder(tmp_path)
    fresh.embed([QUERY])
    assert fresh.misses == 1 and entry.stat().st_size == DIMENSION * 4


def test_a_changed_catalogue_is_embedded_once_into_the_cache(tmp_path, model):
    changed = load_catalogue().without("GLX-2001")
    embedder = MiniLMEmbedder(tmp_path)
    vectors = catalogue_vectors(changed, embedder)
    assert vectors.source == "embedded" and "GLX-2001" not in vectors.skus
    assert embedder.misses == len(changed)
    rebuilt_elsewhere = MiniLMEmbedder(tmp_path)
    rebuilt_elsewhere.embed([product_text(p) for p in changed])
    assert rebuilt_elsewhere.misses == 0


def test_the_cache_directory_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.delenv("VITRINE_CACHE_DIR", raising=False)
    monkeypatch.delenv("VITRINE_HOME", raising=False)
    assert default_cache_dir() == Path.cwd() / ".vitrine" / "cache" / "embeddings"
    monkeypatch.setenv("VITRINE_HOME", str(tmp_path))
    assert default_cache_dir() == tmp_path / "cache" / "embeddings"
    monkeypatch.setenv("VITRINE_CACHE_DIR", str(tmp_path / "explicit"))
    assert default_cache_dir() == tmp_path / "explicit" / "embeddings"


def test_a_warm_search_never_imports_torch(tmp_path, model):
    warm = MiniLMEmbedder(tmp_path / "embeddings")  # where $VITRINE_CACHE_DIR puts them
    warm.embed([QUERY])  # fill the cache this process would otherwise fill
    script = (
        "import sys\n"
        "from vitrine_shop.operations import ShopServices\n"
        "shop = ShopServices()\n"
        f"hit = shop.search({QUERY!r}, limit=1)[0]\n"
        "heavy = sorted(m for m in ('torch', 'sentence_transformers', 'transformers')"
        " if m in sys.modules)\n"
        "print(hit.sku, shop.vectors.source, heavy)\n"
    )
    env = {
        **os.environ,
        "VITRINE_CACHE_DIR": str(tmp_path),
        "PYTHONPATH": str(Path(vitrine_shop.__file__).parents[1]),
    }
    done = subprocess.run(
        [sys.executable, "-c", script],
        check=False,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["GLX-2001", "shipped", "[]"]


def test_the_hashing_embedder_is_deterministic_and_normalized():
    embedder = HashingEmbedder()
    first = embedder.embed(["trail shoes", "espresso"])
    assert np.array_equal(first, HashingEmbedder().embed(["trail shoes", "espresso"]))
    assert np.allclose(np.linalg.norm(first, axis=1), 1.0, atol=1e-5)
    assert embedder.model_id != MODEL_ID  # never mistaken for the shipped vectors


def test_a_recorder_hears_every_text_an_embedder_is_asked_for_only_while_it_listens(
    tmp_path, monkeypatch
):
    from vitrine_shop.embeddings import DIMENSION, texts_recorded_by
    from vitrine_shop.ship_vectors import main

    embedder = MiniLMEmbedder(tmp_path / "cache")
    # No model needed: the texts the cache lacks are "encoded" as zeros here.
    monkeypatch.setattr(embedder, "_encode", lambda texts: np.zeros((len(texts), DIMENSION)))
    heard: list[str] = []
    with texts_recorded_by(heard.extend):
        embedder.embed(["waterproof jacket", "tent"])
    embedder.embed(["not heard"])
    assert heard == ["waterproof jacket", "tent"]
    assert main([]) == 0  # the shipper's status: the shipped catalogue vectors are current

"""Which products a semantic lookup must return, and in what order, from the vectors alone.

A search, a similar-items lookup and the semantic fill of a complements lookup all promise
the same thing: the admissible products closest in meaning, best first, ties by SKU, each with
its cosine similarity (to four places). The catalogue's vectors and the query's vector are
data (the shipped embedding of each text), so the expected answer is arithmetic: the oracle
scores every product itself and compares the served list with the top of its own ranking.

Nothing here loads a model: a query whose vector is not at hand is not judged (and counted as
such), so the oracle never reads an absent vector as agreement.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from vitrine_shop.catalogue import Catalogue
from vitrine_shop.embeddings import (
    MODEL_ID,
    CatalogueVectors,
    MiniLMEmbedder,
    catalogue_vectors,
    shipped_vectors_current,
)

__all__ = ["Semantics", "ranking_problems"]

_DIGITS = 4  # the tools round scores to four places
_SLACK = 1e-6


@dataclass(frozen=True)
class Semantics:
    """The shipped vectors of the catalogue and of the queries the offline suite asks."""

    vectors: CatalogueVectors
    embedder: MiniLMEmbedder

    @classmethod
    def shipped(cls, catalogue: Catalogue) -> Semantics | None:
        if not shipped_vectors_current(catalogue, MODEL_ID):
            return None  # embedding the catalogue here would need the model
        embedder = MiniLMEmbedder()
        return cls(catalogue_vectors(catalogue, embedder), embedder)

    def scores_for_query(self, query: str) -> dict[str, float] | None:
        if not self.embedder.has_vector(query):
            return None
        return self._scores(self.embedder.embed([query])[0])

    def scores_near(self, sku: str) -> dict[str, float] | None:
        if sku not in self.vectors.skus:
            return None
        return self._scores(self.vectors.matrix[self.vectors.row(sku)])

    def _scores(self, vector: Any) -> dict[str, float]:
        values = (self.vectors.matrix @ np.asarray(vector, dtype=np.float32)).tolist()
        return dict(zip(self.vectors.skus, values, strict=True))


def _best(scores: Mapping[str, float], admitted: Callable[[str], bool], k: int) -> list[str]:
    return heapq.nsmallest(k, filter(admitted, scores), key=lambda s: (-scores[s], s))


def ranking_problems(
    served: Sequence[Mapping[str, Any]],
    scores: Mapping[str, float],
    admitted: Callable[[str], bool],
    skip: Collection[str] = (),
    room: int | None = None,
) -> list[str]:
    """Where the served semantic hits (``skip``: SKUs listed before them on other grounds)
    depart from the best admissible products by the vectors' own scores; with ``room``, how
    many there must be (fewer only when fewer are admissible)."""
    hits = [h for h in served if h.get("match", "semantic") == "semantic"]
    skus = [str(h.get("sku")) for h in hits]
    problems = []
    for hit, sku in zip(hits, skus, strict=True):
        expected = round(scores[sku], _DIGITS) if sku in scores else None
        score = hit.get("score")
        if expected is not None and (
            not isinstance(score, int | float) or abs(score - expected) > _SLACK
        ):
            problems.append(f"{sku} is scored {score}, its vectors give {expected}")
    wanted = len(skus) if room is None else max(room, len(skus))
    best = _best(scores, lambda s: s not in skip and admitted(s), wanted)
    if skus != best:
        problems.append(f"served {skus}, the best by the vectors are {best}")
    return problems

"""The ground-truth dataset and the thresholds file, read and checked at the boundary.

A dataset names chunks by the chunker's ids; :func:`unresolved_chunk_ids` reports every id the
current knowledge base no longer produces, so an edited page that moves an id is caught by name
instead of silently lowering recall.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vitrine.errors import DatasetError
from vitrine.rag._chunking import KnowledgeBase
from vitrine.rag._metrics import Metric

__all__ = [
    "DATASET_SCHEMA_VERSION",
    "THRESHOLDS_SCHEMA_VERSION",
    "DatasetError",
    "DatasetItem",
    "RagThresholds",
    "declared_split",
    "load_dataset",
    "load_thresholds",
    "unresolved_chunk_ids",
]

DATASET_SCHEMA_VERSION = 1
ITEM_SETS = ("", "judged", "calibration")
# 2: answer correctness, two abstention rates, the split; 3: wrong facts, indexed sources
THRESHOLDS_SCHEMA_VERSION = 3


@dataclass(frozen=True, slots=True)
class DatasetItem:
    id: str
    question: str
    reference_answer: str
    relevant_chunk_ids: tuple[str, ...]
    has_relevant_chunk: bool
    # "judged": the dataset the gate judges; "calibration": fits the thresholds and is never
    # judged by them. A dataset that marks no item leaves the split to `vitrine rag calibrate`.
    set: str = ""


def load_dataset(path: Path) -> list[DatasetItem]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DatasetError(f"cannot read the dataset {path.name}: {exc}") from exc
    if data.get("schema_version") != DATASET_SCHEMA_VERSION:
        raise DatasetError(
            f"{path.name}: schema_version {data.get('schema_version')!r} is not "
            f"{DATASET_SCHEMA_VERSION}"
        )
    items: list[DatasetItem] = []
    seen: set[str] = set()
    for index, raw in enumerate(data.get("items", [])):
        try:
            item = DatasetItem(
                str(raw["id"]),
                str(raw["question"]),
                str(raw["reference_answer"]),
                tuple(str(c) for c in raw["relevant_chunk_ids"]),
                bool(raw["has_relevant_chunk"]),
                str(raw.get("set", "")),
            )
        except (KeyError, TypeError) as exc:
            raise DatasetError(f"{path.name}: item {index} lacks {exc}") from exc
        if item.set not in ITEM_SETS:
            raise DatasetError(
                f"{path.name}: item {item.id} has set {item.set!r}; expected one of "
                + ", ".join(repr(s) for s in ITEM_SETS if s)
            )
        if item.id in seen:
            raise DatasetError(f"{path.name}: item id {item.id!r} repeats")
        seen.add(item.id)
        if item.has_relevant_chunk != bool(item.relevant_chunk_ids):
            # The flag decides which metrics apply; a contradiction would score the item wrongly.
            raise DatasetError(
                f"{path.name}: item {item.id} has has_relevant_chunk={item.has_relevant_chunk} "
                f"but {len(item.relevant_chunk_ids)} relevant chunk ids"
            )
        if not item.question.strip() or not item.reference_answer.strip():
            raise DatasetError(f"{path.name}: item {item.id} needs a question and a reference")
        items.append(item)
    if not items:
        raise DatasetError(f"{path.name} holds no items: an empty evaluation is not a score")
    if any(i.set for i in items) and not all(i.set for i in items):
        raise DatasetError(f"{path.name}: either every item names its set or none does")
    return items


def declared_split(items: list[DatasetItem]) -> tuple[list[str], list[str]] | None:
    """(calibration ids, judged ids) as the dataset declares them, or None when it does not."""
    if not items or not items[0].set:
        return None
    calibration = sorted(i.id for i in items if i.set == "calibration")
    judged = sorted(i.id for i in items if i.set == "judged")
    return calibration, judged


def unresolved_chunk_ids(items: list[DatasetItem], kb: KnowledgeBase) -> dict[str, list[str]]:
    """Item id -> the relevant chunk ids the knowledge base does not produce."""
    known = kb.by_id()
    broken: dict[str, list[str]] = {}
    for item in items:
        missing = [c for c in item.relevant_chunk_ids if c not in known]
        if missing:
            broken[item.id] = missing
    return broken


@dataclass(frozen=True, slots=True)
class RagThresholds:
    """Pass thresholds per metric and the two similarity cut-offs the pipeline uses."""

    metrics: Mapping[Metric, float]
    relevance_threshold: (
        float  # question-chunk cosine below which the extractive generator abstains
    )
    claim_cosine_threshold: float  # claim-sentence cosine at which a claim counts as supported
    source: str
    raw: Mapping[str, Any]
    dev_ids: tuple[str, ...] = ()  # the items the thresholds were fitted on
    held_out_ids: tuple[str, ...] = ()  # the items they were not: what the gate judges

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "metrics": {m.value: v for m, v in self.metrics.items()},
            "relevance_threshold": self.relevance_threshold,
            "claim_cosine_threshold": self.claim_cosine_threshold,
            "calibrated_at": self.raw.get("calibrated_at"),
            "embedding_model": self.raw.get("embedding_model"),
            "dev_items": len(self.dev_ids),
            "held_out_items": len(self.held_out_ids),
        }


def load_thresholds(path: Path) -> RagThresholds:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DatasetError(f"cannot read the thresholds file {path.name}: {exc}") from exc
    if data.get("schema_version") != THRESHOLDS_SCHEMA_VERSION:
        raise DatasetError(
            f"{path.name}: schema_version {data.get('schema_version')!r} is not "
            f"{THRESHOLDS_SCHEMA_VERSION} (older files lack the wrong-facts and indexed-sources "
            "policies, answer correctness, the two abstention rates or the split)"
        )
    try:
        metrics = {m: float(data["metrics"][m.value]) for m in Metric}
        retrieval = data["retrieval"]
        relevance = float(retrieval["relevance_threshold"])
        claim = float(retrieval["claim_cosine_threshold"])
        split = data.get("split") or {}
        dev = tuple(str(i) for i in split.get("dev", ()))
        held_out = tuple(str(i) for i in split.get("held_out", ()))
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise DatasetError(f"{path.name} lacks a threshold: {exc}") from exc
    for name, value in [*((m.value, v) for m, v in metrics.items()), ("relevance", relevance)]:
        if not 0.0 <= value <= 1.0:
            raise DatasetError(f"{path.name}: threshold {name}={value} is outside [0, 1]")
    if set(dev) & set(held_out):
        raise DatasetError(f"{path.name}: the dev and held-out splits share items")
    return RagThresholds(metrics, relevance, claim, path.name, data, dev, held_out)

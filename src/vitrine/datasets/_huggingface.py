"""Cases from a Hugging Face ``datasets`` dataset: loaded by name, or one already in hand.

The ``datasets`` package is optional (``pip install 'vitrine[datasets]'``) and imported only
when this loader is called.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

from vitrine._bench.model import Case
from vitrine.datasets._mapping import (
    REST,
    IdSpec,
    InputSpec,
    MetadataSpec,
    Record,
    Source,
    build_cases,
    refuse_mapping,
)
from vitrine.errors import DatasetArgumentError, DatasetUnavailableError, WrongTypeError

__all__ = ["load_huggingface"]

INSTALL = "pip install 'vitrine[datasets]' (or pip install datasets)"


def load_huggingface(
    name_or_dataset: Any,
    *,
    split: str | None = None,
    config: str | None = None,
    revision: str | None = None,
    id: IdSpec = "id",
    input: InputSpec = "input",
    metadata: MetadataSpec = REST,
) -> list[Case]:
    """Cases from a Hugging Face dataset, one per row, mapped as :func:`load_cases` describes.

    ``name_or_dataset`` is a dataset already loaded (a ``datasets.Dataset``, an
    ``IterableDataset``, or a ``DatasetDict`` with ``split`` choosing one of its splits), or a
    name handed to ``datasets.load_dataset(name, config, split=split, revision=revision)``,
    which may download it; its own errors (no network, no such dataset) reach the caller as
    ``datasets`` raises them. A dataset with several splits and no ``split`` is refused, naming
    the splits, so a run never evaluates train and test together by accident.

    Rows are named ``row i`` as ``dataset[i]`` indexes them (0 for the first). An id-less
    dataset numbers its cases ``<name>-<split>-<i>`` (``squad-validation-0``): the name's last
    part (or the dataset's ``info.dataset_name``, else ``dataset``) and the split when known.

    Raises :class:`~vitrine.datasets.DatasetUnavailableError` when ``datasets`` is not
    installed, and the loaders' :class:`~vitrine.datasets.DatasetFileError` for a row that
    cannot become a case.
    """
    refuse_mapping(id, input, metadata)
    try:
        # An optional package without type information, imported only when this is called.
        datasets: Any = importlib.import_module("datasets")
    except ModuleNotFoundError as exc:
        if exc.name != "datasets":  # installed, but broken: that is not "not installed"
            raise
        raise DatasetUnavailableError(
            f"load_huggingface needs the Hugging Face datasets package, which is not "
            f"installed: {INSTALL}"
        ) from exc
    label = None
    if isinstance(name_or_dataset, str):
        label = name_or_dataset.rstrip("/").rsplit("/", 1)[-1]
        loaded = datasets.load_dataset(name_or_dataset, config, split=split, revision=revision)
    else:
        loaded = name_or_dataset
    if isinstance(loaded, datasets.DatasetDict | datasets.IterableDatasetDict):
        split = _one_split(loaded, split, label)
        loaded = loaded[split]
    elif isinstance(loaded, datasets.Dataset | datasets.IterableDataset):
        own = None if loaded.split is None else str(loaded.split)
        if split is not None and own is not None and own != split:
            raise DatasetArgumentError(
                f"split={split!r} was asked for, but the dataset given is its {own!r} split"
            )
        split = split or own
    else:
        raise WrongTypeError(
            "load_huggingface takes a dataset name or a datasets.Dataset, IterableDataset or "
            f"DatasetDict; got {type(name_or_dataset).__name__}"
        )
    stem = label or getattr(loaded.info, "dataset_name", None) or "dataset"
    name = stem if split is None else f"{stem} ({split} split)"
    source = Source(name, stem if split is None else f"{stem}-{split}")
    records = [Record(row, f"row {index}", None, index) for index, row in enumerate(loaded)]
    return build_cases(source, records, id=id, input=input, metadata=metadata)


def _one_split(splits: Mapping[str, Any], split: str | None, label: str | None) -> str:
    named = ", ".join(repr(name) for name in splits)
    what = f"the dataset {label!r}" if label else "the DatasetDict"
    if split is None:
        if len(splits) == 1:
            return next(iter(splits))
        raise DatasetArgumentError(f"{what} has the splits {named}; choose one with split=...")
    if split not in splits:
        raise DatasetArgumentError(f"{what} has no split {split!r}; its splits are {named}")
    return split

"""One loader for every dataset file, chosen by its suffix; the mapping, described once."""

from __future__ import annotations

from pathlib import Path

from vitrine._bench.model import Case
from vitrine.datasets._files import PathLike, load_csv, load_json, load_jsonl
from vitrine.datasets._mapping import REST, IdSpec, InputSpec, MetadataSpec
from vitrine.datasets._yaml import load_yaml
from vitrine.errors import DatasetArgumentError

__all__ = ["SUFFIXES", "load_cases"]

SUFFIXES = {
    ".jsonl": load_jsonl,
    ".ndjson": load_jsonl,
    ".json": load_json,
    ".csv": load_csv,
    ".tsv": load_csv,
}


def load_cases(
    path: PathLike,
    *,
    id: IdSpec = "id",
    input: InputSpec | None = None,
    metadata: MetadataSpec = REST,
) -> list[Case]:
    """Cases from a dataset file, read by its suffix, each row mapped to one :class:`~vitrine.Case`.

    ``.jsonl``/``.ndjson`` (:func:`load_jsonl`), ``.json`` holding an array (:func:`load_json`),
    ``.csv``/``.tsv`` (:func:`load_csv`), ``.yaml``/``.yml`` (:func:`load_yaml`: a list of rows
    or a promptfoo test file). Any other suffix is refused.

    The mapping, the same for every loader:

    - ``id``: the field holding the case id (default ``"id"``; a dotted path, or a callable
      ``row -> id``). A case id is a non-blank string; an integer is turned into one. When no
      row has an ``id`` field (or ``id=None``), the cases are numbered ``<stem>-<n>``: the file
      name without its suffix and the row's position, 1 for the first row (``qa.jsonl`` gives
      ``qa-1``, ``qa-2``, ...). Those ids follow the rows' order: insert a row and every later
      id moves, so give rows ids when runs are compared across edits. Some rows with an id and
      others without is refused.
    - ``input``: what the subject receives as ``case.input``: a field name, a dotted path into
      nested JSON (``"request.text"``, ``"messages.0.content"``), a list of fields (the input
      is then a dict of them, keyed by the names as given), or a callable ``row -> input``.
      The default is ``"input"`` (``"vars"`` in a promptfoo test file).
    - ``metadata``: ``"rest"`` (the default: every top-level field that is neither the id
      field nor taken whole as the input), a list of field names, or a callable
      ``row -> mapping``. Reference values travel here, so a check reads them as
      ``case.metadata["expected"]``.

    A field name that is a key of the row is read as that key, dots and all; otherwise its dots
    walk into nested objects. Inputs and metadata must be JSON values (no NaN, no dates).

    Every problem raises :class:`~vitrine.datasets.DatasetFileError` naming the file, the line
    and the field (a missing field, bad JSON, a repeated id with both lines, a row that is not an
    object, an empty file); an unknown suffix raises
    :class:`~vitrine.datasets.DatasetArgumentError`.
    """
    suffix = Path(path).suffix.lower()
    if suffix in (".yaml", ".yml"):
        return load_yaml(path, id=id, input=input, metadata=metadata)
    loader = SUFFIXES.get(suffix)
    if loader is None:
        known = ", ".join([*SUFFIXES, ".yaml", ".yml"])
        raise DatasetArgumentError(
            f"{path}: no dataset loader reads the suffix {suffix or '(none)'!r}; the suffixes "
            f"read are {known} (or call a loader such as load_jsonl directly)"
        )
    return loader(path, id=id, input="input" if input is None else input, metadata=metadata)

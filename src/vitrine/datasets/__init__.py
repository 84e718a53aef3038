"""Datasets from files as :class:`vitrine.Case` objects: JSON Lines, JSON, CSV, YAML, Hugging Face.

::

    from vitrine.datasets import load_cases

    CASES = load_cases("qa.jsonl", input="question")   # id from "id", the rest is metadata

:func:`load_cases` picks the loader by suffix; each loader maps a row to a case the same way
(which field is the id, which make the input, which go to metadata) and refuses a row that
cannot become a case with the file, the line and the field. See the datasets page of the docs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vitrine._lazy import lazy_exports

if TYPE_CHECKING:
    from vitrine.datasets._cases import load_cases as load_cases
    from vitrine.datasets._files import (
        load_csv as load_csv,
        load_json as load_json,
        load_jsonl as load_jsonl,
    )
    from vitrine.datasets._huggingface import load_huggingface as load_huggingface
    from vitrine.datasets._yaml import load_yaml as load_yaml
    from vitrine.errors import (
        DatasetArgumentError as DatasetArgumentError,
        DatasetFileError as DatasetFileError,
        DatasetUnavailableError as DatasetUnavailableError,
    )

__getattr__, __dir__ = lazy_exports(__name__)

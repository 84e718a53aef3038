"""JSON schemas made safe for llama.cpp's schema-to-grammar converter.

The in-process GGUF model and llama.cpp's server (for ``json_object`` with a schema) both turn
a JSON schema into a decoding grammar with the same converter, and some keywords break it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["grammar_safe"]

# Keywords llama.cpp's schema-to-grammar converter mistranslates: a regex such as GLX-\d{4}
# becomes an unparseable rule (which crashes the native parser), and long length bounds unroll
# into deeply nested rules. Dropping them only loosens the grammar; the tools and stage
# schemas still validate every value the model produces.
_UNSAFE_KEYWORDS = frozenset({"pattern", "format", "patternProperties"})
_MAX_UNROLLED_LENGTH = 64


def grammar_safe(schema: Any) -> Any:
    """``schema`` without the keywords the converter cannot express (a plain-data copy)."""
    if isinstance(schema, Mapping):
        out: dict[str, Any] = {}
        for key, value in schema.items():
            if key in _UNSAFE_KEYWORDS:
                continue
            too_long = isinstance(value, int) and value > _MAX_UNROLLED_LENGTH
            if key in ("maxLength", "maxItems") and too_long:
                continue
            out[str(key)] = grammar_safe(value)
        return out
    if isinstance(schema, list | tuple):
        return [grammar_safe(item) for item in schema]
    return schema

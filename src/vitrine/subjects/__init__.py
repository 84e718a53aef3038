"""Subjects that live behind HTTP: an OpenAI-compatible chat endpoint, or any JSON endpoint.

Each is an async callable ``subject(case) -> SubjectResponse``, so it goes into an
:class:`~vitrine.Arm` exactly as a Python function does::

    from vitrine import Arm
    from vitrine.subjects import HttpJsonSubject, OpenAIChatSubject

    arms = [
        Arm("local-model", OpenAIChatSubject("http://127.0.0.1:8080/v1", "smollm2", system="...")),
        Arm("service", HttpJsonSubject("http://127.0.0.1:9000/ask", answer="/data/answer")),
    ]
    vitrine.evaluate(definition, arms, retries=2)  # 5xx, 429, timeouts are retried

Failures are typed (:mod:`vitrine.subjects.errors`): transient ones are retried under
``evaluate``'s retry settings and every failed try is kept in the trial's trace; permanent ones
(a 4xx, a reply without the answer) leave the trial not measured with a sentence saying why.
:mod:`vitrine.subjects.chat_client` is the synchronous chat client the pytest plugin uses.

Names load on first use, so the pytest plugin's import of the chat client stays cheap.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS: dict[str, str] = {
    "EndpointError": "vitrine.subjects.errors",
    "EndpointTimeoutError": "vitrine.subjects.errors",
    "PermanentEndpointError": "vitrine.subjects.errors",
    "SubjectInputError": "vitrine.subjects.errors",
    "TransientEndpointError": "vitrine.subjects.errors",
    "HttpJsonSubject": "vitrine.subjects.http_json",
    "OpenAIChatSubject": "vitrine.subjects.openai_chat",
}

__all__ = sorted(_EXPORTS)  # noqa: PLE0605


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'vitrine.subjects' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


if TYPE_CHECKING:
    # "import X as X" is an explicit re-export: what type checkers see of the lazy table.
    from vitrine.subjects.errors import EndpointError as EndpointError
    from vitrine.subjects.errors import EndpointTimeoutError as EndpointTimeoutError
    from vitrine.subjects.errors import PermanentEndpointError as PermanentEndpointError
    from vitrine.subjects.errors import SubjectInputError as SubjectInputError
    from vitrine.subjects.errors import TransientEndpointError as TransientEndpointError
    from vitrine.subjects.http_json import HttpJsonSubject as HttpJsonSubject
    from vitrine.subjects.openai_chat import OpenAIChatSubject as OpenAIChatSubject

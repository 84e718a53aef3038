"""A subject that is any JSON endpoint over HTTP: one POST per case, the answer read from the reply.

The request body is a template or a function of the case; the answer is a JSON pointer
(RFC 6901, e.g. ``/data/answer``) into the reply, or a function of the reply that may return a
full :class:`~vitrine.SubjectResponse` when the endpoint reports more (tools, usage).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from vitrine._bench.model import Case
from vitrine._bench.response import SubjectResponse
from vitrine.errors import InvalidArgumentError
from vitrine.subjects._errors import PermanentEndpointError
from vitrine.subjects._transport import HttpEndpoint

__all__ = ["HttpJsonSubject"]

BodyBuilder = Callable[[Case], Any]
AnswerReader = Callable[[Any], "str | SubjectResponse | None"]
_MISSING = object()


class HttpJsonSubject:
    """``Arm("svc", HttpJsonSubject("http://127.0.0.1:9000/answer", answer="/data/text"))``.

    ``body`` is a JSON template (default ``{"input": "{input}"}``): a string that is exactly
    ``"{input}"`` becomes the case's input whatever its type, and ``{input}`` or ``{case_id}``
    inside a longer string is replaced by its text; or ``body`` is a function ``fn(case)``
    returning the JSON to send. ``answer`` is a JSON pointer into the reply (a ``null`` there is
    an absent answer; no value there is a permanent failure) or ``fn(reply)``. ``headers`` are
    sent with every request and never reach a run.
    """

    def __init__(
        self,
        url: str,
        *,
        body: Any | BodyBuilder = None,
        answer: str | AnswerReader = "/answer",
        headers: Mapping[str, str] | None = None,
        timeout_s: float = 60.0,
        provenance: str = "http-endpoint",
    ) -> None:
        if isinstance(answer, str) and answer and not answer.startswith("/"):
            raise InvalidArgumentError(
                f"answer must be a JSON pointer such as '/answer', got {answer!r}"
            )
        self.endpoint = HttpEndpoint(url, headers=headers, timeout_s=timeout_s)
        self.body = {"input": "{input}"} if body is None else body
        self.answer = answer
        self.provenance = provenance

    def __repr__(self) -> str:
        return f"HttpJsonSubject({self.endpoint!r})"

    def request_body(self, case: Case) -> Any:
        """The JSON sent for ``case``."""
        if callable(self.body):
            return self.body(case)
        return _fill(self.body, case)

    async def __call__(self, case: Case) -> SubjectResponse:
        """POST ``case`` and read the answer out of the reply."""
        reply = await self.endpoint.post(self.request_body(case))
        if callable(self.answer):
            picked = self.answer(reply.data)
            if isinstance(picked, SubjectResponse):
                return picked
        else:
            picked = _resolve_pointer(reply.data, self.answer)
            if picked is _MISSING:
                raise PermanentEndpointError(
                    f"the reply has no value at {self.answer!r}: the answer pointer does not "
                    "match the endpoint's reply",
                    reply.status,
                )
        if picked is not None and not isinstance(picked, str):
            raise PermanentEndpointError(
                f"the answer is {type(picked).__name__}, not text", reply.status
            )
        return SubjectResponse(
            answer=picked,
            structured={"latency_ms": reply.latency_ms, "http_status": reply.status},
            provenance=self.provenance,
        )

    async def aclose(self) -> None:
        """Close the connection pool of the current event loop."""
        await self.endpoint.aclose()


def _resolve_pointer(document: Any, pointer: str) -> Any:
    """The value at JSON pointer ``pointer`` (RFC 6901) in ``document``; ``_MISSING`` if none."""
    value = document
    if pointer == "":
        return value
    for raw in pointer[1:].split("/"):
        token = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(value, Mapping):
            if token not in value:
                return _MISSING
            value = value[token]
        elif isinstance(value, list):
            if not token.isdigit() or int(token) >= len(value):
                return _MISSING
            value = value[int(token)]
        else:
            return _MISSING
    return value


def _fill(template: Any, case: Case) -> Any:
    if isinstance(template, str):
        if template == "{input}":
            return case.input
        text = case.input if isinstance(case.input, str) else json.dumps(case.input)
        return template.replace("{input}", text).replace("{case_id}", case.id)
    if isinstance(template, Mapping):
        return {key: _fill(value, case) for key, value in template.items()}
    if isinstance(template, list | tuple):
        return [_fill(value, case) for value in template]
    return template

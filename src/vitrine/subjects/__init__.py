"""What a subject returns, and subjects that live behind HTTP.

:class:`SubjectResponse` carries the answer, the tool journal (:class:`ToolCallRecord`), a
workflow's stage census (:class:`StageAttemptCensus`) and token usage. The HTTP subjects are an
OpenAI-compatible chat endpoint and any JSON endpoint.

Each is an async callable ``subject(case) -> SubjectResponse``, so it goes into an
:class:`~vitrine.Arm` exactly as a Python function does::

    from vitrine import Arm
    from vitrine.subjects import HttpJsonSubject, OpenAIChatSubject

    arms = [
        Arm("local-model", OpenAIChatSubject("http://127.0.0.1:8080/v1", "smollm2", system="...")),
        Arm("service", HttpJsonSubject("http://127.0.0.1:9000/ask", answer="/data/answer")),
    ]
    vitrine.evaluate(definition, arms, retries=2)  # 5xx, 429, timeouts are retried

Failures are typed (the errors below): transient ones are retried under
``evaluate``'s retry settings and every failed try is kept in the trial's trace; permanent ones
(a 4xx, a reply without the answer) leave the trial not measured with a sentence saying why.

Names load on first use, so the pytest plugin's import of the chat client stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vitrine._lazy import lazy_exports

if TYPE_CHECKING:
    from vitrine._bench.response import (
        AttemptOutcome as AttemptOutcome,
        ImpossibleCensusError as ImpossibleCensusError,
        ModelCallRecord as ModelCallRecord,
        StageAttemptCensus as StageAttemptCensus,
        StageStatus as StageStatus,
        SubjectResponse as SubjectResponse,
        TokenUsage as TokenUsage,
        ToolCallRecord as ToolCallRecord,
        ToolCallStatus as ToolCallStatus,
        WorkflowTrace as WorkflowTrace,
        validate_stage_set as validate_stage_set,
    )
    from vitrine.subjects._errors import (
        EndpointError as EndpointError,
        EndpointTimeoutError as EndpointTimeoutError,
        PermanentEndpointError as PermanentEndpointError,
        SubjectInputError as SubjectInputError,
        TransientEndpointError as TransientEndpointError,
    )
    from vitrine.subjects._http_json import (
        HttpJsonSubject as HttpJsonSubject,
    )
    from vitrine.subjects._openai_chat import (
        OpenAIChatSubject as OpenAIChatSubject,
    )

__getattr__, __dir__ = lazy_exports(__name__)

"""Schemathesis exercises the service's OpenAPI schema in-process, with bounded examples.

Every generated request, valid or not, must get a documented status with a documented
content type and body: no 500s, no undocumented 4xx, no stack traces.
"""

from __future__ import annotations

import asyncio

import pytest

schemathesis = pytest.importorskip("schemathesis")

from hypothesis import HealthCheck, settings  # noqa: E402
from test_service_app import FakeAssistant  # noqa: E402

from vitrine.service._app import ServiceConfig, create_app  # noqa: E402

APP = create_app(
    FakeAssistant(), ServiceConfig(rate_capacity=100_000, rate_per_s=100_000, docs=True)
)
asyncio.run(APP.warm_up())
schema = schemathesis.openapi.from_asgi("/openapi.json", APP)


@schema.parametrize()
@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
def test_every_generated_request_gets_a_documented_answer(case: object) -> None:
    case.call_and_validate()  # type: ignore[attr-defined]

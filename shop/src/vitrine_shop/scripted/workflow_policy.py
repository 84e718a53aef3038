"""The scripted model's reply to a workflow stage: that stage's own code path.

Answering with the code path keeps offline runs on the real request, parse and validate
plumbing of every stage instead of a shortcut around it.
"""

from __future__ import annotations

import json

from vitrine.providers import ChatRequest
from vitrine_shop.workflow.stages import stage_code_path, stage_payload

__all__ = ["scripted_stage_output"]


def scripted_stage_output(stage: str, request: ChatRequest) -> str:
    """The offline scripted model's reply to a stage request: the code path, as JSON text."""
    payload = stage_payload(request)
    if payload.get("stage") != stage:
        raise ValueError(f"request carries a {payload.get('stage')!r} payload, not {stage!r}")
    return json.dumps(stage_code_path(stage, payload), ensure_ascii=False)

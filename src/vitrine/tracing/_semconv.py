"""Span names and attribute keys: the OpenTelemetry GenAI conventions, and vitrine's own.

The GenAI names follow the OpenTelemetry semantic conventions for generative AI (development
status at the time of writing), so any OTLP backend that understands them (Langfuse, Arize
Phoenix, Jaeger with a GenAI view) shows vitrine's spans as agent, tool and model calls.
``gen_ai.system`` is the older name of ``gen_ai.provider.name``; both are set, because backends
still read either.
"""

from __future__ import annotations

OPERATION = "gen_ai.operation.name"
PROVIDER = "gen_ai.provider.name"
SYSTEM = "gen_ai.system"
REQUEST_MODEL = "gen_ai.request.model"
REQUEST_MAX_TOKENS = "gen_ai.request.max_tokens"
REQUEST_TEMPERATURE = "gen_ai.request.temperature"
RESPONSE_MODEL = "gen_ai.response.model"
RESPONSE_FINISH_REASONS = "gen_ai.response.finish_reasons"
INPUT_TOKENS = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
INPUT_MESSAGES = "gen_ai.input.messages"
OUTPUT_MESSAGES = "gen_ai.output.messages"
AGENT_NAME = "gen_ai.agent.name"
TOOL_NAME = "gen_ai.tool.name"
TOOL_CALL_ID = "gen_ai.tool.call.id"
TOOL_TYPE = "gen_ai.tool.type"
TOOL_ARGUMENTS = "gen_ai.tool.call.arguments"
TOOL_RESULT = "gen_ai.tool.call.result"
ERROR_TYPE = "error.type"

EVALUATION_EVENT = "gen_ai.evaluation.result"
EVALUATION_NAME = "gen_ai.evaluation.name"
EVALUATION_SCORE_VALUE = "gen_ai.evaluation.score.value"
EVALUATION_SCORE_LABEL = "gen_ai.evaluation.score.label"
EVALUATION_EXPLANATION = "gen_ai.evaluation.explanation"

# A test's name and result, as the OpenTelemetry test conventions name them.
TEST_CASE_NAME = "test.case.name"
TEST_CASE_RESULT = "test.case.result.status"

# The session a trace belongs to, as OpenInference names it: Phoenix groups traces by it.
SESSION_ID = "session.id"

OP_CHAT = "chat"
OP_INVOKE_AGENT = "invoke_agent"
OP_EXECUTE_TOOL = "execute_tool"

# vitrine's own attributes, namespaced so they never collide with a convention.
RUN_ID = "vitrine.run.id"
DEFINITION = "vitrine.definition"
ARM = "vitrine.arm"
CASE = "vitrine.case"
REPETITION = "vitrine.repetition"
MEASUREMENT_STATE = "vitrine.measurement_state"
VERDICT = "vitrine.verdict"
PURPOSE = "vitrine.call.purpose"
STAGE = "vitrine.stage.name"
STAGE_VISIT = "vitrine.stage.visit"
STAGE_ATTEMPT = "vitrine.stage.attempt"
STAGE_OUTCOME = "vitrine.stage.outcome"
ATTEMPT_EVENT = "vitrine.provider.attempt"
ATTEMPT_ORDINAL = "vitrine.attempt.ordinal"
ATTEMPT_OUTCOME = "vitrine.attempt.outcome"
ATTEMPT_FAILURE = "vitrine.attempt.failure"
TOOL_STATUS = "vitrine.tool.status"
# A model call an adapter recorded: the tries its client made on its own, and an answer that
# came from the model-call cache instead of the model.
MODEL_CALL_SDK_RETRIES = "vitrine.model_call.sdk_retries"
MODEL_CALL_CACHED = "vitrine.model_call.cached"
# A red-team probe: its OWASP class, technique, severity and outcome; a behaviour test's case id.
REDTEAM_OWASP = "vitrine.redteam.owasp"
REDTEAM_TECHNIQUE = "vitrine.redteam.technique"
REDTEAM_SEVERITY = "vitrine.redteam.severity"
REDTEAM_OUTCOME = "vitrine.redteam.outcome"
TEST_CASE_ID = "vitrine.test.case_id"

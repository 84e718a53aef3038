"""Which model service to call, read from the environment and checked without calling it.

:meth:`ProviderConfig.from_env` reads:

===============================  =============================================================
``OPENAI_API_KEY``               key for ``openai`` (optional with a free ``OPENAI_BASE_URL``)
``OPENAI_BASE_URL``              an OpenAI-compatible endpoint instead of api.openai.com
``VITRINE_MODEL``                the ``openai`` model (``--model`` overrides it)
``VITRINE_JUDGE_MODEL``          a separate ``openai`` judge model (else the judge shares it)
``AZURE_OPENAI_ENDPOINT``        the Azure OpenAI resource endpoint
``AZURE_OPENAI_API_KEY``         its key
``AZURE_OPENAI_DEPLOYMENT``      the subject deployment (``--model`` overrides it)
``AZURE_OPENAI_JUDGE_DEPLOYMENT`` the judge deployment; absent, the judge shares the subject's
``AZURE_OPENAI_API_VERSION``     the API version (default ``2024-10-21``)
``ANTHROPIC_API_KEY``            key for ``anthropic`` (Claude through the official SDK)
``ANTHROPIC_MODEL``              the ``anthropic`` model (default ``claude-3-5-haiku-latest``)
``ANTHROPIC_JUDGE_MODEL``        a separate ``anthropic`` judge model
``ANTHROPIC_BASE_URL``           another Messages API endpoint (a proxy, a test fake)
``VITRINE_LOCAL_MODEL``          a GGUF file, or a packaged model name, for ``local`` (default:
                                 ``smollm2-135m-instruct``; ``gemma-3-270m`` is the other)
``VITRINE_PROVIDER_COST``        ``free`` labels an ``OPENAI_BASE_URL`` endpoint LOCAL, not PAID
``VITRINE_PROVIDER_TIMEOUT_S``   per-attempt timeout in seconds (default 120)
``VITRINE_PROVIDER_MAX_RETRIES`` retries after the first attempt (default 3; 0 when free)
``VITRINE_SUBJECT_MAX_OUTPUT_TOKENS`` subject ceiling per request (default 4000; 1024 when free)
``VITRINE_JUDGE_MAX_OUTPUT_TOKENS`` judge ceiling per request (default 1200; 400 when free)
``VITRINE_CONTEXT_TOKENS``       the model's context window (default 4096 when free, else
                                 unknown); each ceiling must leave room for a prompt in it
``VITRINE_STRUCTURED_OUTPUT``    ``json_schema``, ``json_object``, ``prompt`` or ``probe``
                                 (default ``json_schema``; ``probe`` for a free endpoint)
``VITRINE_PROVIDER_STREAM``      ``on`` or ``off``: read replies as a stream (default on when
                                 free, so an abandoned request stops the server's generation)
===============================  =============================================================

**The default provider.** A command given no ``--provider`` (the subject CLI, the live plans,
Eval 06) uses ``vitrine.providers.default_provider``, this rule and no other: Azure OpenAI when
``AZURE_OPENAI_ENDPOINT`` is set, else OpenAI. Both bill, so the rule chooses between two paid
services, never between paid and offline: a credential never changes the cost lane.

**Free endpoints.** A local server runs one generation at a time on few cores: a retry only
queues behind the request it replaces, and its context is small. So a free configuration
(``local``, or ``VITRINE_PROVIDER_COST=free``) defaults to no retries, smaller ceilings,
streaming, and a structured-output probe at readiness; every default can be overridden.

**Cost labels.** An OpenAI-compatible base URL may point at a server on this machine (Ollama,
vLLM, a llama.cpp server) or at a paid gateway; vitrine cannot tell which from the URL, so it
labels every ``openai`` and ``azure`` configuration PAID, and paid plans ask for confirmation.
An operator who runs their own server sets ``VITRINE_PROVIDER_COST=free``, which labels it
LOCAL; that is refused for api.openai.com and for Azure, which always bill.

**Secrets.** The key, the endpoint URL and its host are registered with
:func:`vitrine.redact.register_secret` the moment a configuration is built, so every later
scrub removes them verbatim. :func:`readiness` and :meth:`ProviderConfig.describe` name missing
*variables*, never values, and describe never includes keys or URLs.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from vitrine._plans.base import PROVIDERS, ProviderName, default_provider
from vitrine._redact import register_secret
from vitrine.errors import InvalidArgumentError, ProviderNotReadyError, UsageError
from vitrine.providers._base import ChatModel, Provenance
from vitrine.providers._openai_compat import (
    STRUCTURED_OUTPUT_MODES,
    StructuredOutput,
    TokenLimitParameter,
    credentialed_url_problem,
)

__all__ = [
    "DEFAULT_AZURE_API_VERSION",
    "JUDGE_MAX_OUTPUT_TOKENS",
    "MIN_PROMPT_ROOM_TOKENS",
    "SUBJECT_MAX_OUTPUT_TOKENS",
    "ModelRole",
    "ProviderConfig",
    "ProviderNotReadyError",
    "Readiness",
    "StructuredOutputSetting",
    "create_chat_model",
    "provider_is_free",
    "readiness",
]

SUBJECT_MAX_OUTPUT_TOKENS = 4000
JUDGE_MAX_OUTPUT_TOKENS = 1200
DEFAULT_AZURE_API_VERSION = "2024-10-21"
# Azure API versions from this one on accept max_completion_tokens; older ones only max_tokens.
_AZURE_COMPLETION_TOKENS_SINCE = "2024-09-01"
DEFAULT_TIMEOUT_S = 120.0
DEFAULT_MAX_RETRIES = 3
# A free server (a llama.cpp server, the in-process GGUF model) has a small context and no
# queue worth retrying into; these defaults fit a 4,096-token context with room for a prompt.
FREE_SUBJECT_MAX_OUTPUT_TOKENS = 1024
FREE_JUDGE_MAX_OUTPUT_TOKENS = 400
FREE_CONTEXT_TOKENS = 4096
FREE_MAX_RETRIES = 0
# The agent's system prompt, tool specs and a few turns need about this much of the context.
MIN_PROMPT_ROOM_TOKENS = 1024

ModelRole = Literal["subject", "judge"]
StructuredOutputSetting = StructuredOutput | Literal["probe"]
_STRUCTURED_SETTINGS: tuple[str, ...] = (*STRUCTURED_OUTPUT_MODES, "probe")


@dataclass(frozen=True, slots=True)
class ProviderConfig:
    """One provider configuration. ``base_url`` is the OpenAI base URL or the Azure endpoint.

    ``model`` is the OpenAI model or the Azure subject deployment; ``judge_model`` the judge's,
    None when the judge shares the subject's. ``problems`` lists what was malformed in the
    environment (named by variable); a configuration with problems is never ready.
    """

    provider: ProviderName
    model: str | None = None
    judge_model: str | None = None
    base_url: str | None = field(default=None, repr=False)
    api_key: str | None = field(default=None, repr=False)
    api_version: str | None = None
    local_model_path: Path | None = None
    provenance: Provenance = Provenance.PAID
    timeout_s: float = DEFAULT_TIMEOUT_S
    max_retries: int = DEFAULT_MAX_RETRIES
    subject_max_output_tokens: int = SUBJECT_MAX_OUTPUT_TOKENS
    judge_max_output_tokens: int = JUDGE_MAX_OUTPUT_TOKENS
    token_limit_parameter: TokenLimitParameter = "max_completion_tokens"
    context_tokens: int | None = None
    structured_output: StructuredOutputSetting = "json_schema"
    stream: bool = False
    problems: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.provider not in PROVIDERS:
            raise InvalidArgumentError(
                f"unknown provider {self.provider!r}: use one of {PROVIDERS}"
            )
        register_secret(self.api_key)
        if self.base_url:
            register_secret(self.base_url, endpoint=True)
            parts = urlsplit(self.base_url)
            register_secret(parts.netloc, endpoint=True)
            register_secret(parts.hostname, endpoint=True)

    @classmethod
    def from_env(
        cls,
        provider: ProviderName | None,
        *,
        model: str | None = None,
        local_model: str | os.PathLike[str] | None = None,
        environ: Mapping[str, str] = os.environ,
    ) -> ProviderConfig:
        """Read a configuration for ``provider`` from ``environ``.

        Malformed values become ``problems`` that :func:`readiness` reports, so an operator
        learns about all of them at once and before anything is called. A service URL holding
        credentials (``user:password@``) is refused at once (:class:`~vitrine.errors.UsageError`):
        it is a request that cannot be run as stated, not a service to wait for. ``provider`` None
        means ``vitrine.providers.default_provider``.
        """
        provider = provider or default_provider(environ)
        env = _Environment(environ)
        cost = (env.get("VITRINE_PROVIDER_COST") or "paid").lower()
        if cost not in ("free", "paid"):
            env.problems.append("VITRINE_PROVIDER_COST must be 'free' or 'paid'")
        free = provider == "local" or (provider == "openai" and cost == "free")
        common = _settings(env, free=free)
        if provider == "local":
            path = local_model or env.get("VITRINE_LOCAL_MODEL")
            return cls(
                "local",
                local_model_path=Path(path).expanduser() if path else None,
                provenance=Provenance.LOCAL,
                problems=tuple(env.problems),
                **common,
            )
        if provider == "azure":
            if cost == "free":
                env.problems.append("VITRINE_PROVIDER_COST=free does not apply to Azure OpenAI")
            version = env.get("AZURE_OPENAI_API_VERSION") or DEFAULT_AZURE_API_VERSION
            endpoint = env.url("AZURE_OPENAI_ENDPOINT")
            return cls(
                "azure",
                model=model or env.get("AZURE_OPENAI_DEPLOYMENT"),
                judge_model=env.get("AZURE_OPENAI_JUDGE_DEPLOYMENT"),
                base_url=endpoint,
                api_key=env.get("AZURE_OPENAI_API_KEY"),
                api_version=version,
                provenance=Provenance.PAID,
                token_limit_parameter=(
                    "max_completion_tokens"
                    if version >= _AZURE_COMPLETION_TOKENS_SINCE
                    else "max_tokens"
                ),
                problems=tuple(env.problems),
                **common,
            )
        if provider == "anthropic":
            if cost == "free":
                env.problems.append("VITRINE_PROVIDER_COST=free does not apply to Anthropic")
            from vitrine.providers._anthropic import DEFAULT_ANTHROPIC_MODEL

            return cls(
                "anthropic",
                model=model or env.get("ANTHROPIC_MODEL") or DEFAULT_ANTHROPIC_MODEL,
                judge_model=env.get("ANTHROPIC_JUDGE_MODEL"),
                base_url=env.url("ANTHROPIC_BASE_URL"),
                api_key=env.get("ANTHROPIC_API_KEY"),
                provenance=Provenance.PAID,
                problems=tuple(env.problems),
                **common,
            )
        if provider != "openai":
            raise InvalidArgumentError(f"unknown provider {provider!r}: use one of {PROVIDERS}")
        base_url = env.url("OPENAI_BASE_URL")
        provenance = Provenance.PAID
        if cost == "free":
            if base_url:
                provenance = Provenance.LOCAL
            else:
                env.problems.append(
                    "VITRINE_PROVIDER_COST=free needs OPENAI_BASE_URL: the default OpenAI "
                    "endpoint always bills"
                )
        return cls(
            "openai",
            model=model or env.get("VITRINE_MODEL"),
            judge_model=env.get("VITRINE_JUDGE_MODEL"),
            base_url=base_url,
            api_key=env.get("OPENAI_API_KEY"),
            provenance=provenance,
            # Compatible servers (vLLM, Ollama, llama.cpp) all know max_tokens; OpenAI's own
            # current models want max_completion_tokens.
            token_limit_parameter="max_tokens" if base_url else "max_completion_tokens",
            problems=tuple(env.problems),
            **common,
        )

    @property
    def judge_shares_subject(self) -> bool:
        """True when the judge calls the very model (deployment) that is being judged."""
        return self.judge_model is None or self.judge_model == self.model

    @property
    def judge_deployment(self) -> str | None:
        """The model or deployment the judge calls."""
        return self.judge_model or self.model

    @property
    def paid(self) -> bool:
        return self.provenance is Provenance.PAID

    def max_output_tokens(self, role: ModelRole) -> int:
        return self.judge_max_output_tokens if role == "judge" else self.subject_max_output_tokens

    def describe(self) -> dict[str, Any]:
        """A safe account for receipts: names and relations, never keys, URLs or hosts."""
        model = self.model if self.provider != "local" else self._local_model_name()
        described: dict[str, Any] = {
            "provider": self.provider,
            "model": model,
            "subject_model": model,
            "judge_model": self.judge_deployment
            if self.provider != "local"
            else self._local_model_name(),
            "judge_shares_subject": self.judge_shares_subject,
            "provenance": self.provenance.value,
            "paid": self.paid,
            "custom_endpoint": self.provider == "openai" and self.base_url is not None,
            "api_version": self.api_version,
            "max_output_tokens": {
                "subject": self.subject_max_output_tokens,
                "judge": self.judge_max_output_tokens,
            },
            "timeout_s": self.timeout_s,
            "max_retries": self.max_retries,
            "context_tokens": self.context_tokens,
            # In process, every structured request is decoded under a grammar; nothing streams.
            "structured_output": "grammar" if self.provider == "local" else self.structured_output,
            "stream": self.stream and self.provider != "local",
        }
        if self.provider == "local":
            # The file's hash is the local model's identity; computed once, cached beside it.
            from vitrine.providers._local import file_sha256, packaged_model

            packaged = packaged_model(self.local_model_path)
            path: Path | None = self.local_model_path
            if packaged is not None:
                # Never assembled just to be described: a model not yet built has no hash yet.
                path = packaged.existing_path()
            if path is not None and path.is_file():
                described["model_sha256"] = file_sha256(path)
        return described

    def _local_model_name(self) -> str:
        from vitrine.providers._local import packaged_model

        packaged = packaged_model(self.local_model_path)
        if packaged is not None:
            return packaged.file_name
        return self.local_model_path.name if self.local_model_path else ""


@dataclass(frozen=True, slots=True)
class Readiness:
    """Whether a configuration can be called, and why not. ``reason`` never holds a secret."""

    ready: bool
    reason: str
    paid: bool
    provenance: Provenance
    missing: tuple[str, ...] = ()


def readiness(config: ProviderConfig) -> Readiness:
    """Check ``config`` without any network call: presence and shape of what it needs."""
    missing: list[str] = []
    problems = list(config.problems)
    if config.provider == "openai":
        free_endpoint = config.base_url is not None and not config.paid
        if not config.api_key and not free_endpoint:
            missing.append("OPENAI_API_KEY")
        if not config.model:
            missing.append("VITRINE_MODEL (or --model)")
    elif config.provider == "azure":
        for name, value in (
            ("AZURE_OPENAI_ENDPOINT", config.base_url),
            ("AZURE_OPENAI_API_KEY", config.api_key),
            ("AZURE_OPENAI_DEPLOYMENT (or --model)", config.model),
        ):
            if not value:
                missing.append(name)
    elif config.provider == "anthropic":
        if not config.api_key:
            missing.append("ANTHROPIC_API_KEY")
    else:
        problems.extend(_local_problems(config.local_model_path))
    if missing or problems:
        parts = []
        if missing:
            parts.append("missing " + ", ".join(missing))
        parts.extend(problems)
        reason = f"{config.provider} is not configured: " + "; ".join(parts)
        return Readiness(False, reason, config.paid, config.provenance, tuple(missing))
    return Readiness(True, _ready_reason(config), config.paid, config.provenance)


def _ready_reason(config: ProviderConfig) -> str:
    described = config.describe()
    cost = "paid" if config.paid else "free"
    judge = (
        "the judge shares the subject model"
        if config.judge_shares_subject
        else f"the judge uses {described['judge_model']}"
    )
    return f"{config.provider} model {described['model']} is configured ({cost}); {judge}"


def _local_problems(path: Path | None) -> list[str]:
    problems: list[str] = []
    if importlib.util.find_spec("llama_cpp") is None:
        problems.append("llama-cpp-python is not installed (pip install 'vitrine[local]')")
    from vitrine.providers._local import packaged_model

    packaged = packaged_model(path)
    if packaged is not None:
        available, why = packaged.available()
        if not available:
            problems.append(why)
    elif path is not None and not path.is_file():
        problems.append(f"the local model file {path.name!r} (VITRINE_LOCAL_MODEL) is missing")
    return problems


def create_chat_model(config: ProviderConfig, role: ModelRole = "subject") -> ChatModel:
    """The model ``role`` calls under ``config``; refuses a configuration that is not ready."""
    state = readiness(config)
    if not state.ready:
        raise ProviderNotReadyError(state)
    ceiling = config.max_output_tokens(role)
    if config.provider == "local":
        from vitrine.providers._local import LocalGGUFModel

        return LocalGGUFModel(
            config.local_model_path,
            n_ctx=config.context_tokens or FREE_CONTEXT_TOKENS,
            max_output_tokens=ceiling,
        )
    from vitrine.providers._openai_compat import OpenAICompatibleModel
    from vitrine.providers._retry import ProviderBackoff

    name = config.judge_deployment if role == "judge" else config.model
    assert name is not None  # readiness guarantees a model name
    if config.provider == "anthropic":
        from vitrine.providers._anthropic import AnthropicModel

        assert config.api_key is not None  # readiness guarantees a key
        return AnthropicModel(
            name,
            api_key=config.api_key,
            base_url=config.base_url,
            timeout_s=config.timeout_s,
            retry=ProviderBackoff(max_retries=config.max_retries),
            max_output_tokens=ceiling,
        )
    azure = config.provider == "azure"
    return OpenAICompatibleModel(
        name,
        # A free local server often needs no key, but the SDK insists on a non-empty one.
        api_key=config.api_key or "not-needed",
        base_url=None if azure else config.base_url,
        azure_endpoint=config.base_url if azure else None,
        api_version=config.api_version if azure else None,
        provenance=config.provenance,
        timeout_s=config.timeout_s,
        retry=ProviderBackoff(max_retries=config.max_retries),
        max_output_tokens=ceiling,
        token_limit_parameter=config.token_limit_parameter,
        # "probe" starts from the most capable rung; the probe at readiness settles it.
        structured_output=(
            "json_schema" if config.structured_output == "probe" else config.structured_output
        ),
        stream=config.stream,
    )


def _settings(env: _Environment, *, free: bool) -> dict[str, Any]:
    """Timeouts, retries, ceilings, context, structured output and streaming, checked together."""
    timeout_s = env.number("VITRINE_PROVIDER_TIMEOUT_S", DEFAULT_TIMEOUT_S)
    if timeout_s == 0:
        env.problems.append("VITRINE_PROVIDER_TIMEOUT_S must be positive")
        timeout_s = DEFAULT_TIMEOUT_S
    retries = int(
        env.number(
            "VITRINE_PROVIDER_MAX_RETRIES", FREE_MAX_RETRIES if free else DEFAULT_MAX_RETRIES
        )
    )
    subject = env.count(
        "VITRINE_SUBJECT_MAX_OUTPUT_TOKENS",
        FREE_SUBJECT_MAX_OUTPUT_TOKENS if free else SUBJECT_MAX_OUTPUT_TOKENS,
    )
    judge = env.count(
        "VITRINE_JUDGE_MAX_OUTPUT_TOKENS",
        FREE_JUDGE_MAX_OUTPUT_TOKENS if free else JUDGE_MAX_OUTPUT_TOKENS,
    )
    context = env.count("VITRINE_CONTEXT_TOKENS", FREE_CONTEXT_TOKENS if free else None)
    if context is not None:
        for name, ceiling in (
            ("VITRINE_SUBJECT_MAX_OUTPUT_TOKENS", subject),
            ("VITRINE_JUDGE_MAX_OUTPUT_TOKENS", judge),
        ):
            if ceiling is not None and ceiling + MIN_PROMPT_ROOM_TOKENS > context:
                env.problems.append(
                    f"{name} ({ceiling}) leaves {max(0, context - ceiling)} of the model's "
                    f"{context}-token context (VITRINE_CONTEXT_TOKENS) for the prompt, which "
                    f"needs at least {MIN_PROMPT_ROOM_TOKENS}: lower the ceiling"
                )
    structured = env.get("VITRINE_STRUCTURED_OUTPUT") or ("probe" if free else "json_schema")
    if structured not in _STRUCTURED_SETTINGS:
        env.problems.append(
            f"VITRINE_STRUCTURED_OUTPUT must be one of {', '.join(_STRUCTURED_SETTINGS)}"
        )
        structured = "json_schema"
    stream = env.switch("VITRINE_PROVIDER_STREAM", default=free)
    return {
        "timeout_s": timeout_s,
        "max_retries": retries,
        "subject_max_output_tokens": subject or SUBJECT_MAX_OUTPUT_TOKENS,
        "judge_max_output_tokens": judge or JUDGE_MAX_OUTPUT_TOKENS,
        "context_tokens": context,
        "structured_output": structured,
        "stream": stream,
    }


def provider_is_free(
    provider: ProviderName | None, environ: Mapping[str, str] = os.environ
) -> bool:
    """Whether ``provider`` as configured in ``environ`` costs nothing, so needs no confirmation.

    True for ``local`` and for an OpenAI-compatible endpoint the operator declared free
    (``VITRINE_PROVIDER_COST=free`` with ``OPENAI_BASE_URL``); a malformed declaration is not
    free, and readiness says why.
    """
    if provider == "local":
        return True
    if provider != "openai":
        return False
    config = ProviderConfig.from_env("openai", environ=environ)
    return not config.paid and not config.problems


class _Environment:
    """Reads variables, trimming blanks to None and collecting malformed values as problems."""

    def __init__(self, environ: Mapping[str, str]) -> None:
        self._environ = environ
        self.problems: list[str] = []

    def get(self, name: str) -> str | None:
        value = self._environ.get(name)
        return value.strip() or None if value is not None else None

    def number(self, name: str, default: float) -> float:
        value = self.get(name)
        if value is None:
            return default
        try:
            number = float(value)
        except ValueError:
            number = -1.0
        if not number >= 0 or number == float("inf"):
            self.problems.append(f"{name} must be a non-negative number")
            return default
        return number

    def count(self, name: str, default: int | None) -> int | None:
        """A positive whole number of tokens, or ``default`` when unset or malformed."""
        value = self.get(name)
        if value is None:
            return default
        if not value.isdigit() or int(value) < 1:
            self.problems.append(f"{name} must be a whole number of tokens, at least 1")
            return default
        return int(value)

    def switch(self, name: str, *, default: bool) -> bool:
        value = (self.get(name) or "").lower()
        if not value:
            return default
        if value not in ("on", "off", "1", "0", "true", "false"):
            self.problems.append(f"{name} must be 'on' or 'off'")
            return default
        return value in ("on", "1", "true")

    def url(self, name: str) -> str | None:
        value = self.get(name)
        if value is None:
            return None
        register_secret(value, endpoint=True)  # before anything can echo it
        try:
            parts = urlsplit(value)
        except ValueError:  # a malformed host, e.g. an unclosed IPv6 bracket
            self.problems.append(f"{name} is not an http(s) URL")
            return value
        if "@" in parts.netloc:
            # The caller's mistake, not an unready service: refused at once (exit 2 on the
            # command line), before any call, in a sentence that does not repeat the URL.
            raise UsageError(credentialed_url_problem(name))
        if parts.scheme not in ("http", "https") or not parts.hostname:
            self.problems.append(f"{name} is not an http(s) URL")
        return value

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
``VITRINE_LOCAL_MODEL``          a GGUF file for ``local`` (default: the packaged Gemma 3 270M)
``VITRINE_PROVIDER_COST``        ``free`` labels an ``OPENAI_BASE_URL`` endpoint LOCAL, not PAID
``VITRINE_PROVIDER_TIMEOUT_S``   per-attempt timeout in seconds (default 120)
``VITRINE_PROVIDER_MAX_RETRIES`` retries after the first attempt (default 3)
===============================  =============================================================

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

from vitrine.plans.base import PROVIDERS, ProviderName
from vitrine.providers.base import ChatModel, Provenance
from vitrine.providers.openai_compat import TokenLimitParameter
from vitrine.redact import register_secret

__all__ = [
    "DEFAULT_AZURE_API_VERSION",
    "JUDGE_MAX_OUTPUT_TOKENS",
    "SUBJECT_MAX_OUTPUT_TOKENS",
    "ModelRole",
    "ProviderConfig",
    "ProviderNotReadyError",
    "Readiness",
    "create_chat_model",
    "readiness",
]

SUBJECT_MAX_OUTPUT_TOKENS = 4000
JUDGE_MAX_OUTPUT_TOKENS = 1200
DEFAULT_AZURE_API_VERSION = "2024-10-21"
# Azure API versions from this one on accept max_completion_tokens; older ones only max_tokens.
_AZURE_COMPLETION_TOKENS_SINCE = "2024-09-01"
DEFAULT_TIMEOUT_S = 120.0
DEFAULT_MAX_RETRIES = 3

ModelRole = Literal["subject", "judge"]


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
    problems: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.provider not in PROVIDERS:
            raise ValueError(f"unknown provider {self.provider!r}: use one of {PROVIDERS}")
        register_secret(self.api_key)
        if self.base_url:
            register_secret(self.base_url)
            parts = urlsplit(self.base_url)
            register_secret(parts.netloc)
            register_secret(parts.hostname)

    @classmethod
    def from_env(
        cls,
        provider: ProviderName | None,
        *,
        model: str | None = None,
        local_model: str | os.PathLike[str] | None = None,
        environ: Mapping[str, str] = os.environ,
    ) -> ProviderConfig:
        """Read a configuration for ``provider`` from ``environ``; never raises for bad values.

        Malformed values become ``problems`` that :func:`readiness` reports, so an operator
        learns about all of them at once and before anything is called. ``provider`` None
        means Azure OpenAI, the protocol's live subject arm; it is never guessed from which
        credentials happen to be set.
        """
        provider = provider or "azure"
        env = _Environment(environ)
        timeout_s = env.number("VITRINE_PROVIDER_TIMEOUT_S", DEFAULT_TIMEOUT_S)
        if timeout_s == 0:
            env.problems.append("VITRINE_PROVIDER_TIMEOUT_S must be positive")
            timeout_s = DEFAULT_TIMEOUT_S
        max_retries = int(env.number("VITRINE_PROVIDER_MAX_RETRIES", DEFAULT_MAX_RETRIES))
        cost = (env.get("VITRINE_PROVIDER_COST") or "paid").lower()
        if cost not in ("free", "paid"):
            env.problems.append("VITRINE_PROVIDER_COST must be 'free' or 'paid'")
        common: dict[str, Any] = {"timeout_s": timeout_s, "max_retries": max_retries}
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
        if provider != "openai":
            raise ValueError(f"unknown provider {provider!r}: use one of {PROVIDERS}")
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
        }
        if self.provider == "local":
            # The file's hash is the local model's identity; computed once, cached beside it.
            from vitrine.providers.local import DEFAULT_MODEL_NAME, file_sha256, model_cache_dir

            path = self.local_model_path or model_cache_dir() / DEFAULT_MODEL_NAME
            if path.is_file():
                described["model_sha256"] = file_sha256(path)
        return described

    def _local_model_name(self) -> str:
        from vitrine.providers.local import DEFAULT_MODEL_NAME

        return self.local_model_path.name if self.local_model_path else DEFAULT_MODEL_NAME


@dataclass(frozen=True, slots=True)
class Readiness:
    """Whether a configuration can be called, and why not. ``reason`` never holds a secret."""

    ready: bool
    reason: str
    paid: bool
    provenance: Provenance
    missing: tuple[str, ...] = ()


class ProviderNotReadyError(RuntimeError):
    """A model was asked for from a configuration that is not ready."""

    def __init__(self, state: Readiness) -> None:
        super().__init__(state.reason)
        self.readiness = state


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
    if path is not None:
        if not path.is_file():
            problems.append(f"the local model file {path.name!r} (VITRINE_LOCAL_MODEL) is missing")
    else:
        from vitrine.providers.local import default_model_available

        available, why = default_model_available()
        if not available:
            problems.append(why)
    return problems


def create_chat_model(config: ProviderConfig, role: ModelRole = "subject") -> ChatModel:
    """The model ``role`` calls under ``config``; refuses a configuration that is not ready."""
    state = readiness(config)
    if not state.ready:
        raise ProviderNotReadyError(state)
    ceiling = config.max_output_tokens(role)
    if config.provider == "local":
        from vitrine.providers.local import LocalGGUFModel

        return LocalGGUFModel(config.local_model_path, max_output_tokens=ceiling)
    from vitrine.providers.openai_compat import OpenAICompatibleModel
    from vitrine.providers.retry import RetryPolicy

    name = config.judge_deployment if role == "judge" else config.model
    assert name is not None  # readiness guarantees a model name
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
        retry=RetryPolicy(max_retries=config.max_retries),
        max_output_tokens=ceiling,
        token_limit_parameter=config.token_limit_parameter,
    )


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

    def url(self, name: str) -> str | None:
        value = self.get(name)
        if value is None:
            return None
        register_secret(value)  # before anything can echo it
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            self.problems.append(f"{name} is not an http(s) URL")
        return value

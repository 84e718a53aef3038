"""Every exception vitrine raises on purpose, under one root.

``except vitrine.VitrineError`` catches a refused argument, a damaged run, a provider that
failed or a report that cannot be read, and nothing that is a bug in the caller's own code.
Each error also keeps its built-in base (shown in brackets), so code that caught
``ValueError`` or ``LookupError`` before keeps working. The whole tree::

    VitrineError
    ├── InvalidArgumentError [ValueError]     a value vitrine was given and refuses
    │   ├── UsageError                        a request that cannot run as stated (exit 2)
    │   │   └── SuiteLoadError
    │   ├── AdmissionError
    │   │   └── JudgeNotAdmittedError
    │   ├── AmbiguousResumeError
    │   ├── DatasetArgumentError              a dataset path, object or field mapping refused
    │   ├── DefinitionError
    │   ├── EmbeddingConfigError
    │   ├── ExecutorError
    │   ├── FloorNotDerivableError
    │   ├── ImpossibleCensusError
    │   ├── ObservationError
    │   ├── QueryError
    │   ├── ScoreError
    │   │   ├── ComparisonError
    │   │   └── FloorComparisonError
    │   ├── ScorerError                       a scorer built with arguments it cannot use
    │   │   └── ScorerUnavailableError
    │   ├── SubjectInputError
    │   ├── TracingConfigError
    │   │   └── TracingUnavailableError
    │   └── UnknownRunError
    ├── InvalidDataError [ValueError]         a file, record or reply that is not what it must be
    │   ├── CaseFileError
    │   ├── CatalogueError
    │   ├── DatasetError
    │   │   └── DatasetFileError              a dataset row that is not a case (file, line, field)
    │   ├── JudgeOutputError
    │   ├── LedgerError
    │   ├── MalformedLineError
    │   ├── ManifestError
    │   ├── MatrixSchemaError
    │   ├── PriceTableError
    │   ├── ReportSchemaError
    │   └── RunIntegrityError
    ├── WrongTypeError [TypeError]            a value of a type vitrine cannot use
    ├── NotFoundError [LookupError]           something named that is not there
    │   ├── RunNotFoundError
    │   ├── UnknownKeyError [KeyError]
    │   └── UnknownPersonaError
    ├── RunningLoopError [RuntimeError]       a blocking call made inside a running event loop
    ├── RunStoreError                         a run directory that cannot be read or written
    │   ├── IncompleteRunError
    │   ├── ResumeMismatchError
    │   ├── TamperedRunError
    │   └── UnsupportedSchemaError
    ├── ProviderError                         a model call that failed, typed by ``failure``
    │   └── RetryAfterError
    ├── ProviderNotReadyError [RuntimeError]
    ├── EndpointError                         an HTTP subject's endpoint gave no usable reply
    │   ├── PermanentEndpointError [ValueError]
    │   └── TransientEndpointError [ConnectionError]
    │       └── EndpointTimeoutError [TimeoutError]
    ├── ServiceUnavailable [ConnectionError]
    ├── AssistantUnavailable [RuntimeError]
    ├── BudgetReached                         a spend ceiling refused a request
    ├── CeilingReached                        a red-team call ceiling refused a call
    ├── CommandRefusal                        a command's refusal, with its exit code
    ├── UserCodeError                         named user code could not be imported or called
    ├── SelectorCancelled
    ├── BoardError
    ├── ProblemError
    ├── CatalogueImportError [RuntimeError]
    ├── DatabaseUnavailable [RuntimeError]
    ├── DatasetUnavailableError [RuntimeError]
    ├── EmbeddingError [RuntimeError]
    ├── ExecutorUnavailableError [RuntimeError]
    ├── MutantRunError [RuntimeError]
    ├── PlanUnavailableError [RuntimeError]
    ├── ServiceTestError [RuntimeError]
    ├── TimelineError [RuntimeError]
    └── VectorStoreError [RuntimeError]

Importing this module imports nothing else from vitrine, so any module may import it first.
The modules that raise an error also export it: ``vitrine.store.RunStoreError`` and
``vitrine.errors.RunStoreError`` are the same class.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

    from vitrine._vocabulary import ExitCode
    from vitrine.judge._admission import JudgeAdmission
    from vitrine.providers._base import ProviderFailure
    from vitrine.providers._config import Readiness

__all__ = [
    "AdmissionError",
    "AmbiguousResumeError",
    "AssistantUnavailable",
    "BoardError",
    "BudgetReached",
    "CaseFileError",
    "CatalogueError",
    "CatalogueImportError",
    "CeilingReached",
    "CommandRefusal",
    "ComparisonError",
    "DatabaseUnavailable",
    "DatasetArgumentError",
    "DatasetError",
    "DatasetFileError",
    "DatasetUnavailableError",
    "DefinitionError",
    "EmbeddingConfigError",
    "EmbeddingError",
    "EndpointError",
    "EndpointTimeoutError",
    "ExecutorError",
    "ExecutorUnavailableError",
    "FloorComparisonError",
    "FloorNotDerivableError",
    "ImpossibleCensusError",
    "IncompleteRunError",
    "InvalidArgumentError",
    "InvalidDataError",
    "JudgeNotAdmittedError",
    "JudgeOutputError",
    "LedgerError",
    "MalformedLineError",
    "ManifestError",
    "MatrixSchemaError",
    "MutantRunError",
    "NotFoundError",
    "ObservationError",
    "PermanentEndpointError",
    "PlanUnavailableError",
    "PriceTableError",
    "ProblemError",
    "ProviderError",
    "ProviderNotReadyError",
    "QueryError",
    "ReportSchemaError",
    "ResumeMismatchError",
    "RetryAfterError",
    "RunIntegrityError",
    "RunNotFoundError",
    "RunStoreError",
    "RunningLoopError",
    "ScoreError",
    "ScorerError",
    "ScorerUnavailableError",
    "SelectorCancelled",
    "ServiceTestError",
    "ServiceUnavailable",
    "SubjectInputError",
    "SuiteLoadError",
    "TamperedRunError",
    "TimelineError",
    "TracingConfigError",
    "TracingUnavailableError",
    "TransientEndpointError",
    "UnknownKeyError",
    "UnknownPersonaError",
    "UnknownRunError",
    "UnsupportedSchemaError",
    "UsageError",
    "UserCodeError",
    "VectorStoreError",
    "VitrineError",
    "WrongTypeError",
]


def _exit_code(code: ExitCode | int | None, default: str) -> ExitCode:
    """``code`` as a :class:`vitrine.ExitCode`, the member named ``default`` when it is None.

    ExitCode's module imports this one, so it is loaded when the first such error is built.
    """
    from vitrine._vocabulary import ExitCode  # noqa: PLC0415 - never at import time

    return ExitCode[default] if code is None else ExitCode(code)


class VitrineError(Exception):
    """Base class of the errors vitrine raises deliberately, each with a sentence that says why."""


# --- refused arguments --------------------------------------------------------------------


class InvalidArgumentError(VitrineError, ValueError):
    """A value vitrine was given and refuses; the message names the value and the rule."""


class UsageError(InvalidArgumentError):
    """A request that cannot run as stated. The CLI reports it and exits 2 (invalid arguments).

    The message names the rule that refused the request and says why the rule exists.
    """


class SuiteLoadError(UsageError):
    """``--suite`` did not lead to a Suite. ``exit_code`` says whose fault it is.

    A module or attribute that does not exist is an invalid argument (2); a module that exists
    but raises while it is imported is a broken installation (4).
    """

    def __init__(self, message: str, exit_code: ExitCode | int | None = None) -> None:
        super().__init__(message)
        self.exit_code = _exit_code(exit_code, "INVALID_ARGUMENTS")


class AdmissionError(InvalidArgumentError):
    """A check was offered for admission without what admission requires."""


class AmbiguousResumeError(InvalidArgumentError):
    """Several runs are unsealed and none was named: resuming one at random is not a choice."""


class DefinitionError(InvalidArgumentError):
    """A benchmark definition that cannot be run as stated."""


class EmbeddingConfigError(InvalidArgumentError):
    """Prod embeddings were asked for without the configuration they need."""


class ExecutorError(InvalidArgumentError):
    """An executor refused what it was asked to run or how it was configured."""


class FloorNotDerivableError(InvalidArgumentError):
    """Raised when code asks a not-derivable floor for a number it does not have."""


class ImpossibleCensusError(InvalidArgumentError):
    """An attempt census that could not have come from a real stage."""


class ObservationError(InvalidArgumentError):
    """An observation whose fields contradict its measurement state."""


class QueryError(InvalidArgumentError):
    """A filter or paging value the board refuses; the message says which and why."""


class ScoreError(InvalidArgumentError):
    """Inputs whose score would not mean what it claims."""


class ComparisonError(ScoreError):
    """Two sets of runs that cannot be compared as stated."""


class FloorComparisonError(ScoreError):
    """A floor test asked of values that are not pass/fail counts."""


class SubjectInputError(InvalidArgumentError):
    """A case whose input the subject cannot turn into a request; fix the case or the subject."""


class TracingConfigError(InvalidArgumentError):
    """A trace destination that cannot be used; the message says which setting and why."""


class TracingUnavailableError(TracingConfigError):
    """Tracing was asked for but the OpenTelemetry packages are not installed."""


class UnknownRunError(InvalidArgumentError):
    """The run named for a resume is not in the store."""


# --- damaged or foreign data --------------------------------------------------------------


class InvalidDataError(VitrineError, ValueError):
    """A file, record or reply vitrine read that is not what it must be; the message says where."""


class CaseFileError(InvalidDataError):
    """A case file that cannot be used; every problem names the case and the field."""


class CatalogueError(InvalidDataError):
    """The attack catalogue (or a profile filling it in) is malformed; the message says where."""


class DatasetError(InvalidDataError):
    """A dataset or thresholds file that cannot be used as it is."""


# Reading a dataset as cases (vitrine.datasets): a refused request, a row that is not a case,
# and the optional package that reads Hugging Face datasets.


class DatasetArgumentError(InvalidArgumentError):
    """A dataset request refused as stated: a suffix no loader reads, a mapping naming nothing."""


class DatasetFileError(DatasetError):
    """A dataset whose rows cannot all become cases; the message names the file, line and field.

    ``source`` is the file (or dataset) as it was named, ``line`` the line the row starts on
    (None for a row of a Hugging Face dataset, or a problem with the whole file) and ``field``
    the field at fault (None when no one field is).
    """

    def __init__(
        self, message: str, *, source: str, line: int | None = None, field: str | None = None
    ) -> None:
        super().__init__(message)
        self.source = source
        self.line = line
        self.field = field


class DatasetUnavailableError(VitrineError, RuntimeError):
    """A Hugging Face dataset was asked for but the ``datasets`` package is not installed."""


class JudgeOutputError(InvalidDataError):
    """A judge reply that cannot be read as one verdict per criterion."""


class LedgerError(InvalidDataError):
    """A ledger whose records no longer verify: the message says which and how."""


class MalformedLineError(InvalidDataError):
    """A committed (newline-terminated) line that is not a JSON object."""

    def __init__(self, path: Path, line_number: int, why: str) -> None:
        super().__init__(f"{path.name} line {line_number} is not a valid record ({why})")
        self.path = path
        self.line_number = line_number


class ManifestError(InvalidDataError):
    """A control manifest that cannot be trusted as a ledger of registered controls."""


class MatrixSchemaError(InvalidDataError):
    """A matrix file this version of vitrine cannot read."""


class PriceTableError(InvalidDataError):
    """A price table that cannot be read or states an impossible price."""


class ReportSchemaError(InvalidDataError):
    """A report file this version of vitrine cannot read."""


class RunIntegrityError(InvalidDataError):
    """A red-team run document or its sign-off ledger is damaged, reshaped or tampered with.

    The soft gate decides from these files, so a run that cannot be trusted is refused (an
    infrastructure failure) rather than read as "no open findings".
    """


# --- wrong types, missing names, wrong context --------------------------------------------


class WrongTypeError(VitrineError, TypeError):
    """An argument, or a value user code returned, of a type vitrine cannot use."""


class NotFoundError(VitrineError, LookupError):
    """Something named (a run, a finding, a persona) that is not where it was looked for."""


class RunNotFoundError(NotFoundError):
    """No red-team run where one was expected; the message says where it looked."""


class UnknownKeyError(NotFoundError, KeyError):
    """A key (a check key, a mutant id) that is not among those known; the message lists them."""

    def __str__(self) -> str:
        # KeyError quotes its argument as a key; this one's argument is a sentence.
        return str(self.args[0]) if len(self.args) == 1 else super().__str__()


class UnknownPersonaError(NotFoundError):
    """The first request named a persona the assistant does not know."""

    def __init__(self, persona_id: str, known: Sequence[str]) -> None:
        super().__init__(persona_id)
        self.persona_id = persona_id
        self.known = tuple(known)


class RunningLoopError(VitrineError, RuntimeError):
    """A blocking entry point was called inside a running event loop; await the async one."""


# --- the run store ------------------------------------------------------------------------


class RunStoreError(VitrineError):
    """A run directory that cannot be read or written as asked."""


class IncompleteRunError(RunStoreError):
    """A run that was never sealed: its process stopped before completing it."""


class ResumeMismatchError(RunStoreError):
    """A resume asked for with a different benchmark definition or arm than the run used."""


class TamperedRunError(RunStoreError):
    """A sealed run whose content no longer matches its seal."""


class UnsupportedSchemaError(RunStoreError):
    """A run written by a schema version this library cannot read."""


# --- models, endpoints and services -------------------------------------------------------


class ProviderError(VitrineError):
    """A typed provider failure whose message is already safe to persist."""

    def __init__(self, failure: ProviderFailure, detail: str = "") -> None:
        # The scrubber is loaded when the first provider error is built, so that importing
        # this module never imports another vitrine module.
        from vitrine._redact import sanitize_text  # noqa: PLC0415 - never at import time

        self.failure = failure
        self.safe_detail = sanitize_text(detail) if detail else ""
        message = failure.value + (f": {self.safe_detail}" if self.safe_detail else "")
        super().__init__(message)

    @property
    def retryable(self) -> bool:
        """Whether the same call may succeed if it is made again."""
        return self.failure.retryable


class RetryAfterError(ProviderError):
    """A provider error that carries the provider's advice on when to try again.

    Raised by providers when a 429 or 503 came with a ``Retry-After`` header; the retry loop
    waits at least that long (capped by its backoff). Callers may treat it as a plain
    :class:`ProviderError`.
    """

    def __init__(self, failure: ProviderFailure, detail: str = "", *, retry_after_s: float) -> None:
        super().__init__(failure, detail)
        self.retry_after_s = retry_after_s


class ProviderNotReadyError(VitrineError, RuntimeError):
    """A model was asked for from a configuration that is not ready."""

    def __init__(self, state: Readiness) -> None:
        super().__init__(state.reason)
        self.readiness = state


class EndpointError(VitrineError):
    """An HTTP subject's endpoint did not give a usable reply; ``status`` is its HTTP status."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status

    @property
    def transient(self) -> bool:
        """Whether the same request may succeed later."""
        return isinstance(self, TransientEndpointError)


class TransientEndpointError(EndpointError, ConnectionError):
    """A failure that may pass: server error, rate limit, connection lost. Retryable."""


class EndpointTimeoutError(TransientEndpointError, TimeoutError):
    """The endpoint did not answer within the subject's timeout. Retryable."""


class PermanentEndpointError(EndpointError, ValueError):
    """A failure the same request will meet again: a 4xx, a reply of the wrong shape."""


class ServiceUnavailable(VitrineError, ConnectionError):
    """The service could not be reached at all (connection refused, DNS, timeout)."""


class AssistantUnavailable(VitrineError, RuntimeError):
    """The assistant cannot answer now; ``safe_message`` may be shown to the customer.

    Anything else an assistant raises is reported with a fixed generic message, because its
    text may hold an endpoint, a key or a stack trace.
    """

    def __init__(self, safe_message: str) -> None:
        super().__init__(safe_message)
        self.safe_message = safe_message


# --- ceilings -----------------------------------------------------------------------------


class BudgetReached(VitrineError):
    """A request refused before it was sent: the session's spend ceiling was reached.

    Deliberately not a ProviderError: a provider failure may be retried or answered by a code
    path, and a refused request must instead end its trial as not measured (reason "budget").
    """


class CeilingReached(VitrineError):
    """A model call was refused because the declared ceiling is spent."""

    def __init__(self, role: str, limit: int) -> None:
        self.role = role
        self.limit = limit
        super().__init__(f"the {role} ceiling of {limit} model calls is spent")


# --- commands, user code and pages --------------------------------------------------------


class CommandRefusal(VitrineError):
    """A request a command will not run, with the exit code that says whose fault it is.

    ``code`` is invalid arguments (2) unless another is given.
    """

    def __init__(self, message: str, code: ExitCode | int | None = None) -> None:
        super().__init__(message)
        self.code = _exit_code(code, "INVALID_ARGUMENTS")


class UserCodeError(VitrineError):
    """Named user code could not be imported, read or called; ``exit_code`` says whose fault.

    It is an infrastructure failure (4) unless another code is given.
    """

    def __init__(self, message: str, exit_code: ExitCode | int | None = None) -> None:
        super().__init__(message)
        self.exit_code = _exit_code(exit_code, "INFRASTRUCTURE")


class SelectorCancelled(VitrineError):
    """The operator left the menu (end of input, ``q``, or declined a paid run)."""


class BoardError(VitrineError):
    """A page the board cannot show; the message is the sentence the page shows instead."""

    def __init__(self, message: str, status: int = 404) -> None:
        super().__init__(message)
        self.status = status


class ProblemError(VitrineError):
    """A request the service answers with a problem document (RFC 9457) instead of a reply.

    ``status`` is the HTTP status, ``kind`` the problem type, ``title`` and ``detail`` the
    sentences a client shows; ``headers`` go on the response (``Retry-After``, say).
    """

    def __init__(
        self,
        status: int,
        kind: str,
        title: str,
        detail: str,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(detail)
        self.status = status
        self.kind = kind
        self.title = title
        self.detail = detail
        self.headers = headers or {}


# --- infrastructure -----------------------------------------------------------------------


class CatalogueImportError(VitrineError, RuntimeError):
    """The catalogue's module exists but raised while it was imported: a broken installation."""


class DatabaseUnavailable(VitrineError, RuntimeError):
    """No database could be reached or started: an infrastructure failure, never a score."""


class EmbeddingError(VitrineError, RuntimeError):
    """The embeddings endpoint failed; the message is safe to print and persist."""


class ExecutorUnavailableError(VitrineError, RuntimeError):
    """The executor's infrastructure cannot be reached (no cluster at the address given)."""


class MutantRunError(VitrineError, RuntimeError):
    """The mutants could not be judged at all (exit 4): a red baseline, a broken catalogue."""


class PlanUnavailableError(VitrineError, RuntimeError):
    """A plan was asked to run although it declared itself unavailable."""


class ServiceTestError(VitrineError, RuntimeError):
    """The service could not start or a test selection could not run."""


class TimelineError(VitrineError, RuntimeError):
    """A node was started twice, ended without starting, or left active."""


class VectorStoreError(VitrineError, RuntimeError):
    """The table is missing, stale or was built by another embedding model."""


# --- scorers ------------------------------------------------------------------------------


class ScorerError(InvalidArgumentError):
    """A scorer factory given an argument it cannot use (an unknown mode, a pattern that does
    not compile, a negative tolerance); the message names the argument and the rule."""


class ScorerUnavailableError(ScorerError):
    """A scorer needs a package that is not installed; the message names what to install."""


class JudgeNotAdmittedError(AdmissionError):
    """A model-graded scorer whose judge failed admission on its calibration examples.

    The message is the admission's reason: the agreement, its interval and the bar it missed.
    ``admission`` is the full :class:`vitrine.judge.JudgeAdmission`.
    """

    def __init__(self, message: str, admission: JudgeAdmission | None = None) -> None:
        super().__init__(message)
        self.admission = admission

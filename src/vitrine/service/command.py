"""``vitrine serve``: run a suite's assistant as an HTTP service until interrupted.

Exit codes follow the main command: 0 after a clean stop, 2 for invalid arguments (including
a provider or regression the suite's assistant refuses), 4 when the service cannot start.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import NoReturn

__all__ = ["build_parser", "main"]

_INVALID_ARGUMENTS = 2
_INFRASTRUCTURE = 4
_DEFAULT_SUITE = "vitrine_shop.evals.suite:SUITE"  # as in vitrine.cli: kept import-free


class _ArgumentError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise _ArgumentError(message)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="vitrine serve",
        description=(
            "Serve the suite's conversational assistant over HTTP: POST /v1/chat streams "
            "server-sent events, GET /health reports readiness, GET /docs shows the schema."
        ),
        allow_abbrev=False,
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="port to bind (default 8000)")
    parser.add_argument(
        "--architecture", choices=("agent", "workflow"), default="agent", help="assistant shape"
    )
    parser.add_argument(
        "--provider",
        choices=("scripted", "openai", "azure", "local"),
        default="scripted",
        help="the model behind the assistant (default: the offline scripted model)",
    )
    parser.add_argument("--model", metavar="NAME", help="model or deployment name")
    parser.add_argument("--local-model", metavar="PATH", help="a local GGUF model file")
    parser.add_argument(
        "--regress",
        metavar="NAME",
        help="serve a deliberately regressed assistant to prove tests catch it (the shop "
        "offers repeat-owned and broken-model)",
    )
    parser.add_argument(
        "--no-front-desk",
        dest="front_desk",
        action="store_false",
        help="send every turn to the assistant's architecture, even those a front desk would "
        "answer with a fixed reply (policy, ordering, unknown products, nonsense)",
    )
    parser.add_argument(
        "--suite", metavar="MODULE:ATTR", default=_DEFAULT_SUITE, help="suite to serve"
    )
    parser.add_argument(
        "--reply-timeout",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="longest a turn may take before the client gets a timeout (default 60; a small "
        "local model on a few cores may need several minutes)",
    )
    parser.add_argument(
        "--max-output-tokens",
        type=int,
        metavar="N",
        help="the model's output-token ceiling per request (default: the provider's, see "
        "VITRINE_SUBJECT_MAX_OUTPUT_TOKENS)",
    )
    parser.add_argument(
        "--rate-limit",
        type=float,
        default=10.0,
        metavar="PER_S",
        help="sustained requests per second per client (default 10)",
    )
    parser.add_argument(
        "--rate-burst",
        type=float,
        default=30.0,
        metavar="N",
        help="requests a client may burst (default 30)",
    )
    parser.add_argument(
        "--max-sessions", type=int, default=1000, help="conversations kept (default 1000)"
    )
    parser.add_argument(
        "--log-file", type=Path, metavar="PATH", help="also append the service log here"
    )
    return parser


def main(argv: list[str]) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except _ArgumentError as exc:
        sys.stderr.write(parser.format_usage())
        _error(str(exc))
        return _INVALID_ARGUMENTS
    except SystemExit as exc:  # --help
        return exc.code if isinstance(exc.code, int) else _INVALID_ARGUMENTS
    if not 0 < args.port < 65536:
        _error(f"--port must be between 1 and 65535, got {args.port}")
        return _INVALID_ARGUMENTS
    if args.rate_limit <= 0 or args.rate_burst < 1 or args.max_sessions < 1:
        _error("--rate-limit must be > 0, --rate-burst >= 1 and --max-sessions >= 1")
        return _INVALID_ARGUMENTS
    if not 0 < args.reply_timeout <= 3600:
        _error(f"--reply-timeout must be between 0 and 3600 seconds, got {args.reply_timeout}")
        return _INVALID_ARGUMENTS
    if args.max_output_tokens is not None and args.max_output_tokens < 1:
        _error(f"--max-output-tokens must be at least 1, got {args.max_output_tokens}")
        return _INVALID_ARGUMENTS

    _configure_logging(args.log_file)
    from vitrine.plans.base import UsageError
    from vitrine.redact import describe_exception
    from vitrine.service.protocol import ServiceOptions
    from vitrine.suite import SuiteLoadError, load_suite

    options = ServiceOptions(
        architecture=args.architecture,
        provider=args.provider,
        model=args.model,
        local_model=args.local_model,
        regress=args.regress,
        front_desk=args.front_desk,
        max_output_tokens=args.max_output_tokens,
    )
    try:
        suite = load_suite(args.suite)
        factory = suite.component("service")
        assistant = factory(options)
    except SuiteLoadError as exc:
        _error(str(exc))
        return int(exc.exit_code)
    except (UsageError, ValueError) as exc:
        _error(str(exc))
        return _INVALID_ARGUMENTS
    except Exception as exc:
        _error(f"the assistant could not be built: {describe_exception(exc)}")
        return _INFRASTRUCTURE

    import uvicorn

    from vitrine.service.app import ServiceConfig, create_app

    config = ServiceConfig(
        rate_capacity=args.rate_burst,
        rate_per_s=args.rate_limit,
        max_sessions=args.max_sessions,
        reply_timeout_s=args.reply_timeout,
    )
    app = create_app(assistant, config)
    logging.getLogger("vitrine.service").info(
        "serving %s on %s:%d", dict(assistant.description), args.host, args.port
    )
    server = uvicorn.Server(
        uvicorn.Config(
            app,
            host=args.host,
            port=args.port,
            log_level="warning",
            access_log=False,  # the app logs every request with its request id instead
            lifespan="on",
        )
    )
    try:
        server.run()
    except KeyboardInterrupt:
        return 0
    except OSError as exc:  # the port is taken, the address is not ours
        _error(f"the service could not start: {describe_exception(exc)}")
        return _INFRASTRUCTURE
    # uvicorn reports a failed bind by stopping without having started.
    return 0 if server.started else _INFRASTRUCTURE


def _configure_logging(log_file: Path | None) -> None:
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    if log_file is not None:
        handlers.append(logging.FileHandler(log_file, encoding="utf-8"))
    formatter = logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
    logger = logging.getLogger("vitrine.service")
    for handler in handlers:
        handler.setFormatter(formatter)
        logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False


def _error(message: str) -> None:
    sys.stderr.write(f"vitrine serve: error: {message}\n")
    sys.stderr.flush()

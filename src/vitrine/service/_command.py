"""``vitrine serve``: run a suite's assistant as an HTTP service until interrupted.

Exit codes follow the main command: 0 after a clean stop, 2 for invalid arguments (including
an option the suite's assistant refuses, or a log file that cannot be opened), 4 when the
service cannot start. The suite's own flags (its :class:`~vitrine.pipeline.ServiceFlag`
declarations) are offered beside vitrine's and reach its assistant factory as
``ServiceOptions.suite_options``. The address is bound before the suite's assistant is built,
so a port in use or an address that is not this machine's is reported at once.
"""

from __future__ import annotations

import argparse
import ipaddress
import logging
import math
import re
import socket
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vitrine._commandline import (
    INFRASTRUCTURE,
    USAGE,
    CommandRefusal,
    RefusingParser,
    add_suite_flag,
    add_suite_option,
    component_or_refuse,
    run_suite_command,
)
from vitrine._vocabulary import ExitCode

if TYPE_CHECKING:
    import uvicorn

    from vitrine._suite import Suite

__all__ = ["build_parser", "main", "uvicorn_config"]

PROG = "vitrine serve"
_LOOPBACK_PROXIES = ("127.0.0.1", "::1")
# How long uvicorn holds an idle keep-alive connection. Its own 5 s is httpx's idle expiry
# too, so the two race: the server closes a pooled connection just as the client sends on it,
# and that request fails with a read error (benchmarks/sse_load.py dropped 1 to 6 of 50
# sessions in 30 s). Held longer here; a connection idle past REQUEST_HEAD_TIMEOUT_S is still
# closed by the bounded protocol, so this adds no idle connection that lasts.
KEEP_ALIVE_S = 75


def _bounded_number(low: float, high: float) -> Callable[[str], float]:
    """An argparse type: a finite number in ``[low, high]`` (nan, inf and 1e-300 are refused)."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text[:40]!r} is not a number") from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"{text[:40]!r} is not a finite number")
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{text[:40]!r} is not between {low:g} and {high:g}")
        return value

    return parse


def _bounded_int(low: int, high: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text) if len(text) <= 20 else None
        except ValueError:
            value = None
        if value is None or not low <= value <= high:
            raise argparse.ArgumentTypeError(
                f"{text[:40]!r} is not a whole number between {low} and {high}"
            )
        return value

    return parse


def build_parser(suite: Suite | None = None) -> argparse.ArgumentParser:
    """The parser of ``vitrine serve``, with the flags ``suite`` declares when it is given."""
    parser = RefusingParser(
        prog=PROG,
        description=(
            "Serve the suite's conversational assistant over HTTP: POST /v1/chat streams "
            "server-sent events, GET /health reports readiness (GET /docs shows the schema "
            "with --docs). The suite's own flags are listed by vitrine serve --suite "
            "MODULE:ATTR --help."
        ),
        allow_abbrev=False,
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument(
        "--port", type=_bounded_int(1, 65535), default=8000, help="port to bind (default 8000)"
    )
    parser.add_argument(
        "--provider",
        choices=("scripted", "openai", "azure", "local"),
        default="scripted",
        help="the model behind the assistant (default: the offline scripted model)",
    )
    parser.add_argument("--model", metavar="NAME", help="model or deployment name")
    parser.add_argument("--local-model", metavar="PATH", help="a local GGUF model file")
    add_suite_option(parser, component="service")
    parser.add_argument(
        "--reply-timeout",
        type=_bounded_number(0.001, 3600),
        default=60.0,
        metavar="SECONDS",
        help="longest a turn may take before the client gets a timeout (default 60; a small "
        "local model on a few cores may need several minutes)",
    )
    parser.add_argument(
        "--max-output-tokens",
        type=_bounded_int(1, 10_000_000),
        metavar="N",
        help="the model's output-token ceiling per request (default: the provider's, see "
        "VITRINE_SUBJECT_MAX_OUTPUT_TOKENS)",
    )
    parser.add_argument(
        "--rate-limit",
        type=_bounded_number(0.001, 1_000_000),
        default=10.0,
        metavar="PER_S",
        help="sustained requests per second per client, 0.001 to 1e6 (default 10)",
    )
    parser.add_argument(
        "--rate-burst",
        type=_bounded_number(1, 1_000_000),
        default=30.0,
        metavar="N",
        help="requests a client may burst, 1 to 1e6 (default 30)",
    )
    parser.add_argument(
        "--max-sessions",
        type=_bounded_int(1, 1_000_000),
        default=1000,
        metavar="N",
        help="conversations kept (default 1000)",
    )
    security = parser.add_argument_group(
        "exposure and trust (the defaults expose the least; see the README's Security section)"
    )
    security.add_argument(
        "--sessions-per-client",
        type=_bounded_int(1, 1_000_000),
        default=50,
        metavar="N",
        help="conversations one client address may hold; its next one evicts its oldest, so "
        "one client's load cannot evict everyone else's (default 50)",
    )
    security.add_argument(
        "--share-sessions",
        dest="bind_sessions",
        action="store_false",
        help="let any client that holds a session id continue the session (default: only the "
        "client address that opened it)",
    )
    security.add_argument(
        "--docs", action="store_true", help="publish the schema at /docs, /redoc, /openapi.json"
    )
    security.add_argument(
        "--health-details",
        action="store_true",
        help="/health also reports session and request counts",
    )
    security.add_argument(
        "--trust-forwarded",
        action="store_true",
        help="take the client address from X-Forwarded-For when the request comes from a "
        "trusted proxy (--forwarded-allow-ips, default the loopback addresses)",
    )
    security.add_argument(
        "--forwarded-allow-ips",
        metavar="ADDRS",
        help="comma-separated proxy addresses or networks whose forwarded headers are "
        "trusted; implies --trust-forwarded ('*' trusts any peer)",
    )
    parser.add_argument(
        "--log-file", type=Path, metavar="PATH", help="also append the service log here"
    )
    if suite is not None and suite.service_options:
        _add_suite_flags(parser, suite)
    return parser


# The namespace keeps the suite's values apart from vitrine's own under this prefix.
_SUITE_DEST = "suite_option:"


def _add_suite_flags(parser: argparse.ArgumentParser, suite: Suite) -> None:
    own = parser.add_argument_group(f"options of suite {suite.name}")
    for item in suite.service_options:
        settings: dict[str, Any] = {"dest": _SUITE_DEST + item.key, "help": item.help}
        if item.kind == "value":
            settings.update(default=item.default, metavar=item.metavar or "VALUE")
            if item.choices:
                settings.update(choices=item.choices, metavar=None)
        else:
            settings["action"] = "store_true" if item.kind == "on" else "store_false"
        add_suite_flag(own, suite.name, item.flag, **settings)


def main(argv: Sequence[str]) -> int:
    """Run ``vitrine serve`` until interrupted; return the exit code."""
    return run_suite_command(PROG, build_parser, argv, _start, _service_flags)


def _service_flags(suite: Suite) -> tuple[str, ...]:
    return suite.own_flags(service=True)


def _start(args: argparse.Namespace, suite: Suite) -> int:
    proxies = _trusted_proxies(args.trust_forwarded, args.forwarded_allow_ips)
    if args.sessions_per_client > args.max_sessions:
        raise CommandRefusal(
            f"--sessions-per-client ({args.sessions_per_client}) cannot exceed "
            f"--max-sessions ({args.max_sessions})"
        )
    with _service_logging(args.log_file):
        sock = _bind(args.host, args.port)
        with sock:
            return _serve(args, suite, sock, proxies)


def _serve(
    args: argparse.Namespace, suite: Suite, sock: socket.socket, proxies: list[str] | None
) -> int:
    from vitrine._redact import describe_exception
    from vitrine.service._protocol import ServiceOptions

    options = ServiceOptions(
        provider=args.provider,
        model=args.model,
        local_model=args.local_model,
        max_output_tokens=args.max_output_tokens,
        suite_options={
            key.removeprefix(_SUITE_DEST): value
            for key, value in vars(args).items()
            if key.startswith(_SUITE_DEST)
        },
    )
    factory = component_or_refuse(suite, "service")
    try:
        assistant = factory(options)
    except ValueError as exc:  # includes UsageError: an option it refuses
        raise CommandRefusal(str(exc), USAGE) from None
    except ModuleNotFoundError as exc:
        # A missing dependency (the suite's embedding model, say) is refused before the service
        # listens, with the line that installs it, rather than leaving it "not ready" for good.
        from vitrine._cli import missing_extra_hint

        raise CommandRefusal(f"the assistant {missing_extra_hint(exc)}", INFRASTRUCTURE) from None
    except Exception as exc:
        raise CommandRefusal(
            f"the assistant could not be built: {describe_exception(exc)}", INFRASTRUCTURE
        ) from None

    import uvicorn

    from vitrine.service._app import ServiceConfig, create_app

    config = ServiceConfig(
        rate_capacity=args.rate_burst,
        rate_per_s=args.rate_limit,
        max_sessions=args.max_sessions,
        reply_timeout_s=args.reply_timeout,
        docs=args.docs,
        health_details=args.health_details,
        bind_sessions=args.bind_sessions,
        sessions_per_client=args.sessions_per_client,
    )
    app = create_app(assistant, config)
    logging.getLogger("vitrine.service").info(
        "serving %s on %s:%d (forwarded headers trusted from: %s)",
        dict(assistant.description),
        args.host,
        args.port,
        ", ".join(proxies) if proxies else "nobody",
    )
    server = uvicorn.Server(uvicorn_config(app, forwarded_allow_ips=proxies))
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:
        return ExitCode.PASS
    except OSError as exc:
        raise CommandRefusal(
            f"the service could not start: {describe_exception(exc)}", INFRASTRUCTURE
        ) from None
    return ExitCode.PASS if server.started else ExitCode.INFRASTRUCTURE


def uvicorn_config(app: Any, *, forwarded_allow_ips: list[str] | None) -> uvicorn.Config:
    """The server settings ``vitrine serve`` runs ``app`` with.

    uvicorn's own default trusts ``X-Forwarded-For`` from loopback, so a client on the same
    host could pose as any address and dodge its rate limit; here forwarded headers count only
    from the proxies the operator names.
    """
    import uvicorn

    from vitrine.service._connections import BoundedH11Protocol

    return uvicorn.Config(
        app,
        http=BoundedH11Protocol,  # a half-sent request is closed after a bounded time
        log_level="warning",
        access_log=False,  # the app logs every request with its request id instead
        lifespan="on",
        proxy_headers=forwarded_allow_ips is not None,
        forwarded_allow_ips=forwarded_allow_ips,
        server_header=False,
        timeout_keep_alive=KEEP_ALIVE_S,
    )


def _trusted_proxies(trust: bool, listed: str | None) -> list[str] | None:
    if listed is None:
        return list(_LOOPBACK_PROXIES) if trust else None
    entries = [entry.strip() for entry in listed.split(",") if entry.strip()]
    if not entries:
        raise CommandRefusal("--forwarded-allow-ips names no address", USAGE)
    for entry in entries:
        if entry == "*":
            continue
        try:
            ipaddress.ip_network(entry, strict=False)
        except ValueError:
            raise CommandRefusal(
                f"--forwarded-allow-ips: {entry[:60]!r} is not an IP address or network",
                USAGE,
            ) from None
    return entries


def _bind(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port``, or a :class:`CommandRefusal` that says why not."""
    if not host.strip():
        raise CommandRefusal("--host is empty: name an address to bind", USAGE)
    where = f"{host[:80]!r} port {port}"
    # A dotted number that is no IPv4 address would go to DNS and wait for its timeout.
    if re.fullmatch(r"[0-9.]+", host) and not _is_ip(host):
        raise CommandRefusal(f"cannot listen on {where}: not an IPv4 address", INFRASTRUCTURE)
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (OSError, UnicodeError, ValueError) as exc:
        reason = getattr(exc, "strerror", None) or "not a valid address"
        raise CommandRefusal(f"cannot listen on {where}: {reason}", INFRASTRUCTURE) from None
    family, kind, protocol, _, address = found[0]
    sock = socket.socket(family, kind, protocol)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
    except OSError as exc:
        sock.close()
        reason = exc.strerror or "refused by the system"
        raise CommandRefusal(f"cannot listen on {where}: {reason}", INFRASTRUCTURE) from None
    return sock


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


@contextmanager
def _service_logging(log_file: Path | None) -> Iterator[None]:
    """Send the service log to stderr (and ``log_file``) while the command runs.

    The logger is put back as it was afterwards, so running the command in-process (a test, a
    notebook) leaves no handler on a stream that is gone and no change to propagation.
    """
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    if log_file is not None:
        handlers.append(_log_file_handler(log_file))
    from vitrine.service import _logsafe as logsafe

    formatter = logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
    logger = logging.getLogger("vitrine.service")
    logsafe.install(logger)
    saved = logger.level, logger.propagate
    for handler in handlers:
        handler.setFormatter(formatter)
        logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    try:
        yield
    finally:
        for handler in handlers:
            logger.removeHandler(handler)
            handler.close()
        logger.setLevel(saved[0])
        logger.propagate = saved[1]


def _log_file_handler(path: Path) -> logging.Handler:
    shown = repr(str(path)[:200])
    if path.is_dir():
        raise CommandRefusal(f"--log-file {shown} is a directory: name a file", USAGE)
    try:
        return logging.FileHandler(path, encoding="utf-8")
    except (FileNotFoundError, NotADirectoryError, PermissionError, IsADirectoryError) as exc:
        raise CommandRefusal(
            f"--log-file {shown} cannot be opened for appending: {exc.strerror}",
            USAGE,
        ) from None
    except ValueError:  # a NUL in the path
        raise CommandRefusal(f"--log-file {shown} is not a valid path", USAGE) from None
    except OSError as exc:
        raise CommandRefusal(
            f"--log-file {shown} cannot be opened: {exc.strerror}", INFRASTRUCTURE
        ) from None

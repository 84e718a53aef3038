"""The board's HTTP server: the standard library's threading server, on loopback by default.

It is a local tool over files a person owns, so it defends the two ways a web page elsewhere
could reach it: a request whose ``Host`` is not this board's address is refused (DNS
rebinding), and a form post must come from the board itself (same-origin ``Origin`` or
``Sec-Fetch-Site``, plus the per-process anti-forgery token checked by :class:`Board`). Every
page carries a Content-Security-Policy that allows only the board's own script and styles.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from vitrine.board.app import Board, Reply
from vitrine.board.render import static_file

__all__ = ["BoardServer", "serve"]

_MAX_FORM_BYTES = 64 * 1024
_SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
        "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    # Not "no-referrer": with it a browser posts ``Origin: null``, hiding the same-origin proof.
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
    "X-Frame-Options": "DENY",
}


class BoardServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, board: Board, host: str, port: int) -> None:
        self.board = board
        super().__init__((host, port), _Handler)
        bound_host, bound_port = self.server_address[:2]
        self.port = int(bound_port)
        self.host = bound_host.decode() if isinstance(bound_host, bytes) else str(bound_host)
        names = {self.host, "localhost", "127.0.0.1", "[::1]"}
        self.allowed_hosts = frozenset(f"{name}:{self.port}" for name in names)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/"


class _Handler(BaseHTTPRequestHandler):
    server: BoardServer
    server_version = "vitrine-board"
    sys_version = ""
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        pass  # the board is quiet; its pages say what happened

    def _host_ok(self) -> bool:
        return self.headers.get("Host", "") in self.server.allowed_hosts

    def _send(self, reply: Reply) -> None:
        self.send_response(reply.status)
        self.send_header("Content-Type", reply.content_type)
        self.send_header("Content-Length", str(len(reply.body)))
        for name, value in {**_SECURITY_HEADERS, **reply.headers}.items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(reply.body)

    def _plain(self, status: int, message: str) -> Reply:
        return Reply(status, (message + "\n").encode(), "text/plain; charset=utf-8")

    def do_GET(self) -> None:
        if not self._host_ok():
            self._send(self._plain(403, "this board answers only at its own loopback address"))
            return
        url = urlsplit(self.path)
        if url.path.startswith("/static/"):
            found = static_file(url.path.removeprefix("/static/"))
            self._send(
                self._plain(404, "no such file")
                if found is None
                else Reply(200, found[0], found[1])
            )
            return
        if url.path.startswith("/api/job/") and url.path.removeprefix("/api/job/").isdigit():
            self._send(self.server.board.job_json(int(url.path.removeprefix("/api/job/"))))
            return
        self._send(self.server.board.get(url.path, parse_qs(url.query, keep_blank_values=True)))

    do_HEAD = do_GET

    def do_POST(self) -> None:
        if not self._host_ok():
            self._send(self._plain(403, "this board answers only at its own loopback address"))
            return
        if not self._same_origin():
            self._send(
                self._plain(403, "cross-site form posts are refused: open the board and use it")
            )
            return
        length = self.headers.get("Content-Length", "")
        if not length.isdigit() or int(length) > _MAX_FORM_BYTES:
            self._send(self._plain(413, "a board form is at most 64 KiB"))
            return
        body = self.rfile.read(int(length)).decode("utf-8", errors="replace")
        form = {k: v[-1] for k, v in parse_qs(body, keep_blank_values=True).items()}
        self._send(self.server.board.post(urlsplit(self.path).path, form))

    def _same_origin(self) -> bool:
        site = self.headers.get("Sec-Fetch-Site")
        if site is not None and site not in {"same-origin", "none"}:
            return False
        origin = self.headers.get("Origin")
        if origin is None or origin == "null":
            # Fetch metadata cannot be set by a page, so it alone proves the post is ours; a
            # client that sends neither header is too old (or not a browser) to trust here.
            return site is not None
        return origin.removeprefix("http://") in self.server.allowed_hosts


@contextlib.contextmanager
def serve(board: Board, host: str = "127.0.0.1", port: int = 0) -> Iterator[BoardServer]:
    """Start the board in a background thread; stop it when the block ends."""

    server = BoardServer(board, host, port)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
        sys.stdout.flush()

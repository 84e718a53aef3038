"""The board's HTTP server: the standard library's threading server, on loopback by default.

It is a local tool over files a person owns. Loopback is shared by every user of the machine,
so the board is its owner's by a secret: an access token drawn when it starts and printed in
the address it announces (as a notebook server does). Every request, each page, static file
and action alike, must carry it: as ``?token=`` once (answered with an HttpOnly, same-site
cookie and a redirect to the same page without it), as that cookie, or as an
``Authorization: Bearer`` header. Without it the answer is 401 and nothing of the store. The
token is never written into a page, a log or a file.

It also defends the two ways a web page elsewhere could reach it: a request whose ``Host`` is
not this board's address is refused (DNS rebinding), and a form post must come from the board
itself (same-origin ``Origin`` or ``Sec-Fetch-Site``, plus the per-process anti-forgery token
checked by :class:`Board`). Every page carries a Content-Security-Policy that allows only the
board's own script and styles.
"""

from __future__ import annotations

import contextlib
import hmac
import secrets
import sys
import threading
from collections.abc import Iterator
from http.cookies import CookieError, SimpleCookie
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlencode, urlsplit

from vitrine._board.app import Board, Reply

__all__ = ["TOKEN_PARAMETER", "BoardServer", "serve"]

TOKEN_PARAMETER = "token"
_NO_TOKEN = (
    "this board is its owner's: open the address it printed when it started (it carries the "
    "access token), or send the token as 'Authorization: Bearer TOKEN'"
)

_MAX_FORM_BYTES = 64 * 1024
IDLE_TIMEOUT_S = 30.0
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

    def __init__(
        self,
        board: Board,
        host: str,
        port: int,
        token: str | None = None,
        *,
        idle_timeout_s: float = IDLE_TIMEOUT_S,
    ) -> None:
        self.board = board
        # A connection that sends nothing for this long is closed, so half-sent requests
        # cannot hold a thread each for ever.
        self.idle_timeout_s = idle_timeout_s
        # Drawn per start; only the announced address carries it (never a page or a file).
        self.token = token or secrets.token_urlsafe(32)
        super().__init__((host, port), _Handler)
        bound_host, bound_port = self.server_address[:2]
        self.port = int(bound_port)
        self.host = bound_host.decode() if isinstance(bound_host, bytes) else str(bound_host)
        names = {self.host, "localhost", "127.0.0.1", "[::1]"}
        self.allowed_hosts = frozenset(f"{name}:{self.port}" for name in names)
        # Cookies are not kept apart by port: each board names its own.
        self.cookie_name = f"vitrine-board-{self.port}"

    @property
    def url(self) -> str:
        """The board's address, without its access token."""
        return f"http://{self.host}:{self.port}/"

    @property
    def login_url(self) -> str:
        """The address to open: it carries the access token, so only its owner should see it."""
        return f"{self.url}?{TOKEN_PARAMETER}={self.token}"

    def holds_token(self, value: str) -> bool:
        return bool(value) and hmac.compare_digest(value.encode(), self.token.encode())

    def handle_error(self, request: object, client_address: object) -> None:
        # A client that hangs up or goes quiet is no error of the board's: nothing to print.
        if isinstance(sys.exc_info()[1], ConnectionError | TimeoutError):
            return
        super().handle_error(request, client_address)  # type: ignore[arg-type]


class _Handler(BaseHTTPRequestHandler):
    server: BoardServer
    server_version = "vitrine-board"
    sys_version = ""
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        pass  # the board is quiet; its pages say what happened

    def setup(self) -> None:
        super().setup()
        self.connection.settimeout(self.server.idle_timeout_s)

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

    def _authorised(self) -> bool:
        """Whether the request carries the access token, as the cookie or a bearer header."""
        scheme, _, credential = self.headers.get("Authorization", "").partition(" ")
        if scheme.lower() in ("bearer", "token") and self.server.holds_token(credential.strip()):
            return True
        cookies: SimpleCookie = SimpleCookie()
        try:
            cookies.load(self.headers.get("Cookie", ""))
        except CookieError:
            return False
        held = cookies.get(self.server.cookie_name)
        return held is not None and self.server.holds_token(held.value)

    def _refused(self, offered: str | None = None) -> Reply | None:
        """The refusal for a request from elsewhere or without the token; None to go on.
        ``offered`` is a token given in the URL, checked instead of the cookie and header."""
        if not self._host_ok():
            return self._plain(403, "this board answers only at its own loopback address")
        if not (self._authorised() if offered is None else self.server.holds_token(offered)):
            # The connection closes: a refused post's body is never read off it.
            return Reply(
                401,
                (_NO_TOKEN + "\n").encode(),
                "text/plain; charset=utf-8",
                {"WWW-Authenticate": 'Bearer realm="vitrine board"', "Connection": "close"},
            )
        return None

    def _log_in(self, path: str, params: dict[str, list[str]]) -> Reply:
        """Trade ``?token=`` for the cookie, and send the browser on without it in the URL."""
        offered = params.pop(TOKEN_PARAMETER)
        refusal = self._refused(offered[-1] if offered else "")
        if refusal is not None:
            return refusal
        rest = urlencode(params, doseq=True)
        cookie = f"{self.server.cookie_name}={self.server.token}; Path=/; HttpOnly; SameSite=Strict"
        # One leading slash: "//elsewhere" would send the browser to another site.
        location = "/" + path.lstrip("/") + (f"?{rest}" if rest else "")
        return Reply(303, b"", headers={"Location": location, "Set-Cookie": cookie})

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        params = parse_qs(url.query, keep_blank_values=True)
        if TOKEN_PARAMETER in params:
            self._send(self._log_in(url.path, params))
            return
        refusal = self._refused()
        self._send(refusal or self.server.board.get(url.path, params))

    do_HEAD = do_GET

    def do_POST(self) -> None:
        refusal = self._refused()
        if refusal is not None:
            self._send(refusal)
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
def serve(
    board: Board,
    host: str = "127.0.0.1",
    port: int = 0,
    token: str | None = None,
    *,
    idle_timeout_s: float = IDLE_TIMEOUT_S,
) -> Iterator[BoardServer]:
    """Start the board in a background thread; stop it when the block ends."""

    server = BoardServer(board, host, port, token, idle_timeout_s=idle_timeout_s)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
        sys.stdout.flush()

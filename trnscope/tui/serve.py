"""``trnscope serve``: the terminal UI in a browser, served on localhost only to the
person who started it.

textual-serve alone would let any web page the user visits drive the UI over a
WebSocket (no Origin check) and a DNS-rebinding page read it (no Host check).  Here
every request must name this server in its Host header (localhost names and the port),
a WebSocket must come from this server's own page (Origin), and everything but the
static files needs the random token printed at start (in the URL, then a
SameSite=Strict cookie).
"""

from __future__ import annotations

import errno
import hmac
import logging
import re
import secrets
import socket
import sys
from collections.abc import Awaitable, Callable

import aiohttp_jinja2
import jinja2
from aiohttp import web
from textual_serve.server import Server

from trnscope.core.base.errors import TrnscopeError
from trnscope.core.base.text import safe_text

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")
COOKIE = "trnscope_token"
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def allowed_hosts(host: str, port: int) -> frozenset[str]:
    names = {host, *LOOPBACK_NAMES} if host in ("localhost", "127.0.0.1", "::1") else {host}
    return frozenset(f"{name}:{port}" for name in names) | (frozenset(names) if port == 80 else frozenset())


def check_port_free(host: str, port: int) -> None:
    """One clear line instead of a traceback when the port cannot be had: taken,
    privileged, or any other reason the system gives."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as error:
        raise TrnscopeError(f"cannot serve on {host}: {error.strerror or error}") from None
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as error:
            if error.errno == errno.EADDRINUSE:
                reason = "is busy"
            elif error.errno in (errno.EACCES, errno.EPERM):
                reason = "needs privileges this user does not have (ports below 1024 usually do)"
            else:
                reason = f"cannot be used: {error.strerror or error}"
            raise TrnscopeError(f"port {port} on {host} {reason}; choose another with --port") from None


_TOKEN_IN_URL = re.compile(r"([?&]token=)[^&\s\"']*")


class _SafeLogRecords(logging.Filter):
    """What the server logs — access lines carry the client's User-Agent and the URL —
    reaches the terminal sanitised, and never with the token."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = _TOKEN_IN_URL.sub(r"\1…", record.getMessage())
        record.msg, record.args = safe_text(message), ()
        return True


# The page textual-serve renders fetches its font from a public font host; the same
# font ships in its static folder, so the page uses that instead (no network at run time).
_REMOTE_FONT = re.compile(r'<link\s+rel="stylesheet"\s+href="https://fonts\.googleapis\.com/[^"]*"\s*/>')
_LOCAL_FONT = (
    "<style>@font-face { font-family: 'Roboto Mono'; "
    "src: url('{{ config.static.url }}fonts/RobotoMono-VariableFont_wght.ttf'); }</style>"
)


def local_page(template: str) -> str:
    return _REMOTE_FONT.sub(_LOCAL_FONT, template)


class GuardedServer(Server):
    def __init__(self, command: str, host: str, port: int, token: str) -> None:
        super().__init__(command, host=host, port=port, title="trnscope")
        self.token = token
        self.hosts = allowed_hosts(host, port)
        self.origins = frozenset(f"http://{h}" for h in self.hosts)

    def _token_ok(self, request: web.Request) -> bool:
        given = request.query.get("token") or request.cookies.get(COOKIE) or ""
        return hmac.compare_digest(given.encode(), self.token.encode())

    @web.middleware
    async def guard(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.headers.get("Host", "") not in self.hosts:
            raise web.HTTPForbidden(text="unknown Host (trnscope serve answers only to its own address)")
        origin = request.headers.get("Origin")
        if origin is not None and origin not in self.origins:
            raise web.HTTPForbidden(text="cross-origin request refused")
        if request.path.startswith("/static/"):
            return await handler(request)
        if request.path == "/ws" and origin is None:
            raise web.HTTPForbidden(text="a WebSocket must come from this server's page")
        if not self._token_ok(request):
            raise web.HTTPForbidden(text="missing or wrong token: use the URL trnscope serve printed")
        response = await handler(request)
        if request.path == "/" and request.query.get("token"):
            response.set_cookie(COOKIE, self.token, httponly=True, samesite="Strict", path="/")
        return response

    async def _make_app(self) -> web.Application:
        app = await super()._make_app()
        app.middlewares.append(self.guard)
        page = (self.templates_path / "app_index.html").read_text(encoding="utf-8")
        aiohttp_jinja2.setup(app, loader=jinja2.DictLoader({"app_index.html": local_page(page)}))
        return app

    def initialize_logging(self) -> None:
        super().initialize_logging()
        for handler in logging.getLogger().handlers:
            handler.addFilter(_SafeLogRecords())

    async def on_startup(self, app: web.Application) -> None:  # textual-serve's banner reads markup
        return None


def url_for(host: str, port: int, token: str) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/?token={token}"


def serve(command: str, host: str, port: int) -> None:
    if not 1 <= port <= 65535:
        raise TrnscopeError(f"--port must be between 1 and 65535, not {port}")
    if host not in ("localhost", "127.0.0.1", "::1"):
        sys.stderr.write(
            safe_text(f"warning: serving on {host}: anyone who can reach it and has the URL can read the trace") + "\n"
        )
    check_port_free(host, port)
    token = secrets.token_urlsafe(24)
    server = GuardedServer(command, host, port, token)
    sys.stderr.write(safe_text(f"trnscope serve: open {url_for(host, port, token)}") + "\n(Ctrl+C stops it)\n")
    sys.stderr.flush()
    server.serve()

"""``trnscope serve`` answers only its own address, its own page and the token it printed."""

from __future__ import annotations

import socket

import pytest

pytest.importorskip("textual_serve")

from aiohttp.test_utils import TestClient, TestServer

from trnscope.cli.main import main
from trnscope.tui.serve import GuardedServer, check_port_free, url_for


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def _client(token: str = "s3cret") -> tuple[TestClient, int]:
    port = _free_port()
    server = GuardedServer("true", "localhost", port, token)
    client = TestClient(TestServer(await server._make_app(), host="127.0.0.1", port=port))
    await client.start_server()
    return client, port


async def test_requests_need_the_token_the_right_host_and_origin() -> None:
    client, port = await _client()
    try:
        host = {"Host": f"localhost:{port}"}
        assert (await client.get("/", headers=host)).status == 403  # no token
        assert (await client.get("/?token=wrong", headers=host)).status == 403
        page = await client.get("/?token=s3cret", headers=host)
        assert page.status == 200 and "trnscope_token" in page.headers.get("Set-Cookie", "")
        assert "SameSite=Strict" in page.headers["Set-Cookie"]
        client.session.cookie_jar.clear()  # each request below carries only what it says
        # DNS rebinding: a page of evil.example resolving to 127.0.0.1
        assert (await client.get("/?token=s3cret", headers={"Host": f"evil.example:{port}"})).status == 403
        # another site's page opening our WebSocket, even with the cookie
        cross = {**host, "Origin": "https://evil.example", "Cookie": "trnscope_token=s3cret"}
        assert (await client.get("/ws", headers=cross)).status == 403
        # a WebSocket without an Origin (not from a browser page of ours) or without the token
        assert (await client.get("/ws", headers={**host, "Cookie": "trnscope_token=s3cret"})).status == 403
        assert (await client.get("/ws", headers={**host, "Origin": f"http://localhost:{port}"})).status == 403
        assert (await client.get("/download/x", headers=host)).status == 403
    finally:
        await client.close()


def test_port_range_and_busy_port(capsys, small_synthetic) -> None:
    for port in ("0", "70000", "-1"):
        assert main(["serve", str(small_synthetic[0]), "--port", port]) == 2
        assert "--port must be between 1 and 65535" in capsys.readouterr().err
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(Exception, match="busy"):
            check_port_free("127.0.0.1", port)
        assert main(["serve", str(small_synthetic[0]), "--host", "127.0.0.1", "--port", str(port)]) == 2
        assert "busy" in capsys.readouterr().err


def test_url_carries_the_token() -> None:
    assert url_for("localhost", 8000, "abc") == "http://localhost:8000/?token=abc"
    assert url_for("::1", 8000, "abc") == "http://[::1]:8000/?token=abc"


def test_serve_prints_the_url_and_warns_off_localhost(monkeypatch, capsys) -> None:
    import trnscope.tui.serve as serve_module

    served = []
    monkeypatch.setattr(serve_module.GuardedServer, "serve", lambda self: served.append((self.host, self.token)))
    port = _free_port()
    serve_module.serve("true", "localhost", port)
    err = capsys.readouterr().err
    assert served and f"http://localhost:{port}/?token={served[0][1]}" in err and "warning" not in err
    serve_module.serve("true", "0.0.0.0", _free_port())
    assert "warning: serving on 0.0.0.0" in capsys.readouterr().err


async def test_the_page_uses_the_bundled_font_not_a_font_host() -> None:
    client, port = await _client()
    try:
        page = await client.get("/?token=s3cret", headers={"Host": f"localhost:{port}"})
        html = await page.text()
        assert page.status == 200 and "googleapis" not in html and "fonts/RobotoMono" in html
        font = await client.get("/static/fonts/RobotoMono-VariableFont_wght.ttf", headers={"Host": f"localhost:{port}"})
        assert font.status == 200
    finally:
        await client.close()


def test_the_log_is_sanitised_and_never_shows_the_token() -> None:
    import logging

    from trnscope.tui.serve import _SafeLogRecords

    record = logging.LogRecord(
        "aiohttp.access",
        logging.INFO,
        "x",
        1,
        '%s "GET /?token=%s HTTP/1.1" 200 "%s"',
        ("127.0.0.1", "s3cret", "UA\u202eX\x1b[2J"),
        None,
    )
    assert _SafeLogRecords().filter(record)
    shown = record.getMessage()
    assert "s3cret" not in shown and "token=…" in shown
    assert "\u202e" not in shown and "\x1b" not in shown


def test_the_warning_off_localhost_is_one_real_line(monkeypatch, capsys) -> None:
    import trnscope.tui.serve as serve_module

    monkeypatch.setattr(serve_module.GuardedServer, "serve", lambda self: None)
    serve_module.serve("true", "0.0.0.0", _free_port())
    err = capsys.readouterr().err
    assert "\\x0a" not in err and err.splitlines()[0].startswith("warning: serving on 0.0.0.0")


def test_a_privileged_port_says_so(monkeypatch) -> None:
    import errno as errno_module

    import trnscope.tui.serve as serve_module

    class Refusing(socket.socket):
        def bind(self, address):  # type: ignore[no-untyped-def]
            raise PermissionError(errno_module.EACCES, "Permission denied")

    monkeypatch.setattr(serve_module.socket, "socket", Refusing)
    with pytest.raises(Exception, match="needs privileges"):
        check_port_free("127.0.0.1", 80)

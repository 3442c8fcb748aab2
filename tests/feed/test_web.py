"""The live caption page: token, origin and loopback guards; captions reach a real browser."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import subprocess
import tempfile
import urllib.error
import urllib.request

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from captioner.engine.access import BindError
from captioner.feed import FeedServer
from captioner.feed.page import render_page
from captioner.realtime.captions import CaptionLine, CaptionUpdate

TOKEN = "t0ken-for-tests"
PAGE = render_page(text="#FFFF00", background="#000000", live="#B8B800",
                   font="DejaVu Sans", size_px=40)
HELLO = CaptionUpdate((CaptionLine("And so, my fellow Americans:", 0.3, 2.1),),
                      CaptionLine("ask not what your country", 2.4, 4.0, final=False))


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, ""


def test_page_and_socket_need_the_token_and_refuse_other_sites():
    async def main() -> None:
        server = await FeedServer(PAGE, TOKEN).start()
        try:
            assert server.url.startswith("http://127.0.0.1:") and TOKEN in server.url
            status, body = await asyncio.to_thread(_get, server.url)
            assert status == 200 and "Live captions" in body
            base = server.url.split("?")[0]
            assert (await asyncio.to_thread(_get, base))[0] == 401
            assert (await asyncio.to_thread(_get, base + "?token=wrong"))[0] == 401
            socket = f"ws://127.0.0.1:{server.port}/ws?token={TOKEN}"
            with pytest.raises(InvalidStatus, match="403"):
                async with connect(socket, origin="https://evil.example"):
                    pass
            with pytest.raises(InvalidStatus, match="401"):
                async with connect(socket.replace(TOKEN, "nope")):
                    pass
            server.publish(HELLO)
            async with connect(socket, origin=f"http://127.0.0.1:{server.port}") as ws:
                snapshot = json.loads(await ws.recv())
                assert snapshot["type"] == "snapshot"
                assert [x["text"] for x in snapshot["final"]] == ["And so, my fellow Americans:"]
                assert snapshot["live"] == "ask not what your country"
                server.publish(CaptionUpdate((CaptionLine("ask not what your country "
                                                          "can do for you,", 2.4, 5.0),)))
                update = json.loads(await ws.recv())
                assert update["final"][0]["text"].endswith("can do for you,")
                assert update["live"] == ""
        finally:
            await server.stop()

    asyncio.run(main())


def test_the_page_server_never_listens_beyond_this_computer():
    with pytest.raises(BindError):
        FeedServer(PAGE, TOKEN, host="0.0.0.0")


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


async def _devtools_page(browser: asyncio.subprocess.Process) -> str:
    """The page's DevTools socket, from the address Chromium prints when it starts."""
    assert browser.stderr is not None
    while True:
        line = (await asyncio.wait_for(browser.stderr.readline(), 60)).decode()
        assert line, "Chromium exited before its DevTools address"
        if match := re.search(r"ws://127\.0\.0\.1:(\d+)/", line):
            break
    url = f"http://127.0.0.1:{match.group(1)}/json/list"
    for _ in range(100):
        targets = json.loads(await asyncio.to_thread(_get_body, url))
        pages = [t for t in targets if t.get("type") == "page"]
        if pages:
            return pages[0]["webSocketDebuggerUrl"]
        await asyncio.sleep(0.1)
    raise AssertionError("no page target in Chromium")


def _get_body(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.read().decode()


async def _captions_html(devtools: str) -> str:
    async with connect(devtools, max_size=None) as ws:
        await ws.send(json.dumps({"id": 1, "method": "Runtime.evaluate", "params": {
            "expression": "document.getElementById('captions').innerHTML",
            "returnByValue": True}}))
        while True:
            answer = json.loads(await ws.recv())
            if answer.get("id") == 1:
                return answer["result"]["result"].get("value", "")


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is installed by bootstrap")
def test_a_caption_arrives_in_a_real_headless_browser():
    """Chromium loads the page as an OBS browser source would; a caption published after
    it connected appears in the page (read back over the DevTools protocol)."""

    async def main() -> str:
        server = await FeedServer(PAGE, TOKEN).start()
        browser = None
        try:
            with tempfile.TemporaryDirectory() as profile:
                browser = await asyncio.create_subprocess_exec(
                    CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
                    "--disable-background-networking", "--disable-component-update",
                    "--disable-sync", "--no-first-run", f"--user-data-dir={profile}",
                    "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0",
                    server.url, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                devtools = await _devtools_page(browser)
                for _ in range(600):  # the page connects: then say something
                    if server.connected:
                        break
                    await asyncio.sleep(0.1)
                assert server.connected, "the page opened its caption socket"
                server.publish(HELLO)
                html = ""
                for _ in range(300):
                    html = await _captions_html(devtools)
                    if "ask not" in html:
                        break
                    await asyncio.sleep(0.1)
                return html
        finally:
            if browser is not None and browser.returncode is None:
                browser.kill()
                await browser.wait()
            await server.stop()

    html = asyncio.run(main())
    assert "And so, my fellow Americans:" in html
    assert 'class="live">ask not what your country' in html

"""The caption outputs the settings turn on, kept in step with them (asyncio, no Qt).

``configure`` starts, stops or restarts each output to match the settings;
``publish`` hands every caption update to all of them. A failing output is reported
through ``on_problem`` (a sentence) and never stops the captions or the others.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from captioner.engine.access import new_token
from captioner.feed.errors import FeedError
from captioner.feed.files import LiveTextFile, LiveVttFile
from captioner.feed.web import FeedServer
from captioner.realtime.captions import CaptionUpdate
from captioner.settings import FeedSettings

log = logging.getLogger(__name__)

TEXT_NAME = "live-captions.txt"
VTT_NAME = "live-captions.vtt"


def ensure_token(feed: FeedSettings) -> bool:
    """Give the page its per-install token once; True when one was made (save it)."""
    if feed.token:
        return False
    feed.token = new_token()
    return True


def file_paths(feed: FeedSettings, folder: Path | str) -> tuple[Path, Path]:
    base = Path(folder).expanduser()
    return (Path(feed.text_path).expanduser() if feed.text_path else base / TEXT_NAME,
            Path(feed.vtt_path).expanduser() if feed.vtt_path else base / VTT_NAME)


class FeedOutputs:
    def __init__(self, on_problem: Callable[[str], None]) -> None:
        self.on_problem = on_problem
        self.server: FeedServer | None = None
        self.files: dict[str, LiveTextFile | LiveVttFile] = {}
        self._wanted: tuple = ()
        self._failing: set[str] = set()  # outputs whose last write failed

    async def configure(self, feed: FeedSettings, folder: Path | str, page: str) -> None:
        text_path, vtt_path = file_paths(feed, folder)
        wanted_files = {"text": text_path if feed.text_file else None,
                        "vtt": vtt_path if feed.vtt_file else None}
        for kind, path in wanted_files.items():
            current = self.files.get(kind)
            if current is not None and current.path != path:
                current.close()
                del self.files[kind]
            if path is not None and kind not in self.files:
                try:
                    self.files[kind] = (LiveTextFile if kind == "text" else LiveVttFile)(path)
                except FeedError as exc:
                    self.on_problem(str(exc))
            elif path is None and kind in self.files:
                self.files.pop(kind).close()
        server_wanted = (feed.web_port, feed.token, page) if feed.web_page else None
        if server_wanted != self._wanted:
            await self._stop_server()
            self._wanted = server_wanted or ()
            if server_wanted is not None:
                server = FeedServer(page, feed.token, port=feed.web_port)
                try:
                    self.server = await server.start()
                except FeedError as exc:
                    self._wanted = ()
                    self.on_problem(str(exc))

    def publish(self, update: CaptionUpdate) -> None:
        for kind, output in self.files.items():
            for line in update.finalized:
                try:
                    output.add(line)  # after a failure, the next line tries again
                except FeedError as exc:
                    if kind not in self._failing:  # say it once, not per line
                        log.warning("! %s", exc)
                        self.on_problem(str(exc))
                    self._failing.add(kind)
                    break
                else:
                    self._failing.discard(kind)
        if self.server is not None:
            self.server.publish(update)

    async def close(self) -> None:
        for output in self.files.values():
            output.close()
        self.files.clear()
        await self._stop_server()

    async def _stop_server(self) -> None:
        if self.server is not None:
            await self.server.stop()
            self.server = None


__all__ = ["FeedOutputs", "ensure_token", "file_paths"]

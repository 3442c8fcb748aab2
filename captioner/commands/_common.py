"""Options and output shared by `listen` and `transcribe`."""

from __future__ import annotations

import argparse
import logging
import shutil
import sys
from typing import TextIO

from captioner import settings as settings_mod
from captioner.realtime.captions import CaptionUpdate, LineKind, labelled
from captioner.session import SessionState, SessionStatus

log = logging.getLogger(__name__)


def add_endpoint_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--endpoint", metavar="URL",
        help="embedded (default: on this computer), ws://HOST/v1/realtime, wss://…, or "
             "sagemaker://ENDPOINT?region=REGION&profile=PROFILE",
    )
    parser.add_argument("--model", help="model id sent in session.update (remote endpoints)")
    parser.add_argument("--chunk-bytes", type=int, choices=(2048, 4096, 8192),
                        help="audio per message: 2048≈64 ms, 4096≈128 ms, 8192≈256 ms")


def load_settings(args: argparse.Namespace) -> settings_mod.Settings:
    s = settings_mod.load()
    if getattr(args, "model", None):
        s.recognition.model = args.model
    if getattr(args, "chunk_bytes", None):
        s.audio.chunk_bytes = args.chunk_bytes
    return s


class TerminalCaptions:
    """Finalized lines stay; the live line and the unconfirmed words after it are rewritten
    in place (on a terminal)."""

    def __init__(self, out: TextIO = sys.stdout, *, live: bool | None = None) -> None:
        self.out = out
        self.live = out.isatty() if live is None else live
        self._live_shown = False

    def update(self, update: CaptionUpdate) -> None:
        for line in update.finalized:
            self._clear_live()
            prefix = {LineKind.GAP: "", LineKind.TYPED: "> "}.get(line.kind, "")
            self.out.write(f"{prefix}{labelled(line)}\n")
        if self.live and (update.live is not None or update.unconfirmed or self._live_shown):
            # the live line, then the engine's unconfirmed words (they may still change)
            text = " ".join(part for part in (labelled(update.live) if update.live else "",
                                              update.unconfirmed) if part)
            width = shutil.get_terminal_size().columns - 1
            self.out.write("\r\x1b[2K" + text[-width:])
            self._live_shown = bool(text)
        self.out.flush()

    def status(self, status: SessionStatus) -> None:
        """Waiting for an endpoint (starting, refusing, unreachable) is said on stderr."""
        log.info("= %s", status)
        if status.state in (SessionState.CONNECTING, SessionState.RECONNECTING) and status.detail:
            self._clear_live()
            print(f"[{status}]", file=sys.stderr, flush=True)

    def _clear_live(self) -> None:
        if self._live_shown:
            self.out.write("\r\x1b[2K")
            self._live_shown = False

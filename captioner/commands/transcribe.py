"""`captioner transcribe FILE`: stream an audio file to an endpoint and print the transcript."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys

from captioner.audio.errors import AudioError
from captioner.audio.files import FileSource
from captioner.captioning import Captioner
from captioner.commands._common import TerminalCaptions, add_endpoint_options, load_settings
from captioner.session import SessionFailed

log = logging.getLogger(__name__)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("transcribe", help="transcribe a WAV/FLAC file (any rate or channels)")
    p.add_argument("file", help="audio file")
    p.add_argument("--realtime", action="store_true",
                   help="send at real-time pace, like live audio (default: as fast as possible)")
    add_endpoint_options(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    settings = load_settings(args)
    try:
        source = FileSource(args.file, chunk_bytes=settings.audio.chunk_bytes,
                            realtime=args.realtime)
    except (AudioError, OSError) as exc:
        print(f"captioner: {exc}", file=sys.stderr)
        return 2
    out = TerminalCaptions(live=False)
    captioner = Captioner(settings, source, endpoint=args.endpoint, on_update=out.update,
                          on_status=out.status, fail_fast=True)
    try:
        asyncio.run(captioner.run())
    except SessionFailed as exc:
        print(f"captioner: {exc}", file=sys.stderr)
        return 1
    except AudioError as exc:
        print(f"captioner: {exc}", file=sys.stderr)
        return 1
    return 0

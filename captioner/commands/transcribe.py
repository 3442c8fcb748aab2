"""`captioner transcribe FILE`: stream an audio file to an endpoint and print the transcript."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys

from captioner.audio.errors import AudioError
from captioner.audio.files import FileSource, StereoCall
from captioner.captioning import Captioner
from captioner.commands._common import TerminalCaptions, add_endpoint_options, load_settings
from captioner.realtime.captions import CaptionUpdate
from captioner.session import SessionFailed
from captioner.two_streams import TwoStreamCaptioner

log = logging.getLogger(__name__)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("transcribe", help="transcribe a WAV/FLAC file (any rate or channels)")
    p.add_argument("file", help="audio file")
    p.add_argument("--realtime", action="store_true",
                   help="send at real-time pace, like live audio (default: as fast as possible)")
    p.add_argument("--speakers", action="store_true",
                   help="a call recorded in stereo: the left channel is you, the right the "
                        "others; print each line named ('You: …', 'Others: …') in the order "
                        "said (sent at real-time pace, so it takes as long as the call)")
    add_endpoint_options(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    settings = load_settings(args)
    kind = StereoCall if args.speakers else FileSource
    try:
        # Two sides are put in order by when their words came back, which only says when
        # they were said if the audio goes out at the pace it was recorded.
        source = kind(args.file, chunk_bytes=settings.audio.chunk_bytes,
                      realtime=args.realtime or args.speakers)
    except (AudioError, OSError) as exc:
        print(f"captioner: {exc}", file=sys.stderr)
        return 2
    out = TerminalCaptions(live=False)
    captioner: Captioner | TwoStreamCaptioner
    if isinstance(source, StereoCall):
        # Both sides, each its own session; printed at the end in the order said.
        captioner = TwoStreamCaptioner(settings, source, endpoint=args.endpoint,
                                       on_status=out.status, fail_fast=True)
    else:
        captioner = Captioner(settings, source, endpoint=args.endpoint, on_update=out.update,
                              on_status=out.status, fail_fast=True)
    try:
        result = asyncio.run(captioner.run())
    except (SessionFailed, AudioError) as exc:
        print(f"captioner: {exc}", file=sys.stderr)
        return 1
    if isinstance(result, list):
        out.update(CaptionUpdate(tuple(result)))
    return 0

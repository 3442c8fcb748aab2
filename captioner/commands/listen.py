"""`captioner listen`: live captions of the microphone and/or system audio in the terminal."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
import sys

from captioner.audio.errors import AudioError
from captioner.captioning import Captioner
from captioner.commands._common import TerminalCaptions, add_endpoint_options, load_settings
from captioner.session import SessionFailed
from captioner.two_streams import TwoStreamCaptioner, captioner_for, open_source

log = logging.getLogger(__name__)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("listen", help="print live captions in the terminal")
    p.add_argument("--source", choices=("mic", "system", "both"),
                   help="what to caption (default: from settings, initially system)")
    p.add_argument("--device", help="device name or index for the chosen source")
    p.add_argument("--mic-device", help="microphone for --source both")
    p.add_argument("--system-device", help="system-audio source for --source both")
    p.add_argument("--speakers", action="store_true", default=None,
                   help="with --source both: caption the microphone and the system audio as "
                        "two streams, each line prefixed 'You: ' or 'Others: ' (names from "
                        "settings)")
    p.add_argument("--echo-cancel", action=argparse.BooleanOptionalAction, default=None,
                   help="with --speakers: remove the others' voices the microphone picks up "
                        "from the speakers (default: from settings, initially on; "
                        "--no-echo-cancel with headphones)")
    add_endpoint_options(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    settings = load_settings(args)
    audio = settings.audio
    if args.source:
        audio.source = args.source
    if args.device:
        if audio.source == "mic":
            audio.mic_device = args.device
        else:
            audio.system_device = args.device
    audio.mic_device = args.mic_device or audio.mic_device
    audio.system_device = args.system_device or audio.system_device
    if args.speakers is not None:
        if audio.source != "both":
            print("captioner: --speakers needs --source both", file=sys.stderr)
            return 2
        audio.speakers = True
    if args.echo_cancel is not None:
        audio.echo_cancel = args.echo_cancel
    out = TerminalCaptions()
    try:
        source = open_source(settings.audio)
    except AudioError as exc:
        print(f"captioner: {exc}", file=sys.stderr)
        return 2
    captioner = captioner_for(settings, source, endpoint=args.endpoint, on_update=out.update,
                              on_status=out.status, fail_fast=True)
    return asyncio.run(_listen(captioner))


async def _listen(captioner: Captioner | TwoStreamCaptioner) -> int:
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):  # Windows
            loop.add_signal_handler(sig, captioner.stop)
    try:
        await captioner.run()
    except SessionFailed as exc:
        print(f"captioner: {exc}", file=sys.stderr)
        return 1
    except AudioError as exc:
        print(f"captioner: audio capture failed: {exc}", file=sys.stderr)
        return 1
    finally:
        log.info("= listen finished: %s", captioner.stats_summary())
    return 0

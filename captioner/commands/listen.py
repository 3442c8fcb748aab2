"""`captioner listen`: live captions of the microphone and/or system audio in the terminal."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
import sys
from collections.abc import Callable

from captioner.audio.capture import RECOVER_SECONDS, reopen_delays
from captioner.audio.dual import DualCapture
from captioner.audio.errors import AudioError
from captioner.audio.handover import KeptSource
from captioner.captioning import AudioSource, Captioner
from captioner.commands._common import TerminalCaptions, add_endpoint_options, load_settings
from captioner.session import SessionFailed
from captioner.settings import AudioSettings
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
        source = KeptSource(open_source(settings.audio))
    except AudioError as exc:
        print(f"captioner: {exc}", file=sys.stderr)
        return 2

    def captioner(source: AudioSource | DualCapture) -> Captioner | TwoStreamCaptioner:
        return captioner_for(settings, source, endpoint=args.endpoint,
                             on_update=out.update, on_status=out.status, fail_fast=True)

    return asyncio.run(_listen(settings.audio, source, captioner))


async def _listen(audio: AudioSettings, source: KeptSource,
                  make: Callable[[AudioSource | DualCapture], Captioner | TwoStreamCaptioner],
                  ) -> int:
    """Caption until Ctrl+C. A device that goes away is opened again: within
    RECOVER_SECONDS the same session goes on; else it is waited for (said on stderr),
    and the captions go on when it opens."""
    loop = asyncio.get_running_loop()
    stopping = asyncio.Event()
    running: list[Captioner | TwoStreamCaptioner] = []

    def stop() -> None:
        stopping.set()
        for captioner in running:
            captioner.stop()

    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):  # Windows
            loop.add_signal_handler(sig, stop)

    async def recover(error: AudioError) -> object | None:
        """The device open again within RECOVER_SECONDS: the same session goes on."""
        lost_at = loop.time()
        with contextlib.suppress(TimeoutError):
            reopened = await asyncio.wait_for(_reopen(audio, stopping), RECOVER_SECONDS)
            if reopened is not None:
                print(f"captioner: the audio device went away ({error}) and opened again "
                      f"after {loop.time() - lost_at:.1f} s", file=sys.stderr)
                return reopened.inner
        return None

    while True:
        source.recover = recover
        captioner = make(source)
        running[:] = [captioner]
        try:
            await captioner.run()
            return 0
        except SessionFailed as exc:
            print(f"captioner: {exc}", file=sys.stderr)
            return 1
        except AudioError as exc:
            if stopping.is_set():
                return 0
            print(f"captioner: the audio device went away ({exc}); captions go on when it "
                  "is back (Ctrl+C stops)", file=sys.stderr)
        finally:
            log.info("= captioning ended: %s", captioner.stats_summary())
        running.clear()
        reopened = await _reopen(audio, stopping)
        if reopened is None:
            return 0
        print("captioner: the audio device is back", file=sys.stderr)
        source = reopened


async def _reopen(audio: AudioSettings, stopping: asyncio.Event) -> KeptSource | None:
    """The capture ``audio`` asks for, opened once it can be; None if stopped first."""
    for delay in reopen_delays():
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stopping.wait(), delay)
            return None
        try:
            return await KeptSource.open_started(open_source(audio))
        except AudioError as exc:
            log.info("= the audio device cannot open yet: %s", exc)
    return None  # the delays never run out

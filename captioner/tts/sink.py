"""What the speaker needs from an audio output (``captioner.audio.playback`` has two)."""

from __future__ import annotations

from typing import Protocol


class AudioSink(Protocol):
    """Takes one reply at a time as PCM s16le mono.

    Call order: ``start_reply(rate)``, ``await write(pcm)``…, ``finish_reply()``,
    ``await drained()``; ``cancel()`` at any point drops what is buffered.
    ``start_reply`` and ``write`` raise ``captioner.audio.errors.AudioError`` once the
    output has gone away, so the reply ends instead of streaming into nothing.
    """

    def start_reply(self, sample_rate: int) -> None: ...

    def set_input_rate(self, sample_rate: int) -> None:
        """A later sentence of the same reply comes at another rate."""
        ...

    async def write(self, pcm: bytes) -> None: ...

    def finish_reply(self) -> None: ...

    async def drained(self) -> None:
        """Returns once the last sample written has been handed to the device."""
        ...

    def cancel(self) -> None: ...

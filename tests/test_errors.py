"""Every package's error root derives from the one CaptionerError."""

from __future__ import annotations

import pytest

from captioner.audio.errors import AudioError
from captioner.audio.playback import PlaybackError
from captioner.aws.errors import CredentialsError
from captioner.cloud.errors import EndpointControlError
from captioner.engine.access import BindError
from captioner.engine.model_paths import EngineError
from captioner.errors import CaptionerError
from captioner.feed import FeedError
from captioner.realtime.errors import RealtimeError
from captioner.session.errors import SessionError
from captioner.transcript import ExportError, JournalError, TranscriptError
from captioner.transport.base import TransportError
from captioner.tts.errors import TtsError
from captioner.ui.global_shortcut import ShortcutError

ROOTS = [AudioError, PlaybackError, CredentialsError, EndpointControlError, EngineError,
         BindError, FeedError, RealtimeError, SessionError, TranscriptError, JournalError,
         ExportError, TransportError, TtsError, ShortcutError]


def test_root_is_an_exception_with_a_readable_message() -> None:
    with pytest.raises(CaptionerError, match="readable"):
        raise CaptionerError("readable")


@pytest.mark.parametrize("root", ROOTS, ids=lambda c: c.__name__)
def test_package_roots_derive_from_captioner_error(root: type[Exception]) -> None:
    """One ``except CaptionerError`` at the top catches every failure we raise on purpose."""
    assert issubclass(root, CaptionerError)

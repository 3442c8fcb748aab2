"""Replies through a SageMaker voice endpoint sign with the credentials the settings name.

A newcomer types access keys on the Endpoints page; they live only in the OS keyring,
which boto3's default chain never reads. Replies must find them there, as captions do.
The real SDK speaks to the fake SageMaker Runtime, which checks every SigV4 signature.
"""

from __future__ import annotations

import pytest

from captioner.audio.playback import WavSink
from captioner.aws import KeyringCredentials
from captioner.tts.connect import SPEECH_STREAM_PATH
from captioner.tts.speaker import SpeakerState
from captioner.ui.reply_controller import ReplyController
from tests.ui.conftest import run_async, wait_until

TEXT = "Signed with the keys from the keyring."


@pytest.fixture
def no_aws_config(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    """Nothing for boto3's default chain to find: no environment keys, no config files."""
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
                 "AWS_PROFILE", "AWS_DEFAULT_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


def test_replies_sign_with_the_keys_in_the_keyring(qapp, store, config_dir, memory_keyring,
                                                   no_aws_config, fake_sagemaker, omni_server):
    keys = fake_sagemaker.credentials
    KeyringCredentials().store(keys.access_key_id, keys.secret_access_key)
    store.settings.aws.use_keyring, store.settings.aws.profile = True, None
    fake_sagemaker.backend_url = omni_server.url.removesuffix("/" + SPEECH_STREAM_PATH)
    controller = ReplyController(store, sink_factory=lambda _d: WavSink(config_dir / "r.wav"))
    # as the app announces a replies endpoint it started (plus the fake's address)
    controller.set_endpoint_override(
        f"sagemaker://{fake_sagemaker.endpoint_name}?region={fake_sagemaker.region}"
        f"&endpoint_uri={fake_sagemaker.endpoint_uri}")

    statuses = []
    controller.status_changed.connect(statuses.append)

    async def speak():
        controller.say(TEXT)
        await wait_until(lambda: statuses and statuses[-1].state is SpeakerState.IDLE
                         and any(s.state is SpeakerState.SPEAKING for s in statuses), 20,
                         "the reply spoken to its end")
        await controller.aclose()

    run_async(qapp, speak)
    assert omni_server.sessions, "the reply never reached the endpoint"
    assert "".join(omni_server.sessions[0].texts) == TEXT
    assert all(s.state is not SpeakerState.ERROR for s in statuses)

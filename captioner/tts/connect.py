"""Turn the TTS endpoint setting into a Connector (None = use the computer's voice)."""

from __future__ import annotations

import dataclasses

from captioner.transport.base import Connector
from captioner.transport.endpoint_url import EndpointSpec, connector_for, parse_endpoint

SPEECH_STREAM_PATH = "v1/audio/speech/stream"  # SageMaker model invocation path: no leading /


def tts_connector(endpoint: str | None, **connector_options: object) -> Connector | None:
    """``""``/None → None; ``ws(s)://…`` or ``sagemaker://NAME?…`` → a Connector.

    A SageMaker endpoint without ``path=`` gets the speech-stream invocation path.
    Raises ValueError with a readable reason for anything else.
    """
    if endpoint is None or not endpoint.strip():
        return None
    return connector_for(tts_endpoint(endpoint), **connector_options)  # type: ignore[arg-type]


def tts_endpoint(endpoint: str) -> EndpointSpec:
    """The voice endpoint setting parsed; ValueError with a readable reason if it is wrong."""
    spec = parse_endpoint(endpoint)
    if spec.kind == "embedded":
        raise ValueError("There is no embedded text-to-speech engine: leave the voice endpoint "
                         "empty to use the computer's voice.")
    if spec.kind == "sagemaker" and spec.invocation_path is None:
        spec = dataclasses.replace(spec, invocation_path=SPEECH_STREAM_PATH)
    return spec

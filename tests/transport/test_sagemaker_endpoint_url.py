"""Parsing endpoint strings (settings/CLI) and building connectors from them."""

import asyncio

import pytest

from captioner.aws import AwsCredentials, StaticCredentials
from captioner.transport.endpoint_url import (
    EndpointSpec,
    connector_for,
    format_endpoint,
    parse_endpoint,
)


def test_embedded_and_websocket():
    assert parse_endpoint(" embedded ") == EndpointSpec("embedded")
    spec = parse_endpoint("wss://stt.example.com/v1/realtime")
    assert spec.kind == "websocket" and spec.url == "wss://stt.example.com/v1/realtime"


def test_sagemaker_with_all_options_round_trips():
    text = ("sagemaker://voxtral-stt?region=eu-west-1&profile=work&variant=AllTraffic"
            "&path=v1/audio/speech/stream&endpoint_uri=https://vpce-1.example.com:8443")
    spec = parse_endpoint(text)
    assert (spec.kind, spec.endpoint_name, spec.region, spec.profile, spec.variant,
            spec.invocation_path, spec.endpoint_uri) == (
        "sagemaker", "voxtral-stt", "eu-west-1", "work", "AllTraffic",
        "v1/audio/speech/stream", "https://vpce-1.example.com:8443")
    assert parse_endpoint(format_endpoint(spec)) == spec
    assert parse_endpoint("sagemaker://tts").region is None


@pytest.mark.parametrize(("text", "reason"), [
    ("", "empty"),
    ("http://x/v1/realtime", "Unknown endpoint"),
    ("ws://", "no host"),
    ("ws://host:99999/x", "invalid port"),
    ("sagemaker://", "not a SageMaker endpoint name"),
    ("sagemaker://bad_name!", "not a SageMaker endpoint name"),
    ("sagemaker://ep/extra", "after '?'"),
    ("sagemaker://ep?colour=red", "unknown option"),
    ("sagemaker://ep?region=mars", "not an AWS region"),
    ("sagemaker://ep?region=us-east-1&region=us-west-2", "twice"),
    ("sagemaker://ep?path=/v1/realtime", "must not start with '/'"),
    ("sagemaker://ep?endpoint_uri=http://x:8443", "https://"),
])
def test_bad_strings_are_value_errors(text, reason):
    with pytest.raises(ValueError, match=reason):
        parse_endpoint(text)


def test_embedded_has_no_connector():
    with pytest.raises(ValueError, match="embedded"):
        connector_for(parse_endpoint("embedded"))


def test_sagemaker_connector_reaches_the_fake(fake_sagemaker, echo_backend):
    fake_sagemaker.backend_url = echo_backend.url
    spec = parse_endpoint(f"sagemaker://{fake_sagemaker.endpoint_name}?region="
                          f"{fake_sagemaker.region}&endpoint_uri={fake_sagemaker.endpoint_uri}")
    c = fake_sagemaker.credentials
    connect = connector_for(spec, credentials_provider=StaticCredentials(
        AwsCredentials(c.access_key_id, c.secret_access_key)))

    async def main():
        transport = await connect()
        await transport.send_text("via url")
        reply = await transport.recv()
        await transport.close()
        return reply

    assert asyncio.run(asyncio.wait_for(main(), 20)) == "via url"


def test_websocket_connector_reaches_a_server(echo_backend):
    connect = connector_for(parse_endpoint(echo_backend.url))

    async def main():
        transport = await connect()
        await transport.send_text("plain ws")
        reply = await transport.recv()
        await transport.close()
        return reply

    assert asyncio.run(asyncio.wait_for(main(), 20)) == "plain ws"

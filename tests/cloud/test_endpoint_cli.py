"""`captioner endpoint …` end to end against a moto server (AWS_ENDPOINT_URL points boto3 at it)."""

from __future__ import annotations

import argparse
import io
import json
from pathlib import Path

import boto3
import pytest

from captioner import settings as settings_mod
from captioner.commands import endpoint
from tests.support.aws_account import MANIFEST, PAST_MOTO
from tests.support.aws_account import ROLE_ARN as ROLE

__all__ = ["ROLE", "cli", "endpoints"]


def cli(*argv: str, poll: bool = True) -> int:
    parser = argparse.ArgumentParser(prog="captioner")
    endpoint.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["endpoint", *argv, *(["--poll-interval", "0.01"] if poll else [])])
    return args.func(args)


def endpoints(moto_url: str) -> list[str]:
    client = boto3.client("sagemaker", region_name="us-east-1", endpoint_url=moto_url)
    return [e["EndpointName"] for e in client.list_endpoints()["Endpoints"]]


def test_deploy_list_status_stop(cli_env: Path, moto_url: str,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    rc = cli("deploy", "--kind", "tts", "--instance-type", "ml.g4dn.xlarge",
             "--role-arn", ROLE, "--yes", "--wait", "--autoscale", "1:2", *PAST_MOTO)
    out = capsys.readouterr().out
    assert rc == 0, out
    (name,) = endpoints(moto_url)
    assert name.startswith("captioner-tts-")
    assert "Cost      about $0.75/hour" in out
    assert "approximate, check the AWS pricing page" in out
    assert "Lifetime  AWS deletes it at " in out and "(8 h after creation;" in out
    assert "or deleted at its maximum lifetime." in out
    assert f"scheduling deletion of {name} at its maximum lifetime" in out
    assert f"creating endpoint {name}" in out
    assert "InService" in out and "autoscaling: 1–2 instances" in out
    assert f"sagemaker://{name}?region=us-east-1" in out
    assert f"It bills until stopped: captioner endpoint stop {name}" in out

    assert cli("list") == 0
    assert f"{name}" in capsys.readouterr().out

    assert cli("status", name) == 0
    out = capsys.readouterr().out
    assert f"{name}: InService" in out and "1× ml.g4dn.xlarge" in out and "$0.75/h" in out

    assert cli("stop", name) == 0
    out = capsys.readouterr().out
    assert f"deleted endpoint {name}" in out and f"deleted model {name}" in out
    assert endpoints(moto_url) == []
    assert cli("list") == 0
    assert "No Captioner endpoints in us-east-1" in capsys.readouterr().out


def test_declining_the_cost_prompt_creates_nothing(cli_env: Path, moto_url: str,
                                                   monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("n\n"))
    rc = cli("deploy", "--kind", "tts", "--instance-type", "ml.g4dn.xlarge", "--role-arn", ROLE,
             *PAST_MOTO)
    assert rc == 1
    out = capsys.readouterr().out
    assert "Deploy this endpoint? [y/N]" in out and "Nothing was created." in out
    assert endpoints(moto_url) == []


def test_settings_supply_the_defaults(cli_env: Path, moto_url: str,
                                      monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    (cli_env / "settings.json").write_text(json.dumps({"cloud": {"tts": {
        "role_arn": ROLE, "instance_types": ["ml.g4dn.xlarge"],
        "accepted_unknown": ["pass-role", "role-access", "quota"]}}}), encoding="utf-8")
    monkeypatch.setattr("sys.stdin", io.StringIO("yes\n"))
    assert cli("deploy", "--kind", "tts") == 0
    assert len(endpoints(moto_url)) == 1
    capsys.readouterr()
    assert cli("stop", "--yes") == 0  # no name: every managed endpoint
    assert "Will stop: captioner-tts-" in capsys.readouterr().out
    assert endpoints(moto_url) == []


@pytest.mark.parametrize(("argv", "message"), [
    (["--role-arn", "arn:aws:iam::1:role/x"], "not an IAM role ARN"),
    (["--role-arn", ROLE, "--autoscale", "1:2"], "--autoscale needs --wait"),
    (["--role-arn", ROLE, "--autoscale", "two", "--wait"], "MIN:MAX"),
    (["--role-arn", ROLE, "--env", "NOEQUALS"], "KEY=VALUE"),
])
def test_bad_input_exits_2_and_creates_nothing(cli_env: Path, moto_url: str, argv: list[str],
                                               message: str,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    assert cli("deploy", "--kind", "tts", "--instance-type", "ml.g4dn.xlarge", "--yes",
               *argv) == 2
    assert message in capsys.readouterr().err
    assert endpoints(moto_url) == []


def test_unknown_profile_is_a_clear_error(cli_env: Path, capsys: pytest.CaptureFixture[str]
                                          ) -> None:
    assert cli("list", "--profile", "nope") == 1
    assert ("error: AWS profile 'nope' is not in your AWS config. "
            "Run `aws configure --profile nope`") in capsys.readouterr().err


def test_build_image_says_what_it_creates_and_builds_only_when_told(
        cli_env: Path, moto_url: str, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    codebuild = boto3.client("codebuild", region_name="us-east-1", endpoint_url=moto_url)
    monkeypatch.setattr("builtins.input", lambda _prompt: "n")
    assert cli("build-image") == 1
    out = capsys.readouterr().out
    assert "Image     123456789012.dkr.ecr.us-east-1.amazonaws.com/captioner-stt:latest" in out
    assert "S3 bucket captioner-build-123456789012-us-east-1" in out
    assert "a month" in out and "nothing was created" in out
    assert codebuild.list_projects()["projects"] == []

    assert cli("build-image", "--yes", "--wait") == 0
    out = capsys.readouterr().out
    assert "build captioner-stt-image:" in out and "started" in out
    assert "pushed 123456789012.dkr.ecr.us-east-1.amazonaws.com/captioner-stt:latest" in out
    assert codebuild.list_projects()["projects"] == ["captioner-stt-image"]


def test_the_image_commands_take_no_kind() -> None:
    """There is one captions image (the replies use AWS's): --kind would be ignored."""
    for action in ("build-image", "remove-image"):
        with pytest.raises(SystemExit):
            cli(action, "--kind", "tts")


def test_remove_image_lists_what_goes_and_removes_only_when_told(
        cli_env: Path, moto_url: str, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    assert cli("remove-image") == 0  # a fresh account: nothing to remove, nothing asked
    assert "Nothing of the captions image is left in us-east-1." in capsys.readouterr().out
    assert cli("build-image", "--yes") == 0
    ecr = boto3.client("ecr", region_name="us-east-1", endpoint_url=moto_url)
    image = "123456789012.dkr.ecr.us-east-1.amazonaws.com/captioner-stt:latest"
    settings = settings_mod.load()
    settings.cloud.stt.image_uri = image
    settings_mod.save(settings)
    capsys.readouterr()

    monkeypatch.setattr("builtins.input", lambda _prompt: "n")
    assert cli("remove-image") == 1
    out = capsys.readouterr().out
    assert "ECR repository captioner-stt (0 images): under a cent a month" in out
    assert "S3 bucket captioner-build-123456789012-us-east-1" in out
    assert "nothing was removed" in out
    assert len(ecr.describe_repositories()["repositories"]) == 1

    ecr.put_image(repositoryName="captioner-stt", imageManifest=MANIFEST, imageTag="latest")
    assert cli("deploy", "--kind", "stt", "--instance-type", "ml.g4dn.xlarge", "--role-arn",
               ROLE, "--image-uri", image, "--yes", *PAST_MOTO) == 0
    (name,) = endpoints(moto_url)
    capsys.readouterr()
    assert cli("remove-image", "--yes") == 1  # its next instance would need the image
    assert f"a captions endpoint runs in us-east-1 ({name})" in capsys.readouterr().err
    assert cli("stop", name, "--yes") == 0

    assert cli("remove-image", "--yes") == 0
    out = capsys.readouterr().out
    assert "removed ECR repository captioner-stt (1 image" in out
    assert "removed IAM role captioner-codebuild" in out
    assert ecr.describe_repositories()["repositories"] == []
    assert settings_mod.load().cloud.stt.image_uri == ""  # no longer names what is gone

"""`captioner endpoint check` and the preflight gate of `endpoint deploy`, against moto.

The real CLI runs in a subprocess where nothing can be stubbed; the all-pass exit code
is checked in-process, with Service Quotas and IAM policy simulation (which moto lacks)
answered by the Stubbers of ``fake_account``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from captioner.cloud import account as acct
from tests.cloud.test_endpoint_cli import cli, endpoints
from tests.support.aws_account import PAST_MOTO, ROLE_ARN, STT_IMAGE, FakeAccount

MOTO_TYPE = "ml.g4dn.xlarge"  # moto knows no g5/g6 types
TIMEOUT = 120  # s; the CLI's boto3 retries moto's "not implemented" answers with backoff


@pytest.fixture
def config_dir(moto_url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto_url)
    monkeypatch.setenv("CAPTIONER_CONFIG_DIR", str(tmp_path))
    (tmp_path / "prices.json").write_text(json.dumps(
        {"regions": {"us-east-1": {"ml.g6.4xlarge": 1.65, "ml.g4dn.xlarge": 0.75}}}),
        encoding="utf-8")
    return tmp_path


def run_cli(*argv: str) -> subprocess.CompletedProcess[str]:
    """``python -m captioner …`` with this test's environment (moto URL, config folder)."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    return subprocess.run([sys.executable, "-m", "captioner", *argv], env=env,
                          capture_output=True, text=True, timeout=TIMEOUT, check=False)


def test_check_names_the_missing_role_and_image(config_dir: Path) -> None:
    result = run_cli("endpoint", "check", "--kind", "stt", "--role-arn", ROLE_ARN,
                     "--image-uri", STT_IMAGE, "--instance-type", "ml.g6.4xlarge")
    assert result.returncode == 1, result.stdout + result.stderr
    out = result.stdout
    assert "PASS     AWS credentials" in out and "Account 123456789012" in out
    assert ("FAIL     Execution role               Role CaptionerSageMaker does not exist "
            "in account 123456789012.") in out
    assert ("FAIL     Container image              No image latest in repository "
            "captioner-stt") in out
    assert "fix: Choose another image, or build and push it with: " \
           "container/build_and_push.sh us-east-1 123456789012" in out
    assert "PASS     Price per hour               about $1.65/hour" in out
    assert "did not pass: role, pass-role, role-access, image, quota." in out
    assert result.stderr == ""


def test_check_of_a_complete_setup_exits_0(config_dir: Path, fake_account: FakeAccount,
                                          monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    fake_account.add_role()
    fake_account.add_image()
    fake_account.allow_pass_role()
    fake_account.allow_role_access()
    fake_account.quota("ml.g6.4xlarge", 1)
    # The CLI makes its own clients; only the two that moto cannot serve are swapped.
    real = acct.AccountClients.from_factory.__func__  # type: ignore[attr-defined]

    def with_stubs(cls, make):
        clients = real(cls, make)
        return acct.AccountClients(clients.sts, clients.iam, clients.ecr, clients.s3,
                                   fake_account.clients.service_quotas,
                                   fake_account.clients.policy_simulator)

    monkeypatch.setattr(acct.AccountClients, "from_factory", classmethod(with_stubs))
    rc = cli("check", "--kind", "stt", "--role-arn", ROLE_ARN, "--image-uri", STT_IMAGE,
             "--instance-type", "ml.g6.4xlarge", poll=False)
    out = capsys.readouterr().out
    assert rc == 0, out
    assert out.count("PASS ") == 8 and "All checks passed." in out


def test_deploy_refuses_when_the_preflight_fails_and_creates_nothing(
        config_dir: Path, moto_url: str) -> None:
    result = run_cli("endpoint", "deploy", "--kind", "tts", "--instance-type", MOTO_TYPE,
                     "--role-arn", ROLE_ARN, "--yes")
    assert result.returncode == 1
    assert ("error: Not deploying: Execution role: Role CaptionerSageMaker does not exist"
            in result.stderr)
    assert "Nothing was created." in result.stdout
    assert endpoints(moto_url) == []


def test_deploy_names_the_unknown_checks_it_could_accept(
        cli_env: Path, moto_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli("deploy", "--kind", "tts", "--instance-type", MOTO_TYPE, "--role-arn",
               ROLE_ARN, "--yes") == 1
    captured = capsys.readouterr()
    assert "UNKNOWN  Permission to pass the role" in captured.out
    assert ("--accept-unknown pass-role --accept-unknown role-access --accept-unknown quota"
            in captured.err)
    assert endpoints(moto_url) == []
    assert cli("deploy", "--kind", "tts", "--instance-type", MOTO_TYPE, "--role-arn",
               ROLE_ARN, "--yes", *PAST_MOTO) == 0
    assert "OVERRIDE Endpoint quota" in capsys.readouterr().out
    assert len(endpoints(moto_url)) == 1

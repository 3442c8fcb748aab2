"""Fixtures of the cloud tests."""

from __future__ import annotations

import json
from pathlib import Path

import boto3
import pytest

from captioner.cloud.account import sagemaker_trust_policy
from tests.support.aws_account import ROLE_NAME


@pytest.fixture
def cli_env(moto_url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """`captioner endpoint …` on the moto server, with a fresh config folder and prices,
    and the execution role the deploys name (the preflight checks that it exists)."""
    boto3.client("iam", endpoint_url=moto_url).create_role(
        RoleName=ROLE_NAME, AssumeRolePolicyDocument=json.dumps(sagemaker_trust_policy()))
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto_url)
    monkeypatch.setenv("CAPTIONER_CONFIG_DIR", str(tmp_path))
    (tmp_path / "prices.json").write_text(json.dumps(
        {"regions": {"us-east-1": {"ml.g4dn.xlarge": 0.75}}}), encoding="utf-8")
    return tmp_path

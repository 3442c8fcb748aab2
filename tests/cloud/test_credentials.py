"""AWS credentials: OS keyring keys, AWS-config profiles, expiry, and secrecy."""

from __future__ import annotations

import ast
import json
import logging
import subprocess
import sys
from datetime import UTC, datetime, timedelta

import pytest

from captioner import settings as settings_mod
from captioner.aws import (
    KEYRING_SERVICE,
    AwsCredentials,
    CredentialsError,
    CredentialsExpiredError,
    KeyringCredentials,
    ProfileCredentials,
    available_profiles,
    provider_for,
)

SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY"


@pytest.fixture
def aws_config(tmp_path, monkeypatch):
    config, creds = tmp_path / "config", tmp_path / "credentials"
    config.write_text(
        "[profile work]\nregion = eu-west-1\n"
        "[profile sso]\nsso_session = corp\nsso_account_id = 123456789012\n"
        "sso_role_name = Dev\nregion = us-east-1\n"
        "[sso-session corp]\nsso_start_url = https://corp.awsapps.com/start\n"
        "sso_region = us-east-1\n"
    )
    creds.write_text(f"[work]\naws_access_key_id = AKIAWORKEXAMPLE01\n"
                     f"aws_secret_access_key = {SECRET}\n")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(creds))
    monkeypatch.setenv("HOME", str(tmp_path))  # no real SSO cache
    for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(var, raising=False)
    return config


def test_keyring_round_trip(memory_keyring):
    store = KeyringCredentials()
    store.store("AKIAKEYRINGEXAMPLE", SECRET)
    assert store.has_keys()
    creds = store.get_credentials()
    assert (creds.access_key_id, creds.secret_access_key) == ("AKIAKEYRINGEXAMPLE", SECRET)
    saved = json.loads(memory_keyring.store[(KEYRING_SERVICE, "default")])
    assert saved["secret_access_key"] == SECRET
    store.delete()
    store.delete()  # idempotent
    with pytest.raises(CredentialsError, match="No AWS access keys"):
        store.get_credentials()


def test_keyring_expired_temporary_keys(memory_keyring):
    store = KeyringCredentials()
    store.store("ASIAEXAMPLE0000", SECRET, "token-abcdefgh",
                expiry=datetime.now(UTC) - timedelta(minutes=1))
    with pytest.raises(CredentialsExpiredError, match="expired"):
        store.get_credentials()


def test_profile_from_aws_config(aws_config):
    creds = ProfileCredentials("work").get_credentials()
    assert creds.access_key_id == "AKIAWORKEXAMPLE01" and creds.secret_access_key == SECRET


def test_missing_profile_says_what_to_do(aws_config):
    with pytest.raises(CredentialsError, match="aws configure --profile nope"):
        ProfileCredentials("nope").get_credentials()


def test_sso_profile_without_login_says_sso_login(aws_config):
    with pytest.raises(CredentialsExpiredError, match="aws sso login --profile sso"):
        ProfileCredentials("sso").get_credentials()


def test_expired_refreshable_credentials_say_expired(aws_config):
    from botocore.credentials import RefreshableCredentials

    past = datetime.now(UTC) - timedelta(hours=1)

    def refresh():
        return {"access_key": "ASIAOLD000000", "secret_key": SECRET, "token": "tok-expired-1",
                "expiry_time": past.isoformat()}

    class Session:
        def __init__(self, profile_name):
            pass

        def get_credentials(self):
            return RefreshableCredentials.create_from_metadata(refresh(), refresh, "test")

    with pytest.raises(CredentialsExpiredError, match="expired"):
        ProfileCredentials("stale", session_factory=Session).get_credentials()


def test_repr_masks_secrets():
    creds = AwsCredentials("AKIAREPREXAMPLE1", SECRET, "session-token-123456",
                           datetime.now(UTC))
    text = repr(creds) + str(creds)
    assert SECRET not in text and "session-token-123456" not in text
    assert "AKIAREPREXAMPLE1" not in text  # even the key id is shortened
    assert "SECRET" not in repr(KeyringCredentials()) and "work" in repr(ProfileCredentials("work"))


def test_secrets_stay_out_of_logs_and_settings(memory_keyring, tmp_path, monkeypatch, caplog):
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("CAPTIONER_CONFIG_DIR", str(tmp_path / "cfg"))
    store = KeyringCredentials()
    store.store("AKIALOGEXAMPLE01", SECRET, "tok-logged-0123456789")
    creds = store.get_credentials()
    logging.getLogger("botocore.endpoint").debug("headers: %s", {"X-Amz-Security-Token":
                                                                creds.session_token})
    logging.getLogger("captioner.test").info("using %r", creds)
    s = settings_mod.Settings()
    s.aws.use_keyring = True
    settings_mod.save(s)
    files = [p for p in (tmp_path / "cfg").rglob("*") if p.is_file()]
    assert files
    for path in files:
        content = path.read_text()
        assert SECRET not in content and "tok-logged-0123456789" not in content
    messages = [r.getMessage() for r in caplog.records]
    assert any("headers" in m for m in messages)
    assert all(SECRET not in m and "tok-logged-0123456789" not in m for m in messages)


def test_provider_for_settings():
    assert isinstance(provider_for(None, True), KeyringCredentials)
    assert provider_for("work", False).describe() == "AWS profile 'work'"


def test_sessions_sign_with_the_chosen_credentials(memory_keyring, aws_config):
    KeyringCredentials().store("AKIAKEYRINGSESSION", SECRET)
    keyring_session = KeyringCredentials().session("eu-central-1")
    assert keyring_session.region_name == "eu-central-1"
    assert keyring_session.get_credentials().access_key == "AKIAKEYRINGSESSION"
    profile_session = ProfileCredentials("work").session("us-west-2")
    assert profile_session.profile_name == "work" and profile_session.region_name == "us-west-2"
    assert profile_session.get_credentials().access_key == "AKIAWORKEXAMPLE01"
    with pytest.raises(CredentialsError, match="aws configure --profile nope"):
        ProfileCredentials("nope").session("us-east-1")
    assert available_profiles() == ["sso", "work"]


def test_credentials_package_imports_neither_cloud_nor_transport():
    """captioner.aws sits below both users; the transport no longer imports the cloud."""
    code = ("import sys, captioner.aws, captioner.transport.sagemaker, "
            "captioner.transport.endpoint_url; "
            "print(sorted({m.split('.')[1] for m in sys.modules "
            "if m.startswith('captioner.') and m.count('.') >= 1}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    packages = ast.literal_eval(out.strip())
    assert "aws" in packages and "transport" in packages
    assert "cloud" not in packages and "ui" not in packages


def test_no_credentials_anywhere_says_where_it_looked(aws_config, monkeypatch):
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")  # no instance role either
    with pytest.raises(CredentialsError) as info:
        ProfileCredentials(None).get_credentials()
    assert str(info.value) == (
        "No credentials found in the default AWS credential chain (environment variables, "
        "~/.aws files). Run `aws sso login` (SSO) or `aws configure` (access keys).")

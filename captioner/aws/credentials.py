"""AWS credentials for signing SageMaker calls: a profile from the user's AWS config, or
access keys kept only in the OS keyring.

A :class:`CredentialsProvider` hands out fresh :class:`AwsCredentials` before each
(re)connect; botocore's refreshable credentials renew SSO and assume-role tokens before
they expire. Secrets never reach settings files or logs: ``repr()`` masks them and
:data:`REDACTOR` scrubs any that a third-party library formats into a log line.
Failures raise :class:`~captioner.aws.errors.CredentialsError` with the step that fixes them.
:func:`protect_logs` is the one call that registers a credential's secrets for redaction.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

import boto3
import botocore.exceptions
import keyring
import keyring.errors

from captioner.aws.errors import CredentialsError, CredentialsExpiredError
from captioner.logs import REDACTOR

log = logging.getLogger(__name__)

KEYRING_SERVICE = "Captioner AWS"
NO_KEYRING = ("This desktop has no keyring service to keep AWS keys in (such as GNOME Keyring "
              "or KWallet). Start one, or choose an AWS profile instead: `aws configure "
              "--profile NAME` keeps the keys in ~/.aws.")
EXPIRY_MARGIN = timedelta(seconds=60)  # treat credentials this close to expiry as expired

# Loggers of libraries that may format request headers (session tokens) at DEBUG.
SDK_LOGGER_PREFIXES = (
    "smithy_core", "smithy_http", "smithy_aws_core", "smithy_aws_event_stream",
    "aws_sdk_signers", "aws_sdk_sagemaker_runtime_http2", "botocore", "boto3", "urllib3",
)


def _mask(value: str | None) -> str:
    if not value:
        return "None"
    return f"{value[:4]}…{value[-2:]}" if len(value) > 8 else "…"


@dataclass(frozen=True, slots=True)
class AwsCredentials:
    """One frozen set of keys; ``repr()`` never shows the secret or the token."""

    access_key_id: str
    secret_access_key: str = field(repr=False)
    session_token: str | None = field(default=None, repr=False)
    expiry: datetime | None = None  # UTC; None = long-lived keys

    def __repr__(self) -> str:
        return (
            f"AwsCredentials(access_key_id={_mask(self.access_key_id)!r}, "
            f"secret_access_key='***', session_token={'***' if self.session_token else None}, "
            f"expiry={self.expiry!r})"
        )

    __str__ = __repr__

    def expired(self, now: datetime | None = None) -> bool:
        if self.expiry is None:
            return False
        return self.expiry - EXPIRY_MARGIN <= (now or datetime.now(UTC))


class CredentialsProvider(Protocol):
    """Gives current credentials; may block (token refresh), so call it off the GUI loop."""

    def get_credentials(self) -> AwsCredentials:
        """Fresh credentials, or CredentialsError saying what the user must do."""
        ...

    def describe(self) -> str:
        """Where the credentials come from, for messages (never a secret)."""
        ...

    def session(self, region: str) -> boto3.Session:
        """A boto3 Session for control-plane clients in ``region`` (blocking)."""
        ...


def keys_session(credentials: AwsCredentials, region: str) -> boto3.Session:
    """A boto3 Session signed with one frozen set of keys."""
    return boto3.Session(aws_access_key_id=credentials.access_key_id,
                         aws_secret_access_key=credentials.secret_access_key,
                         aws_session_token=credentials.session_token, region_name=region)


def available_profiles() -> list[str]:
    """Profile names in the user's AWS config and credentials files (for a chooser)."""
    try:
        return sorted(boto3.Session().available_profiles)
    except botocore.exceptions.BotoCoreError as exc:
        log.warning("! AWS config unreadable: %s", exc)
        return []


def protect_logs(credentials: AwsCredentials) -> None:
    """Register ``credentials`` for redaction and make sure SDK loggers are filtered."""
    REDACTOR.add(credentials.secret_access_key, credentials.session_token)
    install_redaction()


def install_redaction(prefixes: tuple[str, ...] = SDK_LOGGER_PREFIXES) -> None:
    """Attach :data:`REDACTOR` to every existing logger under ``prefixes`` (idempotent)."""
    manager = logging.Logger.manager
    names = [n for n in list(manager.loggerDict) if n.split(".")[0] in prefixes]
    for name in {*names, *prefixes}:
        logger = logging.getLogger(name)
        if REDACTOR not in logger.filters:
            logger.addFilter(REDACTOR)


class ProfileCredentials:
    """A named profile (static keys, SSO, assume-role, credential_process) or, with
    ``profile=None``, boto3's default chain (environment, instance role…)."""

    def __init__(
        self,
        profile: str | None = None,
        *,
        session_factory: Callable[..., Any] = boto3.Session,
    ) -> None:
        self.profile = profile
        self._session_factory = session_factory
        self._credentials: Any = None  # botocore Credentials, refreshable or not
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"ProfileCredentials(profile={self.profile!r})"

    def describe(self) -> str:
        if self.profile:
            return f"AWS profile {self.profile!r}"
        return "the default AWS credential chain (environment variables, ~/.aws files)"

    def _fix_hint(self) -> str:
        p = f" --profile {self.profile}" if self.profile else ""
        return f"Run `aws sso login{p}` (SSO) or `aws configure{p}` (access keys)."

    def get_credentials(self) -> AwsCredentials:
        with self._lock:
            try:
                if self._credentials is None:
                    session = self._session_factory(profile_name=self.profile)
                    self._credentials = session.get_credentials()
                if self._credentials is None:
                    raise CredentialsError(
                        f"No credentials found in {self.describe()}. {self._fix_hint()}"
                    )
                frozen = self._credentials.get_frozen_credentials()  # refreshes if needed
            except CredentialsError:
                raise
            except botocore.exceptions.ProfileNotFound as exc:
                raise self._missing_profile() from exc
            except (
                botocore.exceptions.SSOError,
                botocore.exceptions.TokenRetrievalError,
            ) as exc:
                self._credentials = None
                raise CredentialsExpiredError(
                    f"The SSO session for {self.describe()} has expired or is missing. "
                    f"Run `aws sso login{' --profile ' + self.profile if self.profile else ''}`."
                ) from exc
            except RuntimeError as exc:  # botocore: "refreshed … still expired"
                self._credentials = None
                raise CredentialsExpiredError(
                    f"The credentials for {self.describe()} have expired and could not be "
                    f"renewed. {self._fix_hint()}"
                ) from exc
            except (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError) as exc:
                self._credentials = None
                raise CredentialsError(
                    f"Could not get credentials for {self.describe()}: {exc}. {self._fix_hint()}"
                ) from exc
            expiry = getattr(self._credentials, "_expiry_time", None)
        if not frozen.access_key or not frozen.secret_key:
            raise CredentialsError(
                f"Incomplete credentials for {self.describe()}. {self._fix_hint()}"
            )
        creds = AwsCredentials(frozen.access_key, frozen.secret_key, frozen.token,
                               expiry.astimezone(UTC) if expiry else None)
        protect_logs(creds)
        if creds.expired():
            raise CredentialsExpiredError(
                f"The credentials for {self.describe()} have expired. {self._fix_hint()}"
            )
        log.debug("= credentials from %s (expiry %s)", self.describe(), creds.expiry)
        return creds

    def session(self, region: str) -> boto3.Session:
        """The profile's own session, so SSO and assume-role tokens keep refreshing."""
        self.get_credentials()  # typed error now rather than at the first call
        try:
            return self._session_factory(profile_name=self.profile, region_name=region)
        except botocore.exceptions.ProfileNotFound as exc:
            raise self._missing_profile() from exc

    def _missing_profile(self) -> CredentialsError:
        return CredentialsError(
            f"AWS profile {self.profile!r} is not in your AWS config. "
            f"Run `aws configure --profile {self.profile}` or pick another profile."
        )


class KeyringCredentials:
    """Access keys stored in the OS keyring under service ``"Captioner AWS"``."""

    def __init__(self, account: str = "default") -> None:
        self.account = account

    def __repr__(self) -> str:
        return f"KeyringCredentials(account={self.account!r})"

    def describe(self) -> str:
        return "the access keys stored in the OS keyring"

    def store(self, access_key_id: str, secret_access_key: str,
              session_token: str | None = None, expiry: datetime | None = None) -> None:
        """Save keys (replacing any); raises CredentialsError if the keyring refuses."""
        access_key_id, secret_access_key = access_key_id.strip(), secret_access_key.strip()
        if not access_key_id or not secret_access_key:
            raise CredentialsError("Both the access key ID and the secret access key are needed.")
        blob = {"access_key_id": access_key_id, "secret_access_key": secret_access_key,
                "session_token": session_token or None,
                "expiry": expiry.astimezone(UTC).isoformat() if expiry else None}
        try:
            keyring.set_password(KEYRING_SERVICE, self.account, json.dumps(blob))
        except keyring.errors.NoKeyringError as exc:
            raise CredentialsError(NO_KEYRING) from exc
        except keyring.errors.KeyringError as exc:
            raise CredentialsError(f"The OS keyring refused to store the AWS keys: {exc}") from exc
        REDACTOR.add(secret_access_key, session_token)
        log.info("= AWS access keys stored in the OS keyring")

    def has_keys(self) -> bool:
        try:
            return keyring.get_password(KEYRING_SERVICE, self.account) is not None
        except keyring.errors.KeyringError:
            return False

    def delete(self) -> None:
        """Forget the keys; a no-op when none are stored."""
        try:
            keyring.delete_password(KEYRING_SERVICE, self.account)
            log.info("= AWS access keys removed from the OS keyring")
        except keyring.errors.PasswordDeleteError:
            pass
        except keyring.errors.KeyringError as exc:
            raise CredentialsError(f"The OS keyring refused to delete the AWS keys: {exc}") from exc

    def get_credentials(self) -> AwsCredentials:
        hint = "Add your access keys in Settings → Endpoints → AWS account."
        try:
            raw = keyring.get_password(KEYRING_SERVICE, self.account)
        except keyring.errors.NoKeyringError as exc:
            raise CredentialsError(NO_KEYRING) from exc
        except keyring.errors.KeyringError as exc:
            raise CredentialsError(f"The OS keyring is not available: {exc}. {hint}") from exc
        if raw is None:
            raise CredentialsError(f"No AWS access keys are stored in the OS keyring. {hint}")
        try:
            blob = json.loads(raw)
            expiry = datetime.fromisoformat(blob["expiry"]) if blob.get("expiry") else None
            creds = AwsCredentials(blob["access_key_id"], blob["secret_access_key"],
                                   blob.get("session_token"), expiry)
        except (ValueError, KeyError, TypeError):
            raise CredentialsError(
                f"The AWS keys in the OS keyring are unreadable. {hint}"
            ) from None
        protect_logs(creds)
        if creds.expired():
            raise CredentialsExpiredError(
                "The temporary AWS keys stored in the OS keyring have expired. "
                "Store new keys in Settings → Endpoints → AWS account, or use an AWS "
                "profile."
            )
        return creds

    def session(self, region: str) -> boto3.Session:
        return keys_session(self.get_credentials(), region)


class StaticCredentials:
    """Fixed credentials (tests, benchmarks, short-lived tools)."""

    def __init__(self, credentials: AwsCredentials) -> None:
        self._credentials = credentials
        protect_logs(credentials)

    def __repr__(self) -> str:
        return f"StaticCredentials({self._credentials!r})"

    def describe(self) -> str:
        return "the given access keys"

    def get_credentials(self) -> AwsCredentials:
        if self._credentials.expired():
            raise CredentialsExpiredError("The given AWS credentials have expired.")
        return self._credentials

    def session(self, region: str) -> boto3.Session:
        return keys_session(self.get_credentials(), region)


def provider_for(profile: str | None, use_keyring: bool) -> CredentialsProvider:
    """The provider the settings ask for (``AwsSettings.profile`` / ``use_keyring``)."""
    return KeyringCredentials() if use_keyring else ProfileCredentials(profile)

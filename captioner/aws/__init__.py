"""AWS credentials (a profile with SSO/assume-role, or access keys in the OS keyring) and
the boto3 sessions built from them; used by both the SageMaker transport and the cloud
control plane, and importing neither."""

from captioner.aws.credentials import (
    KEYRING_SERVICE,
    AwsCredentials,
    CredentialsProvider,
    KeyringCredentials,
    ProfileCredentials,
    StaticCredentials,
    available_profiles,
    install_redaction,
    keys_session,
    protect_logs,
    provider_for,
)
from captioner.aws.errors import CredentialsError, CredentialsExpiredError

__all__ = [
    "KEYRING_SERVICE",
    "AwsCredentials",
    "CredentialsError",
    "CredentialsExpiredError",
    "CredentialsProvider",
    "KeyringCredentials",
    "ProfileCredentials",
    "StaticCredentials",
    "available_profiles",
    "install_redaction",
    "keys_session",
    "protect_logs",
    "provider_for",
]

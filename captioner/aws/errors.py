"""Typed errors of captioner.aws: credentials that are missing, unreadable or refused.

Hierarchy::

    CredentialsError             no usable credentials; ``str()`` says what fixes it
    └── CredentialsExpiredError  they existed but have expired (SSO session, temporary keys)

Callers wrap these at their own boundary: the SageMaker transport turns them into
``AuthError`` (no blind reconnect), the cloud control plane's ``CredentialsError``
derives from this class, so ``except captioner.aws.CredentialsError`` catches both.
"""

from __future__ import annotations

from captioner.errors import CaptionerError


class CredentialsError(CaptionerError):
    """AWS credentials are missing, unreadable or were rejected."""


class CredentialsExpiredError(CredentialsError):
    """The credentials were valid once and have expired."""

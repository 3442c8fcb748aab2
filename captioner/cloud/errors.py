"""Typed errors of the SageMaker control plane, and the translation from botocore's.

Hierarchy (one root, itself a CaptionerError; caller misuse apart from faults of AWS)::

    EndpointControlError
    ├── DeployConfigError        bad input from the caller/settings; no AWS call was made
    │   └── NotOwnedError            a stop of a stack that is not provably this installation's
    ├── AwsError                 AWS refused or failed; ``code`` holds the AWS error code
    │   ├── AccessDeniedError        IAM policy does not allow the action
    │   ├── QuotaExceededError       ResourceLimitExceeded (instance quota for endpoint usage)
    │   ├── ServiceValidationError   ValidationException (bad name, unknown image, …)
    │   ├── ThrottledError           still throttled after our retries
    │   ├── CredentialsError         missing, invalid or expired credentials (also a
    │   │   │                            captioner.aws.CredentialsError)
    │   │   └── CredentialsExpiredError
    │   └── NetworkError             could not reach AWS at all
    ├── EndpointGoneError        the endpoint vanished (deleted behind the app's back)
    ├── DeployFailedError        the endpoint reached Failed; ``reason`` is AWS's FailureReason
    ├── WaitTimeoutError         a wait ran out of time; the endpoint is left as it is
    └── StopFailedError          a stop failed and is being retried; ``cause`` is the last error
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    ConnectTimeoutError,
    EndpointConnectionError,
    NoCredentialsError,
    NoRegionError,
    PartialCredentialsError,
    ProfileNotFound,
    ReadTimeoutError,
    SSOError,
    TokenRetrievalError,
)

from captioner.aws import errors as aws_errors
from captioner.errors import CaptionerError

if TYPE_CHECKING:
    from captioner.cloud.ownership import Ownership


class EndpointControlError(CaptionerError):
    """Root of every error raised by captioner.cloud's endpoint control."""

    leftovers: tuple[str, ...] = ()  # resources a failed deploy could not remove


class DeployConfigError(EndpointControlError, ValueError):
    """The deploy request is invalid as given (caller or settings problem)."""


class NotOwnedError(DeployConfigError):
    """Refused: some resource of the stack is not this installation's (or not Captioner's).

    ``ownership`` is a :class:`captioner.cloud.ownership.Ownership`; ``owner`` says who
    made it when the tags say so. Deleting it anyway is a forced stop, confirmed by
    typing the endpoint's name.
    """

    def __init__(self, name: str, ownership: Ownership, owner: str = "") -> None:
        who = f" (created by {owner})" if owner else ""
        super().__init__(
            f"Endpoint {name} is {ownership.phrase}{who}; refusing to delete it. A forced stop "
            "deletes it anyway once you type its name."
        )
        self.name = name
        self.ownership = ownership
        self.owner = owner


class AwsError(EndpointControlError):
    """AWS answered with an error (or could not be reached)."""

    def __init__(self, message: str, *, code: str = "", operation: str = "") -> None:
        super().__init__(message)
        self.code = code
        self.operation = operation


class AccessDeniedError(AwsError):
    pass


class QuotaExceededError(AwsError):
    pass


class ServiceValidationError(AwsError):
    pass


class ThrottledError(AwsError):
    pass


class CredentialsError(AwsError, aws_errors.CredentialsError):
    pass


class CredentialsExpiredError(CredentialsError, aws_errors.CredentialsExpiredError):
    pass


class NetworkError(AwsError):
    pass


class EndpointGoneError(EndpointControlError):
    def __init__(self, name: str) -> None:
        super().__init__(f"Endpoint {name} no longer exists (it was deleted outside Captioner).")
        self.name = name


class DeployFailedError(EndpointControlError):
    def __init__(self, name: str, reason: str) -> None:
        super().__init__(f"Endpoint {name} failed: {reason}")
        self.name = name
        self.reason = reason


class WaitTimeoutError(EndpointControlError):
    pass


class StopFailedError(EndpointControlError):
    """A stop did not finish; it is retried until it does (``attempts`` so far)."""

    def __init__(self, name: str, cause: EndpointControlError, attempts: int,
                 retry_in: float | None) -> None:
        when = f" Retrying in {retry_in:.0f} s." if retry_in is not None else ""
        super().__init__(
            f"Could not stop {name} (attempt {attempts}); it may still be billing: {cause}{when}"
        )
        self.name = name
        self.cause = cause
        self.attempts = attempts
        self.retry_in = retry_in


THROTTLING_CODES = frozenset(
    {
        "Throttling",
        "ThrottlingException",
        "ThrottledException",
        "TooManyRequestsException",
        "RequestLimitExceeded",
        "ProvisionedThroughputExceededException",
        "SlowDown",
    }
)
_ACCESS_CODES = frozenset({"AccessDenied", "AccessDeniedException", "UnauthorizedOperation"})
_EXPIRED_CODES = frozenset({"ExpiredToken", "ExpiredTokenException", "RequestExpired"})
_BAD_CREDENTIAL_CODES = frozenset(
    {
        "InvalidClientTokenId",
        "UnrecognizedClientException",
        "InvalidSignatureException",
        "SignatureDoesNotMatch",
        "MissingAuthenticationToken",
    }
)


def error_code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))


def error_message(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Message", "")) or str(exc)


def is_not_found(exc: BaseException) -> bool:
    """Missing resource: SageMaker says ValidationException "Could not find"; IAM NoSuchEntity;
    Scheduler ResourceNotFoundException."""
    if not isinstance(exc, ClientError):
        return False
    code, message = error_code(exc), error_message(exc).lower()
    return (code == "ValidationException" and "could not find" in message) or code in {
        "ResourceNotFound",
        "ObjectNotFoundException",
        "ResourceNotFoundException",
        "NoSuchEntity",
    }


def translate(exc: BaseException, operation: str = "") -> EndpointControlError:
    """A user-readable typed error for a botocore exception (chain it with ``from``)."""
    if isinstance(exc, EndpointControlError):
        return exc
    where = f" ({operation})" if operation else ""
    if isinstance(exc, ClientError):
        code, message = error_code(exc), error_message(exc)
        if code in _ACCESS_CODES:
            return AccessDeniedError(
                f"AWS denied access{where}: {message}. Check the IAM policy of these credentials.",
                code=code,
                operation=operation,
            )
        if code == "ResourceLimitExceeded":
            return QuotaExceededError(
                f"AWS quota reached{where}: {message}. Request a quota increase for the instance "
                "type's \"endpoint usage\" in Service Quotas, or choose another instance type.",
                code=code,
                operation=operation,
            )
        if code in THROTTLING_CODES:
            return ThrottledError(
                f"AWS is throttling requests{where}; try again in a minute. ({message})",
                code=code,
                operation=operation,
            )
        if code in _EXPIRED_CODES:
            return CredentialsExpiredError(
                f"The AWS credentials have expired{where}. Refresh them (e.g. `aws sso login`) "
                "and try again.",
                code=code,
                operation=operation,
            )
        if code in _BAD_CREDENTIAL_CODES:
            return CredentialsError(
                f"AWS rejected the credentials{where}: {message}",
                code=code,
                operation=operation,
            )
        if code == "ValidationException":
            return ServiceValidationError(
                f"AWS rejected the request{where}: {message}", code=code, operation=operation
            )
        return AwsError(f"AWS error {code}{where}: {message}", code=code, operation=operation)
    if isinstance(exc, aws_errors.CredentialsExpiredError):
        return CredentialsExpiredError(str(exc), operation=operation)
    if isinstance(exc, aws_errors.CredentialsError):
        return CredentialsError(str(exc), operation=operation)
    if isinstance(exc, SSOError | TokenRetrievalError):
        return CredentialsExpiredError(
            f"The AWS SSO session has expired or is missing{where}: run `aws sso login` "
            "(with --profile NAME for a named profile) and try again.",
            operation=operation,
        )
    if isinstance(exc, NoCredentialsError | PartialCredentialsError):
        return CredentialsError(
            f"No usable AWS credentials{where}: set up a profile or store keys in Captioner.",
            operation=operation,
        )
    if isinstance(exc, ProfileNotFound):
        return CredentialsError(
            f"AWS profile {exc.kwargs.get('profile')!r} is not in the AWS config files; "
            "check the profile name (settings or --profile).",
            operation=operation,
        )
    if isinstance(exc, NoRegionError):
        return DeployConfigError("No AWS region configured: pass --region or set it in settings.")
    if isinstance(exc, EndpointConnectionError | ConnectTimeoutError | ReadTimeoutError):
        return NetworkError(f"Could not reach AWS{where}: {exc}", operation=operation)
    if isinstance(exc, BotoCoreError):
        return AwsError(f"AWS client error{where}: {exc}", operation=operation)
    return EndpointControlError(f"Unexpected error{where}: {exc}")

"""A local fake of SageMaker Runtime's HTTP/2 bidirectional streaming (the true edge: AWS)."""

from tests.support.fake_sagemaker.server import (
    Counters,
    Credentials,
    FakeSageMaker,
    Fault,
    Faults,
    Refusal,
)

__all__ = ["Counters", "Credentials", "FakeSageMaker", "Fault", "Faults", "Refusal"]

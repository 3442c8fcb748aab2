"""Optional autoscaling of a team-shared endpoint (Application Auto Scaling requests, no I/O).

Off by default (``EndpointDeploySettings.autoscale_min == 0``). A real-time endpoint
variant scales between ``min`` and ``max`` instances with target tracking on either
invocations per instance or concurrent requests per model (the better signal for
long-lived bidirectional streams). Registration needs the endpoint InService.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from captioner.cloud.deploy_plan import VARIANT_NAME
from captioner.cloud.errors import DeployConfigError
from captioner.settings import EndpointDeploySettings

Metric = Literal["concurrency", "invocations"]

SERVICE_NAMESPACE = "sagemaker"
SCALABLE_DIMENSION = "sagemaker:variant:DesiredInstanceCount"
METRIC_TYPES: dict[str, str] = {
    "concurrency": "SageMakerVariantConcurrentRequestsPerModelHighResolution",
    "invocations": "SageMakerVariantInvocationsPerInstance",
}
MAX_INSTANCES = 20


@dataclass(frozen=True, slots=True)
class AutoscalingPolicy:
    min_capacity: int
    max_capacity: int
    metric: Metric = "concurrency"
    target_value: float = 4.0  # concurrent streams per model, or invocations/min per instance
    scale_in_cooldown: int = 300
    scale_out_cooldown: int = 60

    def __post_init__(self) -> None:
        if not 1 <= self.min_capacity <= self.max_capacity <= MAX_INSTANCES:
            raise DeployConfigError(
                f"Autoscaling needs 1 ≤ min ≤ max ≤ {MAX_INSTANCES} instances; "
                f"got min={self.min_capacity}, max={self.max_capacity}."
            )
        if self.metric not in METRIC_TYPES:
            raise DeployConfigError(f"Unknown autoscaling metric {self.metric!r}.")
        if self.target_value <= 0:
            raise DeployConfigError("The autoscaling target value must be positive.")


def policy_from_settings(settings: EndpointDeploySettings) -> AutoscalingPolicy | None:
    """None when autoscaling is off (autoscale_min == 0)."""
    if settings.autoscale_min <= 0:
        return None
    return AutoscalingPolicy(settings.autoscale_min, settings.autoscale_max)


def resource_id(endpoint_name: str) -> str:
    return f"endpoint/{endpoint_name}/variant/{VARIANT_NAME}"


def policy_name(endpoint_name: str) -> str:
    return f"{endpoint_name}-target-tracking"


def register_request(endpoint_name: str, policy: AutoscalingPolicy) -> dict[str, Any]:
    return {
        "ServiceNamespace": SERVICE_NAMESPACE,
        "ResourceId": resource_id(endpoint_name),
        "ScalableDimension": SCALABLE_DIMENSION,
        "MinCapacity": policy.min_capacity,
        "MaxCapacity": policy.max_capacity,
    }


def scaling_policy_request(endpoint_name: str, policy: AutoscalingPolicy) -> dict[str, Any]:
    return {
        "PolicyName": policy_name(endpoint_name),
        "ServiceNamespace": SERVICE_NAMESPACE,
        "ResourceId": resource_id(endpoint_name),
        "ScalableDimension": SCALABLE_DIMENSION,
        "PolicyType": "TargetTrackingScaling",
        "TargetTrackingScalingPolicyConfiguration": {
            "TargetValue": policy.target_value,
            "PredefinedMetricSpecification": {
                "PredefinedMetricType": METRIC_TYPES[policy.metric],
            },
            "ScaleInCooldown": policy.scale_in_cooldown,
            "ScaleOutCooldown": policy.scale_out_cooldown,
        },
    }

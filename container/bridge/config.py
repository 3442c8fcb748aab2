"""Bridge settings, read once from the environment (the container's only input)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

DEFAULT_BACKEND_URL = "ws://localhost:8081/v1/realtime"
DEFAULT_PING_TIMEOUT = 2.0  # SageMaker polls /ping often; never hang it
DEFAULT_OPEN_TIMEOUT = 10.0  # connecting to vLLM once a client is accepted


class ConfigError(ValueError):
    """An environment variable holds a value the bridge cannot use."""


@dataclass(frozen=True, slots=True)
class BridgeConfig:
    backend_url: str = DEFAULT_BACKEND_URL
    health_url: str = "http://localhost:8081/health"
    ping_timeout: float = DEFAULT_PING_TIMEOUT
    open_timeout: float = DEFAULT_OPEN_TIMEOUT

    def __post_init__(self) -> None:
        if urlsplit(self.backend_url).scheme not in ("ws", "wss"):
            raise ConfigError(f"backend URL must be ws:// or wss://, got {self.backend_url!r}")
        if urlsplit(self.health_url).scheme != "http":
            raise ConfigError(f"health URL must be http://, got {self.health_url!r}")
        if self.ping_timeout <= 0 or self.open_timeout <= 0:
            raise ConfigError("timeouts must be positive")

    @property
    def backend_origin(self) -> str:
        """``ws://host:port`` of the backend, for routes other than the default one."""
        parts = urlsplit(self.backend_url)
        return f"{parts.scheme}://{parts.netloc}"

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> BridgeConfig:
        """BRIDGE_BACKEND_URL, BRIDGE_HEALTH_URL (defaults to the backend's /health),
        BRIDGE_PING_TIMEOUT and BRIDGE_OPEN_TIMEOUT (seconds)."""
        env = os.environ if env is None else env
        backend_url = env.get("BRIDGE_BACKEND_URL") or DEFAULT_BACKEND_URL
        parts = urlsplit(backend_url)
        scheme = "https" if parts.scheme == "wss" else "http"
        health_url = env.get("BRIDGE_HEALTH_URL") or f"{scheme}://{parts.netloc}/health"
        return cls(
            backend_url=backend_url,
            health_url=health_url,
            ping_timeout=_seconds(env, "BRIDGE_PING_TIMEOUT", DEFAULT_PING_TIMEOUT),
            open_timeout=_seconds(env, "BRIDGE_OPEN_TIMEOUT", DEFAULT_OPEN_TIMEOUT),
        )


def _seconds(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(name)
    if not raw:
        return default
    try:
        return float(raw)
    except ValueError:
        raise ConfigError(f"{name} must be a number of seconds, got {raw!r}") from None

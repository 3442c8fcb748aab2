"""The ASGI app: ``/invocations-bidirectional-stream``, any other WebSocket path, ``/ping``.

``bridge.main:app`` is the instance uvicorn serves; tests build their own with
``create_app(BridgeConfig(...))``.
"""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket

from bridge.config import BridgeConfig
from bridge.health import check_health
from bridge.relay import Relay

SAGEMAKER_PATH = "/invocations-bidirectional-stream"


def create_app(config: BridgeConfig | None = None) -> Starlette:
    """Build the bridge for ``config`` (default: from the environment)."""
    config = config or BridgeConfig.from_env()

    async def ping(request: Request) -> PlainTextResponse:
        healthy, reason = await check_health(config.health_url, config.ping_timeout)
        return PlainTextResponse(reason, status_code=200 if healthy else 503)

    async def sagemaker_stream(websocket: WebSocket) -> None:
        await Relay(websocket, config.backend_url, open_timeout=config.open_timeout).run()

    async def other_path(websocket: WebSocket) -> None:
        # SageMaker's model_invocation_path lands here: "v1/realtime" → the backend's path.
        url = f"{config.backend_origin}/{websocket.path_params['path']}"
        if websocket.url.query:
            url = f"{url}?{websocket.url.query}"
        await Relay(websocket, url, open_timeout=config.open_timeout).run()

    return Starlette(
        routes=[
            Route("/ping", ping, methods=["GET"]),
            WebSocketRoute(SAGEMAKER_PATH, sagemaker_stream),
            WebSocketRoute("/{path:path}", other_path),
        ]
    )

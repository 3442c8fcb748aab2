"""WebSocket bridge for the SageMaker STT container.

SageMaker's sidecar opens ``ws://localhost:8080/invocations-bidirectional-stream``;
vLLM serves the Realtime API at ``ws://localhost:8081/v1/realtime``. The bridge
relays frames between the two (relay.py) and answers ``GET /ping`` from vLLM's
``/health`` (health.py); app.py routes, main.py is what uvicorn serves.

Self-contained on purpose: it runs inside the image, where the captioner
package is not installed, so it imports only starlette, uvicorn and websockets.
"""

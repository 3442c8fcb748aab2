"""What uvicorn serves: ``uvicorn bridge.main:app --host 0.0.0.0 --port 8080``.

Configures logging and reads the settings from the environment at import, so
a bad variable stops the container with one readable line, not a traceback.
"""

from __future__ import annotations

import logging
import os

from bridge.app import create_app
from bridge.config import BridgeConfig, ConfigError

logging.basicConfig(
    level=os.environ.get("BRIDGE_LOG_LEVEL", "INFO").upper(),
    format="%(asctime)s %(levelname)s %(name)s %(message)s",
)

try:
    _config = BridgeConfig.from_env()
except ConfigError as exc:
    raise SystemExit(f"bridge: {exc}") from None

app = create_app(_config)

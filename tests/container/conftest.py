"""The bridge runs without the captioner package, from container/; import it from there."""

import sys
from pathlib import Path

CONTAINER_DIR = Path(__file__).resolve().parents[2] / "container"
if str(CONTAINER_DIR) not in sys.path:
    sys.path.insert(0, str(CONTAINER_DIR))

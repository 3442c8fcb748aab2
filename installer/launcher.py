"""Entry point of the PyInstaller bundle: the same ``captioner`` command as a pip install."""

import sys

from captioner.cli import main

if __name__ == "__main__":
    sys.exit(main())

"""``python -m fredica_app.cli``: the ``fredica`` command without its launcher script."""

import sys

from fredica_app.cli import run

sys.exit(run())

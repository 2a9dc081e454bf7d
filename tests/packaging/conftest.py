"""The packaging scripts are not a package: they run as ``python packaging/X.py`` and import
their siblings by module name. The tests put that folder on ``sys.path`` the same way."""

import sys
from pathlib import Path

PACKAGING = Path(__file__).resolve().parents[2] / "packaging"
if str(PACKAGING) not in sys.path:
    sys.path.insert(0, str(PACKAGING))

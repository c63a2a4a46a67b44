"""Where the suite finds the repository and its vendored data, wherever a test file sits in tests/."""

from __future__ import annotations

import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"
DATA_DIR = TESTS / "data"
REALWORLD = DATA_DIR / "realworld"
ZITADEL_TOOLS = DATA_DIR / "zitadel-tools"
STANDINS = TESTS / "standins"
GCS_BUCKET = "zb-test"


def source_copy(dest: Path) -> Path:
    """A copy of what ``--setup_file`` ships (setup.py and both packages) in ``dest``.

    Packaging tests build from the copy, so the suite never writes ``build/`` or ``*.egg-info``
    into the checkout.
    """
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "setup.py", dest / "setup.py")
    for package in ("pipeline", "transforms"):
        shutil.copytree(ROOT / package, dest / package, ignore=shutil.ignore_patterns("__pycache__"))
    return dest

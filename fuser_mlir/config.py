"""All ``FUSER_*`` environment knobs, typed, with defaults.

Nothing else in the package reads ``os.environ``. Read a knob through the
functions here at the point of use, so tests can set the variable with
``monkeypatch.setenv``.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def _flag(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    return raw.strip().lower() not in ("0", "false", "no", "off")


def reproducer_dir() -> Path:
    """``FUSER_REPRODUCER_DIR``: where a failed compile saves its input IR
    (default: the system temporary directory)."""
    return Path(os.environ.get("FUSER_REPRODUCER_DIR") or tempfile.gettempdir())


def dump_ir() -> bool:
    """``FUSER_DUMP_IR=1``: print the IR after every pass of every compile."""
    return _flag("FUSER_DUMP_IR", False)

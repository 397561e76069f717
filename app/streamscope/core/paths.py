"""Where StreamScope keeps its files, resolved at call time.

``STREAMSCOPE_HOME`` (tests point it at a temporary folder) overrides the per-user data
folder from platformdirs. Nothing is created at import; each ``*_dir()`` creates its folder
when asked for it.

    home()          $STREAMSCOPE_HOME, else the platform's user data dir for "StreamScope"
    data_dir()      home()/data      conversations database
    config_dir()    home()/config    endpoints.json and other settings (never secrets)
    log_dir()       home()/logs      the rotating log
    capture_dir()   home()/captures  stored stream captures
"""

from __future__ import annotations

import os
from pathlib import Path

APP_NAME = "StreamScope"
HOME_ENV = "STREAMSCOPE_HOME"

__all__ = ["APP_NAME", "HOME_ENV", "capture_dir", "config_dir", "data_dir", "home", "log_dir"]


def home() -> Path:
    """The root of every file StreamScope writes (not created here)."""
    override = os.environ.get(HOME_ENV)
    if override:
        return Path(override).expanduser()
    import platformdirs  # (not at import: it costs start-up time, and tests never need it)

    return Path(platformdirs.user_data_dir(APP_NAME, appauthor=False))


def _sub(name: str) -> Path:
    path = home() / name
    path.mkdir(parents=True, exist_ok=True)
    return path


def data_dir() -> Path:
    """Conversations and other app data (created on demand)."""
    return _sub("data")


def config_dir() -> Path:
    """Settings such as ``endpoints.json`` (created on demand). Never holds a secret."""
    return _sub("config")


def log_dir() -> Path:
    """Log files (created on demand)."""
    return _sub("logs")


def capture_dir() -> Path:
    """Stored stream captures (created on demand)."""
    return _sub("captures")

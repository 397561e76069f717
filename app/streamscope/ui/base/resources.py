"""Files shipped beside the code (icons, the .desktop file): found in the installed package
(``streamscope/resources``) or, in a source checkout, at the repository's ``resources/``."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from PySide6.QtGui import QIcon

_PACKAGE = Path(__file__).resolve().parents[2]  # streamscope/ (this is streamscope/ui/base/)


@cache
def resources_dir() -> Path:
    for candidate in (_PACKAGE / "resources", _PACKAGE.parents[1] / "resources"):
        if (candidate / "icons").is_dir():
            return candidate
    raise FileNotFoundError("StreamScope's resources folder is missing")


def app_icon() -> QIcon:
    return QIcon(str(resources_dir() / "icons" / "streamscope.svg"))

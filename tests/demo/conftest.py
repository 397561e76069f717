import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from streamscope.demo.server import DemoServer

# The tests import their wire-reading helper (demo_wire_reading.py) by name; keep that working
# under any pytest import mode.
_HERE = str(Path(__file__).parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)


@pytest.fixture(scope="session")
def demo_server() -> Iterator[DemoServer]:
    """One fast demo server (pacing / 1000) for the whole run, on an ephemeral loopback port."""
    with DemoServer(host="127.0.0.1", port=0, speed=1000) as srv:
        yield srv

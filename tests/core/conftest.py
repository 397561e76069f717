"""Fixtures for core tests: a scriptable raw HTTP server (see support.rawhttp)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from support.rawhttp import RawServer


@pytest.fixture
def raw_server() -> Iterator[RawServer]:
    server = RawServer()
    try:
        yield server
    finally:
        server.close()

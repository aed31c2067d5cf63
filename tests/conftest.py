from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.helpers import DaemonProcess


@pytest.fixture
def daemon() -> Iterator[DaemonProcess]:
    d = DaemonProcess().start()
    try:
        yield d
    finally:
        d.cleanup()


@pytest.fixture(scope="module")
def shared_daemon() -> Iterator[DaemonProcess]:
    """One daemon for a module of read-mostly tests (each starts in ~0.5 s; this keeps the suite quick)."""
    d = DaemonProcess().start()
    try:
        yield d
    finally:
        d.cleanup()

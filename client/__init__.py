"""The NEXUS thin client: talks to `nexusd` over its socket with msgpack frames.

    from nexus_client import connect
    with connect(autostart=True) as nexus:
        nexus.request("status")

Importing this package loads zmq and msgpack only: never kuzu, tree_sitter or watchdog (a test checks).
"""

from nexusd.errors import (
    Ambiguous,
    BadRequest,
    Busy,
    Forbidden,
    Internal,
    NexusError,
    NotFound,
    NotIndexed,
    Timeout,
    TooLarge,
    Unavailable,
    UnknownOp,
    VersionMismatch,
)

from .connection import Client, connect

__all__ = [
    "Ambiguous",
    "BadRequest",
    "Busy",
    "Client",
    "Forbidden",
    "Internal",
    "NexusError",
    "NotFound",
    "NotIndexed",
    "Timeout",
    "TooLarge",
    "Unavailable",
    "UnknownOp",
    "VersionMismatch",
    "connect",
]

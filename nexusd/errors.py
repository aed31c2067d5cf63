"""The one exception tree of NEXUS, each class with its wire `code`.

    NexusError (code: internal)
     +-- BadRequest        bad_request   malformed frame, missing op, wrong argument types
     |    +-- UnknownOp    unknown_op    op not in the registry
     |    +-- TooLarge     too_large     frame over the size limit
     +-- NotFound          not_found     no such symbol / file / repository / session
     +-- Ambiguous         ambiguous     a name matched several nodes; `candidates` holds them, ranked
     +-- NotIndexed        not_indexed   the repository is not registered or has no graph yet
     +-- Forbidden         forbidden     a path outside a registered root, another user's repository
     +-- Busy              busy          the daemon's queue is full; retry later
     +-- Timeout           timeout       a request ran past its time bound
     +-- Unavailable       unavailable   the daemon cannot be reached (raised by clients only)
     +-- VersionMismatch   version_mismatch  client and daemon speak different wire versions
 +-- NoSpace           no_space      the disk holding the data is (nearly) full; the write was not stored
     +-- Internal          internal      a handler crashed; the daemon kept serving (see its log)

The daemon raises these; the server turns them into `{ok: false, error: {code, message, hint?, data?}}`;
the client rebuilds the same class from the code (`from_wire`); only the CLI turns them into exit codes.
This module is pure data: clients import it.
"""

from __future__ import annotations

from typing import Any


class NexusError(Exception):
    code = "internal"
    exit_code = 1

    def __init__(self, message: str, *, hint: str | None = None, data: dict[str, Any] | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.data = data or {}

    def to_wire(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.hint:
            error["hint"] = self.hint
        if self.data:
            error["data"] = self.data
        return error


class BadRequest(NexusError):
    code = "bad_request"
    exit_code = 2


class UnknownOp(BadRequest):
    code = "unknown_op"


class TooLarge(BadRequest):
    code = "too_large"


class NotFound(NexusError):
    code = "not_found"
    exit_code = 4


class Ambiguous(NexusError):
    code = "ambiguous"
    exit_code = 5


class NotIndexed(NexusError):
    code = "not_indexed"
    exit_code = 6


class Forbidden(NexusError):
    code = "forbidden"
    exit_code = 7


class Busy(NexusError):
    code = "busy"
    exit_code = 8


class Timeout(NexusError):
    code = "timeout"
    exit_code = 9


class Unavailable(NexusError):
    code = "unavailable"
    exit_code = 10


class VersionMismatch(NexusError):
    code = "version_mismatch"
    exit_code = 11


class NoSpace(NexusError):
    """A write refused or failed for lack of disk space. Nothing of it was stored; reads still answer.
    `data`: `path` (the directory on the full filesystem), `freeBytes`, `neededBytes`."""

    code = "no_space"
    exit_code = 12


class Internal(NexusError):
    code = "internal"
    exit_code = 1


ERRORS: dict[str, type[NexusError]] = {
    cls.code: cls
    for cls in (
        BadRequest,
        UnknownOp,
        TooLarge,
        NotFound,
        Ambiguous,
        NotIndexed,
        Forbidden,
        Busy,
        Timeout,
        Unavailable,
        VersionMismatch,
        NoSpace,
        Internal,
    )
}

# The closed set, documented in ARCHITECTURE.md and checked by tests.
ERROR_CODES = tuple(sorted(ERRORS))


def from_wire(error: Any) -> NexusError:
    """Rebuild the typed exception a daemon reply describes (unknown codes become Internal)."""
    if not isinstance(error, dict):
        return Internal(f"malformed error reply: {error!r}")
    cls = ERRORS.get(str(error.get("code")), Internal)
    data = error.get("data")
    return cls(str(error.get("message", "")), hint=error.get("hint"), data=data if isinstance(data, dict) else None)

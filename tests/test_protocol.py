"""The wire: every malformed input gets its documented error (or is dropped when no sender is known), and the
next good request is answered. Raw DEALER sockets, so nothing in the client library hides a mistake."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import msgpack
import pytest
import zmq

from nexusd import protocol
from tests.helpers import DaemonProcess


class Raw:
    def __init__(self, endpoint: str):
        self.ctx = zmq.Context()
        self.ctx.setsockopt(zmq.LINGER, 0)
        self.sock = self.ctx.socket(zmq.DEALER)
        self.sock.setsockopt(zmq.MAXMSGSIZE, -1)
        self.sock.connect(endpoint)

    def send(self, *frames: bytes) -> None:
        self.sock.send_multipart(list(frames))

    def recv(self, timeout_ms: int = 5000) -> dict[str, Any] | None:
        if not self.sock.poll(timeout_ms):
            return None
        return msgpack.unpackb(self.sock.recv(), raw=False)

    def ok_after(self) -> None:
        """The daemon still answers a good request after whatever came before."""
        self.send(protocol.request_frame("after", "ping"))
        reply = self.recv()
        assert reply is not None and reply["id"] == "after" and reply["ok"] is True

    def close(self) -> None:
        self.sock.close(0)
        self.ctx.term()


@pytest.fixture
def raw(shared_daemon: DaemonProcess) -> Iterator[Raw]:
    r = Raw(shared_daemon.dirs.endpoint)
    yield r
    r.close()


def error_of(reply: dict[str, Any] | None) -> str:
    assert reply is not None, "no reply"
    assert reply["ok"] is False and set(reply["error"]) >= {"code", "message"}
    return reply["error"]["code"]


@pytest.mark.parametrize(
    "payload, code",
    [
        (b"\xc1garbage\xff", "bad_request"),
        (msgpack.packb([1, 2, 3]), "bad_request"),
        (msgpack.packb("a string"), "bad_request"),
        (msgpack.packb({"v": 1, "args": {}}), "bad_request"),  # no id
    ],
)
def test_unidentifiable_frames_get_bad_request_with_null_id(raw: Raw, payload: bytes, code: str) -> None:
    raw.send(payload)
    reply = raw.recv()
    assert error_of(reply) == code and reply is not None and reply["id"] is None
    raw.ok_after()


@pytest.mark.parametrize(
    "frame, code",
    [
        ({"v": 1, "id": "r1", "args": {}}, "bad_request"),  # missing op
        ({"v": 1, "id": "r1", "op": "no.such.op"}, "unknown_op"),
        ({"v": 1, "id": "r1", "op": "debug.sleep", "args": {"seconds": "ten"}}, "bad_request"),
        ({"v": 1, "id": "r1", "op": "debug.sleep", "args": {"bogus": 1}}, "bad_request"),
        ({"v": 1, "id": "r1", "op": "ping", "args": [1, 2]}, "bad_request"),
        ({"v": 99, "id": "r1", "op": "ping"}, "bad_request"),
        ({"v": 1, "id": "r1", "op": 12}, "bad_request"),
        ({"v": 1, "id": "r1", "op": "debug.raise"}, "internal"),
    ],
)
def test_bad_requests_get_documented_errors(raw: Raw, frame: dict[str, Any], code: str) -> None:
    raw.send(msgpack.packb(frame))
    reply = raw.recv()
    assert error_of(reply) == code
    assert reply is not None and reply["id"] == "r1"
    raw.ok_after()


def test_extra_frames_are_refused(raw: Raw) -> None:
    raw.send(protocol.request_frame("x", "ping"), b"second")
    assert error_of(raw.recv()) == "bad_request"
    raw.ok_after()


def test_oversized_frame_gets_too_large(raw: Raw) -> None:
    big = protocol.pack({"v": 1, "id": "big", "op": "debug.echo", "args": {"x": "y" * (protocol.MAX_FRAME_BYTES + 10)}})
    raw.send(big)
    assert error_of(raw.recv(15000)) == "too_large"
    raw.ok_after()


def test_oversized_result_is_refused_not_sent(raw: Raw) -> None:
    raw.send(protocol.request_frame("r", "debug.big", {"bytes": protocol.MAX_FRAME_BYTES + 1}))
    assert error_of(raw.recv(15000)) == "too_large"
    raw.ok_after()


def test_handler_crash_is_contained(shared_daemon: DaemonProcess) -> None:
    from nexusd.errors import Internal

    with shared_daemon.client() as c:
        with pytest.raises(Internal) as info:
            c.request("debug.raise")
        assert "boom" in info.value.message
        assert c.request("ping")["pong"]
    assert "debug.raise" in shared_daemon.dirs.log.read_text()


def test_twenty_parallel_clients_get_their_own_replies(shared_daemon: DaemonProcess) -> None:
    failures: list[str] = []

    def worker(n: int) -> None:
        try:
            with shared_daemon.client() as c:
                for i in range(100):
                    token = f"client{n}-req{i}"
                    result = c.request("debug.echo", {"token": token})
                    if result != {"echo": {"token": token}}:
                        failures.append(f"{token} got {result}")
        except Exception as exc:  # collected and asserted below
            failures.append(f"client {n}: {exc!r}")

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not failures, failures[:5]


def test_reply_ids_match_under_pipelining(raw: Raw) -> None:
    for i in range(200):
        raw.send(protocol.request_frame(f"p{i}", "debug.echo", {"i": i}))
    seen = {}
    for _ in range(200):
        reply = raw.recv()
        assert reply is not None and reply["ok"]
        seen[reply["id"]] = reply["result"]["echo"]["i"]
    assert seen == {f"p{i}": i for i in range(200)}

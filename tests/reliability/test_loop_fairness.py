"""One peer must never stall the socket loop for the others.

A client that sends 15,000 requests and never reads fills its pipe; replies to it must not make the loop wait
(before: every reply to it waited out a 1 s send timeout, for every client, also after it disconnected). Huge
or deeply nested arguments are refused by bounded checks before any schema walk (before: a 300 KB argument
list took the loop for seconds and hundreds of MB, a 1,000-deep nesting answered `internal`)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import msgpack
import pytest
import zmq

from nexusd import protocol
from tests.helpers import DaemonProcess, wait_for
from tests.reliability.common import Raw, rss_kb


def _flooder(endpoint: str, requests: int) -> tuple[zmq.Context, zmq.Socket]:
    """A DEALER that sends `requests` pings and never reads (tiny receive buffers: its pipe fills at once)."""
    ctx = zmq.Context()
    sock = ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.setsockopt(zmq.SNDHWM, 0)
    sock.setsockopt(zmq.RCVHWM, 1)
    sock.setsockopt(zmq.RCVBUF, 4096)
    sock.connect(endpoint)
    for n in range(requests):
        sock.send(protocol.request_frame(f"flood-{n}", "ping", {}))
    return ctx, sock


def _ping_times(raw: Raw, count: int) -> list[float]:
    out = []
    for n in range(count):
        t0 = time.monotonic()
        raw.send(protocol.request_frame(f"p{n}", "ping"))
        reply = raw.recv(10_000)
        assert reply is not None and reply.get("ok"), reply
        out.append(time.monotonic() - t0)
    return out


def _handled(raw: Raw) -> int:
    """Requests the daemon has read: answered, or ignored because their sender does not read."""
    raw.send(protocol.request_frame("st", "status"))
    reply = raw.recv(20_000)
    assert reply and reply["ok"], reply
    ignored = reply["result"].get("health", {}).get("peers", {}).get("ignoredRequests", 0)
    return int(reply["result"]["daemon"]["requests"]) + int(ignored)


def test_a_client_that_never_reads_does_not_slow_the_others(daemon: DaemonProcess) -> None:
    other = Raw(daemon.dirs.endpoint)
    ctx, flood = _flooder(daemon.dirs.endpoint, 15_000)
    try:
        # Wait until the daemon has read most of the flood (its replies then sit in the full pipe).
        wait_for(lambda: _handled(other) >= 14_000, timeout=60, interval=0.2, what="the flood to be read")
        during = _ping_times(other, 20)
        assert max(during) < 0.5, f"pings wait behind the non-reading client: {[round(t, 2) for t in during]}"
        # It disconnects without reading: nothing of it may keep the loop waiting.
        flood.close(0)
        ctx.term()
        after = _ping_times(other, 20)
        assert max(after) < 0.5, f"pings wait after the non-reading client left: {[round(t, 2) for t in after]}"
        other.send(protocol.request_frame("st2", "status"))
        reply = other.recv(20_000)
        assert reply and reply["ok"]
        peers = reply["result"]["health"]["peers"]
        assert peers["droppedReplies"] > 0, peers  # its replies were dropped, not waited for
    finally:
        other.close()


def test_a_second_flooder_while_the_first_is_stuck(daemon: DaemonProcess) -> None:
    """Two non-reading peers at once, and a third that reads: the reader's requests still go through, including
    read-lane ones (status), and each takes well under a second."""
    reader = Raw(daemon.dirs.endpoint)
    floods = [_flooder(daemon.dirs.endpoint, 12_000) for _ in range(2)]
    try:
        wait_for(lambda: _handled(reader) >= 20_000, timeout=90, interval=0.2, what="both floods to be read")
        for n in range(10):
            t0 = time.monotonic()
            reader.send(protocol.request_frame(f"s{n}", "status"))
            reply = reader.recv(10_000)
            assert reply and reply["ok"], reply
            assert time.monotonic() - t0 < 1.0
    finally:
        for ctx, sock in floods:
            sock.close(0)
            ctx.term()
        reader.close()


def _cpu_s(pid: int) -> float:
    """User + system CPU seconds the process has used so far (its threads included)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _timed(raw: Raw, frame: bytes, timeout_ms: int = 30_000) -> tuple[dict, float]:
    t0 = time.monotonic()
    raw.send(frame)
    reply = raw.recv(timeout_ms)
    assert reply is not None, "no reply"
    return reply, time.monotonic() - t0


@pytest.mark.parametrize(
    "op, args",
    [
        pytest.param("sync", {"repo": "/nonexistent", "paths": list(range(300_000))}, id="300k-int-list"),
        pytest.param("sync", {"repo": "/nonexistent", "paths": ["x"] * 150_000}, id="150k-string-list"),
        pytest.param("recall", {"query": "q", "types": [{"a": 1}] * 60_000}, id="60k-map-list"),
        pytest.param("hook.notify", {"repo": "/" + "a/" * 200_000}, id="400k-path-inline"),
        pytest.param("locate", {"query": "x" * 400_000}, id="400k-string"),
    ],
)
def test_huge_arguments_are_refused_quickly_and_cheaply(daemon: DaemonProcess, op: str, args: dict) -> None:
    raw = Raw(daemon.dirs.endpoint)
    try:
        _timed(raw, protocol.request_frame("warm", "ping"))
        before, cpu_before = rss_kb(daemon.pid), _cpu_s(daemon.pid)
        reply, took = _timed(raw, msgpack.packb({"v": 1, "id": "big", "op": op, "args": args}, use_bin_type=True))
        assert reply["id"] == "big"
        assert not reply["ok"] and reply["error"]["code"] in ("too_large", "bad_request"), reply
        # The daemon's CPU time, not the wall clock: what refusing costs, whatever else the machine runs (before
        # the bounded checks: 11 s and more).
        cpu = _cpu_s(daemon.pid) - cpu_before
        assert cpu < 1.5, f"{op}: refusing took {cpu:.2f} CPU-s of the daemon ({took:.1f} s wall)"
        grown = (rss_kb(daemon.pid) - before) / 1024
        assert grown < 100, f"{op}: refusing grew the daemon by {grown:.0f} MB"
        # The loop is free again at once.
        _reply, took = _timed(raw, protocol.request_frame("after", "ping"))
        assert took < 0.5
    finally:
        raw.close()


def _nested(depth: int) -> object:
    out: object = "x"
    for i in range(depth):
        out = [out] if i % 2 else {"k": out}
    return out


@pytest.mark.parametrize("depth", [40, 200, 1_000])
@pytest.mark.parametrize("op, key", [("memory.import", "records"), ("remember", "text"), ("debug.echo", "x")])
def test_deep_nesting_is_refused_with_too_large(daemon: DaemonProcess, tmp_path: Path, depth: int, op: str, key: str) -> None:
    raw = Raw(daemon.dirs.endpoint)
    try:
        value = [_nested(depth)] if key == "records" else _nested(depth)
        reply, _took = _timed(raw, msgpack.packb({"v": 1, "id": "deep", "op": op, "args": {key: value}}))
        assert not reply["ok"]
        assert reply["error"]["code"] == "too_large", reply
        assert "nested" in reply["error"]["message"]
        ok, _ = _timed(raw, protocol.request_frame("alive", "ping"))
        assert ok["ok"]
    finally:
        raw.close()
    assert "RecursionError" not in daemon.dirs.log.read_text()


def test_published_schemas_bound_every_string_and_list(daemon: DaemonProcess) -> None:
    """Every string and array argument in the catalogue carries a limit, so clients can see them."""
    with daemon.client() as c:
        catalogue = c.catalogue
    unbounded = []

    def walk(where: str, node: object) -> None:
        if isinstance(node, dict):
            if node.get("type") == "string" and "maxLength" not in node and "enum" not in node:
                unbounded.append(where)
            if node.get("type") == "array" and "maxItems" not in node:
                unbounded.append(where)
            for k, v in node.items():
                walk(f"{where}.{k}", v)
        elif isinstance(node, list):
            for i, v in enumerate(node):
                walk(f"{where}[{i}]", v)

    for entry in catalogue:
        walk(entry["name"], entry["inputSchema"])
    assert unbounded == []

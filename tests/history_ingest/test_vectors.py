"""The optional embedding path against a fake Ollama-compatible endpoint (a stdlib HTTP server in the test)."""

from __future__ import annotations

import hashlib
import http.server
import json
import threading
from pathlib import Path

from tests.helpers import DaemonProcess

from .conftest import Factory, commit, register


def embed(text: str) -> list[float]:
    """A deterministic bag-of-words embedding: similar words, similar vectors."""
    vec = [0.0] * 32
    for word in text.lower().split():
        vec[int(hashlib.md5(word.encode()).hexdigest(), 16) % 32] += 1.0
    return vec


class Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        data = json.dumps({"embeddings": [embed(t) for t in body["input"]]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


def test_vectors_fuse_with_bm25(tmp_path: Path, new_repo: Factory) -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    daemon = DaemonProcess(home=tmp_path / "nx", env={"NEXUS_EMBED_URL": url, "NEXUS_EMBED_MODEL": "fake"})
    try:
        daemon.start()
        repo = new_repo()
        commit(repo, "fix: raise the retry budget to 5", {"r.py": "R = 5\n"})
        with daemon.client() as c:
            register(c, repo)
            c.request("history.sync", {"repo": str(repo)})
            r = c.request("query", {"repo": str(repo), "text": "retry budget"})
            assert r["retrieval"]["vectors"] == "on", r["retrieval"]
            assert r["results"][0]["text"].split("\n")[0].endswith("fix: raise the retry budget to 5")
        server.shutdown()
        with daemon.client() as c:  # the endpoint is gone: BM25 answers alone, and says so
            r = c.request("query", {"repo": str(repo), "text": "retry budget"})
            assert r["retrieval"]["vectors"] == "unavailable" and r["results"]
    finally:
        server.server_close()
        daemon.cleanup()

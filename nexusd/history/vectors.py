"""Optional embeddings for history recall, from an Ollama-compatible HTTP endpoint.

Off unless both `NEXUS_EMBED_URL` (e.g. `http://127.0.0.1:11434`) and `NEXUS_EMBED_MODEL` (e.g.
`nomic-embed-text`) are set; BM25 alone is the default and fully supported. Nothing here is ever called when
they are unset, so the daemon never opens a network connection on its own.

Wire: `POST {url}/api/embed` with `{"model": m, "input": [texts]}` answering `{"embeddings": [[...], ...]}`
(Ollama >= 0.3); the older `POST {url}/api/embeddings` with `{"model", "prompt"}` answering `{"embedding": [...]}`
is tried when the first answers 404. stdlib `urllib` with a short timeout: a slow or absent endpoint costs at
most `TIMEOUT_S` per call and recall falls back to BM25 (reported as `vectors: "unavailable"`).
"""

from __future__ import annotations

import json
import logging
import urllib.error
import urllib.request
from dataclasses import dataclass

from .. import config

log = logging.getLogger(__name__)

TIMEOUT_S = float(config.get("NEXUS_EMBED_TIMEOUT"))
MAX_INPUT_CHARS = 2000
BATCH = 32


class EmbedError(RuntimeError):
    """The endpoint failed, timed out or answered something that is not an embedding."""


@dataclass(frozen=True)
class Embedder:
    url: str
    model: str
    timeout_s: float = TIMEOUT_S

    def _post(self, path: str, payload: dict[str, object]) -> dict[str, object]:
        request = urllib.request.Request(
            self.url.rstrip("/") + path,
            data=json.dumps(payload).encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=self.timeout_s) as response:  # noqa: S310 (configured URL)
            data = json.loads(response.read())
        if not isinstance(data, dict):
            raise EmbedError("the endpoint answered a non-object")
        return data

    def embed(self, texts: list[str]) -> list[list[float]]:
        """One vector per text, in order. Raises EmbedError on any failure."""
        out: list[list[float]] = []
        try:
            for i in range(0, len(texts), BATCH):
                batch = [t[:MAX_INPUT_CHARS] for t in texts[i : i + BATCH]]
                try:
                    data = self._post("/api/embed", {"model": self.model, "input": batch})
                    vectors = data.get("embeddings")
                except urllib.error.HTTPError as exc:
                    if exc.code != 404:
                        raise
                    vectors = [self._post("/api/embeddings", {"model": self.model, "prompt": t}).get("embedding") for t in batch]
                if not isinstance(vectors, list) or len(vectors) != len(batch):
                    raise EmbedError("the endpoint answered the wrong number of embeddings")
                for vec in vectors:
                    if not isinstance(vec, list) or not vec:
                        raise EmbedError("an embedding is not a list of numbers")
                    out.append([float(x) for x in vec])
        except (OSError, ValueError, urllib.error.URLError) as exc:
            raise EmbedError(f"embedding endpoint {self.url}: {exc}") from exc
        return out


def configured() -> Embedder | None:
    url = (config.get("NEXUS_EMBED_URL") or "").strip()
    model = (config.get("NEXUS_EMBED_MODEL") or "").strip()
    if not url or not model:
        return None
    return Embedder(url, model)

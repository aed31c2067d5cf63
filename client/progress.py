"""A progress bar on stderr fed by the daemon's progress frames ({done, total, message})."""

from __future__ import annotations

from types import TracebackType
from typing import Any

import click


class ProgressBar:
    def __init__(self, label: str):
        self.label = label
        self._bar: Any = None
        self._done = 0

    def __enter__(self) -> ProgressBar:
        return self

    def update(self, data: dict[str, Any]) -> None:
        total, done = data.get("total"), data.get("done")
        if not isinstance(total, int) or not isinstance(done, int) or total <= 0:
            return
        if self._bar is None or self._bar.length != total:
            self.__exit__(None, None, None)
            self._bar = click.progressbar(length=total, label=self.label, file=click.get_text_stream("stderr"))  # type: ignore
            self._bar.__enter__()
            self._done = 0
        if done > self._done:
            self._bar.update(done - self._done)
            self._done = done

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self._bar is not None:
            self._bar.__exit__(exc_type, exc, tb)
            self._bar = None

"""A progress bar on stderr fed by the daemon's progress frames ({phase, done, total, message}).

The daemon throttles progress frames (about 20 a second) and drops them when the pipe is full, so the frame
that says done == total may never arrive: a phase that ended (the next phase began, or the request
succeeded) is drawn at 100 % before its bar closes. A failed request leaves the bar where it stopped.

A long step that reports nothing (a large repository's write) gets a heartbeat from the daemon every
NEXUS_HEARTBEAT_S: `{phase, heartbeat: true, seconds}`, drawn as one line that says which step runs and for how
long, rewritten in place, so a silent minute reads as work and not as a hang."""

from __future__ import annotations

import sys
from types import TracebackType
from typing import Any

import click


class ProgressBar:
    def __init__(self, label: str):
        self.label = label
        self._bar: Any = None
        self._done = 0
        self._phase: Any = None
        self._last_percent = 0.0
        self._beat_line = False  # a heartbeat's line is open on stderr

    def __enter__(self) -> ProgressBar:
        return self

    def update(self, data: dict[str, Any]) -> None:
        if data.get("heartbeat"):
            self._beat(data)
            return
        total, done = data.get("total"), data.get("done")
        if not isinstance(total, int) or not isinstance(done, int) or total <= 0:
            return
        phase = data.get("phase")
        if self._bar is None or self._bar.length != total or phase != self._phase:
            self.__exit__(None, None, None)  # the previous phase is over: drawn complete
            label = f"{self.label} ({phase})" if phase else self.label
            self._bar = click.progressbar(length=total, label=label, file=sys.stderr)  # type: ignore
            self._bar.__enter__()
            self._done = 0
            self._phase = phase
        if done > self._done:
            self._bar.update(done - self._done)
            self._done = done

    def _beat(self, data: dict[str, Any]) -> None:
        phase, seconds = data.get("phase"), data.get("seconds")
        if self._bar is not None and self._done < self._bar.length and phase == self._phase:
            return  # the bar of this very phase says enough
        self._close_bar(None, None, None)  # a phase that ended is drawn complete, the line goes below it
        what = f"{self.label} ({phase})" if isinstance(phase, str) and phase else self.label
        took = f", {seconds} s" if isinstance(seconds, int) else ""
        click.echo(f"\r\x1b[2K{what}: still running{took}", file=sys.stderr, nl=False)
        self._beat_line = True

    def _end_beat(self) -> None:
        if self._beat_line:
            click.echo("", file=sys.stderr)
            self._beat_line = False

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._end_beat()
        self._close_bar(exc_type, exc, tb)

    def _close_bar(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._bar is not None:
            if exc_type is None and self._done < self._bar.length:
                self._bar.update(self._bar.length - self._done)
                self._done = self._bar.length
            self._last_percent = 100.0 * self._done / self._bar.length
            self._bar.__exit__(exc_type, exc, tb)
            self._bar = None

    @property
    def percent(self) -> float:
        """How far the current (or last) bar got, 0-100 (for tests)."""
        return self._last_percent

"""Stop signals of a run: SIGINT and SIGTERM turned into a request to stop every query
cleanly (:class:`StopSignals`), which :func:`sqlstream.runtime.runner.run` waits on."""

from __future__ import annotations

import queue
import signal
import threading

STOP_SIGNALS = ("SIGINT", "SIGTERM")
"""The signals that stop a run cleanly (Ctrl-C; ``kill``, ``timeout``, supervisors)."""

_ACTIVE_SIGNALS: list[StopSignals] = []


class StopSignals:
    """Turns SIGINT and SIGTERM into a request to stop every query cleanly.

    While entered (``with StopSignals():``, on the main thread; elsewhere it does nothing,
    as Python delivers signals only there), a signal neither raises ``KeyboardInterrupt``
    nor ends the process: its name is added to :attr:`received` and every run waiting in
    :func:`run` wakes up and stops its queries. A second signal — to the process group,
    as ``timeout -s INT`` and many supervisors send, or a second Ctrl-C — arrives while the
    queries stop: it is reported and otherwise ignored, so no py4j call is cut in the
    middle. :func:`run` enters one itself unless one is already entered (``sqlstream exec``
    enters one before the JVM starts, so a signal during start-up also ends the run cleanly).
    The previous handlers are restored on exit; with ``restore=False`` (``exec``, whose
    process ends next) the signals are ignored from then on instead, so a late second
    signal cannot end the exit in a ``KeyboardInterrupt``.

    Python's ``signal.signal``; a handler only records and puts on a ``queue.SimpleQueue``
    (whose ``put`` is reentrant: documented as safe in signal handlers).
    """

    def __init__(self, restore: bool = True) -> None:
        self.received: list[str] = []
        self.restore = restore
        self._inboxes: list[queue.SimpleQueue] = []
        self._previous: dict = {}

    @staticmethod
    def current() -> StopSignals | None:
        """The innermost entered instance, or ``None``."""
        return _ACTIVE_SIGNALS[-1] if _ACTIVE_SIGNALS else None

    def _handle(self, signum, frame) -> None:  # noqa: ARG002 - signal's signature
        name = signal.Signals(signum).name
        self.received.append(name)
        for inbox in self._inboxes:
            inbox.put(("signal", None, name))

    def __enter__(self) -> StopSignals:
        if threading.current_thread() is threading.main_thread():
            for name in STOP_SIGNALS:
                number = getattr(signal, name)
                self._previous[number] = signal.signal(number, self._handle)
        _ACTIVE_SIGNALS.append(self)
        return self

    def __exit__(self, *exc) -> None:
        _ACTIVE_SIGNALS.remove(self)
        for number, handler in self._previous.items():
            signal.signal(number, handler if self.restore else signal.SIG_IGN)
        self._previous.clear()

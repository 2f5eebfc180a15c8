"""Call recorders: the calls made on a SparkSession, and the calls a printed program makes.

:class:`Recorded` wraps a real object (a SparkSession) and every object reached from it
(readers, writers, DataFrames, queries…): each attribute read and each call is logged
with its arguments, then delegated to the real object. :class:`Symbol` stands for one
without Spark: executing the text ``sqlstream translate`` prints with ``spark = Symbol``
logs the calls the text makes. :func:`canonical` turns either log into comparable rows.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Ref:
    """An object of the log: the session (0) or what an event returned."""

    number: int


@dataclass
class Log:
    """Events ``[receiver Ref, name, is_call, args, kwargs, result Ref | None]`` in order."""

    events: list = field(default_factory=list)
    count: int = 0

    def new(self) -> Ref:
        self.count += 1
        return Ref(self.count)


def _ref_args(value):
    if isinstance(value, (Recorded, Symbol)):
        return value._ref
    if isinstance(value, (list, tuple)):
        return [_ref_args(v) for v in value]
    return value


def _unwrap(value):
    if isinstance(value, Recorded):
        return value._obj
    if isinstance(value, (list, tuple)):
        return type(value)(_unwrap(v) for v in value)
    return value


class Recorded:
    """A real object whose attribute reads and calls are logged, then delegated."""

    def __init__(self, obj, log: Log, ref: Ref | None = None):
        self._obj, self._log = obj, log
        self._ref = ref if ref is not None else log.new()

    def __str__(self) -> str:  # not a Spark call: what a report shows
        return str(self._obj)

    def __getattr__(self, name):
        value = getattr(self._obj, name)
        if callable(value):
            return _RecordedMethod(self, name, value)
        result = Recorded(value, self._log)
        self._log.events.append([self._ref, name, False, [], {}, result._ref])
        return result


class _RecordedMethod:
    def __init__(self, owner: Recorded, name: str, method):
        self.owner, self.name, self.method = owner, name, method

    def __call__(self, *args, **kwargs):
        event = [
            self.owner._ref,
            self.name,
            True,
            _ref_args(args),
            {k: _ref_args(v) for k, v in kwargs.items()},
            None,
        ]
        self.owner._log.events.append(event)
        value = self.method(*_unwrap(args), **{k: _unwrap(v) for k, v in kwargs.items()})
        if value is None:
            return None
        result = Recorded(value, self.owner._log)
        event[5] = result._ref
        return result


class Symbol:
    """A stand-in object: every attribute read is logged; calling it makes the event a call."""

    def __init__(self, log: Log, ref: Ref | None = None, event: list | None = None):
        self._log, self._event = log, event
        self._ref = ref if ref is not None else log.new()

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        result = Symbol(self._log)
        event = [self._ref, name, False, [], {}, result._ref]
        self._log.events.append(event)
        result._event = event
        return result

    def __call__(self, *args, **kwargs):
        result = Symbol(self._log)
        self._event[2:] = [
            True,
            _ref_args(args),
            {k: _ref_args(v) for k, v in kwargs.items()},
            result._ref,
        ]
        # Python reads the method before evaluating the arguments; a real call is logged
        # after them: move the event after the arguments' own events.
        events = self._log.events
        events.append(events.pop(next(i for i, e in enumerate(events) if e is self._event)))
        return result


def canonical(events: list) -> list[str]:
    """The events as text rows, objects numbered by first appearance; a result that is
    never used again is ``_`` (a real call may return ``None`` where a stand-in cannot)."""
    used = set()
    for receiver, _, _, args, kwargs, _ in events:
        used.add(receiver)
        stack = [args, list(kwargs.values())]
        while stack:
            for item in stack.pop():
                if isinstance(item, Ref):
                    used.add(item)
                elif isinstance(item, list):
                    stack.append(item)
    numbers: dict[Ref, int] = {}

    def name(value):
        if isinstance(value, Ref):
            return f"#{numbers.setdefault(value, len(numbers))}"
        if isinstance(value, list):
            return "[" + ", ".join(name(v) for v in value) + "]"
        return repr(value)

    rows = []
    for receiver, attr, call, args, kwargs, result in events:
        target = name(receiver) + "." + attr
        if call:
            target += (
                "("
                + ", ".join([name(a) for a in args] + [f"{k}={name(v)}" for k, v in kwargs.items()])
                + ")"
            )
        rows.append(f"{target} -> {name(result) if result in used else '_'}")
    return rows

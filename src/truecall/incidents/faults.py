"""Fault injection for the desk's upstream queue — by configuration, never by code edits.

Configure with ``build_desk(faults=...)`` or the environment variable
``TRUECALL_DESK_FAULTS`` (JSON).  Each job handed to the upstream draws at most
one fault; a fault's value is its probability, or an object with ``p`` and its
parameters::

    {
      "seed": 7,                                   # optional: reproducible draws
      "drop":     0.05,                            # the queue silently loses the job (before any side effect)
      "delay":    {"p": 0.05, "ms": 40},           # the job sits queued ms before a worker looks at it
                                                   # (ms may be [low, high]: drawn uniformly per job)
      "stall":    {"p": 0.05, "ms": 40},           # a worker claims it, then takes ms before writing
      "error":    0.05,                            # the worker claims it, then the upstream raises before writing
      "crash":    0.05,                            # the worker dies after claiming, before writing (claim left behind)
      "lose_ack": 0.05,                            # ticket written, then the worker dies before acking
      "hang":     {"p": 0.0, "at": "after_claim"}, # the worker stops forever at a point
      "kill":     {"p": 0.0, "at": "after_write"}  # os._exit() of the whole process at a point
    }

Points (``at``): ``before_claim``, ``after_claim``, ``after_write``.  ``hang`` and
``kill`` also take ``ms``: how long the job waits in the queue before the worker
takes it (default 0) — e.g. so that a caller has heard of its task before the
process dies.
Probabilities must add up to at most 1 (the rest: no fault).

``"sequence": ["none", "delay", "kill", ...]`` replaces the draw with a fixed
plan, cycled over jobs in submission order (parameters still come from the
fault's entry) — for tests that need to know which job meets which fault.

``"keys": {"INC-1001-a": "hang", "INC-1001-b": "none", ...}`` names the fault of the
job behind each idempotency key, whatever the order the jobs reach the queue in
(jobs of tasks that run at the same time arrive in any order); a job whose key is
not named draws as usual (from the sequence, if any, which keyed jobs do not advance).
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass
from typing import Any, Mapping

import orjson

from truecall import SettingError

__all__ = ["Fault", "FaultPlan", "FAULTS", "POINTS", "ENV_FAULTS"]

ENV_FAULTS = "TRUECALL_DESK_FAULTS"
FAULTS = ("drop", "delay", "stall", "error", "crash", "lose_ack", "hang", "kill")
POINTS = ("before_claim", "after_claim", "after_write")
_DEFAULT_AT = {"hang": "after_claim", "kill": "after_claim"}
_DEFAULT_MS = {"delay": 1000.0, "stall": 1000.0, "hang": 0.0, "kill": 0.0}


@dataclass(frozen=True, slots=True)
class Fault:
    name: str
    p: float = 0.0
    ms: float = 0.0
    at: str | None = None
    #: Upper bound when ``ms`` is a range (drawn per job).
    ms_high: float | None = None

    @property
    def seconds(self) -> float:
        return self.ms / 1000.0

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"p": self.p}
        if self.name in _DEFAULT_MS:
            out["ms"] = self.ms if self.ms_high is None else [self.ms, self.ms_high]
        if self.at is not None:
            out["at"] = self.at
        return out


class FaultPlan:
    """Which fault (if any) each job meets."""

    def __init__(self, spec: Mapping[str, Any] | str | None = None) -> None:
        if isinstance(spec, str):
            try:
                spec = orjson.loads(spec) if spec.strip() else None
            except orjson.JSONDecodeError as exc:
                raise ValueError(f"{ENV_FAULTS} is not valid JSON: {exc}") from None
        spec = dict(spec or {})
        if not all(isinstance(k, str) for k in spec):
            raise ValueError("fault names are strings")
        unknown = set(spec) - set(FAULTS) - {"seed", "sequence", "keys"}
        if unknown:
            raise ValueError(f"unknown fault(s): {', '.join(sorted(unknown))}; known: {', '.join(FAULTS)}")
        seed = spec.get("seed")
        if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)):
            raise ValueError("seed must be an integer")
        self.faults: dict[str, Fault] = {}
        for name in FAULTS:
            if name in spec:
                self.faults[name] = _fault(name, spec[name])
        total = sum(f.p for f in self.faults.values())
        if total > 1.0 + 1e-9:
            raise ValueError(f"fault probabilities add up to {total:.3f} > 1")
        sequence = spec.get("sequence")
        if sequence is not None:
            if not isinstance(sequence, list) or not sequence or not all(
                    isinstance(s, str) and (s == "none" or s in FAULTS) for s in sequence):
                raise ValueError(f"sequence must be a non-empty list of fault names or 'none' ({', '.join(FAULTS)})")
        self.sequence: list[str] | None = sequence
        keys = spec.get("keys")
        if keys is not None:
            if not isinstance(keys, dict) or not keys or not all(
                    isinstance(k, str) and isinstance(v, str) and (v == "none" or v in FAULTS)
                    for k, v in keys.items()):
                raise ValueError("keys must map idempotency keys to fault names or 'none' "
                                 f"({', '.join(FAULTS)})")
        self.keys: dict[str, str] | None = keys
        for name in (*(sequence or ()), *(keys or {}).values()):  # a planned fault needs no probability
            if name != "none" and name not in self.faults:
                self.faults[name] = _fault(name, {"p": 0.0})
        self.seed = seed
        self._rng = random.Random(seed)
        self._n = 0
        #: How many jobs met each fault ("none" included), for statistics.
        self.drawn: dict[str, int] = {}

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> "FaultPlan":
        """The plan ``$TRUECALL_DESK_FAULTS`` describes; a value that is not a plan is a
        :class:`~truecall._misuse.SettingError` naming the variable."""
        try:
            return cls((environ if environ is not None else os.environ).get(ENV_FAULTS))
        except ValueError as exc:
            message = str(exc)
            raise SettingError(message if message.startswith(ENV_FAULTS) else f"{ENV_FAULTS}: {message}") from None

    @property
    def active(self) -> bool:
        return self.sequence is not None or self.keys is not None or any(f.p > 0 for f in self.faults.values())

    def draw(self, key: str | None = None) -> Fault | None:
        """The fault for the next job, whose idempotency key is ``key`` (``None``: it runs cleanly)."""
        chosen: Fault | None = None
        named = self.keys.get(key) if self.keys is not None and key is not None else None
        if named is not None:
            chosen = None if named == "none" else self.faults[named]  # takes no place in the sequence
        elif self.sequence is not None:
            name = self.sequence[self._n % len(self.sequence)]
            chosen = None if name == "none" else self.faults[name]
            self._n += 1
        elif self.faults:
            r = self._rng.random()
            acc = 0.0
            for fault in self.faults.values():
                acc += fault.p
                if r < acc:
                    chosen = fault
                    break
        if chosen is not None and chosen.ms_high is not None:
            chosen = Fault(chosen.name, chosen.p, self._rng.uniform(chosen.ms, chosen.ms_high), chosen.at)
        drawn = chosen.name if chosen else "none"
        self.drawn[drawn] = self.drawn.get(drawn, 0) + 1
        return chosen

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {name: f.to_dict() for name, f in self.faults.items()}
        if self.seed is not None:
            out["seed"] = self.seed
        if self.sequence is not None:
            out["sequence"] = list(self.sequence)
        if self.keys is not None:
            out["keys"] = dict(self.keys)
        return out


def _fault(name: str, value: Any) -> Fault:
    if isinstance(value, bool) or not isinstance(value, (int, float, dict)):
        raise ValueError(f"fault {name}: a probability or an object with p")
    if not isinstance(value, dict):
        value = {"p": value}
    unknown = set(value) - {"p", "ms", "at"}
    if unknown:
        raise ValueError(f"fault {name}: unknown parameter(s) {', '.join(sorted(unknown))}")
    p = value.get("p", 0.0)
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= p <= 1.0:
        raise ValueError(f"fault {name}: p must be a number between 0 and 1")
    ms = value.get("ms", _DEFAULT_MS.get(name, 0.0))
    if "ms" in value and name not in _DEFAULT_MS:
        raise ValueError(f"fault {name}: takes no ms")
    high: float | None = None
    if isinstance(ms, list):
        if len(ms) != 2 or not all(_number(x) and x >= 0 for x in ms) or ms[0] > ms[1]:
            raise ValueError(f"fault {name}: an ms range is [low, high] with 0 <= low <= high")
        ms, high = ms[0], float(ms[1])
    if not _number(ms) or ms < 0:
        raise ValueError(f"fault {name}: ms must be a number >= 0 (or a [low, high] range)")
    at = value.get("at", _DEFAULT_AT.get(name))
    if "at" in value and name not in _DEFAULT_AT:
        raise ValueError(f"fault {name}: takes no 'at' (only hang and kill do)")
    if at is not None and at not in POINTS:
        raise ValueError(f"fault {name}: at must be one of {', '.join(POINTS)}")
    return Fault(name, float(p), float(ms), at, high)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)

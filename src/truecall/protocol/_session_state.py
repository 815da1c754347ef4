"""Handshake-era session states, in one table (the model is h11's ``_state.py``).

    NEW --initialize--> INITIALIZING --initialized--> READY --close--> CLOSED
    NEW/INITIALIZING/READY --close--> CLOSED

Which requests each state accepts is part of the table too: before the
handshake completes only ``initialize`` and ``ping`` are served (the spec lets a
client send requests right after the initialize response, so INITIALIZING also
serves everything).  Any other event raises :class:`SessionStateError` naming
the current state.
"""

from __future__ import annotations

import enum
from typing import Callable, Mapping

from .._machine import ANY, Machine
from ..errors import InvalidRequest

__all__ = ["SessionState", "SessionEvent", "SessionStateError", "SESSION_TRANSITIONS", "next_session_state",
           "accepts_request"]


class SessionState(str, enum.Enum):
    NEW = "new"
    INITIALIZING = "initializing"
    READY = "ready"
    CLOSED = "closed"


class SessionEvent(str, enum.Enum):
    INITIALIZE = "initialize"
    INITIALIZED = "initialized"
    CLOSE = "close"


St, Ev = SessionState, SessionEvent

_MOVES = {
    (St.NEW, Ev.INITIALIZE): St.INITIALIZING,
    (St.INITIALIZING, Ev.INITIALIZED): St.READY,
    (St.READY, Ev.INITIALIZED): St.READY,  # a repeated notification is harmless; notifications get no answer
    (St.NEW, Ev.CLOSE): St.CLOSED,
    (St.INITIALIZING, Ev.CLOSE): St.CLOSED,
    (St.READY, Ev.CLOSE): St.CLOSED,
}

#: Requests served in each state.
_SERVED = {
    St.NEW: frozenset({"initialize", "ping"}),
    St.INITIALIZING: frozenset({ANY}),
    St.READY: frozenset({ANY}),
    St.CLOSED: frozenset(),
}


class SessionStateError(InvalidRequest):
    def __init__(self, state: SessionState, what: str) -> None:
        super().__init__(f"{what} is not allowed in session state: {state.value}")
        self.state = state


_MACHINE = Machine(SessionState, _MOVES, lambda state, event: SessionStateError(state, event.value),
                   admitted=_SERVED)
#: Every legal move (read-only): the table :func:`next_session_state` moves by.
SESSION_TRANSITIONS: Mapping[tuple[SessionState, SessionEvent], SessionState] = _MACHINE.moves
#: ``next_session_state(state, event)``: the state after ``event``, or :class:`SessionStateError`.
next_session_state: Callable[[SessionState, SessionEvent], SessionState] = _MACHINE.advance
#: ``accepts_request(state, method)``: whether a session in ``state`` serves a request for ``method``.
accepts_request: Callable[[SessionState, str], bool] = _MACHINE.admits

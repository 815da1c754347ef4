"""The client connection's states, in one table (the model is h11's ``_state.py``).

    NEW --discover--> DISCOVERING --discovered--> READY   (2026-07-28: stateless from here on)
    NEW --initialize--> INITIALIZING --initialized--> READY   (2025-11-25 / 2025-06-18 handshake)
    DISCOVERING --fall_back--> NEW   (the server does not speak 2026-07-28: try the handshake)
    any --close--> CLOSED

Which requests the client may send in each state is part of the table too:
before an era is chosen only the negotiation itself goes out.  Every other move
raises :class:`ClientStateError` naming the current state.
"""

from __future__ import annotations

import enum
from typing import Callable, Mapping

from .._machine import ANY, Machine

__all__ = ["ClientState", "ClientEvent", "ClientStateError", "CLIENT_TRANSITIONS", "next_client_state", "may_send"]


class ClientState(str, enum.Enum):
    NEW = "new"
    DISCOVERING = "discovering"
    INITIALIZING = "initializing"
    READY = "ready"
    CLOSED = "closed"


class ClientEvent(str, enum.Enum):
    DISCOVER = "discover"
    DISCOVERED = "discovered"
    FALL_BACK = "fall_back"
    INITIALIZE = "initialize"
    INITIALIZED = "initialized"
    CLOSE = "close"


St, Ev = ClientState, ClientEvent

_MOVES = {
    (St.NEW, Ev.DISCOVER): St.DISCOVERING,
    (St.NEW, Ev.INITIALIZE): St.INITIALIZING,
    (St.DISCOVERING, Ev.DISCOVERED): St.READY,
    (St.DISCOVERING, Ev.FALL_BACK): St.NEW,
    (St.INITIALIZING, Ev.INITIALIZED): St.READY,
    (St.NEW, Ev.CLOSE): St.CLOSED,
    (St.DISCOVERING, Ev.CLOSE): St.CLOSED,
    (St.INITIALIZING, Ev.CLOSE): St.CLOSED,
    (St.READY, Ev.CLOSE): St.CLOSED,
    (St.CLOSED, Ev.CLOSE): St.CLOSED,  # closing twice is harmless
}

#: Requests the client may send in each state.
_SENDABLE = {
    St.NEW: frozenset({"server/discover", "initialize"}),
    St.DISCOVERING: frozenset(),
    St.INITIALIZING: frozenset(),
    St.READY: frozenset({ANY}),
    St.CLOSED: frozenset(),
}


class ClientStateError(RuntimeError):
    """A move the connection's state does not allow (a bug in the caller, never the server's fault)."""

    def __init__(self, state: ClientState, what: str) -> None:
        super().__init__(f"{what} is not allowed in client state: {state.value}")
        self.state = state


_MACHINE = Machine(ClientState, _MOVES, lambda state, event: ClientStateError(state, event.value),
                   admitted=_SENDABLE)
#: Every legal move (read-only): the table :func:`next_client_state` moves by.
CLIENT_TRANSITIONS: Mapping[tuple[ClientState, ClientEvent], ClientState] = _MACHINE.moves
#: ``next_client_state(state, event)``: the state after ``event``, or :class:`ClientStateError`.
next_client_state: Callable[[ClientState, ClientEvent], ClientState] = _MACHINE.advance
#: ``may_send(state, method)``: whether the client may send a request for ``method`` in ``state``.
may_send: Callable[[ClientState, str], bool] = _MACHINE.admits

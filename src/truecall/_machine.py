"""A state machine as one table, and the only code that moves through such a table.

truecall has three state machines of one shape (the model is h11's ``_state.py``): the client's
connection (``client/_connection_state.py``), a handshake-era session (``protocol/_session_state.py``) and a task
(``tasks/_task_state.py``).  Each module owns its states, events, table and refusal; this one owns the
lookup, so that every machine refuses an illegal move the same way — loudly, with the machine's own
error naming the current state and the event — and none grows a lookup with a softer default (a
``.get`` that lets a move through, a missing state read as "any").

The table a machine publishes is the one it moves by, and cannot be changed after import: a table
edited at run time would let a test (or a plug-in) make a move the documentation says is impossible.

Speed: a task and a session move on every request.  :attr:`Machine.advance` and :attr:`Machine.admits`
are plain functions over local names (no attribute look-up, no method binding), as fast as the
hand-written look-ups they replaced; a machine module binds them to its public names directly.
"""

from __future__ import annotations

import enum
from types import MappingProxyType
from typing import Callable, Generic, Mapping, TypeVar

__all__ = ["ANY", "Machine"]

S = TypeVar("S", bound=enum.Enum)
E = TypeVar("E", bound=enum.Enum)

#: In a machine's ``admitted`` sets: every name is admitted in that state.
ANY = "*"


class Machine(Generic[S, E]):
    """``moves``: (state, event) → next state, every legal move and nothing else.

    ``refuse(state, event)`` builds the error an illegal move raises (each machine has its own class,
    which callers catch).  ``admitted``, when given, says which names (request methods) each state lets
    through, :data:`ANY` for all; it must name every state, so a state added later cannot silently
    admit nothing or everything.
    """

    __slots__ = ("moves", "advance", "admits")

    def __init__(self, states: type[S], moves: Mapping[tuple[S, E], S], refuse: Callable[[S, E], Exception], *,
                 admitted: Mapping[S, frozenset[str]] | None = None) -> None:
        table = dict(moves)
        for (state, _), after in table.items():
            if not isinstance(state, states) or not isinstance(after, states):
                raise TypeError(f"a move from {state!r} to {after!r} leaves the states of {states.__name__}")

        def advance(state: S, event: E) -> S:
            """The state after ``event``; an illegal move raises the machine's refusal."""
            try:
                return table[(state, event)]
            except KeyError:
                raise refuse(state, event) from None

        gate = dict(admitted or {})
        if admitted is not None and set(gate) != set(states):
            missing = ", ".join(sorted(str(s.value) for s in set(states) - set(gate)))
            raise TypeError(f"admitted names no set for: {missing}")
        open_states = frozenset(s for s, names in gate.items() if ANY in names)

        def admits(state: S, name: str) -> bool:
            """Whether ``state`` lets a request named ``name`` through."""
            return state in open_states or name in gate[state]

        def admits_nothing_known(state: S, name: str) -> bool:
            raise TypeError(f"the machine of {states.__name__} was given no admitted names")

        #: The table, read-only: what the machine moves by, published as is.
        self.moves: Mapping[tuple[S, E], S] = MappingProxyType(table)
        #: ``advance(state, event)`` → the next state, or the machine's refusal.
        self.advance: Callable[[S, E], S] = advance
        #: ``admits(state, name)`` → whether the state lets the name through.
        self.admits: Callable[[S, str], bool] = admits if admitted is not None else admits_nothing_known

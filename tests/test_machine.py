"""The state machines move by one table each, through one lookup (``truecall._machine``).

Every machine of that shape refuses every move its table lacks with its own error naming the state
it was refused in (the incident desk's dispatch machine too, which keeps its own lookup: the desk
builds on truecall's public API only); a machine's published table is the one it moves by and cannot be
edited at run time; a table that leaves its states, or an admission list that forgets one, fails at
import rather than on the request that meets it.
"""

from __future__ import annotations

import enum
from typing import Any, Callable, Mapping

import pytest

from truecall._machine import ANY, Machine
from truecall.client import _connection_state as client
from truecall.incidents import dispatch_state as dispatch
from truecall.protocol import _session_state as session
from truecall.tasks import _task_state as task

# (states, events, table, advance, error class)
MACHINES: dict[str, tuple[type[enum.Enum], type[enum.Enum], Mapping[Any, Any], Callable[[Any, Any], Any],
                          type[Exception]]] = {
    "client": (client.ClientState, client.ClientEvent, client.CLIENT_TRANSITIONS, client.next_client_state,
               client.ClientStateError),
    "session": (session.SessionState, session.SessionEvent, session.SESSION_TRANSITIONS,
                session.next_session_state, session.SessionStateError),
    "task": (task.TaskStatus, task.TaskEvent, task.TRANSITIONS, task.next_status, task.InvalidTransition),
    "dispatch": (dispatch.DispatchState, dispatch.DispatchEvent, dispatch.TRANSITIONS, dispatch.next_dispatch_state,
                 dispatch.InvalidDispatchTransition),
}


@pytest.mark.parametrize("name", sorted(MACHINES))
def test_every_move_outside_the_table_is_refused_naming_the_state(name: str) -> None:
    states, events, table, advance, error = MACHINES[name]
    refused = 0
    for state in states:
        for event in events:
            if (state, event) in table:
                assert advance(state, event) is table[(state, event)]
                continue
            with pytest.raises(error) as caught:
                advance(state, event)
            assert str(caught.value).endswith(f": {state.value}"), (name, str(caught.value))
            assert caught.value.__cause__ is None and caught.value.__suppress_context__  # no KeyError shown
            refused += 1
    assert refused == len(states) * len(events) - len(table) > 0


@pytest.mark.parametrize("name", ["client", "session", "task"])
def test_a_published_table_is_the_one_moved_by_and_cannot_be_edited(name: str) -> None:
    states, events, table, advance, error = MACHINES[name]
    some_move = next(iter(table))
    with pytest.raises(TypeError):
        table[some_move] = some_move[0]  # type: ignore[index]  # the point: the table refuses the write
    assert {move: advance(*move) for move in table} == dict(table)


class Light(enum.Enum):
    RED = "red"
    GREEN = "green"


class Go(enum.Enum):
    GO = "go"
    STOP = "stop"


class Refused(ValueError):
    def __init__(self, state: Light, event: Go) -> None:
        super().__init__(f"{event.value} is not allowed: {state.value}")


def test_the_machine_moves_refuses_and_admits_by_its_tables() -> None:
    lights = Machine(Light, {(Light.RED, Go.GO): Light.GREEN, (Light.GREEN, Go.STOP): Light.RED}, Refused,
                     admitted={Light.RED: frozenset({"wait"}), Light.GREEN: frozenset({ANY})})
    assert lights.advance(Light.RED, Go.GO) is Light.GREEN
    with pytest.raises(Refused, match="^go is not allowed: green$"):
        lights.advance(Light.GREEN, Go.GO)
    assert lights.admits(Light.RED, "wait") and not lights.admits(Light.RED, "walk")
    assert lights.admits(Light.GREEN, "walk")


def test_a_table_that_leaves_its_states_or_forgets_one_fails_when_built() -> None:
    with pytest.raises(TypeError, match="leaves the states of Light"):
        Machine(Light, {(Light.RED, Go.GO): Go.STOP}, Refused)  # type: ignore[misc]  # the point: a wrong table
    with pytest.raises(TypeError, match="no set for: green"):
        Machine(Light, {}, Refused, admitted={Light.RED: frozenset()})
    with pytest.raises(TypeError, match="no admitted names"):
        Machine(Light, {}, Refused).admits(Light.RED, "wait")

"""Failure injection B: input for a task that is not waiting fails loudly, naming the state."""

from _common import desk

store = desk().tasks
working = store.create()  # no input schema: straight to working
try:
    store.provide_input(working.task_id, {"service": "payments"})
except ValueError as exc:
    print(f"ValueError: {exc}")

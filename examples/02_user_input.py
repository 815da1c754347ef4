"""The user-input run: waiting → invalid input refused → accepted, same taskId."""

from truecall import TaskInputInvalid

from _common import desk

store = desk().tasks
task = store.create(input_schema={"type": "object", "required": ["service"]})
print("waiting:", task.to_dict())
try:
    store.provide_input(task.task_id, {})
except TaskInputInvalid as exc:
    print("invalid input:", exc)
task = store.provide_input(task.task_id, {"service": "payments"})
print("accepted:", task.to_dict())

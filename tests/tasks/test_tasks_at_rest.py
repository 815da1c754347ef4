"""A task's caller data at rest (issue 25): sealed in its row, scrubbed on every settle path, readable
across a key rotation until re-sealed — on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import base64
import os
import secrets
import time
from typing import Any

import orjson
import pytest

from truecall import Principal
from truecall.storage._at_rest import MAGIC, at_rest_for
from truecall.tasks import TaskStatus, TaskStore
from truecall.tasks.runtime import TaskRuntime
from truecall.tasks.task_store import SEALED_COLUMNS

from pg_support import backend, database, db_target, db_targets, pg_schemas  # noqa: F401  (fixtures)

ALICE = Principal("alice@acme", "acme", frozenset({"incidents:read"}))
FORM = {"method": "elicitation/create", "params": {"message": "Words?", "requestedSchema": {
    "type": "object", "properties": {"words": {"type": "string"}}, "required": ["words"]}}}


def _key() -> str:
    return base64.urlsafe_b64encode(os.urandom(32)).decode().rstrip("=")


def new_process() -> None:
    """What a new process finds: no at-rest key decided yet (it reads the environment again)."""
    from truecall.storage import _at_rest

    _at_rest._CACHE.clear()
    _at_rest._BY_DB.clear()


def raw(store: TaskStore, task_id: str, column: str) -> bytes | None:
    row = store.db.fetchone(f"SELECT {column} FROM tasks WHERE task_id = ?", (task_id,))
    return None if row is None or row[0] is None else bytes(row[0])


def answered(store: TaskStore, secret: str, *, runner: str | None = None, lease_s: float = 30.0,
             ttl_ms: int | None = None) -> str:
    """A working task whose question was answered with ``secret`` (its runner has not read it yet)."""
    task = store.create(owner=ALICE, tool="confide", runner_id=runner, lease_s=lease_s, ttl_ms=ttl_ms)
    store.ask(task.task_id, {"words": FORM})
    store.answer(task.task_id, {"words": {"action": "accept", "content": {"words": secret}}}, owner=ALICE)
    assert store.get(task.task_id).responses == {"words": {"action": "accept", "content": {"words": secret}}}
    return task.task_id


def test_caller_data_is_sealed_in_its_row(database: Any) -> None:
    store = TaskStore(database)
    secret = f"mk{secrets.token_hex(12)}"
    task_id = answered(store, secret)
    store.complete(task_id, {"content": [{"type": "text", "text": secret}], "structuredContent": {"w": secret}})
    for column in ("responses", "result"):
        blob = raw(store, task_id, column)
        assert blob is not None and blob.startswith(MAGIC) and secret.encode() not in blob, column
    assert store.get(task_id).result["structuredContent"] == {"w": secret}  # type: ignore[index]


def test_a_sealed_value_moved_to_another_row_does_not_open(database: Any) -> None:
    store = TaskStore(database)
    one = store.create(owner=ALICE).task_id
    other = store.create(owner=ALICE).task_id
    store.complete(one, {"content": [], "structuredContent": {"mine": True}})
    store.complete(other, {"content": [], "structuredContent": {"theirs": True}})
    store.db.execute("UPDATE tasks SET result = ? WHERE task_id = ?", (raw(store, one, "result"), other))
    moved = store.get(other).result
    assert moved is not None and moved["structuredContent"]["error"]["kind"] == "outcome_unknown"


def _settle(store: TaskStore, task_id: str, how: str) -> None:
    if how == "complete":
        store.complete(task_id, {"content": []})
    elif how == "fail":
        store.fail(task_id, {"code": -32603, "message": "Internal error"})
    elif how == "cancel":
        store.cancel(task_id)


@pytest.mark.parametrize("how", ["complete", "fail", "cancel"])
def test_settling_scrubs_the_answers(database: Any, how: str) -> None:
    """Completion, failure and cancel all pass the one terminal transition, which forgets the answers'
    content (each key keeps its action) and the open questions."""
    store = TaskStore(database)
    secret = f"mk{secrets.token_hex(12)}"
    task_id = answered(store, secret)
    _settle(store, task_id, how)
    task = store.get(task_id)
    assert task.responses == {"words": {"action": "accept"}} and task.input_requests is None
    assert secret.encode() not in (raw(store, task_id, "responses") or b"")


@pytest.mark.parametrize("path", ["takeover", "recovery_at_start"])
def test_another_process_settling_scrubs_the_answers(database: Any, path: str) -> None:
    """Issue 25, case 1: a runner froze (its lease ran out) after its question was answered; another
    replica's sweep — or a process starting on the database — takes the task over and settles it
    ``outcome_unknown``, and the answer is gone from the row."""
    store = TaskStore(database)
    secret = f"mk{secrets.token_hex(12)}"
    task_id = answered(store, secret, runner="elsewhere:1:frozen", lease_s=0.01)
    time.sleep(0.05)
    runtime = TaskRuntime(store, lease_s=5.0)
    settled = runtime.recover_at_start() if path == "recovery_at_start" else runtime.recover(publish=False)
    assert [t.task_id for t in settled] == [task_id]
    task = store.get(task_id)
    assert task.status is TaskStatus.COMPLETED
    assert task.result["structuredContent"]["error"]["kind"] == "outcome_unknown"  # type: ignore[index]
    assert task.responses == {"words": {"action": "accept"}}
    assert secret.encode() not in (raw(store, task_id, "responses") or b"")


def test_the_runner_reading_an_answer_scrubs_it(database: Any) -> None:
    store = TaskStore(database)
    task = store.create(owner=ALICE, tool="confide", runner_id="here:1:x")
    runtime = TaskRuntime(store, runner_id="here:1:x")
    secret = f"mk{secrets.token_hex(12)}"

    async def scenario() -> dict[str, Any]:
        asking = asyncio.ensure_future(runtime.ask(task.task_id, "words", FORM))
        await asyncio.sleep(0.05)
        store.answer(task.task_id, {"words": {"action": "accept", "content": {"words": secret}}}, owner=ALICE)
        runtime.answered(task.task_id)
        return await asyncio.wait_for(asking, 5)

    assert asyncio.run(scenario())["content"] == {"words": secret}
    assert store.get(task.task_id).responses == {"words": {"action": "accept"}}


def test_ttl_expiry_removes_the_row(database: Any) -> None:
    store = TaskStore(database)
    task_id = answered(store, f"mk{secrets.token_hex(12)}", ttl_ms=50)
    time.sleep(0.1)
    assert store.purge_expired() == 1
    assert raw(store, task_id, "task_id") is None


def test_rotation_old_rows_read_until_resealed(database: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The first key of TRUECALL_STATE_KEYS seals, every key opens: after a rotation the old rows read
    as before; reseal() seals them under the new key, after which the old key may go."""
    old, new = _key(), _key()
    monkeypatch.setenv("TRUECALL_STATE_KEYS", old)
    new_process()
    before = TaskStore(database)
    task_id = before.create(owner=ALICE).task_id
    before.complete(task_id, {"content": [], "structuredContent": {"n": 1}})
    sealed_before = raw(before, task_id, "result")

    monkeypatch.setenv("TRUECALL_STATE_KEYS", f"{new},{old}")
    new_process()
    rotated = TaskStore(database)
    assert rotated.get(task_id).result == {"content": [], "structuredContent": {"n": 1}}
    assert not rotated.rest.current(sealed_before)
    assert rotated.reseal() == 1
    assert rotated.rest.current(raw(rotated, task_id, "result")) and rotated.reseal() == 0

    monkeypatch.setenv("TRUECALL_STATE_KEYS", new)
    new_process()
    assert TaskStore(database).get(task_id).result == {"content": [], "structuredContent": {"n": 1}}
    # a row sealed under a key dropped too early says so, never guesses
    database.execute("UPDATE tasks SET result = ? WHERE task_id = ?", (sealed_before, task_id))
    lost = TaskStore(database).get(task_id).result
    assert lost is not None and lost["isError"] and "key" in lost["content"][0]["text"]


def test_rows_written_before_sealing_read_and_reseal(database: Any) -> None:
    store = TaskStore(database)
    task_id = store.create(owner=ALICE).task_id
    store.complete(task_id, {"content": []})
    clear = orjson.dumps({"content": [], "structuredContent": {"old": True}})
    store.db.execute("UPDATE tasks SET result = ? WHERE task_id = ?", (clear, task_id))
    assert store.get(task_id).result == {"content": [], "structuredContent": {"old": True}}
    assert store.reseal() == 1
    assert raw(store, task_id, "result").startswith(MAGIC)  # type: ignore[union-attr]
    assert store.get(task_id).result == {"content": [], "structuredContent": {"old": True}}


def test_every_sealed_column_is_sealed(database: Any) -> None:
    store = TaskStore(database)
    secret = f"mk{secrets.token_hex(12)}"
    task = store.create({"type": "object"}, owner=ALICE)
    store.provide_input(task.task_id, {"words": secret}, owner=ALICE)
    store.ask(task.task_id, {"q": {"method": "elicitation/create", "params": {"message": secret}}})
    store.fail(task.task_id, {"code": -32603, "message": secret})
    for column in SEALED_COLUMNS:
        blob = raw(store, task.task_id, column)
        assert blob is None or (blob.startswith(MAGIC) and secret.encode() not in blob), column


def test_a_sqlite_database_without_keys_gets_a_key_file_beside_it(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Unset, the at-rest key of a SQLite file is made once beside it (0600) and read by every process
    on that file, so a restart or the CLI reads what the server sealed."""
    from truecall.storage import open_database

    monkeypatch.delenv("TRUECALL_STATE_KEYS", raising=False)
    new_process()
    path = tmp_path / "d.db"
    db = open_database(str(path))
    try:
        rest = at_rest_for(db)
        key_file = tmp_path / "d.db-key"
        assert key_file.exists() and key_file.stat().st_mode & 0o777 == 0o600
        blob = rest.seal(b"x", b"ctx")
    finally:
        db.close()
    new_process()
    again = open_database(str(path))
    try:
        assert at_rest_for(again).open(blob, b"ctx") == b"x"
    finally:
        again.close()


def test_keys_a_workers_supervisor_made_give_way_to_the_key_file(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """``serve --workers`` without keys: the supervisor's keys die with it, the SQLite key file does not —
    so a restarted server reads what the last one sealed."""
    from truecall.cli._workers import MADE_KEYS
    from truecall.storage import open_database

    path = tmp_path / "w.db"
    db = open_database(str(path))
    try:
        monkeypatch.setenv("TRUECALL_STATE_KEYS", _key())
        monkeypatch.setenv(MADE_KEYS, "TRUECALL_STATE_KEYS,TRUECALL_AUDIT_KEY")
        new_process()
        blob = at_rest_for(db).seal(b"x", b"ctx")
        assert (tmp_path / "w.db-key").exists()
        monkeypatch.setenv("TRUECALL_STATE_KEYS", _key())  # the next supervisor made another
        new_process()
        assert at_rest_for(db).open(blob, b"ctx") == b"x"
    finally:
        db.close()


def test_a_failure_message_shown_in_the_clear_status_is_redacted(database: Any) -> None:
    store = TaskStore(database)
    task_id = store.create(owner=ALICE).task_id
    password = f"Blue{secrets.token_hex(6)}Sky7!"
    store.fail(task_id, {"code": -32602, "message": f"upstream refused password {password}"})
    assert password not in (store.get(task_id).status_message or "")
    row = store.db.fetchone("SELECT status_message FROM tasks WHERE task_id = ?", (task_id,))
    assert row is not None and password not in row[0]

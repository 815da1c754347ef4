"""Durable tasks: accepted work with an id, an owner, a status and a deadline.

Every change goes through :func:`~truecall.tasks._task_state.next_status` inside one
SQLite transaction, so the table in ``_task_state.py`` is the only way a status moves
and a crash never leaves half a transition.  Ids carry 192 random bits and are
bound to their owner: a task of another tenant or subject is answered exactly
like one that does not exist.
"""

from __future__ import annotations

import builtins
import secrets
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Iterator

import orjson

from ..storage._at_rest import AtRest, Unreadable, at_rest_for, sealed
from ..auth._principals import Principal
from ..errors import NotFound
from ..audit.redaction import redact_free_text, redact_text
from ..schema import Validator
from ..storage import Storage
from ._task_state import TERMINAL, InvalidTransition, TaskEvent, TaskStatus, next_status

__all__ = ["Task", "TaskStore", "TaskNotFound", "TaskInputInvalid", "LeaseLost", "TASK_MIGRATIONS",
           "MISSING_TASK_INPUT_TEXT"]

MISSING_TASK_INPUT_TEXT = "required task input is missing"
DEFAULT_TTL_MS = 24 * 3600 * 1000
DEFAULT_POLL_MS = 1000

TASK_MIGRATIONS = [
    (
        "tasks-1",
        """
        CREATE TABLE tasks (
            task_id TEXT PRIMARY KEY,
            status TEXT NOT NULL,
            status_message TEXT,
            owner_tenant TEXT,
            owner_subject TEXT,
            tool TEXT,
            input_schema BLOB,
            input BLOB,
            result BLOB,
            error BLOB,
            request BLOB,
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL,
            ttl_ms INTEGER NOT NULL,
            expires_at REAL NOT NULL,
            poll_interval_ms INTEGER NOT NULL
        );
        CREATE INDEX tasks_owner ON tasks (owner_tenant, owner_subject, created_at);
        CREATE INDEX tasks_status ON tasks (status)
        """,
    ),
    (
        "tasks-2",
        """
        ALTER TABLE tasks ADD COLUMN input_requests BLOB;
        ALTER TABLE tasks ADD COLUMN responses BLOB;
        ALTER TABLE tasks ADD COLUMN runner_id TEXT;
        ALTER TABLE tasks ADD COLUMN lease_until REAL
        """,
    ),
    ("tasks-3", "ALTER TABLE tasks ADD COLUMN cancel_requested INTEGER NOT NULL DEFAULT 0"),
    # The fencing token: every takeover of a task's lease (sweep, recovery, a cancel from another
    # process) increments it, and every write made on the task's behalf checks it.
    ("tasks-4", "ALTER TABLE tasks ADD COLUMN lease_epoch INTEGER NOT NULL DEFAULT 0"),
    # The expiry sweep (every few seconds) and every read ask ``expires_at``: without an index the sweep
    # read the whole table each time, however few tasks had expired.
    ("tasks-5", "CREATE INDEX tasks_expires ON tasks (expires_at)"),
]


class TaskNotFound(NotFound, KeyError):
    """No such task for this caller (or it expired): one answer for all three."""

    def __init__(self) -> None:
        NotFound.__init__(self, "Task not found")

    def __str__(self) -> str:  # KeyError would quote the message
        return self.message


class TaskInputInvalid(ValueError):
    """Input that does not satisfy the task's input schema; the task keeps waiting."""


class LeaseLost(RuntimeError):
    """This process no longer holds the task's lease: another one took the task over (its epoch moved).

    Raised by a fenced write, inside the transaction that would have made it, so nothing of
    that transaction is committed.  The holder must stop the work; it never writes on.
    """

    def __init__(self, task_id: str) -> None:
        self.task_id = task_id
        super().__init__("this process no longer holds the task's lease (another process took it over)")


@dataclass(frozen=True, slots=True)
class Task:
    """One task as the store holds it: what a tool accepted as work, its status, and — once it
    ended — its result; ``lease_epoch`` fences the process that runs it (see the tasks guide)."""

    task_id: str
    status: TaskStatus
    created_at: float
    updated_at: float
    ttl_ms: int
    poll_interval_ms: int
    owner_tenant: str | None = None
    owner_subject: str | None = None
    tool: str | None = None
    status_message: str | None = None
    input_schema: dict[str, Any] | None = None
    input: dict[str, Any] | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    request: dict[str, Any] | None = field(default=None, repr=False)
    #: Outstanding questions (key → ``{method, params}``) while ``input_required``.
    input_requests: dict[str, Any] | None = None
    #: Every answer received, by key (keys are never reused in a task's life).
    responses: dict[str, Any] | None = field(default=None, repr=False)
    runner_id: str | None = None
    lease_until: float | None = None
    #: The fencing token of the current lease holder (see :meth:`TaskStore.check_lease`).
    lease_epoch: int = 0

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL

    def to_dict(self) -> dict[str, Any]:
        """The caller's view: what it must know in this status, nothing more."""
        view: dict[str, Any] = {"taskId": self.task_id, "status": self.status.value}
        if self.status is TaskStatus.INPUT_REQUIRED and self.input_schema is not None:
            view["inputSchema"] = self.input_schema
        if self.input is not None and self.status is not TaskStatus.INPUT_REQUIRED:
            view["input"] = self.input
        if self.status_message:
            view["statusMessage"] = self.status_message
        if self.result is not None:
            view["result"] = self.result
        if self.error is not None:
            view["error"] = self.error
        return view


_COLUMNS = (
    "task_id, status, created_at, updated_at, ttl_ms, poll_interval_ms, owner_tenant, owner_subject, tool, "
    "status_message, input_schema, input, result, error, request, input_requests, responses, runner_id, lease_until, "
    "lease_epoch"
)


def _load(blob: bytes | None) -> Any:
    return None if blob is None else orjson.loads(blob)


def _dump(value: Any) -> bytes | None:
    return None if value is None else orjson.dumps(value)


#: Columns that can hold caller data (what a tool returned, what a caller typed): sealed at rest
#: (:mod:`truecall.storage._at_rest`).  The rest are the server's own (its schema, its request summary).
SEALED_COLUMNS = ("input", "result", "error", "input_requests", "responses")
_SEALED_INDEX = {"input": 11, "result": 12, "error": 13, "input_requests": 15, "responses": 16}


def _context(column: str, task_id: str) -> bytes:
    return f"tasks/{column}/{task_id}".encode()


def _unreadable(column: str) -> Any:
    """What a sealed value no configured key opens reads as: said, never guessed."""
    why = ("this task's stored value was sealed under a key this server does not hold "
           "(TRUECALL_STATE_KEYS changed, or another process without a shared key wrote it)")
    if column == "result":
        return {"content": [{"type": "text", "text": why}], "isError": True,
                "structuredContent": {"error": {"kind": "outcome_unknown", "message": why, "retryable": False}}}
    if column == "error":
        return {"code": -32603, "message": why}
    return None


def _open(rest: AtRest, column: str, task_id: str, blob: Any) -> Any:
    if blob is None:
        return None
    if not sealed(blob):
        return orjson.loads(blob)  # written before sealing: read as it is until re-sealed
    try:
        return orjson.loads(rest.open(blob, _context(column, task_id)))
    except Unreadable:
        return _unreadable(column)


#: A stored column's value, opened (for a harness or an operator tool reading the rows themselves).
open_column = _open


def _seal(rest: AtRest, column: str, task_id: str, value: Any) -> bytes | None:
    return None if value is None else rest.seal(orjson.dumps(value), _context(column, task_id))


def _task(row: tuple[Any, ...], rest: AtRest) -> Task:
    task_id = row[0]
    return Task(
        task_id, TaskStatus(row[1]), row[2], row[3], row[4], row[5], row[6], row[7], row[8], row[9],
        _load(row[10]), _open(rest, "input", task_id, row[11]), _open(rest, "result", task_id, row[12]),
        _open(rest, "error", task_id, row[13]), _load(row[14]),
        _open(rest, "input_requests", task_id, row[15]), _open(rest, "responses", task_id, row[16]),
        row[17], row[18], row[19],
    )


def scrubbed_responses(responses: dict[str, Any] | None) -> dict[str, Any] | None:
    """Answers with their content forgotten: each key keeps only its action (keys stay used)."""
    if not responses:
        return responses
    return {key: {"action": answer.get("action")} if isinstance(answer, dict) else {}
            for key, answer in responses.items()}


@lru_cache(maxsize=256)
def _validator(schema_json: bytes) -> Validator:
    return Validator(orjson.loads(schema_json))


class TaskStore:
    """Tasks in SQLite; every method is one transaction."""

    def __init__(self, db: Storage, *, default_ttl_ms: int = DEFAULT_TTL_MS, poll_interval_ms: int = DEFAULT_POLL_MS) -> None:
        self.db = db
        self.default_ttl_ms = default_ttl_ms
        self.poll_interval_ms = poll_interval_ms
        db.migrate(TASK_MIGRATIONS)
        # The sealer may read or make a key file beside the database: once it is open (a server's start).
        db.when_open(self._seal_with_keys)

    #: Seals the columns that can hold caller data (:data:`SEALED_COLUMNS`); set when the database opens.
    rest: AtRest

    def _seal_with_keys(self) -> None:
        self.rest = at_rest_for(self.db)

    # -- reads ------------------------------------------------------------------

    def get(self, task_id: str, owner: Principal | None = None) -> Task:
        """The task, if it exists, has not expired and belongs to ``owner`` (when given)."""
        return self._get(task_id, owner)

    def _get(self, task_id: str, owner: Principal | None = None, *, lock: bool = False) -> Task:
        """``lock`` (inside a transaction that will write the row): a server database locks the
        row, so a concurrent change from another process waits and then sees this one's result."""
        if not isinstance(task_id, str) or len(task_id) > 128:
            raise TaskNotFound()
        sql = f"SELECT {_COLUMNS} FROM tasks WHERE task_id = ? AND expires_at > ?"
        params: list[Any] = [task_id, time.time()]
        if owner is not None:
            sql += " AND owner_tenant = ? AND owner_subject = ?"
            params += [owner.tenant, owner.subject]
        if lock:
            sql += self.db.for_update
        row = self.db.fetchone(sql, params)
        if row is None:
            raise TaskNotFound()
        return _task(row, self.rest)

    def list(self, owner: Principal | None = None, *, status: TaskStatus | str | None = None,
             limit: int = 50, after: float | None = None) -> list[Task]:
        """Unexpired tasks, oldest first, of ``owner`` (all when ``None``: operators only)."""
        sql = f"SELECT {_COLUMNS} FROM tasks WHERE expires_at > ?"
        params: list[Any] = [time.time()]
        if owner is not None:
            sql += " AND owner_tenant = ? AND owner_subject = ?"
            params += [owner.tenant, owner.subject]
        if status is not None:
            sql += " AND status = ?"
            params.append(TaskStatus(status).value)
        if after is not None:
            sql += " AND created_at > ?"
            params.append(after)
        sql += " ORDER BY created_at, task_id LIMIT ?"
        params.append(int(limit))
        return [_task(r, self.rest) for r in self.db.fetchall(sql, params)]

    # -- writes -----------------------------------------------------------------

    def create(
        self,
        input_schema: dict[str, Any] | None = None,
        *,
        owner: Principal | None = None,
        tool: str | None = None,
        ttl_ms: int | None = None,
        request: dict[str, Any] | None = None,
        status_message: str | None = None,
        runner_id: str | None = None,
        lease_s: float = 30.0,
    ) -> Task:
        """A new task: ``input_required`` when it needs input first, else ``working``."""
        if input_schema is not None:
            _validator(orjson.dumps(input_schema))  # refuse a bad schema now, not at input time
        now = time.time()
        ttl = int(ttl_ms if ttl_ms is not None else self.default_ttl_ms)
        task = Task(
            task_id=_new_task_id(),
            status=TaskStatus.INPUT_REQUIRED if input_schema is not None else TaskStatus.WORKING,
            created_at=now,
            updated_at=now,
            ttl_ms=ttl,
            poll_interval_ms=self.poll_interval_ms,
            owner_tenant=owner.tenant if owner else None,
            owner_subject=owner.subject if owner else None,
            tool=tool,
            status_message=status_message,
            input_schema=input_schema,
            request=request,
            runner_id=runner_id,
            lease_until=now + lease_s if runner_id else None,
        )
        self.db.execute(
            f"INSERT INTO tasks ({_COLUMNS}, expires_at) VALUES ({', '.join('?' * 21)})",
            (task.task_id, task.status.value, now, now, ttl, task.poll_interval_ms, task.owner_tenant,
             task.owner_subject, tool, status_message, _dump(input_schema), None, None, None, _dump(request),
             None, None, runner_id, task.lease_until, 0, now + ttl / 1000.0),
        )
        return task

    def provide_input(self, task_id: str, data: Any, owner: Principal | None = None) -> Task:
        """Validate ``data`` against the task's input schema and move it to ``working``."""
        with self._transition(task_id, TaskEvent.PROVIDE_INPUT, owner) as (task, changes):
            validator = _validator(orjson.dumps(task.input_schema or {"type": "object"}))
            if validator.missing_required(data) or any(v.missing for v in validator.violations(data, 1)):
                raise TaskInputInvalid(MISSING_TASK_INPUT_TEXT)
            problems = validator.violations(data, 3)
            if problems:
                raise TaskInputInvalid("task input is invalid: " + "; ".join(p.message for p in problems))
            changes["input"] = data
        return self.get(task_id)

    def request_input(self, task_id: str, input_schema: dict[str, Any], message: str | None = None,
                      owner: Principal | None = None) -> Task:
        _validator(orjson.dumps(input_schema))
        with self._transition(task_id, TaskEvent.REQUEST_INPUT, owner) as (_, changes):
            changes["input_schema"] = input_schema
            changes["status_message"] = message
        return self.get(task_id)

    def complete(self, task_id: str, result: dict[str, Any] | None = None, owner: Principal | None = None,
                 message: str | None = None, *, epoch: int | None = None) -> Task:
        """``epoch`` (a lease holder's write): refused with :class:`LeaseLost` once the lease was taken over."""
        with self._transition(task_id, TaskEvent.COMPLETE, owner, epoch) as (_, changes):
            changes["result"] = result
            changes["status_message"] = message
        return self.get(task_id)

    def fail(self, task_id: str, error: dict[str, Any], owner: Principal | None = None,
             message: str | None = None, *, epoch: int | None = None) -> Task:
        with self._transition(task_id, TaskEvent.FAIL, owner, epoch) as (_, changes):
            changes["error"] = error
            # The error itself is sealed; its message, shown in the clear status column, is redacted first.
            changes["status_message"] = message or redact_free_text(str(error.get("message", "")))[:500] or None
        return self.get(task_id)

    def cancel(self, task_id: str, owner: Principal | None = None, message: str | None = None, *,
               epoch: int | None = None) -> Task:
        with self._transition(task_id, TaskEvent.CANCEL, owner, epoch) as (_, changes):
            changes["status_message"] = message or "cancelled"
        return self.get(task_id)

    def ask(self, task_id: str, requests: dict[str, Any], message: str | None = None, *,
            epoch: int | None = None) -> Task:
        """A running task needs answers: ``working`` → ``input_required`` with ``requests`` outstanding.

        A task already waiting gets the new questions added (several asked at once).
        """
        with self.db.transaction():
            task = self._get(task_id, lock=True)
            if epoch is not None and task.lease_epoch != epoch:
                raise LeaseLost(task_id)
            clash = set(task.responses or {}).union(task.input_requests or {}).intersection(requests)
            if clash:
                raise ValueError(f"input keys are unique for a task's life; already used: {sorted(clash)}")
            if task.status is TaskStatus.INPUT_REQUIRED:
                self.db.execute("UPDATE tasks SET input_requests = ?, updated_at = ? WHERE task_id = ?",
                                (_seal(self.rest, "input_requests", task_id, {**(task.input_requests or {}), **requests}),
                                 time.time(), task_id))
            else:
                with self._transition(task_id, TaskEvent.REQUEST_INPUT, None, epoch) as (_, changes):
                    changes["input_requests"] = requests
                    changes["status_message"] = message or "waiting for input"
        return self.get(task_id)

    def answer(self, task_id: str, responses: dict[str, Any], owner: Principal | None = None) -> Task:
        """Record answers to outstanding questions; unknown or already-answered keys are ignored.

        When the last outstanding question is answered the task goes back to
        ``working``; a partial answer keeps it ``input_required``.
        """
        with self.db.transaction():
            task = self._get(task_id, owner, lock=True)
            if task.status is not TaskStatus.INPUT_REQUIRED:
                return task  # late or duplicate answers change nothing
            outstanding = dict(task.input_requests or {})
            accepted, refusal = {}, None
            for key, answer in responses.items():
                if key not in outstanding:
                    continue
                problem = _form_problem(outstanding[key], answer)
                if problem is not None:  # the question stays open; the task says why
                    refusal = refusal or problem
                    continue
                accepted[key] = _answer_to_keep(answer)
            if not accepted:
                if refusal is not None:
                    self.db.execute("UPDATE tasks SET status_message = ?, updated_at = ? WHERE task_id = ?",
                                    (refusal, time.time(), task_id))
                    return self.get(task_id)
                return task
            for key in accepted:
                outstanding.pop(key)
            all_responses = {**(task.responses or {}), **accepted}
            if outstanding:
                self.db.execute("UPDATE tasks SET input_requests = ?, responses = ?, updated_at = ? WHERE task_id = ?",
                                (_seal(self.rest, "input_requests", task_id, outstanding),
                                 _seal(self.rest, "responses", task_id, all_responses), time.time(), task_id))
            else:
                with self._transition(task_id, TaskEvent.PROVIDE_INPUT, owner) as (_, changes):
                    changes["input_requests"] = None
                    changes["responses"] = all_responses
                    changes["status_message"] = None
        return self.get(task_id)

    def scrub_response(self, task_id: str, key: str) -> None:
        """Forget an answer's content once its runner has read it (the key stays used)."""
        with self.db.transaction():
            row = self.db.fetchone("SELECT responses FROM tasks WHERE task_id = ?" + self.db.for_update,
                                   (task_id,))
            responses = _open(self.rest, "responses", task_id, row[0]) if row else None
            if not responses or key not in responses:
                return
            responses = {**responses, **(scrubbed_responses({key: responses[key]}) or {})}
            self.db.execute("UPDATE tasks SET responses = ? WHERE task_id = ?",
                            (_seal(self.rest, "responses", task_id, responses), task_id))
        self.db.forget()  # scrubbed means gone from every file, the WAL's old pages included

    def reseal(self, *, batch: int = 200) -> int:
        """Seal again, under the first configured key, every stored value sealed under an older key
        or written in clear before sealing existed; returns how many rows changed.  After a key
        rotation, run it (``truecall tasks reseal``) before the old key is dropped."""
        changed = 0
        cols = ", ".join(SEALED_COLUMNS)
        after = ""
        while True:
            rows = self.db.fetchall(f"SELECT task_id, {cols} FROM tasks WHERE task_id > ? ORDER BY task_id LIMIT ?",
                                    (after, batch))
            if not rows:
                return changed
            for row in rows:
                task_id, blobs = row[0], row[1:]
                stale = [c for c, b in zip(SEALED_COLUMNS, blobs) if b is not None and not self.rest.current(b)]
                if stale:
                    with self.db.transaction():
                        fresh = self.db.fetchone(f"SELECT {cols} FROM tasks WHERE task_id = ?" + self.db.for_update,
                                                 (task_id,))
                        if fresh is None:
                            continue
                        values = dict(zip(SEALED_COLUMNS, fresh))
                        sets = [f"{c} = ?" for c in stale]
                        params = [_seal(self.rest, c, task_id, _open(self.rest, c, task_id, values[c])) for c in stale]
                        self.db.execute(f"UPDATE tasks SET {', '.join(sets)} WHERE task_id = ?", [*params, task_id])
                    changed += 1
            after = rows[-1][0]

    def renew_leases(self, runner_id: str, held: dict[str, int], lease_s: float) -> builtins.list[str]:
        """Heartbeat: the runner still holds these tasks (task id → its epoch).

        Returns the tasks whose lease it no longer holds (taken over, settled elsewhere or
        expired by their TTL): their work must stop.  A lease that ran out but that nobody took
        over is simply renewed — the epoch, not the clock, decides who may write.
        """
        if not held:
            return []
        until = time.time() + lease_s
        lost = []
        with self.db.transaction():
            for task_id, epoch in held.items():
                cur = self.db.execute("UPDATE tasks SET lease_until = ? WHERE task_id = ? AND runner_id = ? AND "
                                      "lease_epoch = ? AND status IN ('working', 'input_required')",
                                      (until, task_id, runner_id, epoch))
                if cur.rowcount != 1:
                    lost.append(task_id)
        return lost

    def check_lease(self, task_id: str, epoch: int) -> None:
        """The fence: :class:`LeaseLost` unless ``epoch`` is still the task's lease epoch.

        Call it inside the transaction of the write it guards (it joins the caller's, and on a
        server database locks the task's row until that transaction ends): a takeover then
        either happened before — the write is refused — or waits until the write committed,
        and settles knowing of it.
        """
        with self.db.transaction():
            row = self.db.fetchone("SELECT lease_epoch FROM tasks WHERE task_id = ?" +
                                   self.db.for_update, (task_id,))
            if row is None or row[0] != epoch:
                raise LeaseLost(task_id)

    def take_over(self, task: Task, runner_id: str, lease_s: float, *, expired_only: bool = True,
                  now: float | None = None) -> Task | None:
        """Take an unfinished task's lease away from its holder, before settling it from here.

        A compare-and-set on the epoch ``task`` was read with: it moves on by one, so every later
        write of the old holder fails its fence.  ``expired_only``: only while the holder's
        lease has run out.  ``None`` when the task moved meanwhile (renewed, settled, taken by
        another settler): leave it alone.
        """
        now = time.time() if now is None else now
        sql = ("UPDATE tasks SET lease_epoch = lease_epoch + 1, runner_id = ?, lease_until = ?, updated_at = ? "
               "WHERE task_id = ? AND lease_epoch = ? AND status IN ('working', 'input_required')")
        params: list[Any] = [runner_id, now + lease_s, now, task.task_id, task.lease_epoch]
        if expired_only:
            sql += " AND (lease_until IS NULL OR lease_until < ?)"
            params.append(now)
        with self.db.transaction():
            if self.db.execute(sql, params).rowcount != 1:
                return None
            return self._get(task.task_id)

    def request_cancel(self, task_id: str) -> None:
        """Flag a task another process runs; that runner stops it at its next heartbeat."""
        self.db.execute("UPDATE tasks SET cancel_requested = 1 WHERE task_id = ?", (task_id,))

    def cancel_requests(self, runner_id: str) -> builtins.list[str]:
        """Unfinished tasks of ``runner_id`` that somebody asked to cancel."""
        return [r[0] for r in self.db.fetchall(
            "SELECT task_id FROM tasks WHERE runner_id = ? AND cancel_requested = 1 "
            "AND status IN ('working', 'input_required')", (runner_id,))]

    def lease_holder(self, task_id: str) -> tuple[str | None, float | None]:
        row = self.db.fetchone("SELECT runner_id, lease_until FROM tasks WHERE task_id = ?", (task_id,))
        return (row[0], row[1]) if row else (None, None)

    def orphans(self, *, now: float | None = None, other_than: str | None = None) -> builtins.list[Task]:
        """Unfinished tasks whose runner is gone: its lease ran out, or (``other_than``) any
        runner but this one — right for a database only one process serves."""
        now = time.time() if now is None else now
        sql = (f"SELECT {_COLUMNS} FROM tasks WHERE status IN ('working', 'input_required') "
               "AND runner_id IS NOT NULL AND expires_at > ? AND ")
        if other_than is not None:
            rows = self.db.fetchall(sql + "runner_id != ?", (now, other_than))
        else:
            rows = self.db.fetchall(sql + "(lease_until IS NULL OR lease_until < ?)", (now, now))
        return [_task(r, self.rest) for r in rows]

    def purge_expired(self) -> int:
        """Delete tasks past their TTL; returns how many."""
        cur = self.db.execute("DELETE FROM tasks WHERE expires_at <= ?", (time.time(),))
        if cur.rowcount:
            self.db.forget()  # an expired task's sealed values leave the WAL's old pages too
        return cur.rowcount

    # -- the one place a status changes -------------------------------------------

    @contextmanager
    def _transition(self, task_id: str, event: TaskEvent, owner: Principal | None,
                    epoch: int | None = None) -> Iterator[tuple[Task, dict[str, Any]]]:
        with self.db.transaction():
            task = self._get(task_id, owner, lock=True)
            if epoch is not None and task.lease_epoch != epoch:
                raise LeaseLost(task_id)
            new_status = next_status(task.status, event)
            changes: dict[str, Any] = {}
            yield task, changes
            if new_status in TERMINAL:
                # Settled, whichever way (completed, failed, cancelled, taken over and settled by
                # another process, recovered at start): nobody reads an answer or a question again.
                changes["responses"] = scrubbed_responses(changes.get("responses", task.responses))
                changes["input_requests"] = None
            sets = ["status = ?", "updated_at = ?"]
            params: builtins.list[Any] = [new_status.value, time.time()]
            for column, value in changes.items():
                sets.append(f"{column} = ?")
                params.append(_seal(self.rest, column, task_id, value) if column in _SEALED_INDEX
                              else _dump(value) if column in _JSON_COLUMNS else value)
            params.append(task_id)
            self.db.execute(f"UPDATE tasks SET {', '.join(sets)} WHERE task_id = ?", params)


def _new_task_id() -> str:
    """``t`` + 192 random bits (a letter first: never read as a CLI option).

    Redrawn when it happens to read like a credential — ``tc_…`` is a truecall token's shape,
    one id in 4096 — because the audit trail redacts such values, and a task whose id is
    written as ``[REDACTED]`` could no longer be traced.
    """
    while True:
        task_id = "t" + secrets.token_urlsafe(24)
        if redact_text(task_id) == task_id:
            return task_id


def _form_problem(request: Any, answer: Any) -> str | None:
    """Why an accepted answer does not fill the form it answers (the message for a missing
    or empty required field, as examples/02_user_input.py shows it), or ``None``."""
    if not isinstance(answer, dict) or answer.get("action") != "accept":
        return None if isinstance(answer, dict) else "task input is invalid: an answer must be an object"
    if not isinstance(request, dict) or request.get("method") != "elicitation/create":
        return None
    schema = (request.get("params") or {}).get("requestedSchema")
    if not isinstance(schema, dict):
        return None
    content = answer.get("content")
    if content is None:
        content = {}
    validator = _validator(orjson.dumps(schema))
    if not isinstance(content, dict) or validator.missing_required(content) or \
            any(v.missing for v in validator.violations(content, 1)):
        return MISSING_TASK_INPUT_TEXT
    problems = validator.violations(content, 3)
    if problems:
        return "task input is invalid: " + "; ".join(p.message for p in problems)
    return None


def _answer_to_keep(answer: Any) -> Any:
    """Only an accepted answer carries content anyone may read; the rest is dropped unread."""
    if isinstance(answer, dict) and answer.get("action") in ("decline", "cancel"):
        return {"action": answer["action"]}
    return answer


_JSON_COLUMNS = frozenset({"input_schema", "input", "result", "error", "request", "input_requests", "responses"})


__all__ += ["InvalidTransition"]

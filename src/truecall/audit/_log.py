"""The audit trail: every decision, written (redacted) before the answer leaves.

``record(kind, **fields)`` is the whole API.  A handful of fields get their own
columns so that ``truecall audit`` can filter without parsing JSON; everything
else is redacted and stored as one JSON document.  Tool arguments are never
stored: callers pass ``arguments=`` and get a fingerprint (keys, size, keyed hash).

:class:`AuditLog` keeps the trail durable: each request's ledger (one final record), the batches
records are committed or journaled in, and the outage state while they cannot be.  Its other jobs
have their own modules: building a record (``_records``), loading the journal into the table
(``_loading``) and reading the trail back (``_queries``); their names are importable from
here as before.
"""

from __future__ import annotations

import asyncio
import contextvars
import errno
import logging
import os
import secrets
import threading
import time
from typing import Any, Callable, Iterable, Sequence

import orjson

# LOAD_* and ROTATE_BYTES are importable from here as before (the loading module reads its own).
from ._loading import _NEVER, LOAD_BYTES, LOAD_DELAY_S, LOAD_RETRY_S, ROTATE_BYTES, JournalLoading
from ._queries import select_kinds, select_records
from ._records import _CLIENTS, _HEADS, _INSERT, AuditRecord, _client, _head, make_row
from ._retention import History, Retention, Sweeper
from ..errors import ServiceUnavailable
from ._journal import JOURNAL_MIGRATIONS, Journal, encode_line, encode_rows, journal_dir, recover_journals
from .redaction import ARG_KEYS, argument_keys, canonical_arguments, fingerprint, mac_state, redact_text
from ..storage import Storage

log = logging.getLogger("truecall.audit")

__all__ = ["AuditLog", "AuditRecord", "AuditUnavailable", "TrailUnavailable", "AUDIT_MIGRATIONS", "MAX_RETAINED",
           "FINAL_KINDS", "Ledger", "DuplicateFinalRecord"]

#: Records whose commit failed are kept and written with the next batch, up to this many;
#: beyond it the oldest are dropped and an ``audit.dropped`` record says how many.
MAX_RETAINED = 10_000
#: While the trail cannot be written (disk full), the records it holds are retried this often: the
#: first that goes through ends the outage (:attr:`AuditLog.unwritable`).
PROBE_S = 0.5


class AuditUnavailable(RuntimeError):
    """A record made since the current request began could not be committed."""


class TrailUnavailable(ServiceUnavailable):
    """A call refused before anything ran because the audit trail cannot be written right now (disk
    full, quota, the database refusing writes): the existing 503 "service unavailable", saying that
    nothing was done.  Its ``tool.refused`` record is held in memory and written when the trail takes
    records again, followed by one ``audit.refused`` record (how many, why, since when)."""

    @classmethod
    def because(cls, why: str) -> "TrailUnavailable":
        return cls(f"Service unavailable: {why}. Nothing was done; retry it later.", data={"retryable": True})


#: The kinds that settle a request: a request the engine serves leaves at most one record of these
#: kinds — exactly one when it fails, is refused, or acts (calls a tool, reads a resource, gets a
#: prompt, answers or cancels a task); a request that only reads a listing (``tools/list``, ``ping``,
#: ``tasks/get``, a completion answered) leaves none.  Every other kind is *non-final*: recorded beside
#: a request's final record (``tool.form_refused`` before its ``tool.called``, an app's own kinds) or by
#: no request at all (a task's own settlement — ``task.completed``, ``task.failed``, … —, ``audit.*``).
FINAL_KINDS = frozenset({
    "tool.called", "tool.failed", "tool.rejected", "tool.rate_limited", "tool.cancelled", "tool.denied",
    "tool.refused", "task.created", "auth.denied",
    "resource.read", "resource.denied", "resource.rate_limited", "prompt.get", "prompt.denied", "prompt.rate_limited",
    "completion.rate_limited", "task.denied", "task.input", "task.cancel_requested",
    "rpc.error", "protocol.internal_error", "protocol.unavailable",
})


class DuplicateFinalRecord(AssertionError):
    """A second final record for one request: a bug in whatever recorded it (raised when
    :attr:`AuditLog.strict`, as the test suite runs; logged as an error otherwise)."""


class Ledger:
    """One request's account with the trail, opened by :meth:`AuditLog.begin` in the request's asyncio
    context: its log, how many records were made when it began (for :meth:`AuditLog.durable`), the
    kind of its final record (``final``; ``None``: none yet) and whether it is still being served
    (``serving``: ``False`` once answered — what the tasks it started record later is theirs).  A
    second final record is refused loudly (:class:`DuplicateFinalRecord`).

    The engine's :class:`~truecall.protocol.RequestContext` is one (the object a request has anyway:
    a ledger of its own would be one more allocation on every call)."""

    __slots__ = ("log", "made", "final", "serving")

    log: "AuditLog"
    made: int
    final: str | None
    serving: bool


#: The ledger of the request the running asyncio task serves (``None``: none, or work that outlives
#: its request, such as a task's; see :meth:`AuditLog.begin` and :meth:`AuditLog.detach`).
_LEDGER: contextvars.ContextVar[Ledger | None] = contextvars.ContextVar("truecall_audit_ledger", default=None)

AUDIT_MIGRATIONS = [
    (
        "audit-1",
        """
        CREATE TABLE audit_events (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            ts REAL NOT NULL,
            kind TEXT NOT NULL,
            tenant TEXT,
            subject TEXT,
            tool TEXT,
            outcome TEXT,
            fields BLOB NOT NULL
        );
        CREATE INDEX audit_events_tenant_ts ON audit_events (tenant, ts);
        CREATE INDEX audit_events_kind ON audit_events (kind)
        """,
    ),
    # Every index is paid on every call; queries filter by tenant and time first.
    ("audit-2", "DROP INDEX audit_events_kind"),
]


_MISSING: Any = object()


def _nothing_declared(tool: str) -> frozenset[str] | None:
    return None


class AuditLog(JournalLoading):
    """Durable, redacted audit records in the given database."""

    #: ``fn(tool name) -> declared argument names`` (``None``: unknown tool); the server sets it.
    #: Keys a tool does not declare are recorded as ``[undeclared]``, like the field column.
    declared_fields: Callable[[str], frozenset[str] | None] = staticmethod(_nothing_declared)
    #: A second final record for one request raises :class:`DuplicateFinalRecord` instead of being
    #: logged as an error (``TRUECALL_AUDIT_STRICT=1``; the test suite sets it).
    strict: bool = os.environ.get("TRUECALL_AUDIT_STRICT", "").strip() == "1"

    def __init__(self, db: Storage, *, key: bytes | None = None, enabled: bool = True,
                 journal: bool | None = None, retain: Retention | str | None = None,
                 export: str | os.PathLike[str] | None = None) -> None:
        """``key`` is the MAC key for argument hashes; keep it outside the database
        (configuration or a key file) so that a copy of the database cannot be
        brute-forced for short secrets.  Without one, a per-process key is used.

        ``journal``: while serving, make records durable in a local journal and load them into
        the table in batches (:mod:`truecall.audit._journal`).  ``None`` (default) means yes for a SQLite
        file unless ``$TRUECALL_AUDIT_JOURNAL`` is ``0``; a server database (PostgreSQL) always
        commits each batch itself, as replicas on other hosts must see what it acknowledged.

        ``retain``: how much of the trail is kept (:class:`~truecall.audit._retention.Retention` or its text,
        e.g. ``"90d,2GB"``; default ``$TRUECALL_AUDIT_RETAIN`` or ``90d,2GB``), applied while serving by a
        background sweep; ``export``: a folder every dropped record is written to first (default
        ``$TRUECALL_AUDIT_EXPORT``; none: dropped records are gone).

        On a database not open yet (a server's, before ``server.start()``) nothing is touched here:
        the migrations and the loading of ended processes' journals happen when it opens."""
        self.db = db
        self.enabled = enabled
        db.migrate(AUDIT_MIGRATIONS)
        self._key = key or secrets.token_bytes(32)
        # Group commit (see :meth:`defer`): records made in one event-loop turn share a commit.
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: int | None = None
        self._pending: list[tuple[Any, ...]] = []
        self._flushing: asyncio.Future[None] | None = None
        #: The batch the writer thread is committing (server databases: see _flush_soon), and that thread.
        self._writing: asyncio.Future[None] | None = None
        self._writer: Any = None
        #: Sequence numbers: records made so far, and the newest one whose commit ever failed.
        self._made = 0
        self._last_failed = 0
        #: Sequence numbers of the pending rows (parallel to ``_pending``).
        self._pending_seq: list[int] = []
        #: Records dropped because too many were waiting for a commit (reported once written).
        self._dropped = 0
        #: Journal (SQLite file databases, once serving on a loop): see :mod:`truecall.audit._journal`.
        if journal is None:
            journal = os.environ.get("TRUECALL_AUDIT_JOURNAL", "1").strip().lower() not in ("0", "false", "no", "off")
        self._journal_dir = journal_dir(db) if enabled and journal else None
        self._journal: Journal | None = None
        self._load_handle: asyncio.Handle | None = None
        #: The journal's size at which the scheduled load is brought forward (see LOAD_BYTES).
        self._load_at = _NEVER
        self._load_failures = 0
        #: Why the trail cannot be written right now (``None``: it can): calls are refused meanwhile.
        self.unwritable: str | None = None
        self._refused = 0
        self._outage_since = 0.0
        self._probe_handle: asyncio.Handle | None = None
        self.retention = Retention.from_setting(retain)
        if export is None:
            export = os.environ.get("TRUECALL_AUDIT_EXPORT", "").strip() or None
        self.export_dir = export
        #: The background sweep (started by :meth:`defer` on a database that outlives the process).
        self.sweeper: Sweeper | None = None
        #: Other tables whose old rows are only history, swept with the trail (the server adds its
        #: expired tasks; an app may add its own: ``server.events.history.append(fn)``).
        self.history: list[History] = []
        if self._journal_dir is not None:
            db.migrate(JOURNAL_MIGRATIONS)
            # What ended processes journaled is loaded once the database is open: now if it is, else at
            # its open() (a server's start: constructing one touches nothing).
            db.when_open(self._recover_journals)

    def _recover_journals(self) -> None:
        """Load the journals that processes which ended left next to the database (at its opening)."""
        assert self._journal_dir is not None
        try:
            recovered = recover_journals(self.db, self._journal_dir)
        except Exception as exc:  # the files stay; the next process to open the database retries
            log.warning("audit journals of ended processes could not be loaded yet: %s", type(exc).__name__)
        else:
            if recovered:
                log.info("loaded %d audit records journaled by processes that ended", recovered)

    def defer(self, loop: asyncio.AbstractEventLoop) -> None:
        """Batch records made on ``loop`` into one commit per loop turn.

        Transports call this when they start serving and then ``await durable()``
        before an answer leaves: every record behind an answer is committed first,
        yet concurrent calls share one commit instead of paying one each.
        """
        self._loop = loop
        self._loop_thread = threading.get_ident()
        if self.enabled and not self.retention.keeps_all and (self.db.local_file is not None or self.db.shared):
            if self.sweeper is None:
                self.sweeper = Sweeper(self.db, self.retention, self.export_dir, on_sweep=self._swept,
                                       history=self.history)
            self.sweeper.start()

    def _swept(self, dropped: int, exported: str | None) -> None:
        """The trail says what retention let go (from the sweep's thread: a direct insert)."""
        self.record("audit.retention", outcome="ok", dropped=dropped, exported=exported is not None)

    def begin(self, ledger: Ledger | None = None) -> Ledger:
        """Open ``ledger`` (a new one if ``None``) for one request in the current asyncio task (the
        engine does, per request, with its request's context) and return it.

        :meth:`durable` in the same task then also raises when a commit that failed *earlier*
        held a record made since: without the mark, a request whose record was in a failed
        batch, and which awaited something else before answering, would find nothing pending
        and be acknowledged without its record.  Records of the :data:`FINAL_KINDS` made in this
        task (and the tasks it starts) count as the request's: one is allowed.
        """
        if ledger is None:
            ledger = Ledger()
        ledger.log, ledger.made, ledger.final, ledger.serving = self, self._made, None, True
        _LEDGER.set(ledger)
        return ledger

    @staticmethod
    def detach() -> None:
        """The work running in the current asyncio task no longer serves a request (a call that
        went on as a task after its ``task.created``; a question relayed for a task): what it
        records later is its own, not the request's."""
        _LEDGER.set(None)

    def _settles(self, kind: str) -> None:
        """``kind`` (one of the :data:`FINAL_KINDS`) is recorded: the current request's final record."""
        ledger = _LEDGER.get()
        if ledger is None or ledger.log is not self or not ledger.serving:
            return
        if ledger.final is not None:
            message = f"a second final audit record for one request: {kind} after {ledger.final}"
            if self.strict:
                raise DuplicateFinalRecord(message)
            log.error("%s (recorded anyway)", message)
        ledger.final = kind

    async def durable(self) -> None:
        """Return once every record made so far is committed.

        Raises if the pending commit fails, or if any record made since :meth:`begin` (in this
        task) was in a commit that failed — conservatively, whoever made it: a batch is shared.
        """
        if self._flushing is not None:
            await asyncio.shield(self._flushing)
        if self._writing is not None:  # (a batch handed to the writer thread: see _flush_soon)
            await asyncio.shield(self._writing)
        ledger = _LEDGER.get()
        if ledger is not None and ledger.log is self and self._last_failed > ledger.made:
            raise AuditUnavailable("an audit record made during this request could not be committed")

    def flush(self) -> None:
        """Commit what is pending now, and load the journal into the table (at shutdown)."""
        if self.sweeper is not None:
            self.sweeper.stop()
        if self._pending or self._flushing is not None:
            self._flush()
        writer, self._writer = self._writer, None
        if writer is not None:  # the batches handed to the writer thread are committed before this returns
            writer.shutdown(wait=True)
        if self._journal is not None:
            if self._load_handle is not None:
                self._load_handle.cancel()
                self._load_handle = None
            self._retire()

    def sync(self) -> None:
        """Load the records this process has journaled into the table now (queries do)."""
        journal = self._journal
        if journal is not None and journal.pending:
            journal.load(self.db)

    def _flush_soon(self) -> None:
        """The loop turn's batch: on a server database (a connection per thread), written by one
        writer thread, so a server that stops answering holds up the answers behind these records
        but never the event loop; elsewhere (SQLite's one connection) written here, as :meth:`_flush`."""
        if not self.db.pooled or self._journal_dir is not None or self._loop is None:
            self._flush()
            return
        rows, self._pending = self._pending, []
        seqs, self._pending_seq = self._pending_seq, []
        future, self._flushing = self._flushing, None
        dropped, self._dropped = self._dropped, 0
        if not rows and not dropped:  # (flushed meanwhile, at shutdown)
            self._written(rows, seqs, dropped, future, None)
            return
        if self._writer is None:
            from concurrent.futures import ThreadPoolExecutor

            self._writer = ThreadPoolExecutor(1, thread_name_prefix="truecall-audit")  # batches commit in order
        written = self._writing = self._loop.run_in_executor(self._writer, self._write, self._batch(rows, dropped))

        def done(written: asyncio.Future[None]) -> None:
            if self._writing is written:
                self._writing = None
            self._written(rows, seqs, dropped, future, written.exception())

        written.add_done_callback(done)

    def _batch(self, rows: list[tuple[Any, ...]], dropped: int) -> list[tuple[Any, ...]]:
        return rows if not dropped else [*rows, self._row("audit.dropped", {"outcome": "error", "count": dropped,
                                                                            "reason": "commit_failures"})]

    def _write(self, batch: list[tuple[Any, ...]]) -> None:
        if len(batch) == 1:  # an autocommit insert is one statement instead of three
            self.db.execute(_INSERT, batch[0])
        elif batch:
            with self.db.transaction():
                for row in batch:
                    self.db.execute(_INSERT, row)

    def _flush(self) -> None:
        rows, self._pending = self._pending, []
        seqs, self._pending_seq = self._pending_seq, []
        future, self._flushing = self._flushing, None
        dropped, self._dropped = self._dropped, 0
        batch = self._batch(rows, dropped)
        try:
            if self._journal_dir is not None and self._loop is not None:
                self._append(batch)
            else:
                self._write(batch)
        except BaseException as exc:  # nothing behind these records may be acknowledged
            self._written(rows, seqs, dropped, future, exc)
            if not isinstance(exc, Exception):
                raise
            return
        self._written(rows, seqs, dropped, future, None)

    def _written(self, rows: list[tuple[Any, ...]], seqs: list[int], dropped: int,
                 future: asyncio.Future[None] | None, exc: BaseException | None) -> None:
        """A batch's commit is over: its waiters hear how; refused records are kept for the next one."""
        if exc is not None:  # nothing behind these records may be acknowledged
            if seqs:
                self._last_failed = max(self._last_failed, seqs[-1])
            self._retain(rows, seqs, dropped)
            self._outage(exc)
            if future is not None and not future.done():
                future.set_exception(exc)
                future.exception()  # retrieved here too: a waiter may already be gone
            return
        if future is not None and not future.done():
            future.set_result(None)
        if self.unwritable is not None and not self._pending:
            self._recovered()

    def _append(self, batch: list[tuple[Any, ...]]) -> None:
        if not batch:
            return
        if self._journal is not None and self._journal.broken:  # ends mid-line: load what it holds, start another
            self._retire()
        journal = self._journal
        if journal is None:
            if self._journal_dir is None:  # (batches are appended only where a journal is kept)
                raise RuntimeError("audit batch appended without a journal directory")
            journal = self._journal = Journal(self._journal_dir)
        journal.append(encode_rows(batch), batch)
        if self._load_handle is None:
            self._schedule_load(journal)
        elif journal.size >= self._load_at:
            self._load_now()

    def _retain(self, rows: list[tuple[Any, ...]], seqs: list[int], dropped: int) -> None:
        """Keep records whose commit failed for the next batch (the database may come back: a lock
        released, space freed, a server restarted).  Their answers have already been refused."""
        rows, seqs = rows + self._pending, seqs + self._pending_seq  # older first
        over = len(rows) - MAX_RETAINED
        if over > 0:
            rows, seqs = rows[over:], seqs[over:]
            dropped += over
        self._pending, self._pending_seq, self._dropped = rows, seqs, self._dropped + dropped

    # -- the trail cannot be written: a state, not a crash ------------------------------------

    def _outage(self, exc: BaseException) -> None:
        """A write of the trail failed: if it is an outage (disk full, quota, the database refusing
        writes), calls are refused until a retry of the held records goes through (:meth:`_probe`)."""
        why = _outage_reason(exc, self.db)
        if why is None:
            return
        if self.unwritable is None:
            self._outage_since = time.time()
            log.warning("audit trail cannot be written (%s): calls are refused until it can", why)
        self.unwritable = why
        loop = self._loop
        if loop is not None and self._probe_handle is None and self._loop_thread == threading.get_ident():
            self._probe_handle = loop.call_later(PROBE_S, self._probe)

    def _probe(self) -> None:
        """Retry the held records; the first write that goes through ends the outage."""
        self._probe_handle = None
        if (self._pending or self._dropped) and self.db.pooled and self._journal_dir is None and self._loop is not None:
            self._flush_soon()  # in the writer thread: its end recovers the trail, or the next probe is due
            if self._writing is not None:
                self._writing.add_done_callback(self._probe_again)
            return
        if self._pending or self._dropped:
            self._flush()  # on failure, _outage schedules the next probe
        if self._pending or self._dropped:
            if self._probe_handle is None and self._loop is not None:
                self._probe_handle = self._loop.call_later(PROBE_S, self._probe)
            return
        if self.unwritable is not None:
            self._recovered()

    def _probe_again(self, _: object = None) -> None:
        """A probe's write ended and the trail is still unwritable (whatever failed): the next one is due."""
        if self.unwritable is not None and self._probe_handle is None and self._loop is not None:
            self._probe_handle = self._loop.call_later(PROBE_S, self._probe)

    def _recovered(self) -> None:
        """The held records are written: calls are served again, and the trail says how many were not."""
        why, self.unwritable = self.unwritable, None
        refused, self._refused = self._refused, 0
        if self._probe_handle is not None:
            self._probe_handle.cancel()
            self._probe_handle = None
        log.warning("audit trail written again: %d calls were refused meanwhile", refused)
        self.record("audit.refused", outcome="recovered", count=refused, reason=why, sinceTs=self._outage_since)

    def refusal(self, tool: Any, tenant: Any, subject: Any, request_id: Any) -> TrailUnavailable:
        """The answer to a call that arrives while the trail cannot be written (nothing runs).

        Its ``tool.refused`` record is held with the others and written when the trail takes records
        again (up to :data:`MAX_RETAINED`, then counted in ``audit.dropped``).  It is held, not tried
        now: every write fails meanwhile, and a record that failed would turn this answer — nothing
        was done — into "may not have completed" (:meth:`durable` raises for a failed record)."""
        self._settles("tool.refused")
        self._refused += 1
        fields: dict[str, Any] = {"tool": tool if isinstance(tool, str) else str(tool)[:128], "tenant": tenant,
                                  "subject": subject, "outcome": "unavailable", "reason": "audit_unavailable"}
        if request_id is not None:
            fields["requestId"] = request_id if type(request_id) is int else redact_text(str(request_id))
        # Held after the others, with the newest sequence number (no new one: no request waits on it).
        self._pending.append(self._row("tool.refused", fields))
        self._pending_seq.append(self._made)
        over = len(self._pending) - MAX_RETAINED
        if over > 0:
            del self._pending[:over], self._pending_seq[:over]
            self._dropped += over
        return TrailUnavailable.because(f"the audit trail cannot be written ({self.unwritable})")

    @property
    def _key(self) -> bytes:
        return self._hmac_key

    @_key.setter
    def _key(self, key: bytes) -> None:
        self._hmac_key = key
        self._mac = mac_state(key)  # the keyed state, once (see redact.mac_state)

    def fingerprint(self, arguments: Any) -> dict[str, Any]:
        return fingerprint(arguments, self._key)

    def record(self, kind: str, **fields: Any) -> None:
        """Write one event; returns only once it is committed.

        ``arguments=`` is kept as a fingerprint; its keys are checked against ``argument_names=``
        when given (e.g. the questions a task asked), else against the ``tool=``'s declared names.
        """
        if kind in FINAL_KINDS:
            self._settles(kind)
        if not self.enabled:
            return
        arguments = fields.pop("arguments", _MISSING)
        names = fields.pop("argument_names", None)
        if arguments is _MISSING:
            self._commit(self._row(kind, fields, None))
            return
        if names is None and isinstance(fields.get("tool"), str):
            names = self.declared_fields(fields["tool"])
        # The fingerprint is made of safe parts already (checked keys, a size, a keyed hash).
        self._commit(self._row(kind, fields, fingerprint(arguments, self._key, names)))

    def record_call(self, kind: str, tool: str, tenant: Any, subject: Any, outcome: str, arguments: Any,
                    duration_ms: float, client: str | None, request_id: Any, declared: Any = _MISSING) -> None:
        """``record(kind, tool=…, tenant=…, subject=…, outcome=…, arguments=…, durationMs=…,
        client=…[, requestId=…])`` — the same row, straight-line: one of these per tool call.
        ``declared``: the tool's declared argument names when the caller has them at hand (else
        :attr:`declared_fields` is asked).

        The (redacted) columns are the same for every call of one tool by one caller with one
        outcome: they are made once (:func:`_head`), with their part of the journal line, and
        looked up after that.  Served (on the loop, journal open, nothing retained before it),
        the record goes straight to the journal: :meth:`_commit` and :meth:`_journal_one` inline.
        ``kind`` is one of the :data:`FINAL_KINDS`: the current request's final record."""
        ledger = _LEDGER.get()  # (_settles, inline)
        if ledger is not None and ledger.log is self and ledger.serving:
            if ledger.final is not None:
                self._settles(kind)
            ledger.final = kind
        if not self.enabled:
            return
        try:
            head = _HEADS[(kind, tool, tenant, subject, outcome)]
        except (KeyError, TypeError):  # (TypeError: an unhashable tenant or subject, never cached)
            head = _head(kind, tool, tenant, subject, outcome)
        # fingerprint_into(doc, …), unrolled: one dict made whole, the argKeys of declared names looked up.
        # Calling it instead measured ~2k more instructions a call (bench/audit_cost.py: 0.467 -> 0.495 of
        # 34dd98b's audit); test_the_straight_line_call_record_is_the_generic_record pins the two alike.
        try:
            raw = orjson.dumps(arguments, option=orjson.OPT_SORT_KEYS)
        except (TypeError, orjson.JSONEncodeError):
            raw = canonical_arguments(arguments)
        mac = self._mac.copy()
        mac.update(raw)
        if declared is _MISSING:
            declared = self.declared_fields(tool)
        keys: Sequence[str] | None = None
        if type(arguments) is dict and type(declared) is frozenset:
            keys = ARG_KEYS.get((declared, tuple(arguments)))
        if keys is None:
            keys = argument_keys(arguments, declared)
        if client is not None:
            client = _CLIENTS.get(client) or _client(client)
        if request_id is None:
            doc = {"durationMs": duration_ms, "client": client, "argKeys": keys, "argBytes": len(raw),
                   "argHash": mac.hexdigest()}
        else:
            doc = {"durationMs": duration_ms, "client": client,
                   "requestId": request_id if type(request_id) is int else redact_text(request_id),
                   "argKeys": keys, "argBytes": len(raw), "argHash": mac.hexdigest()}
        fields = orjson.dumps(doc)
        ts = time.time()
        row = (ts, kind, head[0], head[1], head[2], head[3], fields)
        journal = self._journal
        if (journal is None or self._loop_thread != threading.get_ident() or self._pending or self._dropped
                or journal.broken):
            self._commit(row)
            return
        self._made += 1
        # the line encode_line(row) makes, from the head's cached part
        self._journal_one(journal, row, b"".join((b"[", orjson.dumps(ts), head[4], fields, b"]\n")))

    def _commit(self, row: tuple[Any, ...]) -> None:
        """Make ``row`` durable (on the serving loop: before :meth:`durable` returns)."""
        loop = self._loop
        if loop is not None and self._loop_thread == threading.get_ident():
            self._made += 1
            journal = self._journal
            if journal is not None and not self._pending and not self._dropped and not journal.broken:
                self._journal_one(journal, row)
                return
            self._pending.append(row)
            self._pending_seq.append(self._made)
            if self._journal_dir is not None:
                self._flush()  # one write() now: cheaper than a loop turn and a future, durable at once
                return
            if self._flushing is None:
                self._flushing = loop.create_future()
                loop.call_soon(self._flush_soon)
            return
        self.db.execute(_INSERT, row)

    def _journal_one(self, journal: Journal, row: tuple[Any, ...], line: bytes | None = None) -> None:
        """:meth:`_flush` of a batch of one row into an open journal, nothing retained before it:
        the path every served record takes, without the batch's lists, swaps and future.  ``line``:
        the row's journal line when the caller made it already (:meth:`record_call`)."""
        try:
            journal.append_line(encode_line(row) if line is None else line, row)
        except BaseException as exc:
            self._journal_failed(row, exc)
            return
        if self._load_handle is None:
            self._schedule_load(journal)
        elif journal.size >= self._load_at:
            self._load_now()

    def _journal_failed(self, row: tuple[Any, ...], exc: BaseException) -> None:
        """The journal did not take ``row``: nothing behind it may be acknowledged; it is retained."""
        self._last_failed = max(self._last_failed, self._made)
        self._retain([row], [self._made], 0)
        self._outage(exc)
        if not isinstance(exc, Exception):
            raise exc

    #: A record's row from its kind and fields (``_records``: redacted, the columns cut).
    _row = staticmethod(make_row)

    def query(
        self,
        *,
        kind: str | None = None,
        tenant: str | None = None,
        subject: str | None = None,
        tool: str | None = None,
        outcome: str | None = None,
        since: float | None = None,
        until: float | None = None,
        limit: int = 100,
    ) -> list[AuditRecord]:
        """Newest first, filtered by the given columns."""
        self.sync()
        return select_records(self.db, kind=kind, tenant=tenant, subject=subject, tool=tool, outcome=outcome,
                              since=since, until=until, limit=limit)

    def kinds(self) -> Iterable[str]:
        self.sync()
        return select_kinds(self.db)


def _outage_reason(exc: BaseException, db: Storage) -> str | None:
    """Fixed, client-safe text for a failed write that is an outage (not a bug), or ``None``."""
    if isinstance(exc, OSError):
        code = exc.errno
        if code == errno.ENOSPC:
            return "no space left on the device"
        if code == errno.EDQUOT:
            return "disk quota exceeded"
        if code in (errno.EIO, errno.EROFS, errno.EFBIG):
            return f"the file system refused the write ({errno.errorcode.get(code or 0, 'error')})"
        return None
    # The database refusing writes for lack of space (SQLite's FULL; PostgreSQL's disk_full, 53100);
    # a lock or a restart is not this state: the next call's record is tried as usual.
    if (getattr(exc, "sqlite_errorcode", 0) & 0xFF) == 13 or getattr(exc, "sqlstate", None) == "53100":
        return db.unavailable(exc) or "the database is full"
    return None

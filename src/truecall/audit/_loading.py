"""Loading the audit journal into the table, in batches (the mixin :class:`JournalLoading` of ``AuditLog``).

Served on a SQLite file, a record is durable once its line is in this process's journal
(:mod:`truecall.audit._journal`); the table gets it later, a batch at a time, so that a transaction is paid
per batch and not per record.  This module decides when: ``LOAD_DELAY_S`` after the first record of a
batch, sooner once ``LOAD_BYTES`` wait, again ``LOAD_RETRY_S`` after a failed load; a journal fully
loaded past ``ROTATE_BYTES`` is retired for a new file.  (The journal's own format and recovery are
``_journal``'s; what to append and when to refuse is ``AuditLog``'s.)
"""

from __future__ import annotations

import asyncio
import logging

from ._journal import Journal
from ..storage import Storage

__all__ = ["JournalLoading", "LOAD_DELAY_S", "LOAD_BYTES", "LOAD_RETRY_S", "ROTATE_BYTES"]

log = logging.getLogger("truecall.audit")

#: Journaled records are loaded into the table this long after the first of a batch was written,
#: or as soon as this many bytes wait (about 300 call records); a failed load is retried after
#: ``LOAD_RETRY_S``.  A load is one transaction, and a transaction costs as much as ten rows
#: (callgrind: ~120k instructions, then ~14k per row): a busy server loads every ``LOAD_BYTES``,
#: a quiet one every ``LOAD_DELAY_S`` — so a reader in another process (``truecall audit``,
#: :func:`truecall.audit._journal.wait_loaded`) may wait that long; a query in this process loads first.
LOAD_DELAY_S = 0.25
LOAD_BYTES = 64 * 1024
LOAD_RETRY_S = 1.0
#: A fully loaded journal is replaced by a new file once it has grown past this.
ROTATE_BYTES = 8 * 1024 * 1024
#: A load already due (or retried later): no size brings it forward.
_NEVER = 1 << 62


class JournalLoading:
    """The journal-loading part of :class:`~truecall.AuditLog`: what it reads and sets of the log."""

    db: Storage
    _loop: asyncio.AbstractEventLoop | None
    _journal: Journal | None
    _load_handle: asyncio.Handle | None
    #: The journal's size at which the scheduled load is brought forward (see LOAD_BYTES).
    _load_at: int
    _load_failures: int

    def _schedule_load(self, journal: Journal) -> None:
        """The first record of a batch is journaled: load it ``LOAD_DELAY_S`` from now, or sooner
        once ``LOAD_BYTES`` wait (:meth:`_load_now`)."""
        loop = self._loop
        assert loop is not None
        if journal.pending >= LOAD_BYTES:
            self._load_at = _NEVER
            self._load_handle = loop.call_soon(self._load)
        else:
            self._load_at = journal.loaded + LOAD_BYTES
            self._load_handle = loop.call_later(LOAD_DELAY_S, self._load)

    def _load_now(self) -> None:
        """``LOAD_BYTES`` wait: the scheduled load runs at the next loop turn instead."""
        loop = self._loop
        assert loop is not None and self._load_handle is not None
        self._load_handle.cancel()
        self._load_at = _NEVER
        self._load_handle = loop.call_soon(self._load)

    def _load(self) -> None:
        """Journal → table (on the loop, a batch at a time); the records are durable already."""
        self._load_handle = None
        journal = self._journal
        if journal is None:
            return
        try:
            journal.load(self.db)
        except Exception as exc:
            self._load_failures += 1
            if self._load_failures == 1:
                log.warning("audit records stay in the journal until the database takes them: %s",
                            type(exc).__name__)
            if self._loop is not None:  # (records keep arriving meanwhile: they wait for the retry)
                self._load_at = _NEVER
                self._load_handle = self._loop.call_later(LOAD_RETRY_S, self._load)
            return
        if self._load_failures:
            log.warning("audit journal loaded again after %d failed attempts", self._load_failures)
            self._load_failures = 0
        if journal.size >= ROTATE_BYTES:  # (all of it is loaded: appends happen on this loop only)
            self._retire()

    def _retire(self) -> None:
        """This process's journal takes no more records: what it holds goes into the table and the
        file is deleted; whatever fails is left on disk for the next process that opens the database."""
        journal, self._journal = self._journal, None
        if journal is None:
            return
        try:
            journal.load(self.db)
        except Exception as exc:
            log.warning("audit journal %s left for the next start: %s", journal.name, type(exc).__name__)
        try:
            journal.close(self.db)
        except Exception:  # a mark or the file left behind: swept at the next start
            pass

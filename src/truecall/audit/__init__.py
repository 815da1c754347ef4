"""The audit trail: records built and redacted (``_records``, ``redaction``), made durable
(``_journal``, ``_loading``), read back (``_queries``) and kept within a budget
(``_retention``; PostgreSQL ``_partitions``, SQLite ``_segments``); :class:`AuditLog` (``_log``)
ties them together."""

from ._log import (AuditLog, AuditRecord, AuditUnavailable, TrailUnavailable, AUDIT_MIGRATIONS, MAX_RETAINED,
                   FINAL_KINDS, Ledger, DuplicateFinalRecord)
from .._aliases import forward as _forward

__all__ = ["AuditLog", "AuditRecord", "AuditUnavailable", "TrailUnavailable", "AUDIT_MIGRATIONS",
           "MAX_RETAINED", "FINAL_KINDS", "Ledger", "DuplicateFinalRecord"]

#: A public name ``truecall.audit`` had as a module besides these, read from ``_log`` (with a warning).
__getattr__ = _forward(__name__, "truecall.audit._log", __all__)

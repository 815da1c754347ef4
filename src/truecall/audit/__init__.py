"""The audit trail: records built and redacted (``_records``, ``redaction``), made durable
(``_journal``, ``_loading``), read back (``_queries``) and kept within a budget
(``_retention``, ``_partitions``); :class:`AuditLog` (``_log``) ties them together."""

from ._log import (AuditLog, AuditRecord, AuditUnavailable, TrailUnavailable, AUDIT_MIGRATIONS, MAX_RETAINED,
                   FINAL_KINDS, Ledger, DuplicateFinalRecord)

__all__ = ["AuditLog", "AuditRecord", "AuditUnavailable", "TrailUnavailable", "AUDIT_MIGRATIONS",
           "MAX_RETAINED", "FINAL_KINDS", "Ledger", "DuplicateFinalRecord"]

"""What the audit retention sweep (``_retention``) and its PostgreSQL partitions (``_partitions``) share.

The sweep uses the partitions, and the partitions export and measure as the sweep does; these sit
below both, so that ``_partitions`` does not import ``_retention`` back (it did, from inside its
methods: a cycle the import graph did not show).
"""

from __future__ import annotations

from typing import Any

__all__ = ["_COLUMNS", "_MARK", "_db_bytes"]

#: The columns of an exported record, in the export files' order.
_COLUMNS = "id, ts, kind, tenant, subject, tool, outcome, fields"

#: Records an export file's length and checksum (the file is then complete up to there).
_MARK = ("INSERT INTO audit_export (name, bytes, sha256) VALUES (?, ?, ?) "
         "ON CONFLICT (name) DO UPDATE SET bytes = excluded.bytes, sha256 = excluded.sha256")


def _db_bytes(db: Any) -> int | None:
    """Bytes the database holds (SQLite: pages in use; PostgreSQL: the audit table with its indexes
    and TOAST), or ``None`` when it cannot say."""
    if db.dialect == "sqlite":
        row = db.fetchone("SELECT (SELECT page_count FROM pragma_page_count()) - "
                          "(SELECT freelist_count FROM pragma_freelist_count()), "
                          "(SELECT page_size FROM pragma_page_size())")
        return int(row[0]) * int(row[1]) if row else None
    row = db.fetchone("SELECT SUM(pg_total_relation_size(relid)) FROM pg_partition_tree('audit_events')")
    return int(row[0]) if row and row[0] is not None else None

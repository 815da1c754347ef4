"""What the audit retention sweep (``_retention``) and its PostgreSQL partitions (``_partitions``) share.

The sweep uses the partitions, and the partitions export and measure as the sweep does; these sit
below both, so that ``_partitions`` does not import ``_retention`` back (it did, from inside its
methods: a cycle the import graph did not show).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from ._retention import ExportWriter

__all__ = ["_COLUMNS", "_MARK", "_db_bytes", "record_and_drop"]

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


def record_and_drop(db: Any, writer: "ExportWriter | None", marks: dict[str, tuple[int, str]],
                    drop: Callable[[Any], None]) -> None:
    """One transaction that records the export files' lengths and checksums (``marks``, appended and
    ``fsync``'d before) and runs ``drop(connection)`` (a partition's or a segment's table dropped):
    the records leave the trail in the transaction that says where they went.  Failed, the writer
    forgets what it appended, and the next attempt cuts the unrecorded tail off again."""
    try:
        with db.transaction() as conn:
            for file, (length, sha) in marks.items():
                db.execute(_MARK, (file, length, sha))
            drop(conn)
    except BaseException:
        if writer is not None:
            writer.forget(marks)
        raise
    if writer is not None:
        writer.committed(marks)

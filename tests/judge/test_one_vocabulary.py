"""Issue 24: "no other word list remains in src/" — every judgment about words (claims, credentials,
failures, references, internals, crashes, unknown tools) is the judge's.  Every regular expression
compiled elsewhere in ``src/truecall`` is listed here with why it is structure (a protocol, a header,
a name, a schema, a shape the probe plants), not words; a new one fails this test until it is either
moved into the judge's vocabulary or listed with its reason."""

from __future__ import annotations

import re

from _paths import ROOT

STRUCTURAL = {
    "client/_http.py:_SCOPE": "the scope parameter of a WWW-Authenticate header (RFC 6750)",
    "transports/_http_headers.py:_B64": "the =?base64?...?= header-value encoding (SEP-2243)",
    "transports/guarded.py:_BAD_NAME": "characters RFC 9110 forbids in a header name",
    "transports/guarded.py:_BAD_VALUE": "control characters RFC 9110 forbids in a header value",
    "audit/_retention.py:_ITEM": "a retention budget's number and unit ('30d', '2 GB')",
    "audit/_partitions.py:_BOUND": "PostgreSQL's partition bound expression (FOR VALUES FROM (…) TO (…))",
    "audit/_segments.py:_SEALED": "the name of a sealed SQLite audit segment (audit_events_s + 19 digits)",
    "audit/_segments.py:_INDEX_NAME": "the index name in SQLite's CREATE INDEX statement (renamed for a new segment)",
    "storage/_postgres.py:_SCHEMA_NAME": "a PostgreSQL identifier",
    "audit/redaction.py:_MARKER": "the [REDACTED:kind] marker redaction itself writes",
    "audit/redaction.py:_ANY_SENSITIVE": "the judge's own secret shapes (SENSITIVE_VALUES), joined for one first look",
    "server/tools.py:TOOL_NAME": "the MCP spec's tool-name grammar",
    "server/_server.py:_TEMPLATE_VARIABLE": "an RFC 6570 {variable} in a resource URI (a template, as FastMCP reads it)",
    "server/tools.py:self._pattern": "a tool's own inputSchema 'pattern' keyword",
    "probe/_report.py:_PLANTED": "the shape of the secret the probe itself plants",
    "probe/_arguments.py:_ABSOLUTE": "an absolute path in a listing (an argument the probe may reuse)",
    "probe/_arguments.py:_LISTED": "a listing's entry line ('[FILE] x', '- x')",
    "probe/_arguments.py:_REVISION": "a listing's revision line ('commit: 7b8fe62'): a value to reuse, no judgment",
    "probe/_arguments.py:_GIVEN": "the example a schema description gives ('e.g. \"UTC\"'): a value to send, no judgment",
}


def test_no_word_list_outside_the_judge() -> None:
    src = ROOT / "src" / "truecall"
    found = set()
    for path in src.rglob("*.py"):
        if path.parent.name == "judge":
            continue
        for m in re.finditer(r"^\s*([\w.]+)(?:: [^=]+)? = re\.compile\(", path.read_text("utf-8"), re.M):
            found.add(f"{path.relative_to(src).as_posix()}:{m.group(1)}")
    assert found <= set(STRUCTURAL), f"patterns outside the judge not listed as structure: {sorted(found - set(STRUCTURAL))}"
    assert "client/_errors.py:_UNKNOWN_TOOL" not in found and "probe/_rules.py:_TRACE" not in found

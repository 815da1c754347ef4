"""Write ``src/truecall/_schemas/results.json``: the definitions of the official MCP schemas
(``spec/<version>/schema.json``) that a tool, resource or prompt result is checked against before it
leaves (:mod:`truecall.server._wire_check`), with every definition they refer to, per version.

    python scripts/vendor_result_schemas.py          # rewrite the file
    python scripts/vendor_result_schemas.py --check  # exit 1 if it differs from what spec/ gives

The server cannot read ``spec/`` (an installed wheel has no repository); ``tests/server/test_wire_check.py``
runs ``--check`` so the packaged copy stays what the vendored schemas say.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
VERSIONS = ("2025-06-18", "2025-11-25", "2026-07-28")
ROOTS = ("CallToolResult", "ReadResourceResult", "GetPromptResult")
OUT = ROOT / "src" / "truecall" / "_schemas" / "results.json"


def _refs(node: Any, found: set[str]) -> None:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str):
            found.add(ref.rpartition("/")[2])
        for value in node.values():
            _refs(value, found)
    elif isinstance(node, list):
        for value in node:
            _refs(value, found)


def derive() -> dict[str, Any]:
    out: dict[str, Any] = {}
    for version in VERSIONS:
        schema = json.loads((ROOT / "spec" / version / "schema.json").read_text(encoding="utf-8"))
        key = "$defs" if "$defs" in schema else "definitions"
        defs = schema[key]
        keep: set[str] = set()
        todo = list(ROOTS)
        while todo:
            name = todo.pop()
            if name in keep:
                continue
            keep.add(name)
            found: set[str] = set()
            _refs(defs[name], found)
            todo.extend(found - keep)
        out[version] = {"$schema": schema.get("$schema"), "key": key, "defs": {k: defs[k] for k in sorted(keep)}}
    return out


def main(argv: list[str]) -> int:
    text = json.dumps(derive(), sort_keys=True, separators=(",", ":")) + "\n"
    if "--check" in argv:
        same = OUT.is_file() and OUT.read_text(encoding="utf-8") == text
        if not same:
            print(f"{OUT.relative_to(ROOT)} differs from spec/: run python scripts/vendor_result_schemas.py",
                  file=sys.stderr)
        return 0 if same else 1
    OUT.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

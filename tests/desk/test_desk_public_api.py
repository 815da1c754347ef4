"""The desk is built as a user's server would be: on truecall's public API only.

Read from the source with :mod:`ast` (imports inside functions too): every ``truecall`` module the
desk (``truecall.incidents``) imports is public — no part of its dotted name starts with ``_`` —
and so is every name it imports from one.  The desk's own modules (relative imports) are its
business.  A private name reached from the desk is a sign the public API lacks what a user's
server would need as well.
"""

from __future__ import annotations

import ast

from _paths import ROOT

DESK = ROOT / "src" / "truecall" / "incidents"


def _private_imports(source: str, name: str = "<source>") -> list[str]:
    found = []
    for node in ast.walk(ast.parse(source, name)):
        where = f"{name}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.Import):
            found += [f"{where} import {a.name}" for a in node.names
                      if a.name.split(".")[0] == "truecall" and any(p.startswith("_") for p in a.name.split("."))]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module \
                and node.module.split(".")[0] == "truecall":
            if any(p.startswith("_") for p in node.module.split(".")):
                found.append(f"{where} from {node.module}")
            else:
                found += [f"{where} {a.name} from {node.module}" for a in node.names if a.name.startswith("_")]
    return found


def test_the_desk_imports_only_public_truecall_names() -> None:
    files = sorted(DESK.glob("*.py"))
    assert len(files) > 5, files
    assert [use for path in files for use in _private_imports(path.read_text("utf-8"), path.name)] == []


def test_the_check_tells_private_from_public() -> None:
    source = ("from truecall.storage._at_rest import at_rest_for\n"
              "def f():\n    import truecall.storage._batched\n"
              "from truecall.storage import _hidden, open_database\n"
              "from truecall import Server\nimport truecall.storage\nfrom .tickets import _local\n")
    assert [use.split(" ", 1)[1] for use in _private_imports(source)] == [
        "from truecall.storage._at_rest", "_hidden from truecall.storage", "import truecall.storage._batched"]

"""``src/truecall`` uses no private name of CPython or of another library (issue 27).

A private name (``_asyncio``, ``sys._getframe``, ``from asyncio.tasks import _enter_task``) may change
or vanish in any release, and nothing warns before it does.  Read from the source with :mod:`ast`:
an absolute import of a module whose name (or any dotted part) starts with ``_``, a ``from … import
_name`` out of another package, and ``alias._name`` where ``alias`` is a module imported from outside
truecall.  ``ALLOWED`` names the exceptions with their reason.
"""

from __future__ import annotations

import ast
from pathlib import Path

from _paths import ROOT

PACKAGE = ROOT / "src" / "truecall"

#: (module, name): documented public API despite its underscore.
ALLOWED = {
    ("os", "_exit"),  # the documented way for a forked child to end without running the parent's cleanup
    ("__future__", "annotations"),
}


def _private(part: str) -> bool:
    return part.startswith("_") and not (part.startswith("__") and part.endswith("__"))


def findings(path: Path) -> list[str]:
    """Every use of another library's private name in one file, as ``line: what``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    aliases: dict[str, str] = {}  # a name bound to a module imported from outside truecall -> that module
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "truecall":
                    continue
                if any(_private(p) for p in alias.name.split(".")):
                    found.append(f"{node.lineno}: import {alias.name}")
                bound = alias.asname or alias.name.split(".")[0]  # ``import a.b`` binds ``a``; ``as x`` binds a.b
                aliases[bound] = alias.name if alias.asname else bound
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.split(".")[0] == "truecall":
                continue
            if any(_private(p) for p in node.module.split(".")):
                found.append(f"{node.lineno}: from {node.module} import …")
            for alias in node.names:
                if _private(alias.name) and (node.module, alias.name) not in ALLOWED:
                    found.append(f"{node.lineno}: from {node.module} import {alias.name}")
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases
                and _private(node.attr) and (aliases[node.value.id], node.attr) not in ALLOWED):
            found.append(f"{node.lineno}: {node.value.id}.{node.attr}")
    return found


def test_no_private_name_of_another_library() -> None:
    bad = [f"{path.relative_to(PACKAGE).as_posix()}:{line}" for path in sorted(PACKAGE.rglob("*.py"))
           for line in findings(path)]
    assert not bad, "private names of CPython or another library:\n" + "\n".join(bad)


def test_the_check_sees_each_kind(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text("import sys\nimport asyncio as aio\nfrom _asyncio import current_task\n"
                      "from asyncio.tasks import _enter_task\nimport os\n"
                      "x = sys._getframe(1)\ny = aio._get_running_loop()\nos._exit(0)\nz = sys.argv\n")
    assert findings(sample) == ["3: from _asyncio import …", "4: from asyncio.tasks import _enter_task",
                                "6: sys._getframe", "7: aio._get_running_loop"]

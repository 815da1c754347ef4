"""The HTTP transport stays an entry point over small private modules, one job each.

``transports/http.py`` routes; the work is in ``transports/_http_*.py``.  Each of those says its
job in a module docstring, no class of the transport grows past 250 lines, and the names callers
import from ``truecall.transports.http`` stay there.
"""

from __future__ import annotations

import ast

import pytest
from _paths import ROOT

TRANSPORTS = ROOT / "src" / "truecall" / "transports"
MODULES = [TRANSPORTS / "http.py", *sorted(TRANSPORTS.glob("_http_*.py"))]


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name)
def test_each_module_says_its_job_and_has_no_class_over_250_lines(path) -> None:
    tree = ast.parse(path.read_text())
    assert ast.get_docstring(tree), f"{path.name}: no module docstring"
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            size = node.end_lineno - node.lineno + 1
            assert size <= 250, f"{path.name}: class {node.name} is {size} lines"


def test_the_public_names_stay_importable_from_http() -> None:
    from truecall.transports import http

    for name in ("HttpTransport", "LOOPBACK_HOSTS", "BODY_FOLLOWS", "DISCONNECT_HOOK", "DisconnectHook",
                 "_until_disconnect"):
        assert hasattr(http, name), name

"""The client package keeps its shape (issue 14): a public facade over small private modules.

``Client`` is what users and the reference page see; the work lives in modules with one job
each (``_session`` pumps and correlates, ``_answers`` answers the server, ``_catalog`` keeps the
tool listing, ``_tasks`` drives tasks, ``_subscriptions`` keeps subscriptions, ``_connection`` /
``_state`` are the sans-IO core).  These checks fail when a class grows back into a god object,
when a module loses the docstring that says why it exists, or when a public method of ``Client``
moves off the class (mkdocstrings renders only what the class itself defines).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from truecall.client import Client

from _paths import ROOT

PACKAGE = ROOT / "src" / "truecall" / "client"
MODULES = sorted(PACKAGE.glob("*.py"))
#: No class in truecall.client longer than this (Client was 654 lines before the split).
MAX_CLASS_LINES = 250
PUBLIC = ["open", "aclose", "era", "version", "server_info", "server_capabilities", "instructions", "list_tools",
          "call", "task", "list_resources", "list_resource_templates", "read_resource", "subscribe", "unsubscribe",
          "list_prompts", "get_prompt", "complete", "request", "ping"]


@pytest.mark.parametrize("path", MODULES, ids=[p.name for p in MODULES])
def test_no_class_in_the_client_package_is_a_god_object(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    sizes = {node.name: node.end_lineno - node.lineno + 1 for node in ast.walk(tree)
             if isinstance(node, ast.ClassDef) and node.end_lineno is not None}
    assert {name: n for name, n in sizes.items() if n > MAX_CLASS_LINES} == {}


@pytest.mark.parametrize("path", MODULES, ids=[p.name for p in MODULES])
def test_every_client_module_says_why_it_exists(path: Path) -> None:
    docstring = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
    assert docstring and len(docstring.split()) >= 10, f"{path.name} needs a docstring that says its one job"


def test_the_public_methods_are_defined_on_client_itself() -> None:
    assert [name for name in PUBLIC if name not in vars(Client)] == []

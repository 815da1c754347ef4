"""Transports move bytes; what a message means is the engine's (issue 27, "one exchange").

Read from the source of every module under ``truecall/transports/`` (with ``ast``, not by running
it): no string constant is an MCP method name, no transport asks the tool registry or waits for the
audit trail itself (``Engine.serve`` does, once), and none sets a private attribute on an object
that is not its own (``tool._header_params`` was one).  What a transport must know before serving
comes from ``Engine.plan``; what it writes, from ``Engine.serve``.
"""

from __future__ import annotations

import ast
import pathlib

import pytest

import truecall.transports
from truecall.protocol import _exchange, engine, versions

#: Wherever the package puts them (its folder, not this test's: the transports may move).
TRANSPORTS = pathlib.Path(truecall.transports.__path__[0])
MODULES = sorted(TRANSPORTS.glob("*.py"))


def _handler_table() -> set[str]:
    """The methods of the engine's handler table (``self._handlers = {...}`` in ``Engine.__init__``),
    read from its source: every method the engine serves, whatever the version sets say."""
    tree = ast.parse(pathlib.Path(engine.__file__).read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Attribute) \
                and node.target.attr == "_handlers" and isinstance(node.value, ast.Dict):
            return {k.value for k in node.value.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}
    raise AssertionError("Engine._handlers not found in protocol/engine.py")


#: Every MCP method name the protocol package knows, requests and notifications.
METHODS = frozenset(_handler_table() | versions.MODERN_METHODS | versions.LEGACY_METHODS
                    | set(_exchange.NAMED_PARAMS) | _exchange.STREAMING_METHODS
                    | {"initialize", "subscriptions/listen", "notifications/cancelled", "notifications/initialized",
                       "notifications/progress", "notifications/message", "notifications/roots/list_changed"})


def _tree(path: pathlib.Path) -> ast.Module:
    return ast.parse(path.read_text(), str(path))


def test_the_method_list_is_the_protocols() -> None:
    """(The list the checks below use is not empty by accident: it holds what the engine serves.)"""
    assert {"tools/call", "initialize", "resources/read", "tasks/get", "subscriptions/listen"} <= METHODS
    assert len(MODULES) >= 5 and (TRANSPORTS / "stdio.py") in MODULES


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name)
def test_no_transport_reads_a_method_name(path: pathlib.Path) -> None:
    found = [(node.lineno, node.value) for node in ast.walk(_tree(path))
             if isinstance(node, ast.Constant) and isinstance(node.value, str)
             and (node.value in METHODS or node.value.startswith("notifications/"))]
    assert not found, f"{path.name} names MCP methods (ask Engine.plan instead): {found}"


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name)
def test_no_transport_asks_the_registry_or_waits_for_the_trail_itself(path: pathlib.Path) -> None:
    found = []
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.Attribute) and node.attr in (
                "registry", "answered_at_once", "release", "handle_with_status", "durable"):
            found.append((node.lineno, node.attr))
    assert not found, (f"{path.name} reads the tool registry or releases an answer itself "
                       f"(Engine.plan / Engine.serve / Engine.refused do): {found}")


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name)
def test_no_transport_sets_private_attributes_of_objects_not_its_own(path: pathlib.Path) -> None:
    found = []
    for node in ast.walk(_tree(path)):
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else []
        for target in targets:
            if isinstance(target, ast.Attribute) and target.attr.startswith("_") \
                    and not (isinstance(target.value, ast.Name) and target.value.id in ("self", "cls")):
                found.append((target.lineno, ast.unparse(target)))
    assert not found, f"{path.name} sets another object's private attribute: {found}"

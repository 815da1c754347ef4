"""The module paths truecall had before its layout by layer (issue 27) still import, with a warning.

The root's public API did not move (``from truecall import Server, redact`` is what it was); the
modules behind it did.  An old public path gives the very module it names now, after a
:class:`DeprecationWarning` that says where that is::

    truecall.oauth       → truecall.auth.oauth       truecall.tools    → truecall.server.tools
    truecall.ratelimit   → truecall.auth.ratelimit   truecall.context  → truecall.server.context
    truecall.redact      → truecall.audit.redaction  truecall.serving  → truecall.cli.serving
    truecall.tasks.store → truecall.tasks.task_store

``truecall.audit``, ``truecall.auth``, ``truecall.server`` and ``truecall.cli`` were modules and are
packages of the same name: each exports what the module exported, and a public name the module had
besides (``truecall.audit.LOAD_DELAY_S``, ``truecall.cli.main``) is still read through it, with the
warning (:func:`forward`).

``truecall.redact`` is special: at the root it is the function :func:`truecall.redact`, and always
was (``from .redact import redact`` rebound the name after the module was loaded).  An import of the
old module by the import system would set the root's ``redact`` to the module; so its stand-in is in
``sys.modules`` from the start (no import ever runs for it) and reads each attribute from the new
module, with the warning.  ``import truecall.redact as r`` gives the function, as before.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import sys
import warnings
from types import ModuleType
from typing import TYPE_CHECKING, Callable, Sequence, cast

if TYPE_CHECKING:
    from importlib.abc import Loader

#: An old public module → where it lives now.
MOVED: dict[str, str] = {
    "truecall.oauth": "truecall.auth.oauth",
    "truecall.ratelimit": "truecall.auth.ratelimit",
    "truecall.redact": "truecall.audit.redaction",
    "truecall.serving": "truecall.cli.serving",
    "truecall.tools": "truecall.server.tools",
    "truecall.context": "truecall.server.context",
    "truecall.tasks.store": "truecall.tasks.task_store",
}

#: Old modules whose last name is also a name of their package that is not the module (the root's
#: ``redact`` function): kept in ``sys.modules`` as a stand-in, so that no import rebinds that name.
_SHADOWED = ("truecall.redact",)


def _moved(old: str, new: str) -> None:
    warnings.warn(f"{old} moved to {new} (issue 27's layout); the old path will be removed in a later release",
                  DeprecationWarning, stacklevel=3)


# (The finder and the loader are plain classes, as the import system allows: ``importlib.abc``
# would import ``importlib.resources`` and ``tempfile`` with it, ~5 ms of every ``import truecall``.)

class _Finder:
    """Finds an old module path (after every other finder found nothing there)."""

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname not in MOVED or fullname in _SHADOWED:
            return None
        return importlib.machinery.ModuleSpec(fullname, cast("Loader", _Loader()))  # (what a Loader does)


class _Loader:
    """Puts the new module in ``sys.modules`` under the old name: the import system returns it."""

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> None:
        return None  # a placeholder, replaced by exec_module

    def exec_module(self, module: ModuleType) -> None:
        old = module.__name__
        new = MOVED[old]
        _moved(old, new)
        sys.modules[old] = importlib.import_module(new)


class _StandIn(ModuleType):
    """An old module whose name is shadowed in its package: each attribute from the new module."""

    def __init__(self, old: str, new: str) -> None:
        super().__init__(old, f"{old} moved to {new}")
        self.__new = new

    def __getattr__(self, name: str) -> object:
        if name.startswith("__"):
            raise AttributeError(name)
        _moved(self.__name__, self.__new)
        return getattr(importlib.import_module(self.__new), name)


def install() -> None:
    """Make the old paths importable (once per process)."""
    if not any(isinstance(finder, _Finder) for finder in sys.meta_path):
        sys.meta_path.append(_Finder())
    for old in _SHADOWED:
        sys.modules.setdefault(old, _StandIn(old, MOVED[old]))


def forward(package: str, home: str, exported: Sequence[str]) -> Callable[[str], object]:
    """A package's ``__getattr__``: a public name its old module had besides ``exported``
    (``truecall.audit.LOAD_DELAY_S``), read from ``home`` with the warning."""

    def __getattr__(name: str) -> object:
        if name.startswith("_") or name in exported or importlib.util.find_spec(f"{package}.{name}") is not None:
            # (a submodule not imported yet: ``from truecall.cli import serving`` imports it next)
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module = importlib.import_module(home)
        try:
            value = getattr(module, name)
        except AttributeError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        _moved(f"{package}.{name}", f"{home}.{name}")
        return value

    return __getattr__

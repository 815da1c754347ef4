"""The package's rooms (issue 27, "rooms a newcomer can read"): a few modules at the root, one package
per layer, one file per name; the public API where it was, the old module paths still importable.

The layout is docs/guide/repository.md's tree; ``truecall._aliases`` keeps the paths of before.
"""

from __future__ import annotations

import importlib
import subprocess
import sys
import warnings

import pytest

import truecall
from truecall import _aliases
from _paths import ROOT

SRC = ROOT / "src" / "truecall"

#: ``truecall.__all__`` as it was before the layout by layer (captured from the root then).
PUBLIC_BEFORE = {
    "Audio", "Context", "FastMCP", "File", "Image", "MCPServer", "Accept", "Accepted", "Cancel", "Cancelled",
    "Client", "ClientStateError", "ConnectionLost", "Decline", "Done", "Failed", "FormRequest", "NotSent",
    "Outcome", "Unconfirmed", "Unknown", "UrlRequest", "AccessDenied", "ClaimNames", "FormError",
    "JWTVerifier", "ProtectedResource", "RateLimit", "RegistrationError", "check_form", "check_url",
    "AuditLog", "ServerNotStarted", "AuditRecord", "Database", "ElicitAction", "Elicitation",
    "ElicitationRefused", "ElicitationUnavailable", "ErrorKind", "HeaderMismatch", "InputRequired",
    "InsufficientScope", "InternalError", "InvalidCredential", "InvalidParams", "InvalidRequest",
    "InvalidTransition", "LeaseLost", "LocaleError", "MISSING_INPUT_TEXT", "MethodNotFound",
    "MissingCapability", "NotFound", "ParseError", "Peer", "Principal", "Prompt", "ProtocolError",
    "ServiceUnavailable", "Resource", "ResourceTemplate", "SchemaError", "Server", "SettingError",
    "StaticTokens", "Storage", "Task", "TaskInputInvalid", "TaskNotFound", "TaskRequired", "TaskStatus",
    "TaskStore", "TenantMismatch", "TokenVerifier", "Tool", "ToolContext", "ToolError", "ToolResult",
    "UnknownTool", "UnsupportedVersion", "Validator", "audio", "current_locale", "describe",
    "embedded_resource", "hash_token", "image", "new_token", "redact", "redact_text", "resource_link", "say",
    "text", "tool_error",
}

#: The packages by layer, each with what its ``__init__`` docstring says it owns.
PACKAGES = ("server", "audit", "auth", "cli", "storage", "transports", "protocol", "tasks", "client", "judge",
            "probe", "incidents")


def test_the_root_api_is_what_it_was() -> None:
    assert len(truecall.__all__) == len(set(truecall.__all__)) == len(PUBLIC_BEFORE)
    assert set(truecall.__all__) == PUBLIC_BEFORE
    for name in truecall.__all__:
        assert getattr(truecall, name) is not None, name


def test_a_few_modules_at_the_root_and_every_package_says_what_it_owns() -> None:
    root = sorted(p.name for p in SRC.glob("*.py"))
    assert len(root) <= 15, root
    for name in PACKAGES:
        doc = importlib.import_module(f"truecall.{name}").__doc__
        assert doc and len(doc.split()) >= 5, name
    packages = {p.parent.name for p in SRC.glob("*/__init__.py")}
    assert packages == set(PACKAGES), packages


def test_no_two_modules_share_a_file_name() -> None:
    names = [p.name for p in SRC.rglob("*.py") if p.name not in ("__init__.py", "__main__.py")]
    assert len(names) == len(set(names)), sorted({n for n in names if names.count(n) > 1})


def test_the_tests_mirror_the_packages() -> None:
    for name in ("server", "audit", "auth", "cli", "storage", "transports", "protocol", "tasks", "client"):
        assert list((ROOT / "tests" / name).glob("test_*.py")), name


@pytest.mark.parametrize("old", sorted(set(_aliases.MOVED) - set(_aliases._SHADOWED)))
def test_an_old_module_path_gives_the_new_module_with_a_warning(old: str) -> None:
    new = _aliases.MOVED[old]
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=f"{old} moved to {new}"):
        module = importlib.import_module(old)
    assert module is importlib.import_module(new)
    for name in (n for n in vars(module) if not n.startswith("_")):
        assert getattr(module, name) is getattr(importlib.import_module(new), name)


def test_truecall_redact_is_still_the_function_and_its_module_still_reads() -> None:
    """At the root ``redact`` is the function (it always was: the name was rebound after its module
    loaded); importing the old module path never makes it the module."""
    from truecall.audit import redaction

    import truecall.redact as imported  # noqa: F401 (the old spelling: getattr(truecall, "redact"))

    assert imported is truecall.redact is redaction.redact
    from truecall import redact

    assert redact is redaction.redact
    with pytest.warns(DeprecationWarning, match="truecall.redact moved to truecall.audit.redaction"):
        from truecall.redact import is_sensitive_name, redact_text
    assert redact_text is truecall.redact_text and is_sensitive_name is redaction.is_sensitive_name
    assert truecall.redact is redaction.redact


def test_a_module_that_became_a_package_exports_what_it_did() -> None:
    import truecall.audit
    import truecall.auth
    import truecall.server

    assert truecall.server.Server is truecall.Server and truecall.audit.AuditLog is truecall.AuditLog
    assert truecall.auth.Principal is truecall.Principal
    with pytest.warns(DeprecationWarning, match="truecall.audit.LOAD_DELAY_S moved"):
        assert truecall.audit.LOAD_DELAY_S > 0
    with pytest.warns(DeprecationWarning, match="truecall.server.Tool moved"):
        assert truecall.server.Tool is truecall.Tool
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        from truecall.audit import AuditRecord  # an export: no warning
        from truecall.server import tools  # a submodule: no warning, not read through the module
    assert AuditRecord is truecall.AuditRecord and tools.Tool is truecall.Tool
    with pytest.raises(AttributeError):
        truecall.audit.no_such_name  # noqa: B018


def test_the_cli_package_loads_no_command_framework_until_a_command_runs() -> None:
    code = ("import sys, warnings; warnings.simplefilter('error'); import truecall.cli, truecall.cli.serving; "
            "assert 'typer' not in sys.modules and 'truecall.cli._commands' not in sys.modules; "
            "warnings.simplefilter('ignore'); truecall.cli.main; assert 'typer' in sys.modules")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    help_ = subprocess.run([sys.executable, "-m", "truecall.cli", "--help"], capture_output=True, text=True,
                           timeout=60)
    assert help_.returncode == 0 and "serve" in help_.stdout, help_.stderr


def test_the_old_paths_cost_import_truecall_no_module_of_importlib_abc() -> None:
    """The aliases' finder and loader are plain classes: subclassing ``importlib.abc``'s would import
    ``importlib.resources`` (and ``tempfile``, ``zipfile``…) with every ``import truecall``, ~5 ms
    measured with ``-X importtime``."""
    probe = "import sys, truecall; print(sorted(m for m in ('importlib.abc', 'importlib.resources') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]", out

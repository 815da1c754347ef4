"""``truecall config``: the ``mcpServers`` entry a desktop assistant starts a server with.

Written into the assistant's configuration file (Claude Desktop's by default, the file FastMCP's
``fastmcp install claude-desktop`` writes) or printed.  The entry runs this ``truecall`` with
absolute paths, so the assistant finds the same interpreter and the same file whatever folder it
starts in.  Other servers in the file are kept; the file is replaced whole (written beside, then
renamed), so an assistant reading it never sees half of it.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

from .._misuse import SettingError

__all__ = ["entry_for", "default_config_path", "write_entry"]


def default_config_path() -> Path:
    """Claude Desktop's configuration file on this system."""
    home = Path.home()
    if sys.platform == "darwin":
        return home / "Library" / "Application Support" / "Claude" / "claude_desktop_config.json"
    if sys.platform == "win32":
        return Path(os.environ.get("APPDATA", home)) / "Claude" / "claude_desktop_config.json"
    return Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config") / "Claude" / "claude_desktop_config.json"


def _truecall_command() -> str:
    here = Path(sys.executable).parent / ("truecall.exe" if sys.platform == "win32" else "truecall")
    return str(here) if here.is_file() else (shutil.which("truecall") or str(here))


def entry_for(app: str | None, env: dict[str, str]) -> dict[str, Any]:
    """The ``mcpServers`` entry that serves ``app`` over stdio (``None``: the incident desk)."""
    args = ["serve"]
    if app:
        target, sep, attr = app.partition(":")
        if target.endswith(".py") or "/" in target or os.sep in target:
            target = str(Path(target).resolve())
        args.append(f"{target}{sep}{attr}")
    entry: dict[str, Any] = {"command": _truecall_command(), "args": args}
    if env:
        entry["env"] = dict(env)
    return entry


def parse_env(pairs: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise SettingError(f"--env takes NAME=VALUE, not {pair!r}")
        out[name] = value
    return out


def write_entry(path: Path, name: str, entry: dict[str, Any]) -> bool:
    """Set ``mcpServers[name]`` in the JSON file at ``path`` (made if missing); whether an entry of
    that name was replaced."""
    config: Any = {}
    if path.exists():
        try:
            config = json.loads(path.read_text(encoding="utf-8") or "{}")
        except json.JSONDecodeError as exc:
            raise SettingError(f"--file {path}: not JSON ({exc}); fix or move it first") from None
        if not isinstance(config, dict):
            raise SettingError(f"--file {path}: not a JSON object")
    servers = config.setdefault("mcpServers", {})
    if not isinstance(servers, dict):
        raise SettingError(f"--file {path}: its mcpServers is not an object")
    replaced = name in servers
    servers[name] = entry
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".tmp")
    partial.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    os.replace(partial, path)
    return replaced

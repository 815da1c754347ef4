"""Arguments for a tool: made from its input schema (defaults, enums, examples, formats, the examples its
descriptions give), from values the caller supplied, and from what other read-only tools returned (a
listed directory, a listed file, a stored name or id) — so that the calls reach the tool's success path
rather than only its refusals. Also the deliberately wrong ones."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, TypeVar

import orjson

T = TypeVar("T")

#: A URL the probe may send anywhere: loopback, the discard port (a fetching tool must never be pointed
#: at a third party by a probe; a caller who wants a success path names a URL with ``values``).
_LOOPBACK_URL = "http://127.0.0.1:9/"
_FORMATS = {"email": "probe@example.com", "uri": _LOOPBACK_URL, "url": _LOOPBACK_URL, "uri-reference": "/",
            "date": "2026-01-01", "date-time": "2026-01-01T00:00:00Z", "time": "12:00:00",
            "uuid": "00000000-0000-4000-8000-000000000000", "ipv4": "127.0.0.1", "hostname": "localhost"}
#: The example a description gives: "(e.g., 'America/New_York', ...)", "such as `main`".
_GIVEN = re.compile(r"(?:e\.g\.,?|for example,?|such as|like)\s*[:(]?\s*['\"`‘“]([^'\"`’”\n]{1,80})['\"`’”]|"
                    r"\(\s*['\"`]([^'\"`\n]{1,40})['\"`]\s*\)", re.I)
#: A layout a description names: "in 24-hour format (HH:MM)".
_LAYOUTS = (("HH:MM:SS", "12:00:00"), ("HH:MM", "12:00"), ("YYYY-MM-DD", "2026-01-01"))
_ABSOLUTE = re.compile(r"(?<![\w.])/[\w.@+-]+(?:/[\w.@+ -]*[\w.@+-])*")
_PROGRAMS = (".js", ".mjs", ".cjs", ".ts", ".py", ".pyz", ".jar", ".rb", ".sh")
_LISTED = re.compile(r"^\s*(?:\[[A-Z]+\]|[-*])\s*(.+?)\s*$", re.M)
#: A revision a listing names ("Commit: 7b8fe626…", "sha: …"): what a tool that takes one can be given.
_REVISION = re.compile(r"^\s*(?:commit|sha|hash|revision)\s*[:=]?\s*([0-9a-f]{7,64})\b", re.I | re.M)


@dataclass
class Seen:
    """Values the probe may use, and the paths it may not call internal: what the caller supplied (the
    command line, ``values``) and what the server's own read-only tools returned."""

    values: dict[str, Any] = field(default_factory=dict)  # argument name -> the caller's value
    dirs: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    ids: list[str] = field(default_factory=list)
    revisions: list[str] = field(default_factory=list)
    known: set[str] = field(default_factory=set)  # supplied or advertised: never an internal leak

    def add(self, kind: list[str], value: str) -> None:
        if value not in kind and len(kind) < 50:
            kind.append(value)

    def supplied(self, args: Iterable[str]) -> None:
        """The caller's command line: every existing path in it is the caller's (``--repository /x``)."""
        for arg in args:
            value = arg.split("=", 1)[1] if arg.startswith("--") and "=" in arg else arg
            if value.startswith("-") or not value:
                continue
            path = os.path.abspath(value) if os.sep in value or value in (".", "..") else value
            if os.path.isdir(path):
                self.add(self.dirs, path)
                self.known.add(path)
            elif os.path.isfile(path):
                self.known.add(path)
                if not path.endswith(_PROGRAMS):  # ``node server.js``: the program, not its data
                    self.add(self.files, path)

    def harvest(self, result: dict[str, Any], arguments: dict[str, Any]) -> None:
        """What a read-only tool's success result lists: absolute paths, entries of a listed directory
        (joined to the directory the call named), names and ids in its JSON."""
        chunks = [b["text"] for b in result.get("content") or [] if isinstance(b, dict)
                  and isinstance(b.get("text"), str)]
        data: list[Any] = [result.get("structuredContent")]
        for chunk in chunks:
            try:
                data.append(orjson.loads(chunk))
            except orjson.JSONDecodeError:
                pass
        text = "\n".join(chunks)
        for found in _ABSOLUTE.finditer(text):
            self._path(found.group(0).strip())
        base = [v for v in arguments.values() if isinstance(v, str) and os.path.isdir(v)]
        for found in _LISTED.finditer(text):
            for root in base:
                self._path(os.path.join(root, found.group(1)))
        for item in data:
            self._walk(item, base, 0)
        for found in _REVISION.finditer(text):
            self.add(self.revisions, found.group(1))

    def _path(self, path: str) -> None:
        self.known.add(path)
        if os.path.isdir(path):
            self.add(self.dirs, path)
        elif os.path.isfile(path):
            self.add(self.files, path)

    def _walk(self, value: Any, base: list[str], depth: int) -> None:
        if depth > 8:
            return
        if isinstance(value, list):
            for item in value[:100]:
                self._walk(item, base, depth + 1)
        elif isinstance(value, dict):
            for key, item in list(value.items())[:100]:
                low = key.lower()
                if isinstance(item, str) and item:
                    if low == "name" or low == "title":
                        self.add(self.names, item)
                        for root in base:
                            self._path(os.path.join(root, item))
                    elif low == "id" or low.endswith("_id") or key.endswith("Id"):
                        self.add(self.ids, item)
                    elif item.startswith("/"):
                        self._path(item)
                else:
                    self._walk(item, base, depth + 1)

    def pick(self, name: str, tool: str) -> Any:
        """A value for an argument called ``name`` of ``tool`` from what was supplied or seen, or None."""
        if name in self.values:
            return self.values[name]
        low, verb = name.lower(), tool.lower()
        if low in ("revision", "rev", "commit", "sha", "ref", "target", "base", "head"):
            order = [self.revisions]
        elif any(w in low for w in ("dir", "folder", "repo", "root", "cwd")) or (
                "path" in low and any(w in verb for w in ("search", "list", "tree", "find", "glob"))):
            order = [self.dirs, self.files]
        elif "file" in low or (low in ("path", "paths", "source") and any(w in verb for w in (
                "read", "file", "info", "media", "open", "cat", "head", "tail"))):
            order = [self.files, self.dirs]
        elif "path" in low:
            order = [self.dirs, self.files]
        elif low in ("id", "ids") or low.endswith(("_id", "_ids")) or name.endswith(("Id", "Ids")):
            order = [self.ids]
        elif any(w in low for w in ("name", "entity", "node", "query", "search", "keyword", "term")):
            order = [self.names]
        else:
            return None
        return next((kind[0] for kind in order if kind), None)


def _of(data: dict[str, Any], key: str, kind: type[T], default: T) -> T:
    """``data[key]`` when it is a ``kind``, else ``default``: what a server sent is never trusted to
    have the shape the schema gives it."""
    value = data.get(key)
    return value if isinstance(value, kind) else default


def example(schema: Any, depth: int = 0, *, name: str = "", tool: str = "", seen: Seen | None = None) -> Any:
    """A plausible value for ``schema`` (required properties only; the first of any choice): the
    schema's own const, default, enum or examples first, then what the caller supplied or other tools
    returned for an argument of this name, then a description's example, then a format's."""
    if not isinstance(schema, dict) or depth > 6:
        return "probe"
    if seen is not None and name in seen.values:
        return seen.values[name]
    for key in ("const", "default"):
        if key in schema:
            return schema[key]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    if isinstance(schema.get("examples"), list) and schema["examples"]:
        return schema["examples"][0]
    for key in ("anyOf", "oneOf", "allOf"):
        if isinstance(schema.get(key), list) and schema[key]:
            options = [s for s in schema[key] if not (isinstance(s, dict) and s.get("type") == "null")]
            return example((options or schema[key])[0], depth + 1, name=name, tool=tool, seen=seen)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    picked = seen.pick(name, tool) if seen is not None and name else None
    if kind == "object" or (kind is None and "properties" in schema):
        props = _of(schema, "properties", dict, {})
        required = _of(schema, "required", list, [])
        return {key: example(props.get(key), depth + 1, name=key, tool=tool, seen=seen)
                for key in required if isinstance(key, str)}
    if kind == "array":
        count = max(_of(schema, "minItems", int, 0), 1 if picked is not None else 0)
        if picked is not None and not isinstance(picked, list):
            return [picked] * min(count, 3)
        return [example(schema.get("items"), depth + 1, name=name, tool=tool, seen=seen) for _ in range(min(count, 3))]
    if kind in ("integer", "number"):
        if isinstance(picked, (int, float)) and not isinstance(picked, bool):
            return picked
        low = schema.get("minimum", schema.get("exclusiveMinimum"))
        value = low + (1 if "exclusiveMinimum" in schema and "minimum" not in schema else 0) \
            if isinstance(low, (int, float)) and not isinstance(low, bool) else 1
        return int(value) if kind == "integer" else value
    if kind == "boolean":
        return picked if isinstance(picked, bool) else False
    if kind == "null":
        return None
    if isinstance(picked, str):
        return picked
    return _text(schema)


def _text(schema: dict[str, Any]) -> str:
    description = _of(schema, "description", str, "")
    fmt = schema.get("format")
    text = _FORMATS.get(fmt) if isinstance(fmt, str) else None
    if text is None:
        given = _GIVEN.search(description)
        layout = next((v for k, v in _LAYOUTS if k in description), None)
        text = (given.group(1) or given.group(2)).strip() if given else layout or "probe"
    low = schema.get("minLength")
    if isinstance(low, int) and len(text) < low:
        text = text + "x" * (low - len(text))
    return text


def _wrong(value: Any) -> Any:
    """A value of another JSON type than ``value``'s."""
    if isinstance(value, str):
        return 12345
    return "not-a-" + type(value).__name__ if not isinstance(value, bool) else "yes"

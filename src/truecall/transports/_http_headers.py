"""The header rules of a POST: media types, and the routing headers each protocol era requires.

- ``Content-Type``/``Accept`` (415/406), judged once per distinct value and remembered.
- 2026-07-28: ``MCP-Protocol-Version``, ``Mcp-Method``, ``Mcp-Name`` and ``Mcp-Param-*`` must be
  present and match the body (``=?base64?…?=`` values decoded strictly).  Which parameter names a
  request's target (``protocol.named_param``) and which arguments a tool repeats in headers
  (:meth:`Engine.header_params`) are MCP: asked, not known here.
- A handshake-era session: an ``MCP-Protocol-Version`` header must name the negotiated version.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any, Sequence

from ..errors import HeaderMismatch, InvalidRequest
from ..protocol import jsonrpc, named_param
from ..protocol.engine import Engine, Session
from ..protocol.jsonrpc import Incoming
from ..protocol.versions import META_VERSION
from ._http_wire import HttpError, remember

_B64 = re.compile(r"^=\?base64\?([A-Za-z0-9+/]*={0,2})\?=$")
#: What the official SDK clients send as Accept on a POST (compared first, as is).
CLIENTS_ACCEPT = "application/json, text/event-stream"
NEITHER, JSON_OK, SSE_ONLY = "neither", "json", "sse only"


class HeaderChecks:
    """The checks above, with their per-value caches."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.content_types: dict[str, bool] = {}  # Content-Type value -> is JSON
        self.accepts: dict[str, str] = {}  # Accept value -> which answers it allows (_accepted_answers)

    def check_media(self, headers: dict[str, str], id: Any) -> None:
        """A POST body is JSON (else 415) and its answer must be JSON or SSE (else 406).

        What real clients send (the official SDKs, the conformance suite) costs one comparison
        each: ``application/json`` and ``application/json, text/event-stream``; other values are
        judged once and remembered.  A missing ``Accept`` accepts anything (RFC 9110); a missing
        ``Content-Type`` is taken as JSON (the body must parse as JSON anyway)."""
        content_type = headers.get("content-type")
        if content_type is not None and content_type != "application/json":
            ok = self.content_types.get(content_type)
            if ok is None:
                ok = _is_json_type(content_type)
                remember(self.content_types, content_type, ok)
            if not ok:
                raise HttpError(415, InvalidRequest("Content-Type must be application/json"), id)
        accept = headers.get("accept")
        if accept is not None and accept != CLIENTS_ACCEPT:
            verdict = self.accepts.get(accept)
            if verdict is None:
                verdict = _accepted_answers(accept)
                remember(self.accepts, accept, verdict)
            if verdict == NEITHER:
                raise HttpError(406, InvalidRequest("Accept must allow application/json or text/event-stream"), id)

    def check_modern_headers(self, message: Incoming, headers: dict[str, str]) -> None:
        """2026-07-28: the routing headers must be present and match the body."""
        header_version = headers.get("mcp-protocol-version")
        if header_version is None:
            raise HttpError(400, HeaderMismatch("Missing MCP-Protocol-Version header"), message.id)
        meta = (message.params or {}).get("_meta")
        body_version = meta.get(META_VERSION) if isinstance(meta, dict) else None
        if body_version is not None and body_version != header_version.strip():
            raise HttpError(400, HeaderMismatch("MCP-Protocol-Version header does not match _meta"), message.id)
        if message.kind != jsonrpc.REQUEST or message.method not in self.engine.modern_methods:
            return  # unknown methods get -32601 from the engine
        method_header = headers.get("mcp-method")
        if method_header is None or method_header.strip() != message.method:
            raise HttpError(400, HeaderMismatch("Mcp-Method header does not match the request"), message.id)
        field = named_param(message.method)
        params = message.params or {}
        if field is not None:
            name_header = headers.get("mcp-name")
            try:
                ok = name_header is not None and _decode_header_value(name_header) == params.get(field)
            except HeaderMismatch:
                ok = False
            if not ok:
                raise HttpError(400, HeaderMismatch(f"Mcp-Name header does not match params.{field}"), message.id)
        pairs = self.engine.header_params(message)
        if pairs:
            self._check_param_headers(message, params, headers, pairs)

    def _check_param_headers(self, message: Incoming, params: dict[str, Any], headers: dict[str, str],
                             pairs: Sequence[tuple[str, str]]) -> None:
        arguments = params.get("arguments") or {}
        if not isinstance(arguments, dict):
            return
        for prop, suffix in pairs:
            value = arguments.get(prop)
            if value is None:
                continue
            raw = headers.get(f"mcp-param-{suffix.lower()}")
            try:
                ok = raw is not None and _decode_header_value(raw) == _param_text(value)
            except HeaderMismatch:
                ok = False
            if not ok:
                raise HttpError(400, HeaderMismatch(f"Mcp-Param-{suffix} header does not match the argument"),
                                message.id)


def check_legacy_version(headers: dict[str, str], session: Session, id: Any) -> None:
    """On an established session, an ``MCP-Protocol-Version`` header must name the negotiated
    version (transport spec: an invalid or unsupported one is answered 400).  No header at all
    is allowed: clients of 2025-03-26 and before send none."""
    version = headers.get("mcp-protocol-version")
    if version is not None and version.strip() != session.version:
        raise HttpError(400, InvalidRequest(
            f"MCP-Protocol-Version header does not match this session's version {session.version}"), id)


def _decode_header_value(value: str) -> str:
    """Header values: trim optional whitespace, decode ``=?base64?…?=`` strictly."""
    value = value.strip(" \t")
    if value.startswith("=?base64?") and value.endswith("?="):
        m = _B64.match(value)
        if not m or len(m.group(1)) % 4:
            raise HeaderMismatch("Malformed base64 header value")
        try:
            return base64.b64decode(m.group(1), validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            raise HeaderMismatch("Malformed base64 header value") from None
    return value


def _param_text(value: Any) -> str | None:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, str):
        return value
    return None


def _is_json_type(value: str) -> bool:
    """``application/json`` with any parameters (``; charset=utf-8``), any case."""
    return value.split(";", 1)[0].strip().lower() == "application/json"


def _accepted_answers(value: str) -> str:
    """What an Accept header allows of truecall's two answer types: a JSON answer (``JSON_OK``;
    an SSE stream too, when it lists that), only an SSE stream (``SSE_ONLY``), or neither
    (``NEITHER``: 406).  Wildcards count; a media range with ``q=0`` excludes."""
    json_ok = sse_ok = False
    for item in value.split(","):
        media, *params = item.split(";")
        media = media.strip().lower()
        if media not in ("application/json", "text/event-stream", "*/*", "application/*", "text/*"):
            continue
        refused = False
        for param in params:
            name, _, q = param.partition("=")
            if name.strip().lower() == "q":
                try:
                    refused = float(q.strip()) <= 0
                except ValueError:
                    refused = False
        if refused:
            continue
        if media in ("application/json", "*/*", "application/*"):
            json_ok = True
        if media in ("text/event-stream", "*/*", "text/*"):
            sse_ok = True
    return JSON_OK if json_ok else SSE_ONLY if sse_ok else NEITHER


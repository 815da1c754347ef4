"""Streamable HTTP: one POST per message, answers as JSON or as an SSE stream.

httpx is imported here only, so ``import truecall`` (a server) never loads it.
Routing headers follow the era: 2026-07-28 requests carry ``MCP-Protocol-Version``,
``Mcp-Method``, ``Mcp-Name`` and ``Mcp-Param-*`` (for arguments the tool marks with
``x-mcp-header``); handshake-era requests carry the negotiated version and
``Mcp-Session-Id``.  An HTTP failure without a JSON-RPC body (a 401 from a gateway,
a 403 naming the scope to step up to) becomes the matching JSON-RPC error, so the
caller gets the same typed exception whoever refused — except a 500/502/503/504 without
one after a request left (other than the negotiation): the request reached something
that did not say what happened, so it is a loss (``_silence``: a tool call ends
``Unknown``), never "retry later".  A server that says itself that nothing happened
answers with a JSON-RPC error, and that answer is delivered as it is.
"""

from __future__ import annotations

import asyncio
import base64
import re
from typing import Any, Callable, Mapping

import httpx
import orjson

from ..errors import (InsufficientScope, InternalError, InvalidCredential, InvalidRequest, MethodNotFound,
                      ProtocolError, ServiceUnavailable)
from ..protocol import jsonrpc
from ..protocol.versions import META_VERSION
from ._silence import gateway_loss
from ._transport import Lost, Receive, TransportHooks

__all__ = ["HttpTransport"]

_NAME_FIELD = {"tools/call": "name", "resources/read": "uri", "prompts/get": "name", "tasks/get": "taskId",
               "tasks/update": "taskId", "tasks/cancel": "taskId"}
_SCOPE = re.compile(r'scope="([^"]*)"')
#: Requests whose failure cannot have done anything: a bare 5xx for them stays a typed error.
_NEGOTIATION = frozenset({"server/discover", "initialize"})


def header_value(value: str) -> str:
    """A header-safe value: printable ASCII as is, anything else as ``=?base64?…?=``."""
    if value.isascii() and value.isprintable() and value == value.strip():
        return value
    return "=?base64?" + base64.b64encode(value.encode()).decode() + "?="


class HttpTransport(TransportHooks):
    def __init__(self, url: str, *, token: str | None = None, headers: Mapping[str, str] | None = None,
                 http_client: httpx.AsyncClient | None = None, connect_timeout: float = 10.0) -> None:
        self.url = url
        self.base_headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
        if headers:
            self.base_headers.update({k.lower(): v for k, v in headers.items()})
        if token is not None:
            self.base_headers["authorization"] = f"Bearer {token}"
        self._client = http_client
        self._owns_client = http_client is None
        self._connect_timeout = connect_timeout
        self.session_id: str | None = None
        #: The negotiated handshake-era version (from :meth:`agreed`).
        self.legacy_version: str | None = None
        #: ``(tool name, arguments) -> {suffix: value}`` for ``Mcp-Param-*`` headers.
        self.param_headers: Callable[[str, Any], dict[str, str]] = lambda name, args: {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._by_id: dict[Any, asyncio.Task[None]] = {}
        self._receive: Receive | None = None
        self._lost: Lost | None = None

    def agreed(self, version: str, era: str) -> None:
        if era == "legacy":  # every later message of the session names it in MCP-Protocol-Version
            self.legacy_version = version

    def use_param_headers(self, make: Callable[[str, Any], dict[str, str]]) -> None:
        self.param_headers = make

    async def open(self, receive: Receive, lost: Lost) -> None:
        self._receive, self._lost = receive, lost
        if self._client is None:
            self._client = httpx.AsyncClient(timeout=httpx.Timeout(None, connect=self._connect_timeout))

    def _headers(self, message: dict[str, Any]) -> dict[str, str]:
        headers = dict(self.base_headers)
        params = message.get("params")
        params = params if isinstance(params, dict) else {}
        meta = params.get("_meta")
        version = meta.get(META_VERSION) if isinstance(meta, dict) else None
        method = message.get("method")
        if isinstance(version, str):  # 2026-07-28: stateless, routed by headers
            headers["mcp-protocol-version"] = version
            if isinstance(method, str):
                headers["mcp-method"] = method
                field = _NAME_FIELD.get(method)
                if field is not None and isinstance(params.get(field), str):
                    headers["mcp-name"] = header_value(params[field])
                if method == "tools/call":
                    for suffix, value in self.param_headers(params.get("name", ""), params.get("arguments")).items():
                        headers[f"mcp-param-{suffix.lower()}"] = header_value(value)
        elif method != "initialize":
            if self.legacy_version is not None:
                headers["mcp-protocol-version"] = self.legacy_version
            if self.session_id is not None:
                headers["mcp-session-id"] = self.session_id
        return headers

    async def send(self, message: dict[str, Any]) -> None:
        rid = message.get("id") if "method" in message else None
        if rid is None:  # a notification or our answer to a server request: posted, 202 expected
            task = asyncio.get_running_loop().create_task(self._post(message, None))
        else:
            task = asyncio.get_running_loop().create_task(self._post(message, rid))
            self._by_id[rid] = task
            task.add_done_callback(lambda _: self._by_id.pop(rid, None))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        await asyncio.sleep(0)  # let the request start

    def _deliver_error(self, rid: Any, error: ProtocolError) -> None:
        assert self._receive is not None
        self._receive(jsonrpc.encode(jsonrpc.error_message(rid, error)))

    async def _post(self, message: dict[str, Any], rid: Any) -> None:
        assert self._client is not None and self._receive is not None and self._lost is not None
        body = jsonrpc.encode(message)
        try:
            async with self._client.stream("POST", self.url, content=body, headers=self._headers(message)) as resp:
                if message.get("method") == "initialize":
                    sid = resp.headers.get("mcp-session-id")
                    if sid:
                        self.session_id = sid
                await self._answer(resp, rid, message.get("method"))
        except (httpx.ConnectError, httpx.ConnectTimeout):
            if rid is not None:
                self._lost("not_sent", rid)
            return
        except (httpx.TransportError, httpx.StreamError):
            if rid is not None:
                self._lost("connection_lost", rid)
            return
        if rid is not None:
            self._lost("connection_lost", rid)  # the stream ended; if the answer came, nobody waits any more

    async def _answer(self, resp: httpx.Response, rid: Any, method: Any = None) -> None:
        assert self._receive is not None and self._lost is not None
        ctype = resp.headers.get("content-type", "")
        if "text/event-stream" in ctype and resp.status_code == 200:
            await self._events(resp)
            return
        data = await resp.aread()
        if rid is None:
            return
        if "json" in ctype and data:
            try:
                parsed = orjson.loads(data)
            except orjson.JSONDecodeError:
                parsed = None
            if isinstance(parsed, dict) and ("result" in parsed or "error" in parsed):
                if parsed.get("id") is None and "error" in parsed:
                    parsed["id"] = rid  # an error for a request the server could not read: it is ours
                self._receive(orjson.dumps(parsed))
                return
        loss = gateway_loss(resp.status_code) if method not in _NEGOTIATION else None
        if loss is not None:
            self._lost(loss, rid)
            return
        self._deliver_error(rid, _status_error(resp))

    async def _events(self, resp: httpx.Response) -> None:
        assert self._receive is not None
        data: list[str] = []
        async for line in resp.aiter_lines():
            if line == "":
                if data:
                    self._receive("\n".join(data).encode())
                    data = []
            elif line.startswith("data:"):
                data.append(line[5:].lstrip(" ") if line.startswith("data: ") or line == "data:" else line[5:])
        if data:
            self._receive("\n".join(data).encode())

    async def listen(self) -> None:
        """Handshake era: the session's GET stream (server notifications), while the server keeps it."""
        if self.session_id is None:
            return
        task = asyncio.get_running_loop().create_task(self._get())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _get(self) -> None:
        assert self._client is not None
        headers = {k: v for k, v in self._headers({"method": "GET"}).items() if k != "content-type"}
        headers["accept"] = "text/event-stream"
        try:
            async with self._client.stream("GET", self.url, headers=headers) as resp:
                if resp.status_code == 200 and "text/event-stream" in resp.headers.get("content-type", ""):
                    await self._events(resp)
        except (httpx.TransportError, httpx.StreamError):
            return

    async def cancel(self, request_id: Any) -> None:
        task = self._by_id.get(request_id)
        if task is not None:
            task.cancel()  # closing the response stream is the cancellation on HTTP
        if self.session_id is not None:  # the handshake era also says so in a notification
            await self.send(jsonrpc.notification("notifications/cancelled",
                                                 {"requestId": request_id, "reason": "the client stopped waiting"}))

    async def aclose(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=2.0)
        client = self._client
        if client is None:
            return
        if self.session_id is not None:
            try:
                headers = {k: v for k, v in self._headers({"method": "DELETE"}).items() if k != "content-type"}
                await asyncio.wait_for(client.delete(self.url, headers=headers), 2.0)
            except (httpx.HTTPError, TimeoutError):
                pass
        if self._owns_client:
            await client.aclose()


def _status_error(resp: httpx.Response) -> ProtocolError:
    status = resp.status_code
    if status == 401:
        return InvalidCredential()
    if status == 403:
        match = _SCOPE.search(resp.headers.get("www-authenticate", ""))
        if match and match.group(1).strip():
            return InsufficientScope(tuple(match.group(1).split()))
        from ..errors import AccessDenied

        return AccessDenied()
    if status == 404:
        return InvalidRequest("Session not found") if "mcp-session-id" in resp.request.headers \
            else MethodNotFound("Not found (HTTP 404)")
    if 400 <= status < 500:
        return InvalidRequest(f"The server refused the request (HTTP {status})")
    if status == 503:
        return ServiceUnavailable(f"The server is unavailable right now (HTTP {status}); retry later",
                                  {"retryable": True})
    if status >= 500:
        return InternalError(f"The server failed (HTTP {status})")
    return InternalError(f"Unexpected answer (HTTP {status})")

"""ASGI plumbing that every path of the HTTP transport shares.

The message shapes (``Scope``/``Receive``/``Send``), the two ways a request ends early
(:class:`HttpError`: answered with a status; :class:`ClientGone`: nothing to answer), reading a
size-limited body, answering in one head-and-body pair, and running work only for as long as
the client stays (:func:`until_disconnect`).  No MCP here: that is the other ``_http_*`` modules.
"""

from __future__ import annotations

import asyncio
from typing import Any, Awaitable, Callable, Protocol

from ..errors import InvalidRequest, ProtocolError

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

JSON = [(b"content-type", b"application/json")]
# A key of http.response.start: the body message follows at once, so a server that knows it
# (truecall's own protocol, transports/guarded.py) writes head and body together.  Others ignore it.
BODY_FOLLOWS = "truecall.body_follows"
#: A ``scope["extensions"]`` key (ASGI's place for what a server offers beyond the spec):
#: truecall's own protocol (transports/guarded.py) puts the request's :class:`DisconnectHook`
#: there, so that :func:`until_disconnect` needs no watcher task.  Under other servers it is absent.
DISCONNECT_HOOK = "truecall.disconnect_hook"


class DisconnectHook(Protocol):
    """What ``scope["extensions"][DISCONNECT_HOOK]`` offers."""

    #: The client went away before the response was complete.
    disconnected: bool
    #: Called once, from the loop, when the client goes away before the response is complete.
    on_disconnect: Callable[[], None] | None


class ClientGone(Exception):
    """The client went away before its request was complete: nothing to answer."""


class HttpError(Exception):
    """A request refused with an HTTP status and a JSON-RPC error (the transport answers it)."""

    def __init__(self, status: int, error: ProtocolError, id: Any = None, headers: list[tuple[bytes, bytes]] | None = None) -> None:
        self.status, self.error, self.id, self.headers = status, error, id, headers or []


def remember(verdicts: dict[str, Any], key: str, ok: Any) -> None:
    """Cache one header value's verdict; a client sending many values gets no memory, only the check."""
    if len(verdicts) >= 256:
        verdicts.clear()
    verdicts[key] = ok


#: Header names as received -> their decoded, lowercased form (a client sends the same few names on
#: every request: one dict look-up each instead of a decode and a lower()).  Bounded like ``remember``.
_NAMES: dict[bytes, str] = {}


def headers_of(scope: Scope) -> dict[str, str]:
    """The request's headers by lowercased name (the last of repeated ones), names and values latin-1."""
    out: dict[str, str] = {}
    names = _NAMES
    for name, value in scope.get("headers", ()):
        key = names.get(name)
        if key is None:
            key = name.decode("latin-1").lower()
            if len(names) >= 256:
                names.clear()
            names[name] = key
        out[key] = value.decode("latin-1")
    return out


async def respond(send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]] | None = None) -> None:
    await send({"type": "http.response.start", "status": status, "headers": headers or JSON, BODY_FOLLOWS: True})
    await send({"type": "http.response.body", "body": body})


def declared_length_ok(headers: dict[str, str], limit: int) -> None:
    """A declared ``Content-Length`` past ``limit`` (or not a number) is refused before any byte is read."""
    length = headers.get("content-length")
    if length is not None and (not length.isdigit() or int(length) > limit):
        raise HttpError(413, InvalidRequest("Request body too large"))


def whole_body(message: dict[str, Any], limit: int) -> bytes | None:
    """The body if ``message`` (the first ``receive()``) carries all of it, else ``None``."""
    if message["type"] == "http.request" and not message.get("more_body"):
        chunk: bytes = message.get("body", b"")
        if len(chunk) > limit:
            raise HttpError(413, InvalidRequest("Request body too large"))
        return chunk
    return None


async def read_rest(message: dict[str, Any], receive: Receive, limit: int) -> bytes:
    """The body from its first message on, when it comes in more than one."""
    chunks, size = [], 0
    while True:
        if message["type"] == "http.disconnect":
            raise ClientGone()
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise HttpError(413, InvalidRequest("Request body too large"))
        chunks.append(chunk)
        if not message.get("more_body"):
            return b"".join(chunks)
        message = await receive()


async def until_disconnect(work: Awaitable[Any], scope: Scope, receive: Receive) -> Any:
    """Run ``work`` here; if the client disconnects first, cancel it and return ``None``.

    No task per request where the server offers :data:`DISCONNECT_HOOK` in
    ``scope["extensions"]`` (truecall's own protocol, ``transports/guarded.py``): the hook calls
    back when the client goes away, which cancels this (the request's own) task.  Under another
    ASGI server a watcher task waits for ``http.disconnect``, started only if the work does not
    finish at once (a synchronous tool never gives the loop a turn, and then nothing can be
    cancelled anyway).
    """
    me = asyncio.current_task()
    assert me is not None
    gone = False

    def leave() -> None:
        nonlocal gone
        gone = True
        me.cancel()

    extensions = scope.get("extensions")
    hook: DisconnectHook | None = extensions.get(DISCONNECT_HOOK) if extensions else None
    if hook is not None and hook.disconnected:
        hook = None  # gone already: the watcher sees http.disconnect at once
    watcher: asyncio.Task[None] | None = None
    later: asyncio.Handle | None = None
    if hook is not None:
        hook.on_disconnect = leave
    else:
        async def watch() -> None:
            await _wait_disconnect(receive)
            leave()

        def start_watching() -> None:
            nonlocal watcher
            watcher = loop.create_task(watch())

        loop = asyncio.get_running_loop()
        later = loop.call_soon(start_watching)  # runs only if the work yields to the loop
    try:
        return await work
    except asyncio.CancelledError:
        if gone:
            me.uncancel()
            return None
        raise
    finally:
        if hook is not None:
            hook.on_disconnect = None
        else:
            assert later is not None
            later.cancel()
            if watcher is not None:
                watcher.cancel()


async def _wait_disconnect(receive: Receive) -> None:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return

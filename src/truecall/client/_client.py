"""``truecall.Client``: the caller's half of the three layers.

``await client.call(name, arguments)`` returns exactly one of :class:`Done`,
:class:`Failed`, :class:`Accepted` or :class:`Unknown` (and a task ends
:class:`Cancelled` too): ``isError`` is read first, structured content is checked
against the ``outputSchema`` the server declared, a task handle is never a
success, and silence is never an answer.  Protocol errors raise the project's
typed exceptions (:mod:`truecall.errors`).

The protocol lives in :class:`~._connection.ClientConnection` (sans-IO); this
module owns time (timeouts, poll intervals) and callbacks, and the transports move
bytes: a command line (stdio), a URL (Streamable HTTP) or a ``truecall.Server``
in this process.
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
import logging
from typing import Any, Callable, Mapping, Sequence

from ..errors import AccessDenied, InvalidParams, MissingCapability, ProtocolError, UnknownTool
from ..protocol.versions import LOG_LEVELS, TASKS_EXTENSION
from ..schema import SchemaError, Validator
from ._connection import (ClientConnection, ErrorResponse, Negotiated, NegotiationFailed, Response, ServerNotification,
                          ServerRequest)
from ._elicit import ElicitationHandler, answer_elicitation
from ._errors import ConnectionLost, NotSent, from_wire, says_unknown_tool, unknown_tool
from ._outcomes import Accepted, Cancelled, Done, Failed, Outcome, Unknown, judge
from ._transport import Transport

__all__ = ["Client", "ProgressHandler", "LogHandler", "NotificationHandler"]

log = logging.getLogger("truecall.client")

ProgressHandler = Callable[[float, "float | None", "str | None"], Any]
LogHandler = Callable[[str, Any, "str | None"], Any]
NotificationHandler = Callable[[str, dict[str, Any]], Any]

_CLIENT_INFO = {"name": "truecall-client", "version": "0.1.0"}
#: At most this many input rounds for one stateless request (a server asking forever is a fault).
MAX_INPUT_ROUNDS = 16
#: At most this many pages for one list (a cursor loop is a fault).
MAX_PAGES = 1000
_LOST_REASONS = {"connection_lost", "server_exited"}


class _Lost(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class _TimedOut(Exception):
    pass


class Client:
    """An MCP client whose results cannot be mistaken: ``async with Client(target) as client``.

    ``target`` is a command line (``["python", "server.py"]``: stdio, with ``env`` and
    ``cwd``), a URL (``"http://127.0.0.1:8000/mcp"``: Streamable HTTP, with ``token`` or
    ``headers``) or a :class:`truecall.Server` (in this process, no I/O; ``token`` or the
    server's ``local_principal``).  ``version`` pins an era: ``"2026-07-28"``, or a
    handshake version (``"2025-11-25"``, ``"2025-06-18"``); by default the client asks
    ``server/discover`` and falls back to the handshake.
    """

    def __init__(
        self,
        target: Any,
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        stderr: Any = None,
        token: str | None = None,
        headers: Mapping[str, str] | None = None,
        http_client: Any = None,
        version: str | None = None,
        elicitation: ElicitationHandler | None = None,
        allow_credential_forms: bool = False,
        roots: Sequence[dict[str, Any]] | None = None,
        on_progress: ProgressHandler | None = None,
        on_log: LogHandler | None = None,
        log_level: str | None = None,
        on_notification: NotificationHandler | None = None,
        timeout: float | None = 60.0,
        discover_timeout: float = 30.0,
        client_info: dict[str, Any] | None = None,
        tasks: bool = True,
    ) -> None:
        self.transport: Transport = _transport_for(target, env=env, cwd=cwd, stderr=stderr, token=token,
                                                   headers=headers, http_client=http_client)
        if log_level is not None and log_level not in LOG_LEVELS:
            raise ValueError(f"log_level is one of {', '.join(LOG_LEVELS)}")
        if on_log is not None and log_level is None:
            log_level = "info"
        self.elicitation = elicitation
        self.allow_credential_forms = allow_credential_forms
        self.roots = list(roots) if roots is not None else None
        self.on_progress = on_progress
        self.on_log = on_log
        self.on_notification = on_notification
        self.timeout = timeout
        self.discover_timeout = discover_timeout
        caps: dict[str, Any] = {}
        legacy_caps: dict[str, Any] = {}
        if elicitation is not None:
            caps["elicitation"] = {"form": {}, "url": {}}
            legacy_caps["elicitation"] = {"form": {}, "url": {}}
        if self.roots is not None:
            caps["roots"] = {}
            legacy_caps["roots"] = {"listChanged": False}
        if tasks:
            caps["extensions"] = {TASKS_EXTENSION: {}}
        self.tasks = tasks
        self.conn = ClientConnection(client_info=client_info or dict(_CLIENT_INFO), capabilities=caps,
                                     legacy_capabilities=legacy_caps, version=version, log_level=log_level)
        self._waiting: dict[Any, asyncio.Future[tuple[str, Any]]] = {}
        self._negotiated: asyncio.Future[Negotiated] | None = None
        self._progress: dict[Any, ProgressHandler] = {}
        self._progress_ids = itertools.count(1)
        self._task_wakeups: dict[str, asyncio.Event] = {}
        self._background: set[asyncio.Task[Any]] = set()
        self._tools: dict[str, dict[str, Any]] | None = None
        self._validators: dict[str, Validator | None] = {}
        self._listen_id: Any = None
        self._subscriptions: set[str] = set()
        self._dead: str | None = None
        self._opened = False

    # -- lifecycle ---------------------------------------------------------------------------

    async def __aenter__(self) -> "Client":
        await self.open()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

    async def open(self) -> None:
        loop = asyncio.get_running_loop()
        self._negotiated = loop.create_future()
        await self.transport.open(self._on_data, self._on_lost)
        self._opened = True
        try:
            self.conn.start()
            await self._flush()
            try:
                await asyncio.wait_for(asyncio.shield(self._negotiated), self.discover_timeout)
            except TimeoutError:
                if self.conn.state.value != "discovering":
                    raise
                self.conn.fall_back()  # a server that ignores server/discover: the handshake era
                await self._flush()
                await asyncio.wait_for(asyncio.shield(self._negotiated), self.timeout)
            negotiated = self._negotiated.result()
            if negotiated.era == "legacy":
                listen = getattr(self.transport, "listen", None)
                if listen is not None:
                    await listen()
                if self.conn.log_level is not None and "logging" in self.conn.server_capabilities:
                    await self._rpc("logging/setLevel", {"level": self.conn.log_level})
            if hasattr(self.transport, "param_headers"):
                setattr(self.transport, "param_headers", self._param_headers)
        except BaseException:
            await self.aclose()
            raise

    async def aclose(self) -> None:
        if not self._opened:
            return
        self._opened = False
        for task in list(self._background):
            task.cancel()
        if self.conn.state.value != "closed":
            self.conn.close()
        for fut in self._waiting.values():
            if not fut.done():
                fut.set_result(("lost", "connection_lost"))
        await self.transport.aclose()

    # -- what was negotiated ----------------------------------------------------------------

    @property
    def era(self) -> str | None:
        """``"modern"`` (2026-07-28) or ``"legacy"`` (the handshake era)."""
        return self.conn.era

    @property
    def version(self) -> str | None:
        return self.conn.version

    @property
    def server_info(self) -> dict[str, Any]:
        return self.conn.server_info

    @property
    def server_capabilities(self) -> dict[str, Any]:
        return self.conn.server_capabilities

    @property
    def instructions(self) -> str | None:
        return self.conn.instructions

    # -- plumbing ------------------------------------------------------------------------------

    async def _flush(self) -> None:
        for message in self.conn.data_to_send():
            try:
                if self._dead is not None:
                    raise NotSent(f"the connection is closed ({self._dead})")
                await self.transport.send(message)
            except NotSent:
                rid = message.get("id") if "method" in message else None
                fut = self._waiting.get(rid)
                if fut is not None and not fut.done():
                    fut.set_result(("lost", "not_sent"))
                elif message.get("method") in ("server/discover", "initialize") and self._negotiated is not None \
                        and not self._negotiated.done():
                    self._negotiated.set_exception(NotSent("could not reach the server"))

    def _kick(self) -> None:
        task = asyncio.get_running_loop().create_task(self._flush())
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def _on_data(self, data: bytes) -> None:
        for event in self.conn.receive_data(data):
            if isinstance(event, (Response, ErrorResponse)):
                fut = self._waiting.get(event.id)
                if fut is not None and not fut.done():
                    fut.set_result(("result", event.result) if isinstance(event, Response) else ("error", event.error))
            elif isinstance(event, ServerNotification):
                self._notification(event)
            elif isinstance(event, ServerRequest):
                self._spawn(self._serve_request(event))
            elif isinstance(event, Negotiated):
                if event.era == "legacy" and hasattr(self.transport, "legacy_version"):
                    # before the initialized notification goes out: it carries the version header too
                    setattr(self.transport, "legacy_version", event.version)
                if self._negotiated is not None and not self._negotiated.done():
                    self._negotiated.set_result(event)
            elif isinstance(event, NegotiationFailed):
                if self._negotiated is not None and not self._negotiated.done():
                    self._negotiated.set_exception(event.error)
        self._kick()  # a fall-back initialize, the initialized notification, answers to the server

    def _on_lost(self, reason: str, request_id: Any) -> None:
        if request_id is None:
            self._dead = reason
            for fut in self._waiting.values():
                if not fut.done():
                    fut.set_result(("lost", reason))
            if self._negotiated is not None and not self._negotiated.done():
                self._negotiated.set_exception(ConnectionLost(f"the server went away ({reason})"))
            return
        waiter = self._waiting.get(request_id)
        if waiter is not None and not waiter.done():
            waiter.set_result(("lost", reason))
        elif request_id in self.conn.pending and self.conn.pending[request_id] in ("server/discover", "initialize"):
            self.conn.forget(request_id)
            if self._negotiated is not None and not self._negotiated.done():
                exc: Exception = NotSent("could not reach the server") if reason == "not_sent" else \
                    ConnectionLost("the server closed the connection during negotiation")
                self._negotiated.set_exception(exc)

    def _spawn(self, coro: Any) -> asyncio.Task[Any]:
        task: asyncio.Task[Any] = asyncio.get_running_loop().create_task(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return task

    async def _send(self, method: str, params: dict[str, Any] | None, *, meta: dict[str, Any] | None = None,
                    timeout: float | None | str = "default") -> tuple[Any, str, Any]:
        """Send one request and wait: (id, "result" | "error" | "lost", value); raises _TimedOut(id)."""
        if not self._opened:
            raise RuntimeError("the client is not open: use 'async with Client(...)'")
        rid = self.conn.send_request(method, params, meta=meta)
        fut: asyncio.Future[tuple[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiting[rid] = fut
        try:
            await self._flush()
            limit = self.timeout if timeout == "default" else timeout
            try:
                kind, value = await asyncio.wait_for(asyncio.shield(fut), limit)  # type: ignore[arg-type]
            except TimeoutError:
                self.conn.forget(rid)
                await self.transport.cancel(rid)
                raise _TimedOut(rid) from None
            except asyncio.CancelledError:
                if self.conn.forget(rid) is not None:
                    try:
                        await asyncio.shield(self.transport.cancel(rid))
                    except Exception:
                        pass
                raise
        finally:
            self._waiting.pop(rid, None)
        if kind == "lost":
            self.conn.forget(rid)
        return rid, kind, value

    async def _rpc(self, method: str, params: dict[str, Any] | None = None, *,
                   timeout: float | None | str = "default") -> dict[str, Any]:
        """A request whose answer is a result or a typed exception."""
        try:
            rid, kind, value = await self._send(method, params, timeout=timeout)
        except _TimedOut:
            raise TimeoutError(f"{method}: no answer in time") from None
        if kind == "error":
            raise from_wire(value, method=method)
        if kind == "lost":
            if value == "not_sent":
                raise NotSent(f"{method}: the request could not be sent")
            raise ConnectionLost(f"{method}: the connection was lost before an answer ({value})")
        return value  # type: ignore[no-any-return]

    # -- from the server -------------------------------------------------------------------------

    def _notification(self, event: ServerNotification) -> None:
        method, params = event.method, event.params
        if method == "notifications/progress":
            handler = self._progress.get(params.get("progressToken"))
            if handler is not None:
                self._callback(handler, params.get("progress"), params.get("total"), params.get("message"))
            return
        if method == "notifications/message":
            if self.on_log is not None:
                self._callback(self.on_log, params.get("level"), params.get("data"), params.get("logger"))
            return
        if method in ("notifications/tasks/status", "notifications/tasks"):
            task_id = params.get("taskId")
            wake = self._task_wakeups.get(task_id) if isinstance(task_id, str) else None
            if wake is not None:
                wake.set()
        if method == "notifications/tools/list_changed":
            self._tools = None
            self._validators.clear()
        if self.on_notification is not None:
            self._callback(self.on_notification, method, params)

    def _callback(self, fn: Callable[..., Any], *args: Any) -> None:
        try:
            result = fn(*args)
        except Exception:
            log.exception("a client callback failed")
            return
        if inspect.isawaitable(result):
            self._spawn(result)

    async def _serve_request(self, event: ServerRequest) -> None:
        try:
            result = await self._answer(event.method, event.params)
        except ProtocolError as exc:
            self.conn.send_error(event.id, exc)
        except Exception:
            log.exception("answering the server's %s failed", event.method[:100])
            self.conn.send_error(event.id, ProtocolError("The client could not answer"))
        else:
            self.conn.send_response(event.id, result)
        await self._flush()

    async def _answer(self, method: Any, params: Any, tool: str | None = None) -> dict[str, Any]:
        """What this client answers to a server's request (handshake era) or input request (2026-07-28)."""
        if method == "ping":
            return {}
        if method == "elicitation/create":
            return await answer_elicitation(params, self.elicitation,
                                            allow_credential_forms=self.allow_credential_forms, tool=tool)
        if method == "roots/list" and self.roots is not None:
            return {"roots": list(self.roots)}
        from ..errors import MethodNotFound

        raise MethodNotFound(f"This client does not offer {str(method)[:100]}")

    async def _answer_inputs(self, requests: Any, tool: str | None) -> dict[str, Any]:
        if not isinstance(requests, dict) or not requests:
            raise InvalidParams("The server asked for input without saying what")
        answers: dict[str, Any] = {}
        for key, request in requests.items():
            method = request.get("method") if isinstance(request, dict) else None
            try:
                answers[key] = await self._answer(method, request.get("params") if isinstance(request, dict) else None,
                                                  tool)
            except ProtocolError:
                raise MissingCapability(f"The server asked for {str(method)[:100]}, which this client does not "
                                        "offer") from None
        return answers

    # -- tools --------------------------------------------------------------------------------------

    async def list_tools(self) -> list[dict[str, Any]]:
        """Every tool (all pages); also what :meth:`call` checks results against."""
        tools = await self._list("tools/list", "tools")
        self._tools = {t["name"]: t for t in tools if isinstance(t, dict) and isinstance(t.get("name"), str)}
        self._validators.clear()
        return tools

    async def _list(self, method: str, key: str, params: dict[str, Any] | None = None) -> list[Any]:
        out: list[Any] = []
        cursor: Any = None
        seen: set[str] = set()
        for _ in range(MAX_PAGES):
            body = dict(params or {})
            if cursor is not None:
                body["cursor"] = cursor
            page = await self._rpc(method, body or None)
            items = page.get(key)
            if isinstance(items, list):
                out.extend(items)
            cursor = page.get("nextCursor")
            if not isinstance(cursor, str) or not cursor or cursor in seen:
                return out
            seen.add(cursor)
        return out

    async def _tool(self, name: str) -> dict[str, Any] | None:
        if self._tools is None or name not in self._tools:
            await self.list_tools()  # first call, or the list may have changed since
        assert self._tools is not None
        return self._tools.get(name)

    def _validator(self, name: str, tool: dict[str, Any] | None) -> Validator | None:
        if name in self._validators:
            return self._validators[name]
        schema = tool.get("outputSchema") if tool else None
        validator = None
        if isinstance(schema, dict):
            try:
                validator = Validator(schema)
            except SchemaError:
                validator = Validator({"not": {}})  # an unusable schema: nothing can be shown to match it
        self._validators[name] = validator
        return validator

    def _param_headers(self, name: str, arguments: Any) -> dict[str, str]:
        tool = (self._tools or {}).get(name)
        props = (tool or {}).get("inputSchema", {}).get("properties") if tool else None
        if not isinstance(props, dict) or not isinstance(arguments, dict):
            return {}
        out: dict[str, str] = {}
        for prop, spec in props.items():
            suffix = spec.get("x-mcp-header") if isinstance(spec, dict) else None
            value = arguments.get(prop)
            if isinstance(suffix, str) and value is not None:
                if isinstance(value, bool):
                    out[suffix] = "true" if value else "false"
                elif isinstance(value, (int, str)) or (isinstance(value, float) and value.is_integer()):
                    out[suffix] = str(int(value)) if isinstance(value, float) else str(value)
        return out

    async def call(self, name: str, arguments: Mapping[str, Any] | None = None, *, wait: bool = False,
                   timeout: float | None | str = "default",
                   on_progress: ProgressHandler | None = None) -> Done | Failed | Accepted | Unknown | Cancelled:
        """Call a tool: exactly one outcome (or a typed protocol error is raised).

        ``wait=True`` drives an :class:`Accepted` task to its end before returning.
        """
        tool = await self._tool(name)
        validator = self._validator(name, tool)
        params: dict[str, Any] = {"name": name, "arguments": dict(arguments or {})}
        if self.tasks and self.conn.era == "legacy" and self.conn.version == "2025-11-25" and tool is not None:
            support = (tool.get("execution") or {}).get("taskSupport") if isinstance(tool.get("execution"), dict) \
                else None
            requests = ((self.conn.server_capabilities.get("tasks") or {}).get("requests") or {})
            if support in ("optional", "required") and isinstance(requests, dict) and "tools" in requests:
                params["task"] = {}
        meta: dict[str, Any] | None = None
        handler = on_progress or self.on_progress
        token = None
        if handler is not None:
            token = f"truecall-{next(self._progress_ids)}"
            meta = {"progressToken": token}
            self._progress[token] = handler
        try:
            outcome = await self._call(name, tool, validator, params, meta, timeout)
        finally:
            if token is not None:
                self._progress.pop(token, None)
        if wait and isinstance(outcome, Accepted):
            return await outcome.wait()
        return outcome

    async def _call(self, name: str, tool: dict[str, Any] | None, validator: Validator | None,
                    params: dict[str, Any], meta: dict[str, Any] | None,
                    timeout: float | None | str) -> Done | Failed | Accepted | Unknown:
        for _ in range(MAX_INPUT_ROUNDS):
            try:
                rid, kind, value = await self._send("tools/call", params, meta=meta, timeout=timeout)
            except _TimedOut as t:
                return Unknown(name, t.args[0], "timeout")
            if kind == "lost":
                if value == "not_sent":
                    raise NotSent(f"tools/call {name}: the request could not be sent; nothing happened")
                return Unknown(name, rid, value)
            if kind == "error":
                exc = from_wire(value, tool=name)
                if tool is None and not isinstance(exc, (AccessDenied, UnknownTool)) and (
                        type(exc) is InvalidParams or says_unknown_tool(exc.message)):
                    # A tool the server never listed, refused with -32602 or in words (whatever the code).
                    exc = unknown_tool(name, exc.message, exc.data)
                raise exc
            result: dict[str, Any] = value
            result_type = result.get("resultType")
            if result_type == "input_required":
                answers = await self._answer_inputs(result.get("inputRequests"), name)
                params = {**params, "inputResponses": answers}
                state = result.get("requestState")
                if isinstance(state, str):
                    params["requestState"] = state
                else:
                    params.pop("requestState", None)
                continue
            if result_type == "task" and isinstance(result.get("taskId"), str):
                return self._accepted(name, result, rid, "modern")
            task = result.get("task")
            if isinstance(task, dict) and isinstance(task.get("taskId"), str) and "content" not in result:
                return self._accepted(name, task, rid, "legacy")
            outcome = judge(name, result, validator, request_id=rid)
            if tool is None and isinstance(outcome, Failed) and self._tools is not None:
                # The listing (fetched just now) has no such tool: whatever the server folded it into,
                # nothing ran — an unknown tool is a protocol error.
                raise unknown_tool(name, f"Unknown tool: {name}"[:200], {"result": result})
            return outcome
        raise InvalidParams(f"tools/call {name}: the server kept asking for input ({MAX_INPUT_ROUNDS} rounds)")

    def _accepted(self, name: str, task: dict[str, Any], rid: Any, era: str) -> Accepted:
        raw = task.get("status")
        status = raw if isinstance(raw, str) else "working"
        message = task.get("statusMessage")
        return Accepted(tool=name, task_id=task["taskId"], status=status, task=task, request_id=rid, era=era,
                        status_message=message if isinstance(message, str) else None, _client=self)

    # -- tasks -----------------------------------------------------------------------------------------

    def _poll_s(self, task: Mapping[str, Any]) -> float:
        ms = task.get("pollIntervalMs", task.get("pollInterval"))
        if not isinstance(ms, (int, float)) or isinstance(ms, bool) or ms <= 0:
            ms = 1000
        return min(max(float(ms), 10.0), 300_000.0) / 1000.0

    def _listen_for_task(self, task_id: str) -> Any:
        """2026-07-28 with the tasks extension: ``subscriptions/listen`` for this task, so a change
        wakes the waiter before its poll interval is up (polling still decides; a server without
        listen support answers with an error nobody waits for)."""
        extensions = self.conn.server_capabilities.get("extensions")
        if self.conn.era != "modern" or not isinstance(extensions, dict) or TASKS_EXTENSION not in extensions:
            return None
        return self.conn.send_request("subscriptions/listen", {"notifications": {"taskIds": [task_id]}})

    async def _wait_task(self, accepted: Accepted) -> Done | Failed | Cancelled | Unknown:
        tool = (self._tools or {}).get(accepted.tool)
        validator = self._validator(accepted.tool, tool)
        task_id = accepted.task_id
        wake = self._task_wakeups.setdefault(task_id, asyncio.Event())
        poll = self._poll_s(accepted.task)
        listen_id = self._listen_for_task(task_id) if accepted.era == "modern" else None
        try:
            while True:
                wake.clear()  # before asking: a change announced while the answer travels still wakes us
                try:
                    task = await self._rpc("tasks/get", {"taskId": task_id})
                except (ConnectionLost, TimeoutError) as exc:
                    return Unknown(accepted.tool, accepted.request_id,
                                   "timeout" if isinstance(exc, TimeoutError) else "connection_lost",
                                   task_id=task_id)
                status = task.get("status")
                poll = self._poll_s(task) if ("pollIntervalMs" in task or "pollInterval" in task) else poll
                if accepted.era == "modern":
                    if status == "completed":
                        return judge(accepted.tool, task.get("result"), validator, request_id=accepted.request_id,
                                     task_id=task_id)
                    if status == "failed":
                        raise from_wire(task.get("error"), tool=accepted.tool)
                    if status == "input_required":
                        answers = await self._answer_inputs(task.get("inputRequests"), accepted.tool)
                        await self._rpc("tasks/update", {"taskId": task_id, "inputResponses": answers})
                        continue
                else:
                    if status in ("completed", "failed", "input_required"):
                        # tasks/result blocks until the end; questions come as server requests meanwhile.
                        try:
                            result = await self._rpc("tasks/result", {"taskId": task_id}, timeout=None)
                        except ConnectionLost:
                            return Unknown(accepted.tool, accepted.request_id, "connection_lost", task_id=task_id)
                        return judge(accepted.tool, result, validator, request_id=accepted.request_id,
                                     task_id=task_id)
                if status == "cancelled":
                    message = task.get("statusMessage")
                    return Cancelled(accepted.tool, task_id, message if isinstance(message, str) else None,
                                     accepted.request_id)
                try:
                    await asyncio.wait_for(wake.wait(), poll)
                except TimeoutError:
                    pass
        finally:
            self._task_wakeups.pop(task_id, None)
            if listen_id is not None and self.conn.forget(listen_id) is not None:
                try:
                    await self.transport.cancel(listen_id)
                except Exception:
                    pass

    async def _cancel_task(self, accepted: Accepted) -> Outcome:
        try:
            answer = await self._rpc("tasks/cancel", {"taskId": accepted.task_id})
        except ConnectionLost:
            return Unknown(accepted.tool, accepted.request_id, "connection_lost", task_id=accepted.task_id)
        task = answer if isinstance(answer.get("status"), str) else await self._rpc("tasks/get",
                                                                                   {"taskId": accepted.task_id})
        status = task.get("status")
        if status == "cancelled":
            message = task.get("statusMessage")
            return Cancelled(accepted.tool, accepted.task_id, message if isinstance(message, str) else None,
                             accepted.request_id)
        if status in ("completed", "failed"):
            return await self._wait_task(accepted)
        return self._accepted(accepted.tool, {**accepted.task, **task, "taskId": accepted.task_id},
                              accepted.request_id, accepted.era)

    async def task(self, task_id: str, *, tool: str = "?") -> Accepted:
        """A handle on an existing task (for example an :class:`Unknown`'s ``task_id``), to wait on or cancel."""
        task = await self._rpc("tasks/get", {"taskId": task_id})
        return self._accepted(tool, {**task, "taskId": task_id}, None, self.conn.era or "modern")

    # -- resources and prompts ------------------------------------------------------------------------------

    async def list_resources(self) -> list[dict[str, Any]]:
        return await self._list("resources/list", "resources")

    async def list_resource_templates(self) -> list[dict[str, Any]]:
        return await self._list("resources/templates/list", "resourceTemplates")

    async def read_resource(self, uri: str) -> list[dict[str, Any]]:
        """The resource's contents (a list of text or blob items); a missing one raises NotFound."""
        params: dict[str, Any] = {"uri": uri}
        for _ in range(MAX_INPUT_ROUNDS):
            result = await self._rpc("resources/read", params)
            if result.get("resultType") == "input_required":
                params = {"uri": uri, "inputResponses": await self._answer_inputs(result.get("inputRequests"), None)}
                if isinstance(result.get("requestState"), str):
                    params["requestState"] = result["requestState"]
                continue
            contents = result.get("contents")
            return contents if isinstance(contents, list) else []
        raise InvalidParams("resources/read: the server kept asking for input")

    async def subscribe(self, uri: str) -> None:
        """``notifications/resources/updated`` for ``uri`` reach ``on_notification``."""
        self._subscriptions.add(uri)
        if self.conn.era == "legacy":
            await self._rpc("resources/subscribe", {"uri": uri})
        else:
            await self._relisten()

    async def unsubscribe(self, uri: str) -> None:
        self._subscriptions.discard(uri)
        if self.conn.era == "legacy":
            await self._rpc("resources/unsubscribe", {"uri": uri})
        else:
            await self._relisten()

    async def _relisten(self) -> None:
        """2026-07-28: one ``subscriptions/listen`` request stays open for what is subscribed."""
        if self._listen_id is not None:
            old = self._listen_id
            self._listen_id = None
            self.conn.forget(old)
            await self.transport.cancel(old)
        if not self._subscriptions:
            return
        rid = self.conn.send_request("subscriptions/listen", {"notifications": {
            "resourceSubscriptions": sorted(self._subscriptions), "toolsListChanged": True}})
        self._listen_id = rid
        await self._flush()

    async def list_prompts(self) -> list[dict[str, Any]]:
        return await self._list("prompts/list", "prompts")

    async def get_prompt(self, name: str, arguments: Mapping[str, str] | None = None) -> dict[str, Any]:
        params: dict[str, Any] = {"name": name}
        if arguments:
            params["arguments"] = dict(arguments)
        for _ in range(MAX_INPUT_ROUNDS):
            result = await self._rpc("prompts/get", params)
            if result.get("resultType") == "input_required":
                params = {**params, "inputResponses": await self._answer_inputs(result.get("inputRequests"), None)}
                if isinstance(result.get("requestState"), str):
                    params["requestState"] = result["requestState"]
                continue
            return result
        raise InvalidParams("prompts/get: the server kept asking for input")

    async def complete(self, ref: dict[str, Any], argument: dict[str, Any]) -> list[str]:
        result = await self._rpc("completion/complete", {"ref": ref, "argument": argument})
        values = (result.get("completion") or {}).get("values") if isinstance(result.get("completion"), dict) else None
        return [v for v in values if isinstance(v, str)] if isinstance(values, list) else []

    async def request(self, method: str, params: dict[str, Any] | None = None, *,
                      timeout: float | None | str = "default") -> dict[str, Any]:
        """One request as the server answered it: the raw result (no judging, no input rounds),
        or the typed protocol error raised.  For instruments like ``truecall probe`` that must see
        exactly what came back; applications use :meth:`call`."""
        return await self._rpc(method, params, timeout=timeout)

    async def ping(self) -> None:
        if self.conn.era == "legacy":
            await self._rpc("ping")
        else:
            await self._rpc("server/discover")  # 2026-07-28 has no ping; discover is the cheap probe


def _transport_for(target: Any, **options: Any) -> Transport:
    from ..server import Server

    if isinstance(target, Server):
        from ._inprocess import InProcessTransport

        return InProcessTransport(target, token=options["token"])
    if isinstance(target, str):
        if not target.startswith(("http://", "https://")):
            raise ValueError("a URL target is http:// or https://; a command line is a list of strings")
        from ._http import HttpTransport

        return HttpTransport(target, token=options["token"], headers=options["headers"],
                             http_client=options["http_client"])
    if isinstance(target, (list, tuple)):
        from ._stdio import StdioTransport

        return StdioTransport(target, env=options["env"], cwd=options["cwd"], stderr=options["stderr"])
    if all(hasattr(target, m) for m in ("open", "send", "cancel", "aclose")):
        return target  # type: ignore[no-any-return]
    raise TypeError("Client(target): a command line (list), a URL (str), a truecall.Server or a transport")



"""``truecall.Client``: the caller's half of the three layers.

``await client.call(name, arguments)`` returns exactly one of :class:`Done`,
:class:`Unconfirmed`, :class:`Failed`, :class:`Accepted` or :class:`Unknown` (and a
task ends :class:`Cancelled` too): ``isError`` is read first, structured content is
checked against the ``outputSchema`` the server declared, a success whose words say
"accepted" (or "failed") with nothing checkable behind them is not done, a task handle
is never a success, and silence is never an answer.  Protocol errors raise the project's
typed exceptions (:mod:`truecall.errors`).

The protocol lives in :class:`~._connection.ClientConnection` (sans-IO) and the
transports move bytes: a command line (stdio), a URL (Streamable HTTP) or a
``truecall.Server`` in this process.  Between them, :mod:`._pump` pumps messages and
matches answers to requests (and owns time: timeouts), :mod:`._answers` says what the
client answers when the server asks, :mod:`._catalog` keeps the tool listing results are
judged against, :mod:`._tasks` drives an accepted task to its end and
:mod:`._subscriptions` keeps resource subscriptions in each era's shape.  This module is
the public facade over them: what a tool call comes to, and the other MCP requests.
"""

from __future__ import annotations

import itertools
from typing import Any, Mapping, Sequence

from ..errors import AccessDenied, InvalidParams, UnknownTool
from ..protocol.versions import LOG_LEVELS, TASKS_EXTENSION
from ..schema import Validator
from ._answers import next_round
from ._catalog import Catalog, pages
from ._connection import ClientConnection
from ._elicit import ElicitationHandler
from ._errors import NotSent, from_wire, says_unknown_tool, unknown_tool
from ._outcomes import Accepted, Cancelled, Done, Failed, Unconfirmed, Unknown, judge
from ._pump import LogHandler, NotificationHandler, ProgressHandler, Session, TimedOut
from ._silence import NOTHING_HAPPENED, Stage, after_loss
from ._subscriptions import Subscriptions
from ._tasks import Tasks
from ._transport import Transport

__all__ = ["Client", "ProgressHandler", "LogHandler", "NotificationHandler"]

_CLIENT_INFO = {"name": "truecall-client", "version": "0.1.0"}
#: At most this many input rounds for one stateless request (a server asking forever is a fault).
MAX_INPUT_ROUNDS = 16


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
        caps, legacy_caps = _capabilities(elicitation=elicitation is not None, roots=self.roots is not None,
                                          tasks=tasks)
        self.tasks = tasks
        self.conn = ClientConnection(client_info=client_info or dict(_CLIENT_INFO), capabilities=caps,
                                     legacy_capabilities=legacy_caps, version=version, log_level=log_level)
        # the pieces, each with one job (see the module docstring); the client's settings are read at use time
        self._session = Session(self.conn, self.transport, self, on_tools_changed=lambda: self._catalog.invalidate())
        self._rpc = self._session.rpc
        self._catalog = Catalog(self._rpc)
        self._tasks = Tasks(self, self._session, self._catalog)
        self._subscriptions = Subscriptions(self._session)
        self._progress_ids = itertools.count(1)

    # -- lifecycle ---------------------------------------------------------------------------

    async def __aenter__(self) -> "Client":
        await self.open()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

    async def open(self) -> None:
        await self._session.open(self._catalog.param_headers)

    async def aclose(self) -> None:
        await self._session.aclose()

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

    # -- tools --------------------------------------------------------------------------------------

    async def list_tools(self) -> list[dict[str, Any]]:
        """Every tool (all pages); also what :meth:`call` checks results against."""
        return await self._catalog.list_tools()

    async def call(self, name: str, arguments: Mapping[str, Any] | None = None, *, wait: bool = False,
                   timeout: float | None | str = "default",
                   on_progress: ProgressHandler | None = None) -> Done | Unconfirmed | Failed | Accepted | Unknown \
            | Cancelled:
        """Call a tool: exactly one outcome (or a typed protocol error is raised).

        ``wait=True`` drives an :class:`Accepted` task to its end before returning.
        """
        catalog = self._catalog
        tool = await catalog.tool(name)
        validator = catalog.validator(name, tool)
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
            self._session.progress[token] = handler
        try:
            outcome = await self._call(name, tool, validator, params, meta, timeout)
        finally:
            if token is not None:
                self._session.progress.pop(token, None)
        if wait and isinstance(outcome, Accepted):
            return await outcome.wait()
        return outcome

    async def _call(self, name: str, tool: dict[str, Any] | None, validator: Validator | None,
                    params: dict[str, Any], meta: dict[str, Any] | None,
                    timeout: float | None | str) -> Done | Unconfirmed | Failed | Accepted | Unknown:
        for _ in range(MAX_INPUT_ROUNDS):
            try:
                rid, kind, value = await self._session.send("tools/call", params, meta=meta, timeout=timeout)
            except TimedOut as t:
                return Unknown(name, t.args[0], "timeout")
            if kind == "lost":
                verdict = after_loss(Stage.CALLING, value)
                if verdict == NOTHING_HAPPENED:
                    raise NotSent(f"tools/call {name}: the request could not be sent; nothing happened")
                return Unknown(name, rid, verdict)
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
                params = await next_round(self, params, result, name)
                continue
            if result_type == "task" and isinstance(result.get("taskId"), str):
                return self._tasks.accepted(name, result, rid, "modern")
            task = result.get("task")
            if isinstance(task, dict) and isinstance(task.get("taskId"), str) and "content" not in result:
                return self._tasks.accepted(name, task, rid, "legacy")
            outcome = judge(name, result, validator, request_id=rid)
            if tool is None and isinstance(outcome, Failed) and self._catalog.tools is not None:
                # The listing (fetched just now) has no such tool: whatever the server folded it into,
                # nothing ran — an unknown tool is a protocol error.
                raise unknown_tool(name, f"Unknown tool: {name}"[:200], {"result": result})
            return outcome
        raise InvalidParams(f"tools/call {name}: the server kept asking for input ({MAX_INPUT_ROUNDS} rounds)")

    # -- tasks -----------------------------------------------------------------------------------------

    async def task(self, task_id: str, *, tool: str = "?") -> Accepted:
        """A handle on an existing task (for example an :class:`Unknown`'s ``task_id``), to wait on or cancel."""
        return await self._tasks.handle(task_id, tool)

    # -- resources and prompts ------------------------------------------------------------------------------

    async def list_resources(self) -> list[dict[str, Any]]:
        return await pages(self._rpc, "resources/list", "resources")

    async def list_resource_templates(self) -> list[dict[str, Any]]:
        return await pages(self._rpc, "resources/templates/list", "resourceTemplates")

    async def read_resource(self, uri: str) -> list[dict[str, Any]]:
        """The resource's contents (a list of text or blob items); a missing one raises NotFound."""
        params: dict[str, Any] = {"uri": uri}
        for _ in range(MAX_INPUT_ROUNDS):
            result = await self._rpc("resources/read", params)
            if result.get("resultType") == "input_required":
                params = await next_round(self, params, result, None)
                continue
            contents = result.get("contents")
            return contents if isinstance(contents, list) else []
        raise InvalidParams("resources/read: the server kept asking for input")

    async def subscribe(self, uri: str) -> None:
        """``notifications/resources/updated`` for ``uri`` reach ``on_notification``."""
        await self._subscriptions.add(uri)

    async def unsubscribe(self, uri: str) -> None:
        await self._subscriptions.discard(uri)

    async def list_prompts(self) -> list[dict[str, Any]]:
        return await pages(self._rpc, "prompts/list", "prompts")

    async def get_prompt(self, name: str, arguments: Mapping[str, str] | None = None) -> dict[str, Any]:
        params: dict[str, Any] = {"name": name}
        if arguments:
            params["arguments"] = dict(arguments)
        for _ in range(MAX_INPUT_ROUNDS):
            result = await self._rpc("prompts/get", params)
            if result.get("resultType") == "input_required":
                params = await next_round(self, params, result, None)
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


def _capabilities(*, elicitation: bool, roots: bool, tasks: bool) -> tuple[dict[str, Any], dict[str, Any]]:
    """What the client declares: in 2026-07-28 ``_meta``, and in the handshake's ``initialize``."""
    caps: dict[str, Any] = {}
    legacy_caps: dict[str, Any] = {}
    if elicitation:
        caps["elicitation"] = {"form": {}, "url": {}}
        legacy_caps["elicitation"] = {"form": {}, "url": {}}
    if roots:
        caps["roots"] = {}
        legacy_caps["roots"] = {"listChanged": False}
    if tasks:
        caps["extensions"] = {TASKS_EXTENSION: {}}
    return caps, legacy_caps


def _transport_for(target: Any, **options: Any) -> Transport:
    from ..server._server import Server

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
        transport: Transport = target  # it has the protocol's methods (checked above)
        return transport
    raise TypeError("Client(target): a command line (list), a URL (str), a truecall.Server or a transport")



"""The server: registries, stores and their wiring.

A tool call goes through one pipeline (:mod:`truecall.server._pipeline`):

    authenticate → policy (tenant, tool, scopes, rate limit, task support)
    → validate input → run → check output → audit → return

The policy stage (:mod:`truecall.server._policy`) is the same for resources, prompts, completions and
tasks: each is admitted there, and each refusal recorded there, before anything runs.

Each step is a plain method call on precompiled data.  What the model can fix
comes back as an ``isError`` result; everything else is raised as a
:class:`~truecall.errors.ProtocolError` (the access faults are also
``PermissionError``, for in-process callers).  No tool's existence is revealed to a
caller without a valid credential: authentication comes first.
"""

from __future__ import annotations

import asyncio
import re
import types
from contextlib import AbstractAsyncContextManager
from typing import Any, Callable, Coroutine, Iterable, NoReturn, TypeVar, overload

from .._misuse import SettingError
from . import _pipeline
from ._policy import admit_completion, admit_prompt, admit_resource
from ..audit._log import AuditLog
from ..audit._retention import expired_tasks
from ._changes import ChangeFeed
from ..auth._principals import Principal, StaticTokens, TokenVerifier
from .context import NO_PEER, ElicitationUnavailable, Peer, ToolContext
from ..errors import InternalError, InvalidParams, MissingCapability, NotFound
from ._wire_check import contents_problems, prompt_problems
from ..storage._keys import keys_from_env
from ..auth.ratelimit import RateLimit
from ..audit.redaction import is_sensitive_name
from ..audit.redaction import shown_uri as _shown
from ..results import ToolResult
from ..storage import NotOpen, Storage, open_database
from ..tasks import Task, TaskStore
from ..tasks.runtime import LEASE_S, RecoverHook, TaskRuntime
from ._typed import RegistrationError, as_messages
from .tools import Prompt, Registry, Resource, ResourceTemplate, Tool

__all__ = ["Server", "State", "ServerNotStarted"]

T = TypeVar("T")


class State(types.SimpleNamespace):
    """A server's application state: attributes the application sets and reads (Starlette's
    ``app.state``).  Typed ``Any`` on purpose — what an app keeps is its own business."""

    def __getattr__(self, name: str) -> Any:  # only reached for a name nobody set
        raise AttributeError(f"server.state has no {name!r}: the application sets what it keeps here")


class ServerNotStarted(NotOpen):
    """The server's stores were used before :meth:`Server.start` opened them."""

    opener = "server.start() (serving, Engine.start() and truecall.Client(server) call it)"


class Server:
    """An MCP server: tools, resources and prompts behind one honest pipeline.

    Constructing one has no side effects: no file is created, no connection made, nothing migrated
    or recovered.  :meth:`start` does that, once, before anything is served (serving and every
    engine call it); the direct in-process API of a server nobody started raises
    :class:`ServerNotStarted`.
    """

    def __init__(
        self,
        name: str | None = None,
        version: str = "0.1.0",
        *,
        title: str | None = None,
        instructions: str | None = None,
        tokens: TokenVerifier | None = None,
        db: Storage | str | None = None,
        audit: bool = True,
        audit_key: bytes | None = None,
        audit_journal: bool | None = None,
        audit_retain: str | None = None,
        audit_export: str | None = None,
        rate_limit: "RateLimit | None" = None,
        lifespan: "Callable[[Server], AbstractAsyncContextManager[Any]] | None" = None,
        extra_arguments: str = "reject",
        **fastmcp_settings: Any,
    ) -> None:
        """``name`` defaults to the file the server is made in.  ``lifespan(server)`` is an async
        context manager entered when serving starts and left when it ends; what it yields is
        ``ctx.lifespan_context``.  ``extra_arguments="ignore"`` makes derived input schemas open
        (arguments a tool does not take are dropped, as FastMCP and ``MCPServer`` do) instead of a
        fixable ``invalid_input``.  FastMCP's serving settings (``host``, ``port``, ``log_level``,
        ``dependencies``…) are accepted; ``host``/``port`` are :meth:`run`'s defaults."""
        from ._fastmcp import check_settings, default_name

        self.settings = check_settings(fastmcp_settings)
        if extra_arguments not in ("reject", "ignore"):
            raise SettingError(f"extra_arguments is 'reject' or 'ignore', not {extra_arguments!r}")
        self.extra_arguments = extra_arguments
        self.name = name if name is not None else default_name()
        self.version = version
        self.title = title
        self.instructions = instructions
        self.registry = Registry()
        self.tokens: TokenVerifier = tokens if tokens is not None else StaticTokens()
        # Nothing is opened here (see the class's docstring): the setting is read (a malformed one
        # raises now), the database is opened by start().  A database given already open stays so.
        self.db = open_database(db, connect=False, not_open=ServerNotStarted)
        # Redaction asks the judge whether a name names a credential; its word tables take tens of ms to
        # build and are not built by ``import truecall``.  Built here, before anything is served: built by the
        # first call that redacts a name instead, they held the event loop for ~100 ms mid-serving (a
        # /healthz waited that long in tests/reliability/test_stalls.py).
        is_sensitive_name("password")
        # The argument-hash key is shared by every replica when configured (TRUECALL_AUDIT_KEY).
        shared = keys_from_env("TRUECALL_AUDIT_KEY")
        # Retention (how much of the trail is kept, what is exported before it goes): the arguments,
        # else TRUECALL_AUDIT_RETAIN / TRUECALL_AUDIT_EXPORT (see truecall.audit._retention).
        self.events = AuditLog(self.db, key=audit_key or (shared[0] if shared else None), enabled=audit,
                               journal=audit_journal, retain=audit_retain, export=audit_export)
        # Argument keys a tool does not declare are client data: the audit writes them as [undeclared].
        self.events.declared_fields = lambda tool: t.declared_fields if (t := self.registry.tools.get(tool)) else None
        self.tasks = TaskStore(self.db)
        self.events.history.append(expired_tasks(self.db))  # rows every read already ignores
        self.task_runtime = TaskRuntime(self.tasks, publish=lambda kind, value: self.changes.publish(kind, value),
                                        lease_s=_env_seconds("TRUECALL_TASK_LEASE_S", LEASE_S),
                                        audit=lambda kind, fields: self.events.record(kind, **fields),
                                        recover_hook=lambda tool: t.recover if (t := self.registry.tools.get(tool))
                                        else None)
        # No statement may wait (for a lock, a busy file, a slow server) as long as a lease lasts:
        # a replica stuck that long would lose its tasks while it still believes it runs them.  Half
        # the lease: a renewal (every third of it) that waits the whole bound still lands in time.
        self.db.bound_waits(self.task_runtime.lease_s * 1000 / 2)
        #: Principal for local (stdio) connections; set by the app or the CLI.
        self.local_principal: Principal | None = None
        self.changes = ChangeFeed()
        #: Per-principal call budget (None: unlimited).
        self.rate_limit = rate_limit
        #: ``fn(tool, outcome, seconds)`` after every call (metrics); empty costs nothing.
        self.observers: list[Callable[[str, str, float], None]] = []
        #: True while the tokens are the published demo ones: never served beyond loopback.
        self.demo_credentials = False
        #: The application's own objects (its stores, clients, queues), for its tools and tests to
        #: find: ``server.state.tickets = TicketStore(server.db)``.  truecall never reads it.
        self.state = State()
        #: ``lifespan(server)``: entered while serving (see :meth:`running`).
        self.lifespan = lifespan
        #: What the lifespan yielded, while it runs (``ctx.lifespan_context``).
        self.lifespan_context: Any = None
        self._lifespan_exit: Any = None
        #: :meth:`start` ran: the stores are open.
        self.started = False
        # Until start(), each in-process entry point is shadowed by a refusal (an attribute of this
        # object, which start() removes): nothing runs that the stores could not record, and the
        # served path, which only a started server takes, pays no check on every call.
        for name in _ENTRY_POINTS:
            setattr(self, name, self._not_started)

    # -- start-up -----------------------------------------------------------------

    def start(self) -> Server:
        """Open what the server stores (once; later calls change nothing) and return the server.

        Opens the database, applies the migrations every store built on it asked for (the audit
        trail, the tasks, an app's own stores: in the order they were made), then what those stores
        do once it is readable: the audit journals that ended processes left are loaded, the at-rest
        key is read (or made beside a SQLite file).  Orphaned tasks are settled by the engine that
        serves the server (:meth:`~truecall.protocol.engine.Engine.start` with ``recover``), which
        alone knows whether other engines share it.

        Serving calls this before anything listens (``truecall serve``, :meth:`run`, ``--workers``),
        as does every :class:`~truecall.protocol.engine.Engine` it starts: a transport, or an
        in-process ``truecall.Client(server)``, needs no call of its own.  Code that calls the server
        directly without serving (tests, scripts) calls it first: before it, :meth:`call_tool`,
        :meth:`acall_tool`, :meth:`read_resource`, :meth:`get_prompt` and :meth:`complete` raise
        :class:`ServerNotStarted` before anything runs, and so does any statement on ``server.db``
        (``server.tasks``, an app's own stores).  Loudly, not by starting then: a journal replay or a
        migration belongs to start-up, not to whichever call comes first — and ``Client(server)``,
        which FastMCP users test with, starts it.  A failure
        (:class:`~truecall.storage.CannotOpenDatabase`) is raised; a later call tries again.
        """
        if self.started:
            return self
        self.db.open()
        self.started = True
        for name in _ENTRY_POINTS:
            # The refusals go: the class's own methods answer from now on.  delattr, never
            # self.__dict__: reading __dict__ turns CPython's inline attribute values into a dict for
            # good, and every attribute read of the server (dozens a call) then costs ~3x as much.
            try:
                delattr(self, name)
            except AttributeError:  # (already gone)
                pass
        return self

    def _not_started(self, *args: Any, **kwargs: Any) -> NoReturn:
        """What an in-process entry point of a server nobody started does (see :meth:`start`)."""
        raise ServerNotStarted(f"server {self.name!r} is not started: call server.start() first "
                               "(serving, Engine.start() and truecall.Client(server) call it)")

    # -- serving ------------------------------------------------------------------

    def run(self, transport: str = "stdio", *, host: str | None = None, port: int | None = None,
            path: str = "/mcp", **options: Any) -> None:
        """Serve this server until it is stopped, as ``truecall serve`` does: over stdio (the
        default) or Streamable HTTP (``transport="http"`` or ``"streamable-http"``) on ``host``
        (loopback by default) and ``port`` (8000).  FastMCP's ``mcp.run()`` works unchanged; its
        options that change nothing here (``json_response``, ``stateless_http``, ``log_level``…)
        are accepted."""
        from ._fastmcp import run

        run(self, transport, host=host, port=port, path=path, options=options)

    async def start_lifespan(self) -> bool:
        """Enter ``lifespan`` (once; serving, and an in-process client, call this before the first
        request); whether this call entered it (and its caller is the one to :meth:`stop_lifespan`)."""
        if self.lifespan is None or self._lifespan_exit is not None:
            return False
        manager = self.lifespan(self)
        self.lifespan_context = await manager.__aenter__()
        self._lifespan_exit = manager.__aexit__
        return True

    async def stop_lifespan(self) -> None:
        """Leave ``lifespan`` (serving calls this when it ends)."""
        leave, self._lifespan_exit = self._lifespan_exit, None
        if leave is not None:
            self.lifespan_context = None
            await leave(None, None, None)

    # -- change notifications -----------------------------------------------------

    def resource_updated(self, uri: str) -> None:
        """Tell subscribers that ``uri`` changed (``notifications/resources/updated``)."""
        self.changes.publish("resource", uri)

    def list_changed(self, kind: str) -> None:
        """Tell listeners that the tools, prompts or resources list changed."""
        if kind not in ("tools", "prompts", "resources"):
            raise ValueError("kind is tools, prompts or resources")
        self.changes.publish(kind)

    # -- registration -------------------------------------------------------------

    @overload
    def tool(self, name: Callable[..., Any], /) -> Tool: ...

    @overload
    def tool(
        self,
        name: str | None = None,
        *,
        description: str | None = None,
        input_schema: dict[str, Any] | None = None,
        output_schema: dict[str, Any] | None = None,
        title: str | None = None,
        annotations: dict[str, Any] | None = None,
        scopes: Iterable[str] = (),
        task_support: str = "forbidden",
        meta: dict[str, Any] | None = None,
        forms: Iterable[tuple[str, dict[str, Any]]] = (),
        recover: RecoverHook | None = None,
    ) -> Callable[[Callable[..., Any]], Tool]: ...

    def tool(
        self,
        name: str | Callable[..., Any] | None = None,
        *,
        description: str | None = None,
        input_schema: dict[str, Any] | None = None,
        output_schema: dict[str, Any] | None = None,
        title: str | None = None,
        annotations: dict[str, Any] | None = None,
        scopes: Iterable[str] = (),
        task_support: str = "forbidden",
        meta: dict[str, Any] | None = None,
        forms: Iterable[tuple[str, dict[str, Any]]] = (),
        recover: RecoverHook | None = None,
    ) -> Tool | Callable[[Callable[..., Any]], Tool]:
        """Register a function as a tool: ``@server.tool``, ``@server.tool()`` or ``@server.tool(name=...)``.

        The ``inputSchema`` comes from the parameters' type hints (and the docstring's parameter
        descriptions) unless ``input_schema`` is given; the ``outputSchema`` from the return
        annotation unless ``output_schema`` is given; the description from the docstring unless
        ``description`` is given.  A parameter annotated :class:`ToolContext` receives the
        context; so does an unannotated first parameter named ``ctx`` (the style before type
        hints).  Anything that cannot become a tool raises :class:`RegistrationError` now, naming
        the function and the parameter, rather than failing at the first call.

        ``forms`` lists the ``(message, requestedSchema)`` pairs the tool will elicit,
        so that a form breaking the red lines (credentials, paste-anything, typed
        confirmations of destructive actions) is refused at registration rather than
        at the first call.

        ``recover`` (``fn(task) -> ToolResult | None``) settles a task of this tool whose process
        died: it looks at the world and returns what is true now, or ``None`` (the task ends
        ``outcome_unknown``).  See the tasks guide.
        """
        if callable(name):  # bare @server.tool
            return self.tool()(name)
        from ..forms import check_forms

        check_forms(forms)  # the red lines, at registration

        def decorate(fn: Callable[..., Any]) -> Tool:
            return self.registry.add_tool(
                Tool.from_function(fn, name, description=description, input_schema=input_schema,
                                   output_schema=output_schema, title=title, annotations=annotations,
                                   scopes=frozenset(scopes), task_support=task_support, meta=meta,
                                   recover=recover, open_input=self.extra_arguments == "ignore"))

        return decorate

    def resource(self, uri: str, *, name: str | None = None, title: str | None = None,
                 description: str | None = None, mime_type: str | None = None, scopes: Iterable[str] = (),
                 listed: bool = True) -> Callable[..., Resource | ResourceTemplate]:
        """Register a reader of ``uri`` returning text, bytes or a list of contents.  ``name``
        defaults to the function's name, ``description`` to its docstring; the reader takes its
        :class:`ToolContext` if it asks for one and ``uri`` if it has such a parameter (the style
        before hints, ``fn(ctx, uri)``, keeps working)."""
        if callable(uri):
            raise RegistrationError(f"resource {getattr(uri, '__name__', uri)!r}: @server.resource needs a URI: "
                                    "@server.resource(\"scheme://path\")")
        if _TEMPLATE_VARIABLE.search(uri):  # "x://{id}": a template, as FastMCP reads it
            if not listed:
                raise RegistrationError(f"resource template {uri!r}: listed=False is for fixed URIs; a template "
                                        "is always listed")
            return self.resource_template(uri, name=name, title=title, description=description,
                                          mime_type=mime_type, scopes=scopes)

        def decorate(fn: Callable[..., Any]) -> Resource | ResourceTemplate:
            return self.registry.add_resource(
                Resource(uri, _name_of(fn, name, "resource"), fn, title, _doc_of(fn, description), mime_type,
                         frozenset(scopes), listed))

        return decorate

    def resource_template(self, uri_template: str, *, name: str | None = None, title: str | None = None,
                          description: str | None = None, mime_type: str | None = None,
                          scopes: Iterable[str] = ()) -> Callable[..., ResourceTemplate]:
        """Register a reader for every URI matching the template; its variables are passed by name
        (``fn(ctx, uri, **params)`` in the style before hints).  A variable named ``tenant`` holds the
        caller's tenant: a URI naming another reads as not found before the reader runs
        (:data:`truecall.server._policy.TENANT_VARIABLE`)."""
        if callable(uri_template):
            raise RegistrationError("@server.resource_template needs a URI template: "
                                    "@server.resource_template(\"scheme://{id}\")")

        def decorate(fn: Callable[..., Any]) -> ResourceTemplate:
            return self.registry.add_template(
                ResourceTemplate(uri_template, _name_of(fn, name, "resource template"), fn, title,
                                 _doc_of(fn, description), mime_type, frozenset(scopes)))

        return decorate

    @overload
    def prompt(self, name: Callable[..., Any], /) -> Prompt: ...

    @overload
    def prompt(self, name: str | None = None, *, description: str | None = None, title: str | None = None,
               arguments: list[dict[str, Any]] | None = None, scopes: Iterable[str] = (),
               completions: dict[str, Callable[[str], list[str]]] | None = None
               ) -> Callable[[Callable[..., Any]], Prompt]: ...

    def prompt(self, name: str | Callable[..., Any] | None = None, *, description: str | None = None,
               title: str | None = None, arguments: list[dict[str, Any]] | None = None, scopes: Iterable[str] = (),
               completions: dict[str, Callable[[str], list[str]]] | None = None
               ) -> Prompt | Callable[[Callable[..., Any]], Prompt]:
        """Register a prompt returning a string (one user message), a list of messages or a
        ``GetPromptResult``-shaped dict.  Its arguments come from the signature (strings; a
        default makes one optional; the docstring describes them) unless ``arguments`` is given."""
        if callable(name):  # bare @server.prompt
            return self.prompt()(name)

        def decorate(fn: Callable[..., Any]) -> Prompt:
            from . import _typed

            sig = _typed.read_signature(fn, "prompt", name)
            desc = description or sig.description or None  # optional in MCP (a prompt is picked by a person)
            args = arguments if arguments is not None else _typed.prompt_arguments(sig)
            return self.registry.add_prompt(
                Prompt(_name_of(fn, name, "prompt"), fn, desc, title, args, frozenset(scopes), completions or {},
                       signature=sig))

        return decorate

    # -- who is calling -----------------------------------------------------------

    #: ``authenticate(token, *, tool=None) -> Principal``: the principal for ``token``; a refusal
    #: is recorded, then raised (:func:`truecall.server._pipeline.authenticate`).
    authenticate = _pipeline.authenticate

    def local_user(self) -> Principal:
        """The principal of a caller that is this machine's own user and brought no credential: a
        stdio server the user started, or a :class:`truecall.Client` on this server in the same
        process.  Tenant ``local``, every scope the tools, resources and prompts declare — such a
        caller could reach whatever the process holds anyway.  ``local_principal``, when set, is
        used instead by both."""
        from ..auth._principals import LOCAL_TENANT, local_user_name

        registry = self.registry
        declared = {scope for group in (registry.tools.values(), registry.resources.values(),
                                        registry.templates, registry.prompts.values())
                    for item in group for scope in item.scopes}
        return Principal(local_user_name(), LOCAL_TENANT, frozenset(declared))

    def visible_tools(self, principal: Principal) -> list[Tool]:
        """Tools this principal may call, in registration order."""
        return [t for t in self.registry.tools.values() if t.scopes <= principal.scopes]

    # -- calling a tool (the pipeline: truecall.server._pipeline) ------------------------------

    def call_tool(self, name: str, arguments: Any, token: str | None, tenant: str | None = None) -> ToolResult:
        """The synchronous API (tests, examples/): authenticate ``token``, then run the pipeline
        (on a started server: :class:`ServerNotStarted` otherwise)."""
        if not self.started:
            self._not_started()
        principal = self.authenticate(token, tool=name)
        coro = _pipeline.call_tool(self, principal, name, arguments, tenant=tenant)
        tool = self.registry.tools.get(name) if isinstance(name, str) else None
        if tool is None or not tool.is_async:
            return _drive(coro)  # nothing to await: no event loop needed
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(coro)
        coro.close()
        raise RuntimeError("call_tool is synchronous; use 'await server.acall_tool(...)' inside an event loop")

    #: ``await server.acall_tool(principal, name, arguments, *, tenant=None, peer=NO_PEER,
    #: request_id=None, meta=None, client=None, task_mode=None, task_ttl_ms=None, from_json=False)``:
    #: run one call for an authenticated principal and return an honest result, or the
    #: :class:`Task` the tool accepted its work as (see :func:`truecall.server._pipeline.call_tool`).
    acall_tool = _pipeline.call_tool

    # -- resources and prompts ----------------------------------------------------

    def visible_resources(self, principal: Principal) -> list[Resource]:
        return [r for r in self.registry.resources.values() if r.listed and r.scopes <= principal.scopes]

    def visible_templates(self, principal: Principal) -> list[ResourceTemplate]:
        return [t for t in self.registry.templates if t.scopes <= principal.scopes]

    def visible_prompts(self, principal: Principal) -> list[Prompt]:
        return [p for p in self.registry.prompts.values() if p.scopes <= principal.scopes]

    async def read_resource(self, principal: Principal, uri: str, *, peer: Peer = NO_PEER) -> list[dict[str, Any]]:
        """Contents of ``uri`` for ``principal``; unknown, another tenant's and forbidden read alike
        (:class:`NotFound`), as the policy stage decides (:func:`truecall.server._policy.admit_resource`)."""
        if not isinstance(uri, str) or len(uri) > 4096:
            raise InvalidParams("uri must be a string")
        res, params = admit_resource(self, principal, uri)
        ctx = ToolContext(principal, None, self, peer)
        try:
            out = res.read(ctx, uri, params)
            if res.is_async:
                out = await out
        except ElicitationUnavailable as exc:
            raise _missing_capability(exc) from None
        if out is None:  # the reader found nothing there
            self.events.record("resource.denied", tenant=principal.tenant, subject=principal.subject,
                               outcome="not_found", reason="not_found",
                               arguments={"uri": uri})  # names nothing: only its keyed hash
            raise NotFound("Resource not found", {"uri": _shown(uri)})
        contents = _as_contents(uri, out, res.mime_type)
        malformed = contents_problems(contents, peer.version)  # the MCP schema of the era, before it leaves
        if malformed:
            _withheld("resource", res.name, malformed)
        template = getattr(res, "uri_template", None)
        if template is None:  # a fixed resource: its URI is the server's own, matched exactly
            self.events.record("resource.read", tenant=principal.tenant, subject=principal.subject, outcome="ok",
                               uri=_shown(uri))
        else:  # the variables are the caller's: each kept as its name, its size and (all) a keyed hash
            self.events.record("resource.read", tenant=principal.tenant, subject=principal.subject, outcome="ok",
                               uriTemplate=template, variables={k: len(v) for k, v in params.items()},
                               arguments=params, argument_names=frozenset(params))
        return contents

    async def get_prompt(self, principal: Principal, name: str, arguments: Any, *, peer: Peer = NO_PEER) -> dict[str, Any]:
        """The prompt ``name`` filled in for ``principal`` (the policy stage first:
        :func:`truecall.server._policy.admit_prompt`)."""
        prompt = admit_prompt(self, principal, name)
        arguments = arguments or {}
        if not isinstance(arguments, dict) or not all(isinstance(v, str) for v in arguments.values()):
            raise InvalidParams("prompt arguments must be an object of strings")
        missing = [a for a in prompt.required if not arguments.get(a)]
        if missing:
            raise InvalidParams(f"Missing required prompt argument: {missing[0]}")
        ctx = ToolContext(principal, None, self, peer)
        known = {a["name"] for a in prompt.arguments}
        try:
            out = prompt.invoke(ctx, {k: v for k, v in arguments.items() if k in known})
            if prompt.is_async:
                out = await out
        except ElicitationUnavailable as exc:
            raise _missing_capability(exc) from None
        out = as_messages(out)
        result: dict[str, Any] = {"messages": out} if isinstance(out, list) else dict(out)
        if "description" not in result and prompt.description:
            result["description"] = prompt.description
        malformed = prompt_problems(result, peer.version)
        if malformed:
            _withheld("prompt", prompt.name, malformed)
        self.events.record("prompt.get", tenant=principal.tenant, subject=principal.subject, outcome="ok",
                           prompt=name)
        return result

    def completion(self) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Register one completion handler for every prompt argument and template variable
        (``@mcp.completion()``, the SDK's way): ``fn(ref, argument, context)`` returning a
        ``Completion`` (or ``None``), with the SDK's types when its module uses them."""
        def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
            self.completer = fn
            return fn
        return decorate

    #: The handler :meth:`completion` registered (``None``: each prompt's ``completions=``).
    completer: Callable[..., Any] | None = None

    def complete(self, principal: Principal, ref: dict[str, Any], argument: dict[str, Any],
                 context: dict[str, Any] | None = None) -> "list[str] | Coroutine[Any, Any, list[str]]":
        """Completion values for a prompt argument (empty when nothing is known); a coroutine of
        them when a :meth:`completion` handler answers.  The policy stage first
        (:func:`truecall.server._policy.admit_completion`)."""
        prompt = admit_completion(self, principal, ref, context)
        if self.completer is not None:
            from ._fastmcp import complete_with

            return complete_with(self.completer, ref, argument, context)
        if prompt is not None:
            fn = prompt.completions.get(argument.get("name", ""))
            return fn(str(argument.get("value", "")))[:100] if fn else []
        if ref.get("type") == "ref/resource":
            return []
        raise InvalidParams("Unknown reference type")




#: The in-process API that runs a tool, reads a resource or gets a prompt (each leaves an audit record):
#: refused until :meth:`Server.start` (``call_tool`` checks itself: it calls the pipeline directly).
_ENTRY_POINTS = ("acall_tool", "read_resource", "get_prompt", "complete")

#: A ``{variable}`` in a URI given to ``@server.resource``: the URI is a template.
_TEMPLATE_VARIABLE = re.compile(r"\{[A-Za-z_][A-Za-z0-9_]*\}")


def _env_seconds(name: str, default: float) -> float:
    """A positive duration in seconds from the environment (e.g. ``TRUECALL_TASK_LEASE_S``)."""
    import os

    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise SettingError(f"{name} must be a number of seconds, not {raw!r}") from None
    if not value > 0:
        raise SettingError(f"{name} must be positive, not {raw!r}")
    return value





def _withheld(what: str, name: str, problems: list[str]) -> NoReturn:
    """A resource or prompt result the MCP schema refuses: logged with why, answered -32603."""
    from ._wire_check import log

    log.warning("%s %s: a result the MCP schema refuses was withheld: %s", what, name, "; ".join(problems))
    raise InternalError(f"the {what} produced a result that is not a valid MCP result; it was withheld")


def _missing_capability(exc: ElicitationUnavailable) -> MissingCapability:
    """Prompts and resources have no error result: a missing capability is -32021."""
    caps: dict[str, Any] = {}
    node = caps
    parts = exc.capability.split("/")[0].split(".")
    for part in parts[:-1]:
        node = node.setdefault(part, {})
    node[parts[-1]] = {}
    return MissingCapability(data={"requiredCapabilities": caps})


def _name_of(fn: Any, name: str | None, what: str) -> str:
    if name:
        return name
    fname = getattr(fn, "__name__", None)
    if not isinstance(fname, str) or not fname or fname == "<lambda>":
        raise RegistrationError(f"{what} {fn!r}: needs name= (the function has no usable name)")
    return fname


def _doc_of(fn: Any, description: str | None) -> str | None:
    if description:
        return description
    from ._typed import parse_doc

    return parse_doc(fn)[0] or None



def _is_contents(item: Any) -> bool:
    """A ``ResourceContents`` object written by hand: a ``uri`` and its ``text`` or ``blob``."""
    return type(item) is dict and "uri" in item and ("text" in item or "blob" in item)


def _as_contents(uri: str, out: Any, mime_type: str | None) -> list[dict[str, Any]]:
    """A reader's return value as ``contents``: contents objects as they are; text and bytes as one
    item; any other data (a dict, a list, a model) as its JSON, ``application/json`` — as FastMCP
    reads a resource that returns data, rather than data sent as if it were contents."""
    import base64

    if isinstance(out, list) and out and all(_is_contents(item) for item in out):
        return out
    if _is_contents(out):
        return [out]
    if isinstance(out, (bytes, bytearray)):
        key, value = "blob", base64.b64encode(bytes(out)).decode()
    elif isinstance(out, str):
        key, value = "text", out
    else:
        import orjson

        from ._typed import _to_builtins

        key, value = "text", orjson.dumps(_to_builtins(out)).decode()
        mime_type = mime_type or "application/json"
    item: dict[str, Any] = {"uri": uri}
    if mime_type:
        item["mimeType"] = mime_type
    item[key] = value
    return [item]


def _drive(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine that never awaits anything real (a sync tool) without an event loop."""
    try:
        coro.send(None)
    except StopIteration as done:
        value: T = done.value
        return value
    coro.close()
    raise RuntimeError("a synchronous tool awaited; it should be declared async")


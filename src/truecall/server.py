"""The server: registries, stores and the one call pipeline.

    authenticate → tenant → find tool → scopes → validate input → run
    → check output → audit → return

Each step is a plain method call on precompiled data.  What the model can fix
comes back as an ``isError`` result; everything else is raised as a
:class:`~truecall.errors.ProtocolError` (the access faults are also
``PermissionError``, for in-process callers).  No tool's existence is revealed to a
caller without a valid credential: authentication comes first.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any, Callable, Iterable

from ._misuse import SettingError
from .audit import AuditLog
from .changes import ChangeFeed
from .auth import Principal, StaticTokens, TokenVerifier
from .context import NO_PEER, ElicitationUnavailable, InputRequired, InvalidElicitationAnswer, Peer, ToolContext
from .errors import (AccessDenied, InsufficientScope, InvalidParams, MissingCapability, NotFound, ProtocolError,
                     TaskRequired, TenantMismatch, UnknownTool)
from .forms import FormError, refused_result
from .keys import keys_from_env
from .ratelimit import RateLimit
from .results import MISSING_INPUT_TEXT, ErrorKind, ToolResult, text, tool_error
from .storage import Storage, open_database, unavailable
from .tasks import Task, TaskStore
from .tasks.runtime import LEASE_S, TaskRuntime
from ._typed import ArgumentError, RegistrationError, as_messages, as_result as _as_result
from .redact import redact_text
from .results import ToolError
from .tools import Prompt, Registry, Resource, ResourceTemplate, Tool

__all__ = ["Server"]

#: Where a tool's unexpected exception goes, traceback redacted (stderr unless configured otherwise).
log = logging.getLogger("truecall.tools")
_MAX_ARGUMENT_DEPTH = 64


class Server:
    """An MCP server: tools, resources and prompts behind one honest pipeline."""

    def __init__(
        self,
        name: str,
        version: str = "0.1.0",
        *,
        title: str | None = None,
        instructions: str | None = None,
        tokens: TokenVerifier | None = None,
        db: Storage | str | None = None,
        audit: bool = True,
        audit_key: bytes | None = None,
        audit_journal: bool | None = None,
        rate_limit: "RateLimit | None" = None,
    ) -> None:
        self.name = name
        self.version = version
        self.title = title
        self.instructions = instructions
        self.registry = Registry()
        self.tokens: TokenVerifier = tokens if tokens is not None else StaticTokens()
        self.db = open_database(db)
        # The argument-hash key is shared by every replica when configured (TRUECALL_AUDIT_KEY).
        shared = keys_from_env("TRUECALL_AUDIT_KEY")
        self.events = AuditLog(self.db, key=audit_key or (shared[0] if shared else None), enabled=audit,
                               journal=audit_journal)
        # Argument keys a tool does not declare are client data: the audit writes them as [undeclared].
        self.events.declared_fields = lambda tool: t.declared_fields if (t := self.registry.tools.get(tool)) else None
        self.tasks = TaskStore(self.db)
        self.task_runtime = TaskRuntime(self.tasks, publish=lambda kind, value: self.changes.publish(kind, value),
                                        lease_s=_env_seconds("TRUECALL_TASK_LEASE_S", LEASE_S),
                                        audit=lambda kind, fields: self.events.record(kind, **fields))
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
    ) -> Any:
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
        """
        if callable(name):  # bare @server.tool
            return self.tool()(name)
        from .forms import check_forms

        check_forms(forms)  # the red lines, at registration

        def decorate(fn: Callable[..., Any]) -> Tool:
            return self.registry.add_tool(
                Tool.from_function(fn, name, description=description, input_schema=input_schema,
                                   output_schema=output_schema, title=title, annotations=annotations,
                                   scopes=frozenset(scopes), task_support=task_support, meta=meta))

        return decorate

    def resource(self, uri: str, *, name: str | None = None, title: str | None = None,
                 description: str | None = None, mime_type: str | None = None, scopes: Iterable[str] = (),
                 listed: bool = True) -> Callable[..., Resource]:
        """Register a reader of ``uri`` returning text, bytes or a list of contents.  ``name``
        defaults to the function's name, ``description`` to its docstring; the reader takes its
        :class:`ToolContext` if it asks for one and ``uri`` if it has such a parameter (the style
        before hints, ``fn(ctx, uri)``, keeps working)."""
        if callable(uri):
            raise RegistrationError(f"resource {getattr(uri, '__name__', uri)!r}: @server.resource needs a URI: "
                                    "@server.resource(\"scheme://path\")")

        def decorate(fn: Callable[..., Any]) -> Resource:
            return self.registry.add_resource(
                Resource(uri, _name_of(fn, name, "resource"), fn, title, _doc_of(fn, description), mime_type,
                         frozenset(scopes), listed))

        return decorate

    def resource_template(self, uri_template: str, *, name: str | None = None, title: str | None = None,
                          description: str | None = None, mime_type: str | None = None,
                          scopes: Iterable[str] = ()) -> Callable[..., ResourceTemplate]:
        """Register a reader for every URI matching the template; its variables are passed by name
        (``fn(ctx, uri, **params)`` in the style before hints)."""
        if callable(uri_template):
            raise RegistrationError("@server.resource_template needs a URI template: "
                                    "@server.resource_template(\"scheme://{id}\")")

        def decorate(fn: Callable[..., Any]) -> ResourceTemplate:
            return self.registry.add_template(
                ResourceTemplate(uri_template, _name_of(fn, name, "resource template"), fn, title,
                                 _doc_of(fn, description), mime_type, frozenset(scopes)))

        return decorate

    def prompt(self, name: str | Callable[..., Any] | None = None, *, description: str | None = None,
               title: str | None = None, arguments: list[dict[str, Any]] | None = None, scopes: Iterable[str] = (),
               completions: dict[str, Callable[[str], list[str]]] | None = None) -> Any:
        """Register a prompt returning a string (one user message), a list of messages or a
        ``GetPromptResult``-shaped dict.  Its arguments come from the signature (strings; a
        default makes one optional; the docstring describes them) unless ``arguments`` is given."""
        if callable(name):  # bare @server.prompt
            return self.prompt()(name)

        def decorate(fn: Callable[..., Any]) -> Prompt:
            from . import _typed

            sig = _typed.read_signature(fn, "prompt", name)
            desc = description or sig.description
            if not desc:
                raise sig.fail("needs a description: write a docstring or pass description=")
            args = arguments if arguments is not None else _typed.prompt_arguments(sig)
            return self.registry.add_prompt(
                Prompt(_name_of(fn, name, "prompt"), fn, desc, title, args, frozenset(scopes), completions or {},
                       signature=sig))

        return decorate

    # -- who is calling -----------------------------------------------------------

    def authenticate(self, token: str | None, *, tool: str | None = None) -> Principal:
        """The principal for ``token``; a failure is recorded, then raised."""
        try:
            return self.tokens.authenticate(token)
        except AccessDenied as exc:
            self.events.record("tool.denied" if tool else "auth.denied", reason="invalid_credential",
                               detail=getattr(exc, "reason", None), outcome="denied")
            raise

    def local_user(self) -> Principal:
        """The principal of a caller that is this machine's own user and brought no credential: a
        stdio server the user started, or a :class:`truecall.Client` on this server in the same
        process.  Tenant ``local``, every scope the tools, resources and prompts declare — such a
        caller could reach whatever the process holds anyway.  ``local_principal``, when set, is
        used instead by both."""
        from .auth import LOCAL_TENANT, local_user_name

        registry = self.registry
        declared = {scope for group in (registry.tools.values(), registry.resources.values(),
                                        registry.templates, registry.prompts.values())
                    for item in group for scope in item.scopes}
        return Principal(local_user_name(), LOCAL_TENANT, frozenset(declared))

    def visible_tools(self, principal: Principal) -> list[Tool]:
        """Tools this principal may call, in registration order."""
        return [t for t in self.registry.tools.values() if t.scopes <= principal.scopes]

    def admit(self, principal: Principal, name: str, tenant: str | None = None) -> Tool:
        """Tenant, existence and scope checks, in an order that leaks nothing."""
        if tenant is not None and tenant != principal.tenant:
            self._deny(principal, name, "tenant_mismatch")
            raise TenantMismatch()
        tool = self.registry.tools.get(name) if isinstance(name, str) else None
        if tool is None:
            self._deny(principal, name, "unknown_tool")
            raise UnknownTool(str(name))
        if not tool.scopes <= principal.scopes:
            self._deny(principal, name, "insufficient_scope")
            raise InsufficientScope(tool.scopes - principal.scopes)
        return tool

    def _deny(self, principal: Principal, name: Any, reason: str) -> None:
        self.events.record("tool.denied", tool=str(name)[:128], tenant=principal.tenant,
                           subject=principal.subject, reason=reason, outcome="denied")

    # -- the pipeline -------------------------------------------------------------

    def call_tool(self, name: str, arguments: Any, token: str | None, tenant: str | None = None) -> ToolResult:
        """The synchronous API (tests, examples/): authenticate ``token``, then run the pipeline."""
        principal = self.authenticate(token, tool=name)
        coro = self.acall_tool(principal, name, arguments, tenant=tenant)
        tool = self.registry.tools.get(name) if isinstance(name, str) else None
        if tool is None or not tool.is_async:
            return _drive(coro)  # nothing to await: no event loop needed
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(coro)
        coro.close()
        raise RuntimeError("call_tool is synchronous; use 'await server.acall_tool(...)' inside an event loop")

    async def acall_tool(
        self,
        principal: Principal,
        name: str,
        arguments: Any,
        *,
        tenant: str | None = None,
        peer: Peer = NO_PEER,
        request_id: Any = None,
        meta: dict[str, Any] | None = None,
        client: str | None = None,
        task_mode: str | None = None,
        task_ttl_ms: int | None = None,
        from_json: bool = False,
    ) -> ToolResult | Task:
        """Run one call for an authenticated principal and return an honest result.

        ``task_mode`` ("ext" for the tasks extension, "core" for 2025-11-25 tasks,
        "inproc" for in-process callers) says the caller can take a task: if the tool
        accepts its work (``ctx.accept_as_task()``) the answer is that :class:`Task`,
        and the rest of the handler runs in the background.
        """
        started = time.perf_counter()
        tool = self.admit(principal, name, tenant)
        if tool.task_support == "required" and task_mode is None:
            self._deny(principal, name, "task_required")
            raise TaskRequired()
        if self.rate_limit is not None:
            wait_ms = self.rate_limit.take(principal.tenant, principal.subject)
            if wait_ms:
                retry = int(wait_ms) + 1
                self.events.record("tool.rate_limited", tool=name, tenant=principal.tenant,
                                   subject=principal.subject, outcome="rate_limited", retryAfterMs=retry)
                return tool_error(ErrorKind.RATE_LIMITED, f"too many calls; retry in {retry} ms", retryAfterMs=retry)
        if arguments is None:
            arguments = {}
        rejection = self.check_input(tool, principal, arguments, from_json=from_json, request_id=request_id)
        if rejection is not None:
            return rejection
        ctx = ToolContext(principal, tool, self, peer, request_id, meta)
        if task_mode is None or tool.task_support == "forbidden":
            return await self._run(tool, ctx, principal, arguments, started, client)
        loop = asyncio.get_running_loop()
        accepted: asyncio.Future[Task] = loop.create_future()

        async def accept(c: ToolContext, message: str | None) -> Task:
            task = self.task_runtime.accept(c, era=task_mode, ttl_ms=task_ttl_ms, message=message)
            self.events.record("task.created", tool=name, tenant=principal.tenant, subject=principal.subject,
                               outcome="accepted", taskId=task.task_id, arguments=arguments,
                               **_request_ref(request_id))
            if not accepted.done():
                accepted.set_result(task)
            await asyncio.sleep(0)  # the caller hears of the task before the work goes on
            return task

        ctx._accept = accept
        work = loop.create_task(self._run(tool, ctx, principal, arguments, started, client))
        def audit(kind: str, fields: dict[str, Any]) -> None:
            self.events.record(kind, tool=name, tenant=principal.tenant, subject=principal.subject, **fields)

        try:
            await asyncio.wait({work, accepted}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            if accepted.done():  # the caller left after the work was accepted: it goes on as a task
                self.task_runtime.adopt(accepted.result(), work, audit)
            else:
                work.cancel()
            raise
        if accepted.done():
            task = accepted.result()
            self.task_runtime.adopt(task, work, audit)
            return task
        accepted.cancel()
        return work.result()

    async def _run(self, tool: Tool, ctx: ToolContext, principal: Principal, arguments: dict[str, Any],
                   started: float, client: str | None) -> ToolResult:
        name = tool.name
        try:
            if tool.is_async:
                out = await tool.invoke(ctx, arguments)
            else:
                out = tool.invoke(ctx, arguments)
        except (InputRequired, ProtocolError):
            raise
        except ToolError as exc:  # the tool's own, typed "not done"
            return self._record(tool, principal, arguments, exc.result, started, client, ctx.request_id)
        except ArgumentError as exc:  # valid JSON that still is not the parameter's type
            result = tool_error(ErrorKind.INVALID_INPUT, f"invalid input: {exc}", field=exc.field)
            return self._record(tool, principal, arguments, result, started, client, ctx.request_id)
        except ElicitationUnavailable as exc:
            if exc.missing:
                message = f"input needed and the client cannot be asked: {', '.join(exc.missing)}"
            else:
                message = f"the client did not declare the {exc.capability} capability this tool needs"
            result = tool_error(ErrorKind.INVALID_INPUT, message, missing=exc.missing, capability=exc.capability)
            return self._record(tool, principal, arguments, result, started, client, ctx.request_id)
        except FormError as exc:  # a red line held at run time: nobody was asked
            self.events.record("tool.form_refused", tool=name, tenant=principal.tenant, subject=principal.subject,
                               outcome="refused", rule=exc.rule, **_request_ref(ctx.request_id))
            return self._record(tool, principal, arguments, refused_result(exc), started, client, ctx.request_id)
        except InvalidElicitationAnswer as exc:
            result = tool_error(ErrorKind.INVALID_INPUT, f"the user's answer was not usable: {exc}")
            return self._record(tool, principal, arguments, result, started, client, ctx.request_id)
        except asyncio.CancelledError:
            self.events.record("tool.cancelled", tool=name, tenant=principal.tenant, subject=principal.subject,
                               outcome="cancelled", arguments=arguments,
                               durationMs=round((time.perf_counter() - started) * 1000, 3),
                               **_request_ref(ctx.request_id))
            raise
        except Exception as exc:  # a bug in the tool, or a dependency down: safe message out, type in the audit
            why = unavailable(exc)
            if why is not None and (tool.annotations or {}).get("readOnlyHint") is True:
                # A read-only tool changed nothing whatever point it reached: an honest, retryable
                # "not now".  (A tool that writes may have done part of its work first: see below.)
                result = tool_error(ErrorKind.DEPENDENCY_UNAVAILABLE,
                                    f"{why}; this read-only tool changed nothing. Retry later.")
                outcome, reason = ErrorKind.DEPENDENCY_UNAVAILABLE.value, "dependency_unavailable"
            elif why is not None:
                result = tool_error(ErrorKind.INTERNAL, f"the tool stopped part-way: {why}. What it did before "
                                    "that is not known; check before retrying.")
                outcome, reason = "internal", "dependency_unavailable"
            else:
                result = tool_error(ErrorKind.INTERNAL,
                                    "the tool failed unexpectedly; nothing is known to have happened")
                outcome, reason = "internal", "exception"
                _log_failure(name, exc)
            self.events.record("tool.failed", tool=name, tenant=principal.tenant, subject=principal.subject,
                               outcome=outcome, reason=reason, exception=type(exc).__name__,
                               arguments=arguments, durationMs=round((time.perf_counter() - started) * 1000, 3),
                               **_request_ref(ctx.request_id))
            return result
        try:
            result = _as_result(out) if tool.returns is None else tool.returns(out)
        except (TypeError, ValueError) as exc:  # not a result, or not JSON: a bug in the tool
            _log_failure(name, exc)
            self.events.record("tool.failed", tool=name, tenant=principal.tenant, subject=principal.subject,
                               outcome="internal", reason="bad_result", exception=type(exc).__name__,
                               arguments=arguments, durationMs=round((time.perf_counter() - started) * 1000, 3),
                               **_request_ref(ctx.request_id))
            return tool_error(ErrorKind.INTERNAL, "the tool produced something that is not a result; it was withheld")
        if not result.is_error and tool.output_validator is not None:
            sc = result.structured_content
            if sc is None or not tool.output_validator.is_valid(sc):
                problems = ["structuredContent is missing"] if sc is None else \
                    [v.message for v in tool.output_validator.violations(sc, 5)]
                self.events.record("tool.failed", tool=name, tenant=principal.tenant, subject=principal.subject,
                                   outcome="internal", reason="output_schema_violation", violations=problems,
                                   arguments=arguments, durationMs=round((time.perf_counter() - started) * 1000, 3),
                                   **_request_ref(ctx.request_id))
                return tool_error(ErrorKind.INTERNAL, "the tool produced a result that breaks its own output "
                                  "contract; it was withheld")
        return self._record(tool, principal, arguments, result, started, client, ctx.request_id)

    def check_input(self, tool: Tool, principal: Principal, arguments: Any, *,
                    from_json: bool = False, request_id: Any = None) -> ToolResult | None:
        """``None`` when the arguments are valid, else the rejection (already recorded).

        ``from_json``: the arguments were just decoded from a checked message, so
        they are plain JSON within the depth limit and need not be walked again.
        """
        if not isinstance(arguments, dict):
            return self._reject(tool, principal, arguments, "arguments must be a JSON object", "(root)", request_id)
        if not from_json and not _is_json(arguments):
            return self._reject(tool, principal, {}, "arguments must be JSON data (UTF-8 text, numbers, "
                                f"booleans, null, arrays, objects) nested at most {_MAX_ARGUMENT_DEPTH} deep",
                                "(root)", request_id)
        validator = tool.input_validator
        if validator.is_valid(arguments):
            missing = validator.missing_required(arguments) if validator.required else None
            if not missing:
                return None
            return self._reject(tool, principal, arguments, None, missing, request_id)
        try:
            violations = validator.violations(arguments, 5)
        except (RecursionError, ValueError):
            return self._reject(tool, principal, arguments, "arguments are too deeply nested", "(root)", request_id)
        missing = list(dict.fromkeys([*(v.path for v in violations if v.missing),
                                      *validator.missing_required(arguments)]))
        if missing:
            return self._reject(tool, principal, arguments, None, missing, request_id)
        return self._reject(tool, principal, arguments, "; ".join(v.message for v in violations),
                            violations[0].path if violations else "(root)", request_id)

    def _reject(self, tool: Tool, principal: Principal, arguments: Any, message: str | None,
                field: str | list[str], request_id: Any = None) -> ToolResult:
        """Record and build an ``invalid_input`` result.

        ``message`` ``None``: required fields (``field``, a list) are missing or empty.  The
        narrative stays :data:`~truecall.results.MISSING_INPUT_TEXT` exactly; ``structuredContent.error`` carries the kind and
        the ``missing`` fields for programs.  A path's client-chosen parts (keys the schema does
        not declare) are never echoed; the required names come from the schema itself.
        """
        missing = [_missing_path(tool, f) for f in field] if isinstance(field, list) else None
        first = field[0] if isinstance(field, list) else field
        self.events.record("tool.rejected", tool=tool.name, tenant=principal.tenant, subject=principal.subject,
                           reason="invalid_input", outcome="invalid_input", field=_declared_path(tool, first),
                           arguments=arguments if isinstance(arguments, dict) else {}, **_request_ref(request_id))
        if missing is not None:
            return tool_error(ErrorKind.INVALID_INPUT, MISSING_INPUT_TEXT, field=missing[0], missing=missing)
        return tool_error(ErrorKind.INVALID_INPUT, f"invalid input: {message}", field=field)

    def _record(self, tool: Tool, principal: Principal, arguments: Any, result: ToolResult, started: float,
                client: str | None, request_id: Any = None) -> ToolResult:
        err = result.error
        outcome = (err.get("kind", "error") if err else "error") if result.is_error else "ok"
        elapsed = time.perf_counter() - started
        self.events.record_call("tool.called", tool.name, principal.tenant, principal.subject, outcome, arguments,
                                round(elapsed * 1000, 3), client, _audited_id(request_id))
        for observe in self.observers:
            observe(tool.name, outcome, elapsed)
        return result

    # -- resources and prompts ----------------------------------------------------

    def visible_resources(self, principal: Principal) -> list[Resource]:
        return [r for r in self.registry.resources.values() if r.listed and r.scopes <= principal.scopes]

    def visible_templates(self, principal: Principal) -> list[ResourceTemplate]:
        return [t for t in self.registry.templates if t.scopes <= principal.scopes]

    def visible_prompts(self, principal: Principal) -> list[Prompt]:
        return [p for p in self.registry.prompts.values() if p.scopes <= principal.scopes]

    async def read_resource(self, principal: Principal, uri: str, *, peer: Peer = NO_PEER) -> list[dict[str, Any]]:
        """Contents of ``uri`` for ``principal``; unknown and forbidden read alike (:class:`NotFound`)."""
        if not isinstance(uri, str) or len(uri) > 4096:
            raise InvalidParams("uri must be a string")
        found = self.registry.find_resource(uri)
        if found is None or not found[0].scopes <= principal.scopes:
            self.events.record("resource.denied", tenant=principal.tenant, subject=principal.subject,
                               outcome="not_found", arguments={"uri": uri})  # names nothing: only its HMAC
            raise NotFound("Resource not found", {"uri": _shown(uri)})
        res, params = found
        ctx = ToolContext(principal, None, self, peer)  # type: ignore[arg-type]
        try:
            out = res.read(ctx, uri, params)
            if res.is_async:
                out = await out
        except ElicitationUnavailable as exc:
            raise _missing_capability(exc) from None
        if out is None:
            self.events.record("resource.denied", tenant=principal.tenant, subject=principal.subject,
                               outcome="not_found", arguments={"uri": uri})  # names nothing: only its HMAC
            raise NotFound("Resource not found", {"uri": _shown(uri)})
        contents = _as_contents(uri, out, res.mime_type)
        self.events.record("resource.read", tenant=principal.tenant, subject=principal.subject, outcome="ok",
                           uri=_shown(uri))
        return contents

    async def get_prompt(self, principal: Principal, name: str, arguments: Any, *, peer: Peer = NO_PEER) -> dict[str, Any]:
        prompt = self.registry.prompts.get(name) if isinstance(name, str) else None
        if prompt is None or not prompt.scopes <= principal.scopes:
            raise InvalidParams(f"Unknown prompt: {str(name)[:128]}")
        arguments = arguments or {}
        if not isinstance(arguments, dict) or not all(isinstance(v, str) for v in arguments.values()):
            raise InvalidParams("prompt arguments must be an object of strings")
        missing = [a for a in prompt.required if not arguments.get(a)]
        if missing:
            raise InvalidParams(f"Missing required prompt argument: {missing[0]}")
        ctx = ToolContext(principal, None, self, peer)  # type: ignore[arg-type]
        known = {a["name"] for a in prompt.arguments}
        try:
            out = prompt.invoke(ctx, {k: v for k, v in arguments.items() if k in known})
            if prompt.is_async:
                out = await out
        except ElicitationUnavailable as exc:
            raise _missing_capability(exc) from None
        out = as_messages(out)
        result: dict[str, Any] = {"messages": out} if isinstance(out, list) else dict(out)
        if "description" not in result:
            result["description"] = prompt.description
        self.events.record("prompt.get", tenant=principal.tenant, subject=principal.subject, outcome="ok",
                           prompt=name)
        return result

    def complete(self, principal: Principal, ref: dict[str, Any], argument: dict[str, Any]) -> list[str]:
        """Completion values for a prompt argument (empty when nothing is known)."""
        if ref.get("type") == "ref/prompt":
            prompt = self.registry.prompts.get(ref.get("name"))  # type: ignore[arg-type]
            if prompt is None or not prompt.scopes <= principal.scopes:
                raise InvalidParams("Unknown prompt")
            fn = prompt.completions.get(argument.get("name", ""))
            return fn(str(argument.get("value", "")))[:100] if fn else []
        if ref.get("type") == "ref/resource":
            return []
        raise InvalidParams("Unknown reference type")


def _request_ref(request_id: Any) -> dict[str, Any]:
    """``{"requestId": …}`` for the audit record of a call that came with a JSON-RPC id: the one
    field that ties an answer a client holds to its record (time, tool and outcome do not)."""
    ref = _audited_id(request_id)
    return {} if ref is None else {"requestId": ref}


def _audited_id(request_id: Any) -> int | str | None:
    """The JSON-RPC id as the audit trail keeps it (``None``: no id worth keeping)."""
    if request_id is None or isinstance(request_id, bool):
        return None
    if isinstance(request_id, int):
        return request_id
    return str(request_id)[:128]


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


def _is_json(value: Any) -> bool:
    """Plain JSON data, nested at most ``_MAX_ARGUMENT_DEPTH`` deep (in-process callers can pass anything)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > _MAX_ARGUMENT_DEPTH:
            return False
        if isinstance(item, str):
            if not item.isascii():
                try:
                    item.encode("utf-8")
                except UnicodeEncodeError:
                    return False
        elif isinstance(item, dict):
            for key, child in item.items():
                if not isinstance(key, str):
                    return False
                stack.append((key, depth))
                stack.append((child, depth + 1))
        elif isinstance(item, list):
            stack.extend((child, depth + 1) for child in item)
        elif item is not None and not isinstance(item, (bool, int, float)):
            return False
    return True


def _declared_path(tool: Tool, path: str) -> str:
    """A field path fit for the audit trail: names the schema does not declare are client
    data (possibly a pasted secret) and are not written."""
    declared = tool.declared_fields
    parts = path.split("/") if path and path != "(root)" else []
    return "/".join(p if (p in declared or p.isdigit()) else "[undeclared]" for p in parts) or "(root)"


def _missing_path(tool: Tool, path: str) -> str:
    """A missing field's path fit to echo: the last part is a name the schema requires, the
    parts before it are checked like :func:`_declared_path`."""
    prefix, _, name = path.rpartition("/")
    return f"{_declared_path(tool, prefix)}/{name}" if prefix else name


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


def _log_failure(tool: str, exc: BaseException) -> None:
    """The traceback of a tool's unexpected failure for the operator, redacted first (the client
    only hears a safe message; the audit keeps the exception's type)."""
    import traceback

    trace = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    log.error("tool %s failed unexpectedly:\n%s", tool, redact_text(trace))


def _as_contents(uri: str, out: Any, mime_type: str | None) -> list[dict[str, Any]]:
    import base64

    if isinstance(out, list):
        return out
    if isinstance(out, dict):
        return [out]
    item: dict[str, Any] = {"uri": uri}
    if mime_type:
        item["mimeType"] = mime_type
    if isinstance(out, (bytes, bytearray)):
        item["blob"] = base64.b64encode(bytes(out)).decode()
    else:
        item["text"] = str(out)
    return [item]


def _drive(coro: Any) -> Any:
    """Run a coroutine that never awaits anything real (a sync tool) without an event loop."""
    try:
        coro.send(None)
    except StopIteration as done:
        return done.value
    coro.close()
    raise RuntimeError("a synchronous tool awaited; it should be declared async")


def _shown(uri: str) -> str:
    """A client's URI as an answer or a record may repeat it: redacted first, then cut (a cut first
    could leave a piece of a secret too short for any pattern)."""
    from .redact import redact_text

    return redact_text(uri)[:256]

"""What a running tool can see and ask for: the caller, progress, logs, user input.

The channel back to the client (a *peer*) is supplied by the protocol engine;
in-process calls get :class:`NoPeer`, which has no way to ask anybody anything
and says so instead of hanging.
"""

from __future__ import annotations

import enum
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Iterator, Protocol

from ..auth._principals import Principal

if TYPE_CHECKING:
    from .tools import Tool

__all__ = [
    "InputRequired",
    "InvalidElicitationAnswer",
    "ToolContext",
    "Peer",
    "NoPeer",
    "ElicitAction",
    "Elicitation",
    "ElicitationUnavailable",
    "ElicitationRefused",
    "Acceptor",
    "QuestionChanged",
]

#: ``accept(ctx, message) -> Task``: how a call that may become a task is accepted as one (the
#: task runtime's :meth:`~truecall.tasks.runtime.TaskOffer.accept`); ``None``: it may not.
Acceptor = Callable[["ToolContext", "str | None"], Awaitable[Any]]


class ElicitAction(str, enum.Enum):
    """The user's three answers to an elicitation; only ``accept`` carries content."""

    ACCEPT = "accept"
    DECLINE = "decline"
    CANCEL = "cancel"


class ElicitationRefused(Exception):
    """Reading the content of a declined or cancelled elicitation."""


@dataclass(frozen=True, slots=True)
class Elicitation:
    """The user's answer. Only ``accept`` carries content; nothing else reads as consent.

    ``action`` compares equal to its string (``answer.action == "accept"``, as FastMCP's results
    do); ``data`` is what was accepted, converted to the ``response_type`` asked for (the content
    object for a form given as a schema; ``None`` unless accepted)."""

    action: ElicitAction
    _content: dict[str, Any] | None = field(default=None, repr=False)
    data: Any = None

    @property
    def accepted(self) -> bool:
        return self.action is ElicitAction.ACCEPT

    @property
    def content(self) -> dict[str, Any]:
        if self.action is not ElicitAction.ACCEPT:
            raise ElicitationRefused(f"the user did not accept ({self.action.value})")
        return self._content or {}

    def confirmed(self, field_name: str) -> bool:
        """True only for ``accept`` with ``field_name`` set to the boolean ``True``."""
        return self.accepted and (self._content or {}).get(field_name) is True


class ElicitationUnavailable(Exception):
    """Nobody can be asked (no channel, or the client did not declare the capability)."""

    def __init__(self, missing: list[str] | None = None, capability: str = "elicitation", *,
                 why: str | None = None) -> None:
        self.missing = missing or []
        self.capability = capability
        #: Why a client that has the capability still could not be asked (it answered with an error, or
        #: the session ended while the question waited); ``None``: it never declared the capability.
        self.why = why
        super().__init__(f"the client cannot be asked ({capability})" + (f": {why}" if why else ""))


class QuestionChanged(Exception):
    """A question asked under the same key read differently in the round that was answered
    (2026-07-28): the answer does not count, and asking again would loop until the client gives up
    (a random id in a URL does this).  The call ends ``internal`` and the server logs why."""

    def __init__(self, key: str, method: str) -> None:
        super().__init__(f"the question {key!r} ({method}) read differently in the round the client answered; "
                         "a question must read the same every round (no random id in its message or URL)")
        self.key = key
        self.method = method


class InputRequired(Exception):
    """Control flow, not an error: the tool needs answers before it can go on.

    Raised by a stateless peer (2026-07-28) when a tool asks for input the request
    did not carry; the engine turns it into an ``InputRequiredResult``.
    """

    def __init__(self, requests: dict[str, dict[str, Any]]) -> None:
        super().__init__("input required")
        self.requests = requests


class Peer(Protocol):
    """The channel from a running tool back to the client, supplied by the engine."""

    #: Capabilities the client declared (for this request, or at initialize).
    client_capabilities: dict[str, Any]
    #: The protocol version in force for this request.
    version: str | None

    async def request(self, method: str, params: dict[str, Any], key: str) -> dict[str, Any]:
        """Ask the client (elicitation, sampling, roots) and return its result."""
        ...

    async def progress(self, progress: float, total: float | None, message: str | None) -> None: ...

    async def log(self, level: str, data: Any, logger: str | None) -> None: ...


class NoPeer:
    """In-process calls: no client to ask, progress and logs go nowhere."""

    client_capabilities: dict[str, Any] = {}
    version: str | None = None

    async def request(self, method: str, params: dict[str, Any], key: str) -> dict[str, Any]:
        raise ElicitationUnavailable(capability=method)

    async def progress(self, progress: float, total: float | None, message: str | None) -> None:
        return None

    async def log(self, level: str, data: Any, logger: str | None) -> None:
        return None


def _required_fields(schema: dict[str, Any] | None) -> list[str]:
    if not schema:
        return []
    return [str(f) for f in schema.get("required", list(schema.get("properties", {})))]


NO_PEER = NoPeer()

#: ``ctx.log(message)`` (FastMCP's order) gave no second argument.
_NO_DATA: Any = object()


class ToolContext:
    """What a running tool sees of its call: the caller, the client's channel (progress, logs,
    elicitation, sampling) and the task it may become.  A tool gets it by asking: a parameter
    annotated ``ToolContext`` (or ``Context``), in any position, or an unannotated first ``ctx``.
    A resource reader and a prompt ask the same way and get the same context, with ``tool`` ``None``."""

    __slots__ = ("principal", "tool", "server", "peer", "request_id", "meta", "_elicit_seq", "_last_progress",
                 "task", "_acceptor", "_own_state")

    def __init__(self, principal: Principal, tool: "Tool | None", server: Any, peer: Peer = NO_PEER,
                 request_id: Any = None, meta: dict[str, Any] | None = None,
                 acceptor: Acceptor | None = None) -> None:
        self.principal = principal
        #: The tool being called; ``None`` while a resource is read or a prompt got (the same context,
        #: without a tool: what a reader may do is what a tool may, but it never becomes a task).
        self.tool = tool
        self.server = server
        self.peer = peer
        self.request_id = request_id
        self.meta = meta or {}
        self._elicit_seq = 0
        self._last_progress: float | None = None
        #: The task this call became, once accepted.
        self.task: Any = None
        #: Set only when the caller can take a task (see :meth:`accept_as_task`).
        self._acceptor = acceptor
        self._own_state: dict[str, Any] | None = None

    @property
    def tenant(self) -> str:
        return self.principal.tenant

    def fenced(self) -> Any:
        """A database transaction fenced by this call's task lease: ``with ctx.fenced() as db: ...``.

        Once the work is a task, the lease is checked first inside the transaction; if another
        process took the task over (its runner was frozen or presumed dead), this raises
        :class:`~truecall.LeaseLost` and nothing of the transaction is committed — the tool's
        own writes are then fenced exactly like the task's result.  Before acceptance it is a
        plain transaction.
        """
        return _fenced(self)

    def lease_check(self) -> Callable[[], None] | None:
        """The lease check for writes this call's task makes outside :meth:`fenced` (``None`` before
        :meth:`accept_as_task`, or when the call did not become a task: nothing to fence).

        Call what it returns first inside each transaction written on the task's behalf — in another
        store, or by a worker the job was handed to after this handler moved on: it raises
        :class:`~truecall.LeaseLost` once another process took the task over (this one was frozen or
        presumed dead), so that transaction commits nothing.  It holds the lease as it was when asked:
        a takeover later makes it fail, whoever calls it.
        """
        if self.task is None:
            return None
        fence: Callable[[], None] = self.server.task_runtime.fence(self.task)
        return fence

    @property
    def client_capabilities(self) -> dict[str, Any]:
        """What the client declared (on this request in 2026-07-28, at initialize before)."""
        return self.peer.client_capabilities

    @property
    def protocol_version(self) -> str | None:
        return self.peer.version

    async def elicit(self, message: str, schema: Any = None, *, url: str | None = None,
                     key: str | None = None, response_type: Any = None) -> Elicitation:
        """Ask the user (form ``schema`` or ``url``); never for credentials in a form.

        ``schema`` is a JSON Schema, or — as FastMCP and the SDK's ``MCPServer`` take it — a type
        (also as ``response_type``): a dataclass, ``TypedDict`` or pydantic model is the form, a
        scalar (``str``, ``int``, ``Literal``, an ``Enum``, a list of choices) is one field named
        ``value``, ``None`` (no schema, no URL) asks for nothing but the answer.  The answer's
        ``data`` is then that type.

        ``key`` names this question so that a stateless retry can match the answer;
        by default questions are numbered in the order the tool asks them.  An answer
        counts only for a question this server asked: in 2026-07-28 the retry must carry
        the ``requestState`` of the round that asked it, and the question must read the
        same (answers a client volunteers are ignored and the question is asked).  A
        client that did not declare the mode is never asked: this raises
        :class:`ElicitationUnavailable`, which the pipeline turns into an
        ``invalid_input`` result naming the missing fields.
        """
        if response_type is not None:
            if schema is not None:
                raise ValueError("elicit takes schema or response_type, not both")
            schema = response_type
        if url is None and not isinstance(schema, dict):  # a type (FastMCP's way): a form derived from it
            from ._elicit_types import typed_form

            form = typed_form(schema)
            return form.read(await self.elicit(message, form.schema, key=key))
        if (schema is None) == (url is None):
            raise ValueError("elicit takes exactly one of schema (form mode) or url (URL mode)")
        from ..forms import check_form, check_url

        if url is None:
            check_form(message, schema)  # the red lines hold whoever the client is
        else:
            check_url(url)
        self._elicit_seq += 1
        key = key or f"elicit-{self._elicit_seq}"
        caps = self.peer.client_capabilities.get("elicitation")
        from ..protocol.versions import features_of

        features = features_of(self.peer.version)  # what this version's elicitation looks like
        if not isinstance(caps, dict):
            raise ElicitationUnavailable(_required_fields(schema))
        if url is not None:
            if not features.elicitation_url or "url" not in caps:
                raise ElicitationUnavailable([], "elicitation.url")
            params: dict[str, Any] = {"mode": "url", "message": message, "url": url}
            if features.elicitation_id:
                params["elicitationId"] = f"{self.request_id}-{key}"
        else:
            if caps and "form" not in caps and features.elicitation_modes:
                raise ElicitationUnavailable(_required_fields(schema))
            params = {"message": message, "requestedSchema": schema}
            if features.elicitation_modes:
                params = {"mode": "form", **params}
        try:
            answer = await self.peer.request("elicitation/create", params, key)
        except TimeoutError:
            return Elicitation(ElicitAction.CANCEL)  # silence is never consent
        return _elicitation(answer, schema)

    async def elicit_url(self, message: str, url: str, elicitation_id: str | None = None) -> Elicitation:
        """Ask the user to open ``url`` (URL-mode elicitation, the SDK's ``ctx.elicit_url``); the id
        is chosen by truecall (``elicitation_id`` is accepted and not needed)."""
        return await self.elicit(message, url=url)

    async def sample(self, messages: list[dict[str, Any]], max_tokens: int, *, key: str | None = None,
                     **options: Any) -> dict[str, Any]:
        """Ask the client's model (``sampling/createMessage``); needs the sampling capability."""
        if "sampling" not in self.peer.client_capabilities:
            raise ElicitationUnavailable([], "sampling")
        self._elicit_seq += 1
        params = {"messages": messages, "maxTokens": max_tokens, **options}
        return await self.peer.request("sampling/createMessage", params, key or f"sample-{self._elicit_seq}")

    async def roots(self, *, key: str | None = None) -> list[dict[str, Any]]:
        """The client's roots (``roots/list``); needs the roots capability."""
        if "roots" not in self.peer.client_capabilities:
            raise ElicitationUnavailable([], "roots")
        self._elicit_seq += 1
        result = await self.peer.request("roots/list", {}, key or f"roots-{self._elicit_seq}")
        roots = result.get("roots")
        return roots if isinstance(roots, list) else []

    async def confirm(self, message: str, *, field_name: str = "confirm", key: str | None = None) -> bool:
        """An explicit yes: only ``accept`` with ``true`` counts; decline/cancel/no channel is no."""
        schema = {
            "type": "object",
            "properties": {field_name: {"type": "boolean", "title": "Confirm", "description": message}},
            "required": [field_name],
        }
        try:
            answer = await self.elicit(message, schema, key=key)
        except ElicitationUnavailable:
            return False
        return answer.confirmed(field_name)

    async def accept_as_task(self, message: str | None = None) -> Any:
        """Accept the work: the caller gets a task handle now, this handler goes on in the background.

        Call it at the point where the work is *accepted* and not before any input
        the call needs synchronously.  For a client that cannot take a task this
        returns ``None`` and the call simply continues (a tool declared
        ``task_support="required"`` never gets here: such callers are refused).
        """
        if self.task is not None:
            return self.task
        if self._acceptor is None:
            if self.tool is not None and self.tool.task_support == "required":
                from ..errors import MissingCapability

                raise MissingCapability("This tool runs only as a task")
            return None
        return await self._acceptor(self, message)

    async def gather(self, *asks: Any) -> list[Any]:
        """Ask several questions at once: all answers, or every missing question in one round.

        Awaiting asks one after another costs one round trip per question on the
        stateless protocol; here they run together, and the ones without an answer
        yet are merged into a single :class:`InputRequired`.
        """
        import asyncio

        outcomes = await asyncio.gather(*asks, return_exceptions=True)
        missing: dict[str, dict[str, Any]] = {}
        for outcome in outcomes:
            if isinstance(outcome, InputRequired):
                missing.update(outcome.requests)
            elif isinstance(outcome, BaseException):
                raise outcome
        if missing:
            raise InputRequired(missing)
        return list(outcomes)

    @property
    def progress_token(self) -> str | int | None:
        """The request's progress token, if the client asked for progress."""
        return self.meta.get("progressToken")

    async def progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        """Report progress; values must increase, so a step back is ignored."""
        if self._last_progress is not None and progress <= self._last_progress:
            return
        self._last_progress = progress
        await self.peer.progress(progress, total, message)

    async def log(self, first: Any, data: Any = _NO_DATA, logger: str | None = None, *, level: str | None = None,
                  logger_name: str | None = None, extra: Any = None) -> None:
        """Send a log message to the client (``notifications/message``).

        ``ctx.log("info", data)`` (truecall's order: the level, then the data) and
        ``ctx.log("message", level="info")`` (FastMCP's: the message, the level by name, ``info``
        by default) both work."""
        if data is _NO_DATA:  # FastMCP's order: log(message, level=None)
            first, data = level or "info", first
        await self.peer.log(str(first), _log_data(data, extra), logger or logger_name)

    # -- the FastMCP / MCPServer context methods, alongside truecall's own ----------------------

    async def debug(self, message: Any, logger_name: str | None = None, extra: Any = None) -> None:
        """A ``debug`` log message to the client."""
        await self.peer.log("debug", _log_data(message, extra), logger_name)

    async def info(self, message: Any, logger_name: str | None = None, extra: Any = None) -> None:
        """An ``info`` log message to the client."""
        await self.peer.log("info", _log_data(message, extra), logger_name)

    async def warning(self, message: Any, logger_name: str | None = None, extra: Any = None) -> None:
        """A ``warning`` log message to the client."""
        await self.peer.log("warning", _log_data(message, extra), logger_name)

    async def error(self, message: Any, logger_name: str | None = None, extra: Any = None) -> None:
        """An ``error`` log message to the client."""
        await self.peer.log("error", _log_data(message, extra), logger_name)

    async def report_progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        """:meth:`progress` under FastMCP's name."""
        await self.progress(progress, total, message)

    @property
    def session_id(self) -> str | None:
        """The MCP session's id (handshake era); ``None`` where there is no session (2026-07-28's
        stateless requests, in-process calls without a client)."""
        session = _session_of(self.peer)
        return getattr(session, "id", None)

    @property
    def client_id(self) -> str | None:
        """The caller's subject (the principal's, as the token or local configuration named it)."""
        return self.principal.subject

    @property
    def lifespan_context(self) -> Any:
        """What the server's ``lifespan`` yielded (``None`` without one, or before it started)."""
        return getattr(self.server, "lifespan_context", None)

    @property
    def request_context(self) -> "ToolContext":
        """This context itself: ``ctx.request_context.lifespan_context`` (the SDK's spelling) works."""
        return self

    @property
    def fastmcp(self) -> Any:
        """The server (FastMCP's name for it)."""
        return self.server

    def _state(self) -> dict[str, Any]:
        session = _session_of(self.peer)
        if session is not None:
            state: dict[str, Any] = session.app_state
            return state
        if self._own_state is None:
            self._own_state = {}
        return self._own_state

    async def set_state(self, key: str, value: Any) -> None:
        """Keep ``value`` for this MCP session (per request where there is no session: 2026-07-28).
        Awaited, as in FastMCP."""
        self._state()[key] = value

    async def get_state(self, key: str, default: Any = None) -> Any:
        """What :meth:`set_state` kept under ``key`` in this session, or ``default``."""
        return self._state().get(key, default)

    async def delete_state(self, key: str) -> None:
        """Forget ``key`` in this session's state."""
        self._state().pop(key, None)

    @property
    def transport(self) -> str | None:
        """``"stdio"`` or ``"streamable-http"`` for a handshake-era session; ``None`` otherwise."""
        return getattr(_session_of(self.peer), "transport", None)

    @property
    def session(self) -> Any:
        """The SDK's ``ctx.session`` calls this code meets: ``send_*_list_changed()``,
        ``create_message(...)`` (sampling) and ``send_log_message(...)``."""
        from ._fastmcp import SessionCalls

        return SessionCalls(self)

    def __class_getitem__(cls, item: Any) -> type:
        """``Context[AppContext]`` (the SDK's generic spelling) is the context class itself."""
        return cls

    async def read_resource(self, uri: str) -> list[dict[str, Any]]:
        """Read one of this server's resources as the caller (the contents list)."""
        result: list[dict[str, Any]] = await self.server.read_resource(self.principal, uri, peer=self.peer)
        return result



def _log_data(message: Any, extra: Any) -> Any:
    if extra:
        return {"msg": message, "extra": extra}
    return message


def _session_of(peer: Any) -> Any:
    """The handshake-era session behind a peer (the engine's), or None."""
    request = getattr(peer, "ctx", None)
    return getattr(request, "session", None)


class InvalidElicitationAnswer(Exception):
    """The client's answer does not match what was asked."""


def _elicitation(answer: Any, schema: dict[str, Any] | None) -> Elicitation:
    if not isinstance(answer, dict):
        raise InvalidElicitationAnswer("an elicitation answer must be an object")
    try:
        action = ElicitAction(answer.get("action"))
    except ValueError:
        raise InvalidElicitationAnswer("an elicitation answer needs action accept, decline or cancel") from None
    if action is not ElicitAction.ACCEPT:
        return Elicitation(action)
    content = answer.get("content")
    if schema is None:  # URL mode: accept means consent to open the link, nothing more
        return Elicitation(action, None)
    if content is None:
        content = {}
    if not isinstance(content, dict) or not _form_validator(schema).is_valid(content):
        raise InvalidElicitationAnswer("the answer does not match the requested form")
    return Elicitation(action, content)


def _form_validator(schema: dict[str, Any]) -> Any:
    import orjson

    from ..schema import Validator

    key = orjson.dumps(schema, option=orjson.OPT_SORT_KEYS)
    found = _FORM_VALIDATORS.get(key)
    if found is None:
        if len(_FORM_VALIDATORS) > 512:
            _FORM_VALIDATORS.clear()
        found = _FORM_VALIDATORS[key] = Validator(schema)
    return found


_FORM_VALIDATORS: dict[bytes, Any] = {}


@contextmanager
def _fenced(ctx: ToolContext) -> Iterator[Any]:
    db = ctx.server.db
    with db.transaction():
        if ctx.task is not None:
            ctx.server.tasks.check_lease(ctx.task.task_id, ctx.task.lease_epoch)
        yield db

"""What a tool call came to, as exactly one type — never a bare result.

- :class:`Done`: ``isError`` absent or false, and ``structuredContent`` valid against the
  tool's ``outputSchema`` (when it declares one);
- :class:`Failed`: ``isError: true`` (``kind`` from ``structuredContent.error``), or a result
  that breaks its own schema (``kind="contract_broken"``);
- :class:`Accepted`: the server answered with a task — accepted, not done; ``wait()`` drives it;
- :class:`Cancelled`: a task that ended cancelled;
- :class:`Unknown`: the request was sent and no answer came — it *may* have happened.

Only :class:`Done` is truthy, so ``if outcome:`` can never read "accepted" as "done".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping

from ..results import ErrorKind
from ..schema import Validator

if TYPE_CHECKING:
    from ._client import Client

__all__ = ["Outcome", "Done", "Failed", "Accepted", "Cancelled", "Unknown", "judge", "CONTRACT_BROKEN",
           "UNKNOWN_KIND"]

CONTRACT_BROKEN = "contract_broken"
UNKNOWN_KIND = "unknown_kind"
_KINDS = frozenset(k.value for k in ErrorKind)


def _texts(result: Mapping[str, Any]) -> str:
    content = result.get("content")
    if not isinstance(content, list):
        return ""
    return " ".join(b["text"] for b in content if isinstance(b, dict) and b.get("type") == "text"
                    and isinstance(b.get("text"), str)).strip()


class Outcome:
    """Base of the five outcomes; only :class:`Done` is truthy."""

    __slots__ = ()

    def __bool__(self) -> bool:
        return False


@dataclass(frozen=True, eq=False)
class Done(Outcome):
    """The tool reports success and its facts match the schema it declared."""

    tool: str
    result: dict[str, Any]
    request_id: Any = None
    task_id: str | None = None

    def __bool__(self) -> bool:
        return True

    @property
    def content(self) -> list[Any]:
        content = self.result.get("content")
        return content if isinstance(content, list) else []

    @property
    def structured(self) -> Any:
        return self.result.get("structuredContent")

    @property
    def text(self) -> str:
        return _texts(self.result)


@dataclass(frozen=True, eq=False)
class Failed(Outcome):
    """The tool reports an error (``isError: true``), or its result broke its own contract.

    ``result`` is the whole result as the server sent it: structured content is kept,
    never replaced by a status text.
    """

    tool: str
    kind: str
    message: str
    result: dict[str, Any]
    reference: str | None = None
    request_id: Any = None
    task_id: str | None = None
    #: For ``contract_broken``: what did not match (paths and keywords, never the values).
    violations: tuple[str, ...] = ()

    @property
    def structured(self) -> Any:
        return self.result.get("structuredContent")

    @property
    def retryable(self) -> bool | None:
        error = (self.structured or {}).get("error") if isinstance(self.structured, dict) else None
        value = error.get("retryable") if isinstance(error, dict) else None
        return value if isinstance(value, bool) else None


@dataclass(frozen=True, eq=False)
class Cancelled(Outcome):
    """A task that ended cancelled: not done."""

    tool: str
    task_id: str
    message: str | None = None
    request_id: Any = None


@dataclass(frozen=True, eq=False)
class Unknown(Outcome):
    """The request was sent and no answer came: it may have happened.

    Check ``task_id`` / ``reference`` (when the call got that far) before doing anything again.
    """

    tool: str
    request_id: Any
    reason: str  # "timeout", "connection_lost", "server_exited"
    task_id: str | None = None
    reference: str | None = None


@dataclass(frozen=True, eq=False)
class Accepted(Outcome):
    """The server accepted the work as a task: accepted is not completed.

    There is no ``.result``: ``await outcome.wait()`` gives ``Done``, ``Failed`` or ``Cancelled``
    (or ``Unknown`` if the connection goes while waiting); ``await outcome.cancel()`` asks the
    server to stop.
    """

    tool: str
    task_id: str
    status: str
    task: dict[str, Any]
    request_id: Any = None
    era: str = "modern"
    status_message: str | None = None
    _client: "Client | None" = field(default=None, repr=False)

    async def wait(self) -> "Done | Failed | Cancelled | Unknown":
        if self._client is None:
            raise RuntimeError("this Accepted is not bound to a client")
        return await self._client._tasks.wait(self)

    async def cancel(self) -> "Outcome":
        """Ask the server to cancel; the task's state right after (cancellation is cooperative)."""
        if self._client is None:
            raise RuntimeError("this Accepted is not bound to a client")
        return await self._client._tasks.cancel(self)


def _failed(tool: str, result: dict[str, Any], request_id: Any, task_id: str | None) -> Failed:
    structured = result.get("structuredContent")
    error = structured.get("error") if isinstance(structured, dict) else None
    error = error if isinstance(error, dict) else {}
    kind = error.get("kind")
    message = error.get("message")
    reference = error.get("reference")
    return Failed(
        tool=tool,
        kind=kind if isinstance(kind, str) and kind in _KINDS else UNKNOWN_KIND,
        message=(message if isinstance(message, str) and message else _texts(result))[:2000],
        result=result,
        reference=reference if isinstance(reference, str) else None,
        request_id=request_id,
        task_id=task_id,
    )


def _broken(tool: str, result: dict[str, Any], request_id: Any, task_id: str | None, why: str,
            violations: tuple[str, ...] = ()) -> Failed:
    return Failed(tool=tool, kind=CONTRACT_BROKEN, message=why, result=result, request_id=request_id,
                  task_id=task_id, violations=violations)


def judge(tool: str, result: Any, output: Validator | None, *, request_id: Any = None,
          task_id: str | None = None) -> Done | Failed:
    """Done or Failed for one ``CallToolResult``: ``isError`` first, then the declared schema."""
    if not isinstance(result, dict):
        return _broken(tool, {"content": []}, request_id, task_id, "the server's result is not an object")
    is_error = result.get("isError", False)
    if is_error is True:
        return _failed(tool, result, request_id, task_id)
    if is_error is not False:
        return _broken(tool, result, request_id, task_id, "isError is not a boolean")
    if "content" in result and not isinstance(result["content"], list):
        return _broken(tool, result, request_id, task_id, "content is not a list")
    if output is not None:
        structured = result.get("structuredContent")
        if structured is None:
            return _broken(tool, result, request_id, task_id,
                           "the tool declares an outputSchema but the result has no structuredContent")
        try:
            problems = output.violations(structured, limit=5)
        except ValueError:
            problems = []
            return _broken(tool, result, request_id, task_id, "structuredContent is nested too deeply")
        if problems:
            return _broken(tool, result, request_id, task_id,
                           "structuredContent does not match the tool's outputSchema: "
                           + "; ".join(p.message for p in problems),
                           tuple(p.message for p in problems))
    return Done(tool=tool, result=result, request_id=request_id, task_id=task_id)

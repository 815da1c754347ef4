"""What a tool call came to, as exactly one type — never a bare result.

- :class:`Done`: ``isError`` absent or false, ``structuredContent`` valid against the
  tool's ``outputSchema`` (when it declares one), and a narrative that does not claim the work
  was only accepted or that it failed — unless checked facts prove it was done (see below);
- :class:`Unconfirmed`: ``isError`` false and no task, but the narrative claims the work was
  only accepted / queued (``claim="accepted"``: the seed's accident, "已受理") or that it failed
  (``claim="failed"``), and nothing checkable proves otherwise;
- :class:`Failed`: ``isError: true`` (``kind`` from ``structuredContent.error``), or a result
  that breaks its own schema (``kind="contract_broken"``);
- :class:`Accepted`: the server answered with a task — accepted, not done; ``wait()`` drives it;
- :class:`Cancelled`: a task that ended cancelled;
- :class:`Unknown`: the request was sent and no answer came — it *may* have happened.

Only :class:`Done` is truthy, so ``if outcome:`` can never read "accepted" as "done".

What proves completion over a narrative that claims acceptance or failure: ``structuredContent``
checked against an ``outputSchema`` the tool declared (facts, not words), none of whose top-level
status-like fields (``status``, ``state``, ``phase``, ``stage``, ``outcome``, ``result``) itself
says accepted / queued / pending or failed.  A result without a declared schema has nothing
checked, so its structure is only more narrative.  The claim is read by
:func:`truecall.judge.claim_in_result`, once per result, and only for a result that is a success
(``isError`` false), not a task, and not already proven done by checked facts: every other
outcome is decided before any text is read.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping

from ..judge import claim_in_result, claim_in_text
from ..results import ErrorKind
from ..schema import Validator

if TYPE_CHECKING:
    from ._client import Client

__all__ = ["Outcome", "Done", "Unconfirmed", "Failed", "Accepted", "Cancelled", "Unknown", "judge",
           "CONTRACT_BROKEN", "UNKNOWN_KIND", "STATUS_FIELDS"]

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
    """Base of the six outcomes; only :class:`Done` is truthy."""

    __slots__ = ()

    def __bool__(self) -> bool:
        return False


class _Answered(Outcome):
    """An outcome that carries the server's whole result (``self.result``), read through these."""

    __slots__ = ()
    result: dict[str, Any]

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
class Done(_Answered):
    """The tool reports success, its facts match the schema it declared, and its narrative does
    not say the work was only accepted or that it failed (or checked facts prove it was done)."""

    tool: str
    result: dict[str, Any]
    request_id: Any = None
    task_id: str | None = None

    def __bool__(self) -> bool:
        return True


@dataclass(frozen=True, eq=False)
class Unconfirmed(_Answered):
    """``isError`` false and no task, but the server's own words say the work is not done:
    ``claim="accepted"`` (accepted / queued / pending / 已受理 — with no task to follow and no
    checked facts, there is no way to know it ever happens) or ``claim="failed"`` (a success flag
    over a text that says it failed).  Falsy, like every outcome but :class:`Done`.

    ``evidence`` is the phrase that makes the claim, as the server wrote it; ``language`` its
    language.  ``result`` is the whole result, kept as sent.  Check with the server (or a person)
    before treating the work as done — or as not done.
    """

    tool: str
    claim: str  # "accepted" | "failed"
    result: dict[str, Any]
    request_id: Any = None
    task_id: str | None = None
    evidence: str = ""
    language: str = ""


@dataclass(frozen=True, eq=False)
class Failed(_Answered):
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

    There is no ``.result``: ``await outcome.wait()`` gives ``Done``, ``Failed``, ``Unconfirmed``
    or ``Cancelled`` (or ``Unknown``, with this task's id, if the connection goes while waiting —
    however it goes); ``await outcome.cancel()`` asks the
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

    async def wait(self) -> "Done | Failed | Unconfirmed | Cancelled | Unknown":
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


#: Top-level ``structuredContent`` fields whose value is the work's state in words (compared after
#: lower-casing): a checked result whose status says "queued" proves nothing more than the text.
STATUS_FIELDS = frozenset({"status", "state", "phase", "stage", "outcome", "result"})


def _proves_done(structured: Any) -> bool:
    """Checked facts (already valid against the declared schema) whose status-like fields do not
    themselves say accepted / pending or failed (see the module docstring)."""
    if not isinstance(structured, dict):
        return True
    for key, value in structured.items():
        if isinstance(value, str) and key.lower() in STATUS_FIELDS:
            claim = claim_in_text(value)
            if claim is not None and claim.kind != "completed":
                return False
    return True


def judge(tool: str, result: Any, output: Validator | None, *, request_id: Any = None,
          task_id: str | None = None) -> Done | Failed | Unconfirmed:
    """Done, Failed or Unconfirmed for one ``CallToolResult``: ``isError`` first, then the declared
    schema, then — for a success only — what its narrative claims (one judge call per result)."""
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
    # Checked facts first: when they prove the work done, what the words claim cannot change the
    # verdict, so the text is not read at all (the common case for a tool with an outputSchema).
    if output is not None and _proves_done(result.get("structuredContent")):
        return Done(tool=tool, result=result, request_id=request_id, task_id=task_id)
    claim = claim_in_result(result)
    if claim is None or claim.kind == "completed":
        return Done(tool=tool, result=result, request_id=request_id, task_id=task_id)
    return Unconfirmed(tool=tool, claim=claim.kind, result=result, request_id=request_id, task_id=task_id,
                       evidence=claim.evidence, language=claim.language)

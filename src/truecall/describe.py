"""``describe(result)``: one sentence a host can show the user without lying.

Rules (docs/guide/three-layers.md, "What a caller does with a result"):
- an error result starts with "Not successful" (「未成功」 in Chinese);
- references are named: resource links, and the reference an error carries;
- ``structuredContent.count == 0`` says there is no matching data, never "processed";
- accepted work (a task not yet terminal) says it is accepted and not done;
- a client's :class:`~truecall.client.Unconfirmed` (a success whose text claims the work was only
  accepted, or failed, with nothing to check it by) says it is not done and why.

The words come from :mod:`truecall.texts`: English by default, ``locale="zh"`` (or
``TRUECALL_LANG=zh``) for Chinese (examples/05_describe.py prints both).
"""

from __future__ import annotations

from typing import Any, Mapping

from ._describe_result import describe_result
from .results import ToolResult
from .texts import resolve_locale

__all__ = ["describe"]


def describe(result: Any, locale: str | None = None) -> str:
    """A user-facing sentence for a tool result, a task, a task-creating result, or a client outcome.

    ``locale``: ``"en"`` or ``"zh"``; ``None`` is the process's language (``TRUECALL_LANG``,
    default English).  Another value is a :class:`~truecall.texts.LocaleError`.
    """
    if isinstance(result, (ToolResult, Mapping)):
        return describe_result(result, locale)
    # A client outcome (Done, Unconfirmed, Failed, Unknown, ...).  Imported here, not above: a server never
    # loads the client (nor httpx); the client's sentences import only what is below this module.
    from .client._describe import describe_outcome

    return describe_outcome(result, resolve_locale(locale))

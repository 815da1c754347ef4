"""``truecall call``: one tool call from a shell, with an exit status that cannot lie.

0 done, 1 failed, 2 protocol or usage error, 3 accepted and not waited for, 4 unknown
(the request was sent and no answer came: it may have happened), 5 unconfirmed (a success
flag over words that say the work was only accepted, or failed, with nothing to check it by:
not done, and not known to have failed either).
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any, Sequence

import orjson

from ..errors import ProtocolError
from ._client import Client
from ._elicit import Accept, Cancel, Decline, FormRequest, UrlRequest
from ._errors import ConnectionLost, NotSent
from ._outcomes import Accepted, Cancelled, Done, Failed, Unconfirmed, Unknown

__all__ = ["run_call", "server_target", "EXIT"]

EXIT = {"done": 0, "failed": 1, "error": 2, "accepted": 3, "unknown": 4, "cancelled": 1, "unconfirmed": 5}


def _name(outcome: Any) -> str:
    return {Done: "done", Failed: "failed", Accepted: "accepted", Unknown: "unknown", Cancelled: "cancelled",
            Unconfirmed: "unconfirmed"}[type(outcome)]


def _as_json(outcome: Any, sentence: str) -> dict[str, Any]:
    out: dict[str, Any] = {"outcome": _name(outcome), "describe": sentence}
    for attr, key in (("kind", "kind"), ("message", "message"), ("reference", "reference"), ("task_id", "taskId"),
                      ("request_id", "requestId"), ("reason", "reason"), ("status", "status"), ("claim", "claim"),
                      ("evidence", "evidence")):
        value = getattr(outcome, attr, None)
        if value is not None:
            out[key] = value
    if isinstance(outcome, (Done, Failed, Unconfirmed)):
        out["result"] = outcome.result
    return out


def _terminal_handler(request: FormRequest | UrlRequest) -> Accept | Decline | Cancel:
    """Ask on the terminal (only when stdin is one): each field in turn; empty input declines."""
    err = sys.stderr
    print(f"\nThe server asks: {request.message}", file=err)
    if isinstance(request, UrlRequest):
        print(f"  open: {request.url}", file=err)
        answer = input("  done? [y = accept / n = decline / empty = cancel] ").strip().lower()
        return Accept() if answer == "y" else Decline() if answer == "n" else Cancel()
    content: dict[str, Any] = {}
    for name, spec in (request.schema.get("properties") or {}).items():
        spec = spec if isinstance(spec, dict) else {}
        label = spec.get("title") or name
        choices = f" {spec['enum']}" if isinstance(spec.get("enum"), list) else ""
        raw = input(f"  {label}{choices}: ").strip()
        if not raw:
            return Decline()
        kind = spec.get("type")
        try:
            content[name] = (int(raw) if kind == "integer" else float(raw) if kind == "number"
                             else raw.lower() in ("y", "yes", "true", "1") if kind == "boolean" else raw)
        except ValueError:
            return Cancel()
    return Accept(content)


async def _call(target: Any, tool: str, arguments: dict[str, Any], *, token: str | None, wait: bool,
                timeout: float | None, version: str | None, locale: str, as_json: bool) -> int:
    from ..describe import describe

    handler = _terminal_handler if sys.stdin.isatty() else None
    try:
        async with Client(target, token=token, version=version, elicitation=handler, timeout=timeout) as client:
            outcome = await client.call(tool, arguments, wait=wait)
    except ProtocolError as exc:
        detail = {"outcome": "protocol_error", "error": exc.to_error(), "type": type(exc).__name__}
        required = getattr(exc, "required", None)
        if required:
            detail["requiredScopes"] = list(required)
        if as_json:
            sys.stdout.write(orjson.dumps(detail, option=orjson.OPT_INDENT_2).decode() + "\n")
        else:
            extra = f" (step up to scope: {' '.join(required)})" if required else ""
            print(f"Protocol error {exc.code} ({type(exc).__name__}): {exc.message}{extra}", file=sys.stderr)
        return EXIT["error"]
    except (NotSent, ConnectionLost, TimeoutError, OSError) as exc:
        # Nothing reached a tool (the client could not connect or negotiate): nothing happened.
        if as_json:
            sys.stdout.write(orjson.dumps({"outcome": "connection_error", "message": str(exc)}).decode() + "\n")
        else:
            print(f"Could not talk to the server {_shown_target(target)}: {exc or type(exc).__name__}",
                  file=sys.stderr)
        return EXIT["error"]
    sentence = describe(outcome, locale)
    if as_json:
        sys.stdout.write(orjson.dumps(_as_json(outcome, sentence), option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        print(sentence)
        if isinstance(outcome, (Done, Failed, Unconfirmed)):
            print(orjson.dumps(outcome.result, option=orjson.OPT_INDENT_2).decode())
        elif isinstance(outcome, Accepted):
            print(f"taskId: {outcome.task_id} (not waited for: run again with --wait, or check it later)")
    return EXIT[_name(outcome)]


def _shown_target(target: Any) -> str:
    """The server as the user gave it: ``at URL`` or ``started by 'command line'``."""
    if isinstance(target, str):
        return f"at {target}"
    import shlex

    return f"started by {shlex.join(target)!r}"


def server_target(url: str | None, command: Sequence[str]) -> Any:
    """The server as ``truecall call`` and ``truecall probe`` take it: ``--url URL`` or, after ``--``,
    a command line; ``None`` (said on stderr) when it is neither or both."""
    if (url is None) == (not command):
        print("give the server as --url URL or, after --, the command line of a stdio server", file=sys.stderr)
        return None
    if url is not None and not url.startswith(("http://", "https://")):
        print("--url must be an http:// or https:// URL", file=sys.stderr)
        return None
    return url if url is not None else list(command)


def run_call(tool: str, arguments: str | None, *, url: str | None, command: Sequence[str], token: str | None,
             wait: bool, timeout: float | None, version: str | None, locale: str, as_json: bool) -> int:
    """The exit status of one ``truecall call``; usage errors print and return 2."""
    target = server_target(url, command)
    if target is None:
        return EXIT["error"]
    try:
        parsed = orjson.loads(arguments) if arguments else {}
    except orjson.JSONDecodeError as exc:
        print(f"--args is not valid JSON ({exc}): give the arguments as a JSON object, e.g. "
              "--args '{\"service\": \"payments\"}'", file=sys.stderr)
        return EXIT["error"]
    if not isinstance(parsed, dict):
        print(f"--args must be a JSON object ({{...}}), not {type(parsed).__name__}", file=sys.stderr)
        return EXIT["error"]
    try:
        return asyncio.run(_call(target, tool, parsed, token=token, wait=wait, timeout=timeout, version=version,
                                 locale=locale, as_json=as_json))
    except ValueError as exc:  # e.g. an unknown --version
        print(str(exc), file=sys.stderr)
        return EXIT["error"]

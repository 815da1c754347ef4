"""``truecall probe``: whether an MCP server's results can be trusted, shown with evidence.

The accident in the project's story is common in public servers: a failure sent as
ordinary text with ``isError: false``, an unknown tool answered as a tool result,
structured content that breaks its own ``outputSchema``, "accepted" (已受理) with no task
and no reference.  The probe connects in every era the server offers (2026-07-28 and the
handshake), calls the tools it may call (``readOnlyHint: true`` unless told otherwise) with
arguments made from their schemas and with deliberately wrong ones, and reports each
finding with its severity, its evidence (the request and the part of the answer that
shows it) and the rule it breaks.  Every call is bounded in time; nothing here retries.

Severities: ``failure`` (the answer breaks a rule a client relies on), ``warning`` (a
heuristic read of words, or a rule whose era allows both), and the exit status follows
the worst: 0 nothing found, 1 warnings, 2 failures (or no era could be reached).
"""

from __future__ import annotations

import asyncio
import re
import secrets
from dataclasses import dataclass, field
from typing import Any, Sequence, TypeVar

import orjson

from .errors import ProtocolError
from .forms import names_credential

__all__ = ["Finding", "Report", "probe", "render", "ERAS"]

#: One connection per era: 2026-07-28 (server/discover) and the handshake (the server may choose 2025-06-18).
ERAS = ("2026-07-28", "2025-11-25")
INVALID_PARAMS = -32602
#: A secret-looking value sent in one deliberately failing call; an error that repeats it echoes secrets.
_SECRET_PREFIX = "sk_live_truecallprobe"
_EXCERPT = 600

RULES = {
    "unknown_tool_as_result": "An unknown tool is a protocol error (JSON-RPC -32602), not a tool result: "
                              "nothing ran, and a result (even isError: true) reads as the tool's own answer.",
    "unknown_tool_code": "An unknown tool is answered with -32602 (Invalid params).",
    "missing_argument_accepted": "A call missing a required argument cannot have done what was asked: it is "
                                 "answered isError: true (since 2025-11-25, SEP-1303), never as a success.",
    "missing_argument_protocol_error": "Since 2025-11-25 (SEP-1303) invalid tool arguments are a tool "
                                       "execution error (isError: true) the model can correct, not -32602.",
    "wrong_type_accepted": "A call whose argument breaks the tool's inputSchema is answered isError: true.",
    "schema_broken": "structuredContent must match the tool's outputSchema; a client that checks it must treat "
                     "the result as broken, one that does not is told facts nobody promised.",
    "says_failed": "isError is the control flag and is never inferred from text: a failure sent with isError: "
                   "false reads as success to every client that checks the flag.",
    "accepted_without_handle": "Accepted is not completed: queued work is answered with a task handle (or at "
                               "least a reference to check), not a plain success.",
    "task_without_result": "A task that reports completed has a retrievable result.",
    "result_type_missing": "2026-07-28 results carry resultType (complete, input_required, task).",
    "credential_form": "Elicitation form mode MUST NOT ask for passwords, API keys, tokens or payment "
                       "credentials (URL mode exists for those).",
    "leaks_internals": "Errors say what the caller can do, never the server's internals (tracebacks, paths, "
                       "exception names).",
    "echoes_secret": "An error never echoes a secret-looking argument value back (it lands in transcripts "
                     "and logs).",
    "call_timeout": "A call is answered within the bound (the caller then knows only that it may have "
                    "happened).",
    "bad_result": "A tools/call result is an object with a content list and a boolean isError.",
    "parse_error_unanswered": "JSON-RPC 2.0: a message that is not JSON is answered with error -32700 and id null.",
    "invalid_request_unanswered": "JSON-RPC 2.0: a request whose method is not a string is answered with error "
                                  "-32600.",
    "unsupported_version_data": "2026-07-28: a request naming a protocol version the server does not speak is "
                                "answered with -32022 and data {supported, requested}.",
    "answered_twice": "One request, one answer: a second answer to the same id is a protocol violation.",
}

_FAILED_TEXT = re.compile(
    r"^\s*(error|failed|failure|exception|fatal)\b|\berror:|\bfailed to\b|\bunable to\b|\bcould not\b|"
    r"\bcannot be (?:completed|processed)\b|失败|错误|未成功|出错|异常", re.I)
_ACCEPTED_TEXT = re.compile(
    r"\b(accepted|queued|submitted|enqueued|will be processed|in the queue)\b|"
    r"已受理|已提交|已接收|排队中|稍后处理", re.I)
_REFERENCE_TEXT = re.compile(
    r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b|\b[A-Z][A-Z0-9]*-\d+\b|#\d+\b|"
    r"\b(?:id|ticket|reference|ref|job|task)[\s:=#]+[A-Za-z0-9_-]{3,}", re.I)
_REFERENCE_KEYS = {"id", "taskid", "ticket", "ticketid", "reference", "ref", "jobid", "requestid", "trackingid",
                   "tracking", "task", "job", "receipt", "operationid"}
_LEAK = re.compile(
    r"Traceback \(most recent call last\)|File \"[^\"]+\", line \d+|\bat [\w.$]+\([\w.]+:\d+\)|"
    r"(?<![\w/])/(?:home|usr|opt|var|srv|tmp|root|etc|app|Users)/[\w./-]+|[A-Za-z]:\\\\?[\w\\. -]+\.py|"
    r"site-packages|\b(?:[A-Z][a-z]+)+(?:Error|Exception)\b(?=:)|\bnode_modules/")


@dataclass
class Finding:
    """One thing the probe saw, with what shows it."""

    severity: str  # "failure" | "warning"
    layer: str  # "protocol" | "tool" | "red line"
    code: str
    era: str
    tool: str | None
    summary: str
    request: dict[str, Any]
    answer: Any
    rule: str = ""

    def __post_init__(self) -> None:
        self.rule = self.rule or RULES.get(self.code, "")

    def to_dict(self) -> dict[str, Any]:
        return {"severity": self.severity, "layer": self.layer, "code": self.code, "era": self.era,
                "tool": self.tool, "summary": self.summary,
                "evidence": {"request": self.request, "answer": self.answer}, "rule": self.rule}


@dataclass
class Observation:
    """A call and what a user would be told about it (``describe()``)."""

    era: str
    tool: str
    purpose: str  # "generated", "missing_argument", "wrong_type", "unknown_tool"
    arguments: Any
    outcome: str  # done, failed, contract_broken, accepted, protocol_error, timeout, input
    describe: str

    def to_dict(self) -> dict[str, Any]:
        return {"era": self.era, "tool": self.tool, "purpose": self.purpose, "arguments": self.arguments,
                "outcome": self.outcome, "describe": self.describe}


@dataclass
class EraReport:
    requested: str
    version: str | None = None
    server: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    tools: list[str] = field(default_factory=list)
    probed: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    duplicate: bool = False  # the server chose a version already probed

    def to_dict(self) -> dict[str, Any]:
        return {"requested": self.requested, "version": self.version, "server": self.server, "error": self.error,
                "tools": self.tools, "probed": self.probed, "skipped": self.skipped}


@dataclass
class Report:
    target: str
    eras: list[EraReport] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    observations: list[Observation] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def reached(self) -> list[EraReport]:
        return [e for e in self.eras if e.version is not None and not e.duplicate]

    @property
    def exit_status(self) -> int:
        if not self.reached or any(f.severity == "failure" for f in self.findings):
            return 2
        return 1 if self.findings else 0

    def summary(self) -> str:
        failures = sum(f.severity == "failure" for f in self.findings)
        warnings = sum(f.severity == "warning" for f in self.findings)
        eras = ", ".join(e.version or e.requested for e in self.reached) or "none reached"
        probed = sorted({t for e in self.reached for t in e.probed})
        return (f"{_n(failures, 'failure')}, {_n(warnings, 'warning')}; {_n(len(probed), 'tool')} probed; "
                f"eras: {eras}; exit {self.exit_status}")

    def to_dict(self) -> dict[str, Any]:
        return {"target": self.target, "eras": [e.to_dict() for e in self.eras],
                "findings": [f.to_dict() for f in self.findings],
                "observations": [o.to_dict() for o in self.observations], "notes": self.notes,
                "summary": self.summary(), "exitStatus": self.exit_status}


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")


def excerpt(value: Any, limit: int = _EXCERPT) -> Any:
    """The answer as evidence: kept whole when short, else its JSON cut at ``limit`` characters."""
    try:
        text = orjson.dumps(value, default=str).decode()
    except TypeError:
        text = repr(value)
    if len(text) <= limit:
        return value
    return text[:limit] + "…"


# -- arguments from schemas ------------------------------------------------------------------------------


T = TypeVar("T")


def _of(data: dict[str, Any], key: str, kind: type[T], default: T) -> T:
    """``data[key]`` when it is a ``kind``, else ``default``: what a server sent is never trusted to
    have the shape the schema gives it."""
    value = data.get(key)
    return value if isinstance(value, kind) else default


def example(schema: Any, depth: int = 0) -> Any:
    """A plausible value for ``schema`` (required properties only; the first of any choice)."""
    if not isinstance(schema, dict) or depth > 6:
        return "probe"
    for key in ("const", "default"):
        if key in schema:
            return schema[key]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    if isinstance(schema.get("examples"), list) and schema["examples"]:
        return schema["examples"][0]
    for key in ("anyOf", "oneOf", "allOf"):
        if isinstance(schema.get(key), list) and schema[key]:
            options = [s for s in schema[key] if not (isinstance(s, dict) and s.get("type") == "null")]
            return example((options or schema[key])[0], depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object" or (kind is None and "properties" in schema):
        props = _of(schema, "properties", dict, {})
        required = _of(schema, "required", list, [])
        return {name: example(props.get(name), depth + 1) for name in required if isinstance(name, str)}
    if kind == "array":
        count = _of(schema, "minItems", int, 0)
        return [example(schema.get("items"), depth + 1) for _ in range(min(count, 3))]
    if kind in ("integer", "number"):
        low = schema.get("minimum", schema.get("exclusiveMinimum"))
        value = low + (1 if "exclusiveMinimum" in schema and "minimum" not in schema else 0) \
            if isinstance(low, (int, float)) and not isinstance(low, bool) else 1
        return int(value) if kind == "integer" else value
    if kind == "boolean":
        return False
    if kind == "null":
        return None
    fmt = schema.get("format")
    text = {"email": "probe@example.com", "uri": "https://example.com/", "url": "https://example.com/",
            "date": "2026-01-01", "date-time": "2026-01-01T00:00:00Z", "uuid": "00000000-0000-4000-8000-000000000000",
            }.get(fmt if isinstance(fmt, str) else "", "probe")
    low = schema.get("minLength")
    if isinstance(low, int) and len(text) < low:
        text = text + "x" * (low - len(text))
    return text


def _wrong(value: Any) -> Any:
    """A value of another JSON type than ``value``'s."""
    if isinstance(value, str):
        return 12345
    return "not-a-" + type(value).__name__ if not isinstance(value, bool) else "yes"


# -- reading answers --------------------------------------------------------------------------------------


def _texts(result: dict[str, Any]) -> str:
    content = result.get("content")
    if not isinstance(content, list):
        return ""
    return " ".join(b["text"] for b in content if isinstance(b, dict) and isinstance(b.get("text"), str))


def _says_failed(result: dict[str, Any]) -> Any:
    """The part of a success result that says it failed, or None."""
    structured = result.get("structuredContent")
    if isinstance(structured, dict):
        if structured.get("success") is False or structured.get("ok") is False:
            key = "success" if "success" in structured else "ok"
            return {"structuredContent": {key: False}}
        status = structured.get("status")
        if isinstance(status, str) and status.lower() in ("error", "failed", "failure", "fail"):
            return {"structuredContent": {"status": status}}
        error = structured.get("error")
        if isinstance(error, (dict, str)) and error:
            return {"structuredContent": {"error": excerpt(error, 200)}}
    text = _texts(result)
    match = _FAILED_TEXT.search(text)
    if match:
        return {"content": _around(text, match)}
    return None


def _has_reference(result: dict[str, Any]) -> bool:
    structured = result.get("structuredContent")
    if isinstance(structured, dict):
        for key, value in structured.items():
            if key.replace("_", "").lower() in _REFERENCE_KEYS and value not in (None, "", [], {}):
                return True
    return _REFERENCE_TEXT.search(_texts(result)) is not None


def _around(text: str, match: re.Match[str], width: int = 80) -> str:
    start = max(match.start() - width, 0)
    return ("…" if start else "") + text[start:match.end() + width] + ("…" if match.end() + width < len(text) else "")


def _leak(text: str) -> str | None:
    match = _LEAK.search(text)
    return _around(text, match) if match else None


# -- the probe ---------------------------------------------------------------------------------------------


class _Era:
    """One connection in one era: every check that needs a client."""

    def __init__(self, report: Report, era: EraReport, client: Any, *, timeout: float, tools: Sequence[str],
                 allow_writes: bool, forms: list[dict[str, Any]], current: list[str | None]) -> None:
        self.report, self.era, self.client, self.timeout = report, era, client, timeout
        self.only, self.allow_writes, self.forms = list(tools), allow_writes, forms
        self.version = era.version or era.requested
        self.current: list[str | None] = current
        self.modern = client.era == "modern"

    def find(self, severity: str, layer: str, code: str, tool: str | None, summary: str, request: dict[str, Any],
             answer: Any) -> None:
        if any(f.era == self.version and f.tool == tool and f.code == code for f in self.report.findings):
            return  # once per era, tool and rule: the first call that shows it is the evidence
        self.report.findings.append(Finding(severity, layer, code, self.version, tool, summary, request,
                                            excerpt(answer)))

    def observe(self, tool: str, purpose: str, arguments: Any, outcome: str, sentence: str) -> None:
        self.report.observations.append(Observation(self.version, tool, purpose, arguments, outcome, sentence))

    async def run(self) -> None:
        tools = await asyncio.wait_for(self.client.list_tools(), self.timeout)
        by_name = {t["name"]: t for t in tools if isinstance(t, dict) and isinstance(t.get("name"), str)}
        self.era.tools = sorted(by_name)
        for name, tool in sorted(by_name.items()):
            read_only = (tool.get("annotations") or {}).get("readOnlyHint") is True \
                if isinstance(tool.get("annotations"), dict) else False
            if self.only and name not in self.only:
                self.era.skipped[name] = "not named by --tool"
            elif not (self.only or self.allow_writes or read_only):
                self.era.skipped[name] = "not annotated readOnlyHint: true (use --allow-writes or --tool)"
            else:
                self.era.probed.append(name)
        for name in self.only:
            if name not in by_name:
                self.era.skipped[name] = "not listed by the server"
        await self.unknown_tool()
        for name in self.era.probed:
            await self.tool(name, by_name[name])

    async def _call(self, name: str, arguments: Any) -> tuple[str, Any]:
        """("result", raw result) | ("error", ProtocolError) | ("timeout", None), input rounds declined."""
        params: dict[str, Any] = {"name": name, "arguments": arguments}
        self.current[0] = name  # a handshake-era form arrives as a server request, not tied to the call
        for _ in range(4):
            try:
                result = await self.client.request("tools/call", params, timeout=self.timeout)
            except ProtocolError as exc:
                return "error", exc
            except TimeoutError:
                return "timeout", None
            if self.modern and isinstance(result, dict) and result.get("resultType") == "input_required":
                requests = result.get("inputRequests")
                answers = {}
                for key, req in (requests.items() if isinstance(requests, dict) else ()):
                    if isinstance(req, dict) and req.get("method") == "elicitation/create":
                        self.forms.append({"tool": name, "params": req.get("params")})
                    answers[key] = {"action": "decline"}
                params = {"name": name, "arguments": arguments, "inputResponses": answers}
                if isinstance(result.get("requestState"), str):
                    params["requestState"] = result["requestState"]
                continue
            return "result", result
        return "result", result

    @staticmethod
    def _error_wire(exc: ProtocolError) -> dict[str, Any]:
        wire = exc.to_error()
        return wire if isinstance(wire, dict) else {"code": exc.code, "message": exc.message}

    async def unknown_tool(self) -> None:
        name = f"truecall-probe-no-such-tool-{secrets.token_hex(3)}"
        request = {"method": "tools/call", "params": {"name": name, "arguments": {}}}
        kind, value = await self._call(name, {})
        if kind == "timeout":
            self.find("failure", "protocol", "call_timeout", None, f"no answer to an unknown tool in {self.timeout:g} s",
                      request, None)
            return
        if kind == "result":
            said = "isError: true" if isinstance(value, dict) and value.get("isError") is True else "a success"
            self.find("failure", "protocol", "unknown_tool_as_result", None,
                      f"an unknown tool was answered as a tool result ({said}), not a protocol error", request, value)
            self.observe(name, "unknown_tool", {}, "result", _describe_raw(name, value))
            return
        wire = self._error_wire(value)
        self.observe(name, "unknown_tool", {}, "protocol_error", f"protocol error {wire.get('code')}: "
                     f"{str(wire.get('message'))[:200]}")
        if wire.get("code") != INVALID_PARAMS:
            self.find("warning", "protocol", "unknown_tool_code", None,
                      f"an unknown tool was refused with {wire.get('code')}, not -32602", request, wire)
        self._check_error_leaks(None, request, wire, secret=None)

    async def tool(self, name: str, tool: dict[str, Any]) -> None:
        schema = _of(tool, "inputSchema", dict, {})
        arguments = example(schema)
        arguments = arguments if isinstance(arguments, dict) else {}
        await self._probe_call(name, tool, arguments, "generated")
        required = [r for r in (schema.get("required") or []) if isinstance(r, str)] \
            if isinstance(schema.get("required"), list) else []
        if required:
            missing = {k: v for k, v in arguments.items() if k != required[0]}
            await self._probe_call(name, tool, missing, "missing_argument")
        props = _of(schema, "properties", dict, {})
        typed = next((k for k in required if isinstance(props.get(k), dict) and isinstance(props[k].get("type"), str)
                      and props[k].get("type") in ("string", "integer", "number", "boolean")), None)
        if typed is not None:
            wrong = {**arguments, typed: _wrong(arguments.get(typed))}
            await self._probe_call(name, tool, wrong, "wrong_type")
        strings = [k for k, s in props.items() if isinstance(s, dict) and s.get("type") == "string"
                   and "enum" not in s and "format" not in s]
        if strings:
            secret = f"{_SECRET_PREFIX}{secrets.token_hex(8)}"
            await self._probe_call(name, tool, {**arguments, strings[0]: secret}, "secret_value", secret=secret)

    async def _probe_call(self, name: str, tool: dict[str, Any], arguments: dict[str, Any], purpose: str,
                          secret: str | None = None) -> None:
        from .client._outcomes import Failed, judge
        from .describe import describe

        request = {"method": "tools/call", "params": {"name": name, "arguments": arguments}}
        kind, value = await self._call(name, arguments)
        if kind == "timeout":
            self.observe(name, purpose, arguments, "timeout", f"no answer in {self.timeout:g} s")
            self.find("warning", "protocol", "call_timeout", name, f"no answer in {self.timeout:g} s", request, None)
            return
        if kind == "error":
            wire = self._error_wire(value)
            self.observe(name, purpose, arguments, "protocol_error",
                         f"protocol error {wire.get('code')}: {str(wire.get('message'))[:200]}")
            if purpose == "missing_argument" and self.version != "2025-06-18" and wire.get("code") == INVALID_PARAMS:
                self.find("warning", "protocol", "missing_argument_protocol_error", name,
                          "a missing required argument was refused with -32602, not an isError result", request, wire)
            self._check_error_leaks(name, request, wire, secret)
            return
        result = value
        if not isinstance(result, dict):
            self.find("failure", "protocol", "bad_result", name, "the result is not an object", request, result)
            return
        if self.modern and "resultType" not in result:
            self.find("failure", "protocol", "result_type_missing", name, "a 2026-07-28 result without resultType",
                      request, {k: result[k] for k in list(result)[:6]})
        if result.get("resultType") == "task" or (isinstance(result.get("task"), dict) and "content" not in result):
            await self._task(name, request, result, arguments, purpose)
            return
        outcome = judge(name, result, self._validator(tool))
        sentence = describe(outcome)
        broken = isinstance(outcome, Failed) and outcome.kind == "contract_broken"
        self.observe(name, purpose, arguments, "contract_broken" if broken else
                     "failed" if isinstance(outcome, Failed) else "done", sentence)
        if result.get("isError") is not True:
            # A success (even one that then breaks its schema) to a call the tool could not have served.
            if purpose == "missing_argument":
                self.find("failure", "protocol", "missing_argument_accepted", name,
                          "a call without a required argument was answered as a success", request, result)
            elif purpose == "wrong_type":
                self.find("warning", "protocol", "wrong_type_accepted", name,
                          "an argument of the wrong type was answered as a success", request, result)
        if broken:
            why = getattr(outcome, "message", "")
            if "outputSchema" in why or "structuredContent" in why:
                self.find("failure", "tool", "schema_broken", name, why,
                          request, {"structuredContent": result.get("structuredContent")})
            else:
                self.find("failure", "protocol", "bad_result", name, why, request, result)
            return
        if result.get("isError") is True:
            self._check_result_leaks(name, request, result, secret)
            return
        said = _says_failed(result)
        if said is not None:
            self.find("warning", "tool", "says_failed", name,
                      "a success result (isError: false) whose words say it failed", request, said)
        text = _texts(result)
        accepted = _ACCEPTED_TEXT.search(text)
        if accepted and not _has_reference(result):
            self.find("failure", "tool", "accepted_without_handle", name,
                      "the result says the work was accepted or queued, with no task handle and no reference",
                      request, {"content": _around(text, accepted), "isError": result.get("isError", False)})

    async def _task(self, name: str, request: dict[str, Any], result: dict[str, Any], arguments: Any,
                    purpose: str) -> None:
        from .client._outcomes import Done, Failed
        from .describe import describe

        task = _of(result, "task", dict, result)
        task_id = task.get("taskId")
        if not isinstance(task_id, str):
            self.find("failure", "protocol", "bad_result", name, "a task without a taskId", request, result)
            return
        try:
            handle = await self.client.task(task_id, tool=name)
            outcome = await asyncio.wait_for(handle.wait(), self.timeout)
        except (TimeoutError, ProtocolError) as exc:
            self.observe(name, purpose, arguments, "accepted",
                         f"task {task_id} did not end within the bound ({type(exc).__name__})")
            return
        self.observe(name, purpose, arguments, "task", describe(outcome))
        if isinstance(outcome, Failed) and outcome.kind == "contract_broken":
            try:
                answer: Any = await self.client.request("tasks/get", {"taskId": task_id}, timeout=self.timeout)
            except (TimeoutError, ProtocolError) as exc:
                answer = f"tasks/get: {type(exc).__name__}"
            self.find("failure", "tool", "task_without_result", name,
                      f"task {task_id} ended completed without a usable result: {outcome.message}",
                      {**request, "then": {"method": "tasks/get", "params": {"taskId": task_id}}}, answer)
        elif not isinstance(outcome, (Done, Failed)):
            return

    def _validator(self, tool: dict[str, Any]) -> Any:
        from .schema import SchemaError, Validator

        schema = tool.get("outputSchema")
        if not isinstance(schema, dict):
            return None
        try:
            return Validator(schema)
        except SchemaError:
            return Validator({"not": {}})

    def _check_result_leaks(self, name: str, request: dict[str, Any], result: dict[str, Any],
                            secret: str | None) -> None:
        text = _texts(result)
        if result.get("structuredContent") is not None:
            text += " " + orjson.dumps(result["structuredContent"], default=str).decode()
        self._leaks(name, request, text, secret)

    def _check_error_leaks(self, name: str | None, request: dict[str, Any], wire: dict[str, Any],
                           secret: str | None) -> None:
        self._leaks(name, request, orjson.dumps(wire, default=str).decode(), secret, wire)

    def _leaks(self, name: str | None, request: dict[str, Any], text: str, secret: str | None,
               wire: dict[str, Any] | None = None) -> None:
        """A protocol error is its own evidence (``wire``); a result's is the text around what was seen."""
        leak = _leak(text)
        if leak is not None:
            self.find("failure", "red line", "leaks_internals", name, "an error shows the server's internals",
                      request, wire if wire is not None else leak)
        if secret is not None and secret in text:
            at = text.index(secret)
            self.find("failure", "red line", "echoes_secret", name,
                      "an error repeats a secret-looking argument value", request,
                      wire if wire is not None else text[max(at - 80, 0):at + len(secret) + 40])


def _describe_raw(name: str, result: Any) -> str:
    from .client._outcomes import judge
    from .describe import describe

    return describe(judge(name, result, None))


async def _one_era(report: Report, target: Any, requested: str, *, token: str | None, timeout: float,
                   tools: Sequence[str], allow_writes: bool, env: Any = None) -> None:
    from .client import Client, Decline, FormRequest, UrlRequest

    era = EraReport(requested)
    report.eras.append(era)
    forms: list[dict[str, Any]] = []
    current: list[str | None] = [None]  # the tool being called

    def on_elicit(request: FormRequest | UrlRequest) -> Decline:
        if isinstance(request, FormRequest):
            forms.append({"tool": request.tool or current[0], "params": {"message": request.message,
                                                           "requestedSchema": request.schema}})
        return Decline()

    client = Client(target, token=token, version=requested, elicitation=on_elicit, allow_credential_forms=True,
                    timeout=timeout, discover_timeout=min(timeout, 10.0), env=env)
    try:
        await asyncio.wait_for(client.open(), timeout * 2)
    except (ProtocolError, TimeoutError, OSError, ConnectionError, Exception) as exc:
        era.error = f"{type(exc).__name__}: {str(exc)[:200]}"
        return
    try:
        era.version = client.version
        era.server = dict(client.server_info or {})
        if any(e.version == era.version for e in report.eras if e is not era):
            era.error = f"the server chose {era.version} again (already probed)"
            era.duplicate = True
            return
        runner = _Era(report, era, client, timeout=timeout, tools=tools, allow_writes=allow_writes, forms=forms,
                      current=current)
        try:
            await runner.run()
        except Exception as exc:  # whatever the server did, the report says how far it got
            era.error = f"stopped: {type(exc).__name__}: {str(exc)[:200]}"
        for form in forms:
            params = _of(form, "params", dict, {})
            message = _of(params, "message", str, "")
            schema = params.get("requestedSchema")
            from .client import asks_for_credential

            if params.get("mode", "form") == "form" and asks_for_credential(message, schema):
                runner.find("failure", "red line", "credential_form", form.get("tool"),
                            "an elicitation form asks for a credential", {"method": "tools/call",
                                                                          "params": {"name": form.get("tool")}},
                            {"method": "elicitation/create", "params": params})
    finally:
        try:
            await asyncio.wait_for(client.aclose(), timeout)
        except Exception:
            pass


# -- raw JSON-RPC over stdio: what no client library lets through ---------------------------------------------


class _RawStdio:
    """A separate process of the same server, spoken to in raw lines (this probe started it; it stops it)."""

    def __init__(self, command: Sequence[str], env: Any, timeout: float) -> None:
        import os

        self.command, self.timeout = list(command), timeout
        self.env = {**os.environ, **env} if env is not None else None  # as the client's stdio transport does
        self.proc: asyncio.subprocess.Process | None = None
        self.extra: list[Any] = []

    async def __aenter__(self) -> "_RawStdio":
        self.proc = await asyncio.create_subprocess_exec(
            *self.command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL, env=self.env, limit=1 << 24)
        return self

    async def __aexit__(self, *exc: Any) -> None:
        proc = self.proc
        if proc is None or proc.returncode is not None:
            return
        try:
            assert proc.stdin is not None
            proc.stdin.close()
            await asyncio.wait_for(proc.wait(), 2.0)
        except (TimeoutError, OSError, AssertionError):
            proc.kill()
            await proc.wait()

    async def send(self, line: bytes) -> None:
        proc = self.proc
        assert proc is not None and proc.stdin is not None
        proc.stdin.write(line + b"\n")
        await proc.stdin.drain()

    async def answers(self, ids: set[Any], wait: float, linger: float) -> list[Any]:
        """The answers whose id is in ``ids``: the first within ``wait`` seconds, then any more that
        come within ``linger`` (answers to other ids, e.g. late ones, are passed over)."""
        got: list[Any] = []
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait
        while True:
            left = deadline - loop.time()
            message = await self.read(left) if left > 0 else None
            if message is None:
                return got
            if message.get("id") in ids:
                got.append(message)
                deadline = loop.time() + linger

    async def read(self, wait: float) -> Any:
        proc = self.proc
        assert proc is not None and proc.stdout is not None
        deadline = asyncio.get_running_loop().time() + wait
        while True:
            left = deadline - asyncio.get_running_loop().time()
            if left <= 0:
                return None
            try:
                raw = await asyncio.wait_for(proc.stdout.readline(), left)
            except TimeoutError:
                return None
            if not raw:
                return None
            try:
                message = orjson.loads(raw)
            except orjson.JSONDecodeError:
                continue  # a log line on stdout is another fault; not this check's
            if isinstance(message, dict) and ("result" in message or "error" in message):
                return message


def _error_code(message: Any) -> Any:
    error = message.get("error") if isinstance(message, dict) else None
    return error.get("code") if isinstance(error, dict) else None


async def _raw_checks(report: Report, command: Sequence[str], *, modern: bool, env: Any, timeout: float) -> None:
    """Raw lines to a process of the server's own.  The server is known to be reading (it answered a
    tools/list, which is also the one-request-one-answer check) before any silence is held against it."""
    from .protocol.versions import META_CAPS, META_CLIENT, META_VERSION

    wait = min(timeout, 3.0)
    client_info = {"name": "truecall-probe", "version": "1"}

    def find(severity: str, code: str, summary: str, sent: Any, answer: Any, era: str = "json-rpc") -> None:
        report.findings.append(Finding(severity, "protocol", code, era, None, summary, {"sent": sent},
                                       excerpt(answer)))

    try:
        async with _RawStdio(command, env, timeout) as raw:
            meta = {META_VERSION: "2026-07-28", META_CAPS: {}, META_CLIENT: client_info}
            if not modern:
                hello = {"jsonrpc": "2.0", "id": "truecall-probe-init", "method": "initialize", "params": {
                    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": client_info}}
                await raw.send(orjson.dumps(hello))
                if not await raw.answers({"truecall-probe-init"}, timeout, 0.0):
                    report.notes.append(f"raw JSON-RPC checks not run: no answer to initialize in {timeout:g} s")
                    return
                await raw.send(orjson.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            listing = {"jsonrpc": "2.0", "id": "truecall-probe-once", "method": "tools/list",
                       "params": {"_meta": meta} if modern else {}}
            await raw.send(orjson.dumps(listing))
            got = await raw.answers({"truecall-probe-once"}, timeout, 0.5)
            if not got:
                report.notes.append(f"raw JSON-RPC checks not run: no answer to tools/list in {timeout:g} s")
                return
            if len(got) > 1:
                find("failure", "answered_twice", f"one tools/list was answered {len(got)} times", listing,
                     [{"id": g.get("id"), "has": sorted(k for k in g if k in ("result", "error"))} for g in got])
            bad = "{not json"
            await raw.send(bad.encode())
            answer = next(iter(await raw.answers({None}, wait, 0.0)), None)
            if _error_code(answer) != -32700:
                find("warning", "parse_error_unanswered",
                     "a line that is not JSON was not answered with -32700 and id null"
                     + (f" (silence for {wait:g} s)" if answer is None else ""), bad, answer)
            invalid = {"jsonrpc": "2.0", "id": "truecall-probe-invalid", "method": 42}
            await raw.send(orjson.dumps(invalid))
            answer = next(iter(await raw.answers({"truecall-probe-invalid", None}, wait, 0.0)), None)
            if _error_code(answer) != -32600:
                find("warning", "invalid_request_unanswered",
                     "a request whose method is a number was not answered with -32600"
                     + (f" (silence for {wait:g} s)" if answer is None else ""), invalid, answer)
            if modern:
                ask = {"jsonrpc": "2.0", "id": "truecall-probe-version", "method": "tools/list", "params": {"_meta": {
                    **meta, META_VERSION: "1999-01-01"}}}
                await raw.send(orjson.dumps(ask))
                answer = next(iter(await raw.answers({"truecall-probe-version"}, timeout, 0.0)), None)
                data = (answer.get("error") or {}).get("data") if isinstance(answer, dict) and \
                    isinstance(answer.get("error"), dict) else None
                if _error_code(answer) != -32022 or not isinstance(data, dict) or \
                        not isinstance(data.get("supported"), list):
                    find("failure", "unsupported_version_data",
                         "a request naming protocol version 1999-01-01 was not refused with -32022 and "
                         "data.supported", ask, answer, "2026-07-28")
    except (OSError, AssertionError, ConnectionError, ValueError) as exc:
        report.notes.append(f"raw JSON-RPC checks not run: {type(exc).__name__}: {str(exc)[:200]}")


async def _raw_http(report: Report, url: str, *, token: str | None, timeout: float,
                    http_transport: Any = None) -> None:
    """The same raw checks over Streamable HTTP, 2026-07-28 only (stateless: no session to open first).
    One POST, one answer: a JSON body or the first JSON-RPC message of an event stream."""
    import httpx

    from .protocol.versions import META_CAPS, META_CLIENT, META_VERSION

    base = {"content-type": "application/json", "accept": "application/json, text/event-stream",
            "mcp-protocol-version": "2026-07-28"}
    if token:
        base["authorization"] = f"Bearer {token}"
    meta = {META_VERSION: "2026-07-28", META_CAPS: {}, META_CLIENT: {"name": "truecall-probe", "version": "1"}}

    def find(severity: str, code: str, summary: str, sent: Any, answer: Any, era: str = "json-rpc") -> None:
        report.findings.append(Finding(severity, "protocol", code, era, None, summary, {"sent": sent},
                                       excerpt(answer)))

    async def post(http: Any, body: bytes, headers: dict[str, str]) -> Any:
        response = await http.post(url, content=body, headers={**base, **headers})
        text = response.text
        if "text/event-stream" in response.headers.get("content-type", ""):
            for line in text.splitlines():
                if line.startswith("data:"):
                    try:
                        message = orjson.loads(line[5:].strip())
                    except orjson.JSONDecodeError:
                        continue
                    if isinstance(message, dict) and ("result" in message or "error" in message):
                        return message
            return {"httpStatus": response.status_code, "body": text[:200]}
        try:
            message = orjson.loads(text) if text else None
        except orjson.JSONDecodeError:
            message = None
        return message if isinstance(message, dict) else {"httpStatus": response.status_code, "body": text[:200]}

    try:
        async with httpx.AsyncClient(timeout=timeout, transport=http_transport) as http:
            bad = "{not json"
            answer = await post(http, bad.encode(), {})
            if _error_code(answer) != -32700:
                find("warning", "parse_error_unanswered", "a body that is not JSON was not answered with -32700",
                     bad, answer)
            invalid = {"jsonrpc": "2.0", "id": "truecall-probe-invalid", "method": 42}
            answer = await post(http, orjson.dumps(invalid), {})
            if _error_code(answer) != -32600:
                find("warning", "invalid_request_unanswered",
                     "a request whose method is a number was not answered with -32600", invalid, answer)
            ask = {"jsonrpc": "2.0", "id": "truecall-probe-version", "method": "tools/list",
                   "params": {"_meta": {**meta, META_VERSION: "1999-01-01"}}}
            answer = await post(http, orjson.dumps(ask), {"mcp-protocol-version": "1999-01-01",
                                                          "mcp-method": "tools/list"})
            error = answer.get("error") if isinstance(answer, dict) else None
            data = error.get("data") if isinstance(error, dict) else None
            if _error_code(answer) != -32022 or not isinstance(data, dict) or \
                    not isinstance(data.get("supported"), list):
                find("failure", "unsupported_version_data",
                     "a request naming protocol version 1999-01-01 was not refused with -32022 and data.supported",
                     ask, answer, "2026-07-28")
    except httpx.HTTPError as exc:
        report.notes.append(f"raw JSON-RPC checks over HTTP not finished: {type(exc).__name__}")


async def probe(target: Any, *, token: str | None = None, tools: Sequence[str] = (), allow_writes: bool = False,
                timeout: float = 30.0, eras: Sequence[str] = ERAS, env: Any = None) -> Report:
    """Probe one server (a command line, a URL or a :class:`truecall.Server`) in each era it offers."""
    shown = target if isinstance(target, str) else " ".join(target) if isinstance(target, (list, tuple)) \
        else type(target).__name__
    report = Report(target=shown)
    for requested in eras:
        await _one_era(report, target, requested, token=token, timeout=timeout, tools=tools,
                       allow_writes=allow_writes, env=env)
    if isinstance(target, (list, tuple)) and report.reached:
        await _raw_checks(report, target, modern=any(e.version == "2026-07-28" for e in report.reached), env=env,
                          timeout=timeout)
    elif isinstance(target, str) and any(e.version == "2026-07-28" for e in report.reached):
        await _raw_http(report, target, token=token, timeout=timeout)
    elif report.reached:
        report.notes.append("raw JSON-RPC checks (parse error, invalid request, unsupported version) run over "
                            "stdio, and over HTTP when the server speaks 2026-07-28")
    return report


# -- the text report -----------------------------------------------------------------------------------------


def render(report: Report) -> str:
    """The report as text: eras, what a user would be told, the findings with evidence, one summary line."""
    out = [f"truecall probe {report.target}"]
    for era in report.eras:
        if era.error is not None and era.version is None:
            out.append(f"  era {era.requested}: not reached ({era.error})")
            continue
        name = era.server.get("name", "?")
        asked = "" if era.version == era.requested else f" (asked {era.requested})"
        out.append(f"  era {era.version}{asked}: server {name} {era.server.get('version', '')}"
                   .rstrip() + f"; {_n(len(era.tools), 'tool')}, probed: {', '.join(era.probed) or 'none'}")
        if era.error:
            out.append(f"    {era.error}")
        for skipped, why in sorted(era.skipped.items()):
            out.append(f"    skipped {skipped}: {why}")
    if report.observations:
        out.append("what a user would be told:")
        for o in report.observations:
            args = orjson.dumps(o.arguments, default=str).decode()
            said = " ".join(o.describe.split())
            out.append(f"  [{o.era}] {o.tool} {args[:80]} ({o.purpose}) -> {o.outcome}: {said[:200]}")
    if report.findings:
        out.append("findings:")
        for f in report.findings:
            out.append(f"  {f.severity.upper()} {f.layer} {f.code} [{f.era}] {f.tool or '(server)'}: {f.summary}")
            out.append(f"    sent:    {orjson.dumps(f.request, default=str).decode()[:300]}")
            answer = f.answer if isinstance(f.answer, str) else orjson.dumps(f.answer, default=str).decode()
            out.append(f"    answer:  {answer[:_EXCERPT]}")
            out.append(f"    rule:    {f.rule}")
    for note in report.notes:
        out.append(f"note: {note}")
    out.append(f"summary: {report.summary()}")
    return "\n".join(out)

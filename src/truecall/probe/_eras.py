"""One connection per era: list the tools, call the ones the probe may call, judge each answer."""

from __future__ import annotations

import asyncio
import secrets
from typing import Any, Sequence

import orjson

from ..errors import ProtocolError
from ._arguments import Seen, _of, _wrong, example
from ._report import PLANTED_PREFIX, EraReport, Finding, Observation, Report, scrub
from ._rules import (INVALID_PARAMS, accepted_without_handle, all_text, crash, environment_dump, excerpt, leak,
                     says_failed, secret_in)

#: Protocol error codes that say a handler broke, not that the request was wrong (0: no code at all).
_CRASH_CODES = (-32603, 0)


class _Era:
    """One connection in one era: every check that needs a client."""

    def __init__(self, report: Report, era: EraReport, client: Any, *, timeout: float, tools: Sequence[str],
                 allow_writes: bool, forms: list[dict[str, Any]], current: list[str | None], seen: Seen) -> None:
        self.report, self.era, self.client, self.timeout, self.seen = report, era, client, timeout, seen
        self.only, self.allow_writes, self.forms = list(tools), allow_writes, forms
        self.version = era.version or era.requested
        self.current: list[str | None] = current
        self.modern = client.era == "modern"

    def find(self, severity: str, layer: str, code: str, tool: str | None, summary: str, request: dict[str, Any],
             answer: Any) -> None:
        for f in self.report.findings:
            if f.tool == tool and f.code == code:
                # One cause, one finding: the first call that showed it is the evidence; another era that
                # shows it again is named, not repeated.
                if self.version not in f.eras:
                    f.eras.append(self.version)
                return
        self.report.findings.append(Finding(severity, layer, code, self.version, tool, scrub(summary),
                                            scrub(request), scrub(excerpt(answer))))

    def observe(self, tool: str, purpose: str, arguments: Any, outcome: str, sentence: str) -> None:
        self.report.observations.append(Observation(self.version, tool, purpose, scrub(arguments), outcome,
                                                    scrub(sentence)))

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
        # Tools that need nothing first: what they list (a directory, a stored name) makes the arguments
        # of the others.
        for name in sorted(self.era.probed, key=lambda n: (len(_required(by_name[n])), n)):
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
        name = "truecall-probe-no-such-tool"  # no random suffix: a name the judge could read as a token
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
        self._check(None, "unknown_tool", request, orjson.dumps(wire, default=str).decode(), wire, None, error=True)

    async def tool(self, name: str, tool: dict[str, Any]) -> None:
        schema = _of(tool, "inputSchema", dict, {})
        arguments = example(schema, tool=name, seen=self.seen)
        arguments = arguments if isinstance(arguments, dict) else {}
        await self._probe_call(name, tool, arguments, "generated")
        required = _required(tool)
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
            secret = f"{PLANTED_PREFIX}{secrets.token_hex(8)}"
            await self._probe_call(name, tool, {**arguments, strings[0]: secret}, "secret_value", secret=secret)
            invalid = _failing_with(arguments, required, strings[0], secret)
            if invalid is not None:
                await self._probe_call(name, tool, invalid, "secret_invalid", secret=secret)

    async def _probe_call(self, name: str, tool: dict[str, Any], arguments: dict[str, Any], purpose: str,
                          secret: str | None = None) -> None:
        from ..client._outcomes import Failed, judge
        from ..describe import describe

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
            if purpose == "generated" and wire.get("code") in _CRASH_CODES:
                self.find("failure", "tool", "crashes_on_valid_arguments", name,
                          f"arguments made from the inputSchema were answered with internal error {wire.get('code')}",
                          request, wire)
            self._check(name, purpose, request, orjson.dumps(wire, default=str).decode(), wire, secret, error=True)
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
        # The outcome by the client's own name (Unconfirmed is "unconfirmed", never "done").
        self.observe(name, purpose, arguments, "contract_broken" if broken else
                     "failed" if isinstance(outcome, Failed) else type(outcome).__name__.lower(), sentence)
        failed = result.get("isError") is True
        if not failed:
            # A success (even one that then breaks its schema) to a call the tool could not have served.
            if purpose == "missing_argument":
                self.find("failure", "protocol", "missing_argument_accepted", name,
                          "a call without a required argument was answered as a success", request, result)
            elif purpose == "wrong_type":
                self.find("warning", "protocol", "wrong_type_accepted", name,
                          "an argument of the wrong type was answered as a success", request, result)
            elif purpose == "generated":
                self.seen.harvest(result, arguments)
        if broken:
            why = getattr(outcome, "message", "")
            if "outputSchema" in why or "structuredContent" in why:
                self.find("failure", "tool", "schema_broken", name, why,
                          request, {"structuredContent": result.get("structuredContent")})
            else:
                self.find("failure", "protocol", "bad_result", name, why, request, result)
            return
        text = all_text(result)
        self._check(name, purpose, request, text, None, secret, error=failed)
        if failed:
            said = crash(text) if purpose == "generated" else None
            if said is not None:
                self.find("failure", "tool", "crashes_on_valid_arguments", name,
                          "arguments made from the inputSchema were answered with an exception's own words",
                          request, said)
            return
        if any(v in self.seen.files for v in _strings(arguments)):
            return  # a read of a file the server listed: its words are the file's, not the server's claim
        said = says_failed(result)
        if said is not None:
            self.find("warning", "tool", "says_failed", name,
                      "a success result (isError: false) whose words say it failed", request, said)
        accepted = accepted_without_handle(result)
        if accepted is not None:
            self.find("failure", "tool", "accepted_without_handle", name,
                      "the result says the work was accepted or queued, with no task handle and no reference",
                      request, accepted)

    async def _task(self, name: str, request: dict[str, Any], result: dict[str, Any], arguments: Any,
                    purpose: str) -> None:
        from ..client._outcomes import Done, Failed
        from ..describe import describe

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
        from ..schema import SchemaError, Validator

        schema = tool.get("outputSchema")
        if not isinstance(schema, dict):
            return None
        try:
            return Validator(schema)
        except SchemaError:
            return Validator({"not": {}})

    def _check(self, name: str | None, purpose: str, request: dict[str, Any], text: str,
               wire: dict[str, Any] | None, secret: str | None, *, error: bool) -> None:
        """What any answer (a result, an error) must not carry: the secret the probe planted, a secret of
        the server's, its environment, its internals.  A protocol error is its own evidence (``wire``); a
        result's is the text around what was seen (secrets in it are redacted when it is recorded)."""
        kind = "an error" if error else "a result"
        sent = set(_strings(request["params"].get("arguments"))) | {str(request["params"].get("name"))}
        # A success result's paths are its data (a listing, a file's name); an error's are internals
        # unless the caller supplied them or the server advertised them.
        shown = leak(text, self.seen.known | sent, paths=error)
        if shown is not None:
            self.find("failure", "red line", "leaks_internals", name, f"{kind} shows the server's internals",
                      request, wire if wire is not None else shown)
        # An error that repeats the planted secret (whole, or the tail a cut echo keeps) puts it in logs; a
        # success that repeats it gives the caller what the caller sent (a search term, an echo): no finding.
        if error and secret is not None and secret[-16:] in text:
            at = text.index(secret[-16:])
            self.find("failure", "red line", "echoes_secret", name,
                      f"{kind} repeats a secret-looking argument value ({purpose})", request,
                      wire if wire is not None else text[max(at - 80, 0):at + 60])
        rest = text.replace(secret, "").replace(secret[-16:], "") if secret is not None else text
        for value in sent:  # what the caller sent is not the server's secret
            if len(value) > 3:
                rest = rest.replace(value, "")
        dump = environment_dump(rest)
        if dump is not None:
            self.find("failure", "red line", "dumps_environment", name,
                      f"{kind} lists the server's environment variables", request, dump)
        found = secret_in(rest)
        if found is not None:
            self.find("failure", "red line", "result_has_secret", name,
                      f"{kind} carries a secret ({found[0]})", request, found[1])


def _describe_raw(name: str, result: Any) -> str:
    from ..client._outcomes import judge
    from ..describe import describe

    return describe(judge(name, result, None))


async def _one_era(report: Report, target: Any, requested: str, *, token: str | None, timeout: float,
                   tools: Sequence[str], allow_writes: bool, env: Any = None, seen: Seen | None = None) -> None:
    from ..client import Client, Decline, FormRequest, UrlRequest

    era = EraReport(requested)
    report.eras.append(era)
    forms: list[dict[str, Any]] = []
    current: list[str | None] = [None]  # the tool being called

    def on_elicit(request: FormRequest | UrlRequest) -> Decline:
        if isinstance(request, FormRequest):
            forms.append({"tool": request.tool or current[0], "params": {"message": request.message,
                                                           "requestedSchema": request.schema}})
        return Decline()

    # The whole call bound for server/discover: a server still starting (a cold interpreter on a busy machine)
    # is not taken for one that ignores it, which would be probed in the handshake era only.
    client = Client(target, token=token, version=requested, elicitation=on_elicit, allow_credential_forms=True,
                    timeout=timeout, discover_timeout=timeout, env=env)
    try:
        await asyncio.wait_for(client.open(), timeout * 2)
    except (ProtocolError, TimeoutError, OSError, ConnectionError, Exception) as exc:
        era.error = scrub(f"{type(exc).__name__}: {str(exc)[:200]}")
        return
    try:
        era.version = client.version
        era.server = dict(client.server_info or {})
        if any(e.version == era.version for e in report.eras if e is not era):
            era.error = f"the server chose {era.version} again (already probed)"
            era.duplicate = True
            return
        runner = _Era(report, era, client, timeout=timeout, tools=tools, allow_writes=allow_writes, forms=forms,
                      current=current, seen=seen if seen is not None else Seen())
        try:
            await runner.run()
        except Exception as exc:  # whatever the server did, the report says how far it got
            era.error = scrub(f"stopped: {type(exc).__name__}: {str(exc)[:200]}")
        for form in forms:
            _form(runner, form)
    finally:
        try:
            await asyncio.wait_for(client.aclose(), timeout)
        except Exception:
            pass


def _form(runner: _Era, form: dict[str, Any]) -> None:
    """A form the judge reads as asking for a credential, payment data, a recovery phrase or an identity
    secret; the evidence starts with what triggered it (the field first in the schema shown, so a cut
    excerpt still shows it)."""
    from ..judge import credential_ask

    params = _of(form, "params", dict, {})
    message = _of(params, "message", str, "")
    schema = params.get("requestedSchema")
    if params.get("mode", "form") != "form":
        return
    ask = credential_ask(message, schema)
    if ask is None:
        return
    shown: Any = schema
    props = _of(schema, "properties", dict, {}) if isinstance(schema, dict) else {}
    if ask.field is not None and ask.field in props and isinstance(schema, dict):
        shown = {**schema, "properties": {ask.field: props[ask.field],
                                          **{k: v for k, v in props.items() if k != ask.field}}}
    where = f"field {ask.field!r}" if ask.field is not None else f"its {ask.where}"
    runner.find("failure", "red line", "credential_form", form.get("tool"),
                f"an elicitation form asks for {_ASKS[ask.category]}: {where} ({ask.reason})",
                {"method": "tools/call", "params": {"name": form.get("tool")}},
                {"trigger": {"where": ask.where, "field": ask.field, "reason": ask.reason},
                 "method": "elicitation/create", "params": {**params, "requestedSchema": shown}})


_ASKS = {"credential": "a credential", "payment": "payment data", "recovery": "a recovery phrase",
         "identity": "an identity secret"}


def _required(tool: dict[str, Any]) -> list[str]:
    schema = _of(tool, "inputSchema", dict, {})
    return [r for r in _of(schema, "required", list, []) if isinstance(r, str)]


def _failing_with(arguments: dict[str, Any], required: list[str], field: str, secret: str) -> dict[str, Any] | None:
    """Arguments with ``secret`` in them that fail the tool's validation (a required argument left out;
    the secret in an argument of its own when the one left out is where it would go): a validation error
    that repeats every argument (pydantic's ``input_value={...}``) is where secrets are echoed most, and
    a probe that only sent it in valid calls would not see it."""
    if not required:
        return None
    left = {k: v for k, v in arguments.items() if k != required[0]}
    if field != required[0]:
        return {**left, field: secret}
    return {**left, "note": secret}


def _strings(value: Any, depth: int = 0) -> list[str]:
    if isinstance(value, str):
        return [value]
    if depth > 8:
        return []
    if isinstance(value, dict):
        return [s for item in value.values() for s in _strings(item, depth + 1)]
    if isinstance(value, list):
        return [s for item in value for s in _strings(item, depth + 1)]
    return []

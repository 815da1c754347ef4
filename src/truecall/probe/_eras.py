"""One connection per era: list the tools, call the ones the probe may call, judge each answer."""

from __future__ import annotations

import asyncio
import secrets
from typing import Any, Sequence

import orjson

from ..errors import ProtocolError
from ._arguments import _of, _wrong, example
from ._report import EraReport, Finding, Observation, Report
from ._rules import (_ACCEPTED_TEXT, INVALID_PARAMS, _around, _has_reference, _leak, _says_failed, excerpt,
                     _texts)

#: A secret-looking value sent in one deliberately failing call; an error that repeats it echoes secrets.
_SECRET_PREFIX = "sk_live_truecallprobe"


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
    from ..client._outcomes import judge
    from ..describe import describe

    return describe(judge(name, result, None))


async def _one_era(report: Report, target: Any, requested: str, *, token: str | None, timeout: float,
                   tools: Sequence[str], allow_writes: bool, env: Any = None) -> None:
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
            from ..client import asks_for_credential

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

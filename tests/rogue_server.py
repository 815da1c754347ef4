"""A plain-loop stdio MCP server that misbehaves on purpose (no SDK, no truecall).

The client's fault tests drive it: every lie a server can tell about its own
outcome is one tool here.  It speaks 2026-07-28 (``server/discover``, ``_meta``,
the tasks extension) and the 2025-11-25 handshake (core tasks), minimally.

    python rogue_server.py [--legacy-only]

Tools:
- ``broken``: ``isError: false`` with ``structuredContent`` that breaks its ``outputSchema``;
- ``no_structure``: declares an ``outputSchema`` and sends no ``structuredContent``;
- ``honest``: a result that matches its schema;
- ``hang``: never answers (the test kills the process);
- ``task_error``: a task whose ``tasks/get`` reports ``completed`` with an ``isError`` result;
- ``task_failed``: a task that ``failed`` with a JSON-RPC error (-32003, a scope to step up to);
- ``task_input``: a task that asks for input (``input_required``) before completing;
- ``credential_form``: asks, by elicitation, for a password (a red line) and reports what it got;
- ``url_consent``: asks in URL mode (a sign-in page) and reports what the client said;
- ``fold_unknown``: answers an unknown tool with ``isError: true`` (as some SDKs do);
- ``says_accepted`` / ``says_failed``: ``isError: false``, no task, no ``outputSchema``, and a text
  that says the work was only accepted ("已受理", the seed's accident) / that it failed;
- ``queued_status`` / ``ticket_created``: "Ticket ... accepted" over a ``structuredContent`` valid
  against the declared schema whose ``status`` says ``queued`` (proves nothing) / ``created``;
- ``two_rounds`` (a tool), the prompt ``two_rounds`` and the resource ``rogue://two-rounds`` (2026-07-28):
  ask once with a ``requestState``, then again with none; a retry that still carries the first round's
  (spent) state is refused, as a real server refuses a state twice.
"""

import sys

import orjson

LEGACY_ONLY = "--legacy-only" in sys.argv
OUT = {"type": "object", "properties": {"count": {"type": "integer"}}, "required": ["count"],
       "additionalProperties": False}
TICKET = {"type": "object", "properties": {"ticket": {"type": "string"}, "status": {"type": "string"}},
          "required": ["ticket", "status"]}
TOOLS = [
    {"name": "broken", "inputSchema": {"type": "object"}, "outputSchema": OUT},
    {"name": "no_structure", "inputSchema": {"type": "object"}, "outputSchema": OUT},
    {"name": "honest", "inputSchema": {"type": "object"}, "outputSchema": OUT},
    {"name": "hang", "inputSchema": {"type": "object"}},
    {"name": "task_error", "inputSchema": {"type": "object"}, "outputSchema": OUT,
     "execution": {"taskSupport": "required"}},
    {"name": "task_failed", "inputSchema": {"type": "object"}, "execution": {"taskSupport": "required"}},
    {"name": "task_input", "inputSchema": {"type": "object"}, "outputSchema": OUT,
     "execution": {"taskSupport": "required"}},
    {"name": "credential_form", "inputSchema": {"type": "object"}},
    {"name": "url_consent", "inputSchema": {"type": "object"}},
    {"name": "two_rounds", "inputSchema": {"type": "object"}},
    {"name": "says_accepted", "inputSchema": {"type": "object"}},
    {"name": "says_failed", "inputSchema": {"type": "object"}},
    {"name": "queued_status", "inputSchema": {"type": "object"}, "outputSchema": TICKET},
    {"name": "ticket_created", "inputSchema": {"type": "object"}, "outputSchema": TICKET},
]
SAYS = {
    "says_accepted": {"content": [{"type": "text", "text": "已受理"}]},
    "says_failed": {"content": [{"type": "text", "text": "Sync failed: the upstream timed out"}]},
    "queued_status": {"content": [{"type": "text", "text": "Ticket T-1 accepted"}],
                      "structuredContent": {"ticket": "T-1", "status": "queued"}},
    "ticket_created": {"content": [{"type": "text", "text": "Ticket T-2 accepted"}],
                       "structuredContent": {"ticket": "T-2", "status": "created"}},
}
ERROR_RESULT = {"content": [{"type": "text", "text": "upstream refused the job"}], "isError": True,
                "structuredContent": {"error": {"kind": "dependency_unavailable", "message": "upstream refused",
                                                "retryable": True}, "count": 0}}
TASK = {"status": "working", "createdAt": "2026-12-01T00:00:00Z", "lastUpdatedAt": "2026-12-01T00:00:00Z"}
tasks = {}  # id -> {"tool", "polls", "answer"}
pending_elicit = {}  # our request id -> the client's tools/call id
era = {"legacy": False}


def send(msg):
    sys.stdout.buffer.write(orjson.dumps(msg) + b"\n")
    sys.stdout.buffer.flush()


def result(rid, res, modern):
    if modern:
        res = {**res, "resultType": res.get("resultType", "complete")}
    send({"jsonrpc": "2.0", "id": rid, "result": res})


def error(rid, code, message, data=None):
    err = {"code": code, "message": message}
    if data is not None:
        err["data"] = data
    send({"jsonrpc": "2.0", "id": rid, "error": err})


def task_view(task_id, modern):
    t = tasks[task_id]
    t["polls"] += 1
    view = {**TASK, "taskId": task_id}
    view["pollIntervalMs" if modern else "pollInterval"] = 10
    if t["tool"] == "task_input" and t["answer"] is None:
        view["status"] = "input_required"
        if modern:
            view["inputRequests"] = {"q": {"method": "elicitation/create", "params": {
                "mode": "form", "message": "Which count?",
                "requestedSchema": {"type": "object", "properties": {"count": {"type": "integer"}},
                                    "required": ["count"]}}}}
        return view
    if t["polls"] < 2:
        return view  # working once: the client must poll
    if t["tool"] == "task_failed":
        view["status"] = "failed"
        if modern:
            view["error"] = {"code": -32003, "message": "Insufficient scope", "data": {"requiredScopes": ["jobs:run"]}}
        return view
    if t["tool"] == "task_error":
        view["status"] = "completed" if modern else "failed"
        if modern:
            view["result"] = ERROR_RESULT
        return view
    view["status"] = "completed"
    if modern:
        view["result"] = {"content": [{"type": "text", "text": "done"}], "structuredContent": {"count": t["answer"]}}
    return view


def two_rounds(rid, params, modern, done):
    """``done`` once both questions are answered, each retry carrying only its own round's state."""
    answers, state = params.get("inputResponses") or {}, params.get("requestState")

    def ask(key):
        return {key: {"method": "elicitation/create", "params": {
            "mode": "form", "message": f"{key}?", "requestedSchema": {
                "type": "object", "properties": {"v": {"type": "string"}}}}}}
    if not answers:
        return result(rid, {"resultType": "input_required", "inputRequests": ask("first"),
                            "requestState": "round-1"}, modern)
    if "first" in answers:
        if state != "round-1":
            return error(rid, -32602, f"expected requestState round-1, got {state!r}")
        return result(rid, {"resultType": "input_required", "inputRequests": ask("second")}, modern)
    if state is not None:
        return error(rid, -32602, f"requestState {state!r} was already used")
    return result(rid, done, modern)


def call(rid, params, modern, meta):
    name = params.get("name")
    tool = next((t for t in TOOLS if t["name"] == name), None)
    if tool is None:
        if name == "fold_unknown":
            return result(rid, {"content": [{"type": "text", "text": "Unknown tool"}], "isError": True}, modern)
        return error(rid, -32602, f"Unknown tool: {name}")
    if name == "broken":
        return result(rid, {"content": [{"type": "text", "text": "3 tickets created"}],
                            "structuredContent": {"count": "three"}}, modern)
    if name == "no_structure":
        return result(rid, {"content": [{"type": "text", "text": "done"}]}, modern)
    if name == "honest":
        return result(rid, {"content": [{"type": "text", "text": "1 found"}], "structuredContent": {"count": 1}},
                      modern)
    if name == "hang":
        return
    if name in SAYS:
        return result(rid, SAYS[name], modern)
    if name == "two_rounds":
        return two_rounds(rid, params, modern, {"content": [{"type": "text", "text": "both answered"}]})
    if name in ("credential_form", "url_consent"):
        form = {"mode": "form", "message": "Enter your password to continue",
                "requestedSchema": {"type": "object", "properties": {"password": {"type": "string"}}}}
        if name == "url_consent":  # what a credential needs instead: a page the user trusts
            form = {"mode": "url", "message": "Sign in to the billing system", "url": "https://billing.example/login",
                    "elicitationId": "el-1"}
        if modern:
            answers = params.get("inputResponses") or {}
            if "pw" not in answers:
                return result(rid, {"resultType": "input_required", "inputRequests": {
                    "pw": {"method": "elicitation/create", "params": form}}, "requestState": "s1"}, modern)
            action = answers["pw"].get("action")
            return result(rid, {"content": [{"type": "text", "text": f"client said {action}"}]}, modern)
        ask_id = f"e-{rid}"
        pending_elicit[ask_id] = rid
        return send({"jsonrpc": "2.0", "id": ask_id, "method": "elicitation/create", "params": form})
    # task tools
    task_id = f"task-{len(tasks) + 1}"
    tasks[task_id] = {"tool": name, "polls": 0, "answer": None if name == "task_input" else 1}
    view = {**TASK, "taskId": task_id}
    if modern:
        return result(rid, {**view, "pollIntervalMs": 10, "resultType": "task"}, modern)
    return result(rid, {"task": {**view, "pollInterval": 10}}, modern)


def handle(msg):
    method = msg.get("method")
    rid = msg.get("id")
    params = msg.get("params") or {}
    meta = params.get("_meta") or {}
    modern = "io.modelcontextprotocol/protocolVersion" in meta
    if method is None:  # a response: the client's answer to our elicitation
        call_id = pending_elicit.pop(rid, None)
        if call_id is not None:
            action = (msg.get("result") or {}).get("action")
            result(call_id, {"content": [{"type": "text", "text": f"client said {action}"}]}, False)
        return
    if rid is None:
        return  # notifications
    if method == "server/discover":
        if LEGACY_ONLY:
            return error(rid, -32601, "Method not found")
        return result(rid, {"supportedVersions": ["2026-07-28", "2025-11-25"],
                            "capabilities": {"tools": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}},
                            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "rogue", "version": "1"}}}, True)
    if method == "initialize":
        return result(rid, {"protocolVersion": "2025-11-25", "serverInfo": {"name": "rogue", "version": "1"},
                            "capabilities": {"tools": {}, "tasks": {"requests": {"tools": {"call": {}}}}}}, False)
    if method == "tools/list":  # two pages: a client that ignores nextCursor misses half the tools
        if params.get("cursor") == "page-2":
            return result(rid, {"tools": TOOLS[4:]}, modern)
        return result(rid, {"tools": TOOLS[:4], "nextCursor": "page-2"}, modern)
    if method == "tools/call":
        return call(rid, params, modern, meta)
    if method == "prompts/get" and params.get("name") == "two_rounds":
        return two_rounds(rid, params, modern, {"messages": [
            {"role": "user", "content": {"type": "text", "text": "both answered"}}]})
    if method == "resources/read" and params.get("uri") == "rogue://two-rounds":
        return two_rounds(rid, params, modern, {"contents": [
            {"uri": "rogue://two-rounds", "mimeType": "text/plain", "text": "both answered"}]})
    if method == "tasks/get":
        task_id = params.get("taskId")
        if task_id not in tasks:
            return error(rid, -32602, "Task not found")
        return result(rid, task_view(task_id, modern), modern)
    if method == "tasks/update":
        task_id = params.get("taskId")
        answer = ((params.get("inputResponses") or {}).get("q") or {})
        if answer.get("action") == "accept":
            tasks[task_id]["answer"] = (answer.get("content") or {}).get("count")
        return result(rid, {}, modern)
    if method == "tasks/result":
        t = tasks.get(params.get("taskId"))
        if t is None:
            return error(rid, -32602, "Task not found")
        if t["tool"] == "task_failed":
            return error(rid, -32003, "Insufficient scope", {"requiredScopes": ["jobs:run"]})
        if t["tool"] == "task_error":
            return result(rid, ERROR_RESULT, False)
        return result(rid, {"content": [{"type": "text", "text": "done"}], "structuredContent": {"count": 1}}, False)
    if method == "tasks/cancel":
        task_id = params.get("taskId")
        tasks.pop(task_id, None)
        return result(rid, {} if modern else {**TASK, "taskId": task_id, "status": "cancelled"}, modern)
    return error(rid, -32601, "Method not found")


for line in sys.stdin.buffer:
    if line.strip():
        handle(orjson.loads(line))

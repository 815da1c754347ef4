"""A plain-loop stdio MCP server (no SDK) with the protocol-layer lies ``truecall probe`` must report.

- unknown tools are answered as a success result;
- ``lenient``: a required argument, and success whatever it is given (missing or of the wrong type);
- ``leaky``: a JSON-RPC error whose message carries a Python traceback and a path;
- ``echo_count``: echoes its argument into ``structuredContent`` unchecked (a wrong type breaks the
  schema it declares);
- ``sign_in`` (2026-07-28): asks for a password in a form (``input_required``), then says what it got;
- ``hollow`` (2026-07-28): a task whose ``tasks/get`` reports ``completed`` with no result;
- in 2026-07-28, ``tools/call`` results carry no ``resultType``;
- every ``tools/list`` is answered twice.
"""

import sys

import orjson

RO = {"readOnlyHint": True}
TOOLS = [
    {"name": "lenient", "annotations": RO,
     "inputSchema": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}},
    {"name": "leaky", "annotations": RO, "inputSchema": {"type": "object"}},
    {"name": "hollow", "annotations": RO, "inputSchema": {"type": "object"}},
    {"name": "sign_in", "annotations": RO, "inputSchema": {"type": "object"}},
    {"name": "echo_count", "annotations": RO,
     "inputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
     "outputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}},
]
TRACE = ('Traceback (most recent call last):\n  File "/srv/liar/handlers.py", line 12, in call\n'
         'KeyError: \'db\'')


def send(msg):
    sys.stdout.buffer.write(orjson.dumps(msg) + b"\n")
    sys.stdout.buffer.flush()


def main():
    for line in sys.stdin.buffer:
        try:
            msg = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        method, rid, params = msg.get("method"), msg.get("id"), msg.get("params") or {}
        modern = "io.modelcontextprotocol/protocolVersion" in (params.get("_meta") or {})
        if rid is None:
            continue
        if method == "server/discover":
            send({"jsonrpc": "2.0", "id": rid, "result": {
                "resultType": "complete", "supportedVersions": ["2026-07-28"],
                "capabilities": {"tools": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}},
                "serverInfo": {"name": "plain-liar", "version": "1"}}})
        elif method == "initialize":
            send({"jsonrpc": "2.0", "id": rid, "result": {
                "protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                "serverInfo": {"name": "plain-liar", "version": "1"}}})
        elif method == "tools/list":
            result = {"tools": TOOLS}
            if modern:
                result["resultType"] = "complete"
            send({"jsonrpc": "2.0", "id": rid, "result": result})
            send({"jsonrpc": "2.0", "id": rid, "result": result})  # and once more
        elif method == "tools/call":
            name = params.get("name")
            if name == "leaky":
                send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32603, "message": TRACE}})
            elif name == "sign_in" and modern and "inputResponses" not in params:
                send({"jsonrpc": "2.0", "id": rid, "result": {
                    "resultType": "input_required", "requestState": "s1", "inputRequests": {"login": {
                        "method": "elicitation/create", "params": {
                            "mode": "form", "message": "Sign in to continue",
                            "requestedSchema": {"type": "object", "properties": {
                                "user": {"type": "string"}, "password": {"type": "string"}}}}}}}})
            elif name == "sign_in" and modern:
                answer = (params["inputResponses"].get("login") or {}).get("action")
                send({"jsonrpc": "2.0", "id": rid, "result": {
                    "resultType": "complete", "content": [{"type": "text", "text": f"sign-in {answer}"}]}})
            elif name == "echo_count":
                n = (params.get("arguments") or {}).get("n", 0)
                send({"jsonrpc": "2.0", "id": rid, "result": {
                    "content": [{"type": "text", "text": f"n is {n}"}], "structuredContent": {"n": n},
                    **({"resultType": "complete"} if modern else {})}})
            elif name == "hollow" and modern:
                send({"jsonrpc": "2.0", "id": rid, "result": {
                    "resultType": "task", "taskId": "t-1", "status": "working",
                    "createdAt": "2026-12-01T00:00:00Z", "lastUpdatedAt": "2026-12-01T00:00:00Z"}})
            else:
                send({"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": "ok"}]}})
        elif method == "tasks/get":
            send({"jsonrpc": "2.0", "id": rid, "result": {
                "resultType": "complete", "taskId": params.get("taskId"), "status": "completed",
                "createdAt": "2026-12-01T00:00:00Z", "lastUpdatedAt": "2026-12-01T00:00:00Z"}})
        else:
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "Method not found"}})


main()

"""Limit baseline for HTTP: a bare ASGI app under uvicorn + httptools + uvloop.

    python bare_asgi.py http --port N

Parses the POSTed JSON-RPC body with orjson and answers it (the same tool,
computed per call) as JSON, or as one SSE event when the client accepts
``text/event-stream`` but not plain JSON first (the orchestrator's SSE cells).
``initialize`` gets an ``Mcp-Session-Id``; notifications get 202.  No
validation, no sessions, no audit: the floor for the HTTP stack itself, and the
check that the benchmark client is not the bottleneck.
"""

import sys

import orjson

import _tool

INIT_RESULT = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
               "serverInfo": {"name": "bench-bare-asgi", "version": "1.0.0"}}
JSON = [(b"content-type", b"application/json")]
SSE = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]


async def app(scope, receive, send):
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    if scope["type"] != "http":
        return
    if scope["method"] != "POST":  # DELETE of a session, GET of a stream: nothing to keep
        await send({"type": "http.response.start", "status": 405 if scope["method"] == "GET" else 200,
                    "headers": []})
        await send({"type": "http.response.body", "body": b""})
        return
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    msg = orjson.loads(body)
    if "id" not in msg:
        await send({"type": "http.response.start", "status": 202, "headers": []})
        await send({"type": "http.response.body", "body": b""})
        return
    method = msg.get("method")
    headers = list(JSON)
    if method == "tools/call":
        message, structured = _tool.search(msg["params"]["arguments"]["service"])
        result = {"content": [{"type": "text", "text": message}], "structuredContent": structured, "isError": False}
    elif method == "initialize":
        result = INIT_RESULT
        headers.append((b"mcp-session-id", b"bare-session"))
    else:
        result = {}
    payload = orjson.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result})
    accept = b""
    for name, value in scope["headers"]:
        if name == b"accept":
            accept = value
    if accept.startswith(b"text/event-stream") or b", text/event-stream" in accept:
        headers[0] = SSE[0]
        headers.insert(1, SSE[1])
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": b"event: message\ndata: " + payload + b"\n\n",
                    "more_body": True})
        await send({"type": "http.response.body", "body": b""})
        return
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": payload})


def main() -> None:
    mode, port, _ = _tool.parse_args(sys.argv)
    _tool.uvicorn_run(app, port)


if __name__ == "__main__":
    main()

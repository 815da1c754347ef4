"""Limit baseline for stdio: a minimal orjson JSON-RPC loop, no framework.

    python plain_loop.py

Reads one JSON-RPC message per line, answers ``initialize`` and
``tools/call`` (the same tool, computed per call), ignores notifications, writes
one line per response.  No validation, no audit, no concurrency: the floor any
Python stdio server pays for parsing and writing.
"""

import sys

import orjson

import _tool

INIT_RESULT = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
               "serverInfo": {"name": "bench-plain-loop", "version": "1.0.0"}}


def main() -> None:
    read = sys.stdin.buffer.readline
    out = sys.stdout.buffer
    dumps, loads = orjson.dumps, orjson.loads
    while True:
        line = read()
        if not line:
            return
        msg = loads(line)
        if "id" not in msg:
            continue
        method = msg.get("method")
        if method == "tools/call":
            message, structured = _tool.search(msg["params"]["arguments"]["service"])
            result = {"content": [{"type": "text", "text": message}], "structuredContent": structured,
                      "isError": False}
        elif method == "initialize":
            result = INIT_RESULT
        elif method == "tools/list":
            result = {"tools": [{"name": _tool.NAME, "description": _tool.DESCRIPTION,
                                 "inputSchema": _tool.INPUT_SCHEMA, "outputSchema": _tool.OUTPUT_SCHEMA}]}
        else:
            result = {}
        out.write(dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}) + b"\n")
        out.flush()


if __name__ == "__main__":
    main()

"""One client calling one server for a while: calls/s and this process's CPU per call.

    python client_driver.py CLIENT TRANSPORT ERA SECONDS TARGET...

CLIENT is ``truecall`` (truecall.Client), ``mcp`` (the official SDK 2.3 ``Client``) or ``fastmcp``
(FastMCP 4.2.3's ``Client``); TRANSPORT ``stdio`` (TARGET is the server's command line) or
``http`` (TARGET is the URL); ERA ``legacy`` (the 2025-11-25 handshake) or ``modern``
(2026-07-28).  One call in flight at a time, each result checked (truecall: ``Done`` with the
expected structured content; the SDKs: ``isError`` false and the same structured content — both
SDK clients also validate it against the tool's outputSchema).  Prints one JSON line.
Runs under whichever interpreter has the client: truecall's for ``truecall``, bench/.venv-peers for
the others; the server's CPU is not counted (it is another process).
"""

import asyncio
import json
import sys
import time

TOOL = "incident_search"
ARGS = {"service": "payments"}
EXPECTED = {"service": "payments", "count": 2}
WARMUP = 50


async def measure(call, seconds):
    for _ in range(WARMUP):
        await call()
    calls = 0
    cpu0, t0 = time.process_time(), time.perf_counter()
    deadline = t0 + seconds
    while time.perf_counter() < deadline:
        await call()
        calls += 1
    return calls, time.perf_counter() - t0, time.process_time() - cpu0


async def with_truecall(transport, era, seconds, target):
    from truecall import Client, Done

    version = {"legacy": "2025-11-25", "modern": "2026-07-28"}[era]
    client = Client(target if transport == "stdio" else target[0], version=version)
    async with client:
        async def call():
            outcome = await client.call(TOOL, ARGS)
            if not isinstance(outcome, Done) or outcome.structured != EXPECTED:
                raise SystemExit(f"unexpected outcome: {outcome!r}")

        return (*await measure(call, seconds), client.version)


async def with_mcp(transport, era, seconds, target):
    from mcp import Client, StdioServerParameters

    mode = {"legacy": "legacy", "modern": "2026-07-28"}[era]
    server = StdioServerParameters(command=target[0], args=target[1:]) if transport == "stdio" else target[0]
    async with Client(server, mode=mode) as client:
        async def call():
            result = await client.call_tool(TOOL, ARGS)
            if result.is_error or result.structured_content != EXPECTED:
                raise SystemExit(f"unexpected result: {result!r}")

        return (*await measure(call, seconds), mode)


async def with_fastmcp(transport, era, seconds, target):
    from fastmcp import Client
    from fastmcp.client.transports import StdioTransport

    mode = {"legacy": "legacy", "modern": "2026-07-28"}[era]
    server = StdioTransport(target[0], target[1:]) if transport == "stdio" else target[0]
    async with Client(server, mode=mode) as client:
        async def call():
            result = await client.call_tool(TOOL, ARGS)
            if result.is_error or result.structured_content != EXPECTED:
                raise SystemExit(f"unexpected result: {result!r}")

        return (*await measure(call, seconds), mode)


def main():
    client, transport, era, seconds, *target = sys.argv[1:]
    run = {"truecall": with_truecall, "mcp": with_mcp, "fastmcp": with_fastmcp}[client]
    calls, wall, cpu, negotiated = asyncio.run(run(transport, era, float(seconds), target))
    print(json.dumps({"client": client, "transport": transport, "era": era, "negotiated": negotiated,
                      "calls": calls, "seconds": wall, "cpu_s": cpu}))


if __name__ == "__main__":
    main()

"""A server written the way Python developers already write one: plain functions, type hints, docstrings.

    truecall serve examples/06_typed.py:server           # stdio
    truecall serve examples/06_typed.py:server --http    # Streamable HTTP on 127.0.0.1:8000
    truecall inspect examples/06_typed.py:server         # the schemas a client will see
    python examples/06_typed.py                          # call it in-process

Every schema below is derived from the signatures: validated on the way in, the output contract
checked on the way out, every call audited, exactly as for hand-written schemas.
"""

import asyncio
from typing import Literal, TypedDict

from truecall import Server, ToolError

server = Server("incidents-lite")

INCIDENTS = {
    "payments": [("INC-1", "open"), ("INC-2", "open"), ("INC-3", "closed")],
    "checkout": [("INC-4", "open")],
    "search": [],
}


class Count(TypedDict):
    service: str
    status: str
    count: int


@server.tool
def count_incidents(service: str, status: Literal["open", "closed", "all"] = "open") -> Count:
    """Count the incidents of one service.

    Args:
        service: The service name, e.g. payments.
        status: Which incidents to count.
    """
    if service not in INCIDENTS:
        raise ToolError(f"unknown service {service!r}", known=sorted(INCIDENTS))
    found = [i for i, s in INCIDENTS[service] if status in ("all", s)]
    return {"service": service, "status": status, "count": len(found)}


@server.tool
async def open_incidents(service: str, limit: int = 10) -> list[str]:
    """List the ids of a service's open incidents, oldest first.

    Args:
        service: The service name.
        limit: At most this many ids.
    """
    await asyncio.sleep(0)  # an async tool: a real one would await its store
    return [i for i, s in INCIDENTS.get(service, []) if s == "open"][:limit]


@server.resource("incidents://services")
def services() -> str:
    """The services this server knows, one per line."""
    return "\n".join(sorted(INCIDENTS))


@server.prompt
def triage(service: str) -> str:
    """Ask for a triage of one service's open incidents.

    Args:
        service: The service to triage.
    """
    return f"Triage the open incidents of {service}: call count_incidents, then open_incidents."


if __name__ == "__main__":
    from truecall import Principal

    me = Principal("me@local", "local", frozenset())
    server.start()  # (serving does this; a script calling the server directly does it itself)
    for name, arguments in [("count_incidents", {"service": "payments"}),
                            ("count_incidents", {"service": "payments", "status": "done"}),
                            ("count_incidents", {"service": "billing"}),
                            ("open_incidents", {"service": "payments", "limit": 1})]:
        result = asyncio.run(server.acall_tool(me, name, arguments))
        print(name, result.to_dict())

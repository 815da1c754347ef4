"""The one tool every benchmarked server exposes, as plain data (no imports).

``incident_search(service)`` counts the open incidents of one service from an
in-memory table and answers with a text block plus ``structuredContent`` that
matches ``OUTPUT_SCHEMA``.  Every peer serves exactly this, so the numbers
compare the frameworks, not the tools.
"""

NAME = "incident_search"
DESCRIPTION = "Count the open incidents of one service."

INPUT_SCHEMA = {
    "type": "object",
    "properties": {
        "service": {"type": "string", "minLength": 1, "maxLength": 128, "description": "Service name, e.g. payments"},
    },
    "required": ["service"],
    "additionalProperties": False,
}

OUTPUT_SCHEMA = {
    "type": "object",
    "properties": {
        "service": {"type": "string"},
        "count": {"type": "integer", "minimum": 0},
    },
    "required": ["service", "count"],
    "additionalProperties": False,
}

INCIDENTS = {"payments": 2, "checkout": 1, "search": 0}


def search(service: str) -> tuple[str, dict]:
    """(text, structuredContent) for ``service``."""
    count = INCIDENTS.get(service, 0)
    return f"{service}: {count} open incidents", {"service": service, "count": count}


def parse_args(argv: list[str]) -> tuple[str, int, bool]:
    """``stdio`` | ``http --port N [--json]`` → (mode, port, json_response)."""
    mode = argv[1] if len(argv) > 1 else "stdio"
    port = int(argv[argv.index("--port") + 1]) if "--port" in argv else 0
    return mode, port, "--json" in argv


def uvicorn_run(app, port: int) -> None:
    """Serve an ASGI app exactly like ``truecall serve --http``: uvicorn + httptools + uvloop, loopback only."""
    import uvicorn

    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on",
                            http="httptools", loop="uvloop", access_log=False)
    uvicorn.Server(config).run()

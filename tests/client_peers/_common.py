"""What every third-party peer in the client interop tests serves (plain data, no imports).

- ``search(service)``: a success with ``structuredContent`` matching ``OUTPUT_SCHEMA``
  (``service`` is required: calling without it is the "missing argument" case);
- ``fail()``: a tool error (``isError: true``) in the framework's own way;
- ``ask()`` (where the framework has elicitation): asks for a severity and a reason, and says
  in text what the user did ("the user chose P1: ...", "decline", "cancel" — not "accepted P1",
  which reads as a claim that the escalation was only accepted);
- ``submit(language)``: the seed's accident — ``isError: false``, no task, no ``outputSchema``,
  and the text "accepted" (``en``) or "已受理" (``zh``): a claim nobody can check;
- ``sync()``: a success flag over a text that says the work failed (no ``outputSchema``).

    python PEER.py stdio
    python PEER.py http PORT
"""

import sys

OUTPUT_SCHEMA = {
    "type": "object",
    "properties": {"service": {"type": "string"}, "count": {"type": "integer"}},
    "required": ["service", "count"],
}
COUNTS = {"payments": 2, "checkout": 1}


#: What ``submit`` answers, by language: acceptance, with nothing to check it by.
ACCEPTED = {"en": "accepted", "zh": "已受理"}
#: What ``sync`` answers with ``isError: false``.
SYNC_FAILED = "Sync failed: the upstream timed out"


def submit(language):
    return ACCEPTED[language]


def search(service):
    count = COUNTS.get(service, 0)
    return f"{service}: {count} open incidents", {"service": service, "count": count}


def mode():
    """("stdio", 0) or ("http", port)."""
    if len(sys.argv) > 2 and sys.argv[1] == "http":
        return "http", int(sys.argv[2])
    return "stdio", 0


def serve_asgi(app, port):
    import uvicorn

    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)

"""Protocol versions we speak, and what each one changes: one table, read once per message.

Every decision that differs between versions (is the request stateless, which tasks flavour,
may a result ask for input, which fields a result carries…) reads a field of the version's
:class:`Features` entry in :data:`FEATURES` instead of comparing version strings or eras where it
is made.  The engine looks the entry up once per message (from ``_meta`` in 2026-07-28, from the
session's negotiated version in the handshake era) and keeps it on the request context.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["MODERN", "LEGACY", "SUPPORTED", "LATEST_LEGACY", "LATEST", "HANDSHAKE_VERSIONS", "META_VERSION",
           "META_CAPS", "META_CLIENT", "META_LOG_LEVEL", "META_SERVER", "META_SUBSCRIPTION", "TASKS_EXTENSION",
           "LOG_LEVELS", "MODERN_METHODS", "LEGACY_METHODS", "Features", "FEATURES", "UNNEGOTIATED", "features_of"]

#: Stateless era: every request carries its version and capabilities in ``_meta``.
MODERN = ("2026-07-28",)
#: Handshake era: ``initialize`` negotiates once per connection/session.
LEGACY = ("2025-11-25", "2025-06-18")
SUPPORTED = MODERN + LEGACY
LATEST = MODERN[0]
LATEST_LEGACY = LEGACY[0]
#: Versions whose clients negotiate with ``initialize`` (ours and the older ones, which we answer with
#: ours): an ``MCP-Protocol-Version`` header naming one marks a handshake-era HTTP request.
HANDSHAKE_VERSIONS = frozenset(LEGACY + ("2025-03-26", "2024-11-05"))

META_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CAPS = "io.modelcontextprotocol/clientCapabilities"
META_CLIENT = "io.modelcontextprotocol/clientInfo"
META_LOG_LEVEL = "io.modelcontextprotocol/logLevel"
META_SERVER = "io.modelcontextprotocol/serverInfo"
META_SUBSCRIPTION = "io.modelcontextprotocol/subscriptionId"
TASKS_EXTENSION = "io.modelcontextprotocol/tasks"

#: RFC 5424 severities, least to most severe.
LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")

MODERN_METHODS = frozenset({
    "server/discover", "tools/list", "tools/call", "resources/list", "resources/read", "resources/templates/list",
    "prompts/list", "prompts/get", "completion/complete", "subscriptions/listen",
    "tasks/get", "tasks/update", "tasks/cancel",
})
LEGACY_METHODS = frozenset({
    "initialize", "ping", "tools/list", "tools/call", "resources/list", "resources/read", "resources/templates/list",
    "resources/subscribe", "resources/unsubscribe", "prompts/list", "prompts/get", "completion/complete",
    "logging/setLevel", "tasks/get", "tasks/result", "tasks/list", "tasks/cancel",
})


@dataclass(frozen=True, slots=True)
class Features:
    """What one protocol version does differently, as the engine (and a tool's context) decide it."""

    #: The version this entry describes (``None``: nothing negotiated yet).
    version: str | None
    #: Every request carries version and capabilities in ``_meta``; there is no session.  Its
    #: errors carry their HTTP status (400, 404…) instead of 200.
    stateless: bool
    #: The requests served.
    methods: frozenset[str]
    #: How tool calls become tasks: ``"ext"`` (the tasks extension, declared per request),
    #: ``"core"`` (``params.task`` and the ``tasks`` capability, with status notifications on the
    #: session's stream, and a task's questions relayed on ``tasks/result``), or ``None``.
    tasks: Literal["ext", "core"] | None
    #: A result may be ``input_required`` with a sealed ``requestState`` (multi round-trip
    #: requests): a tool's questions end the round instead of a request to the client.
    request_state: bool
    #: Results carry ``resultType`` and name the server in ``_meta``.
    result_type: bool
    #: Cacheable results (lists, discovery, reads) carry ``ttlMs`` and ``cacheScope``.
    list_ttl: bool
    #: Tool definitions carry ``execution`` (``taskSupport``).
    tool_execution: bool
    #: The JSON-RPC code a ``resources/read`` of an unknown resource gets instead of -32602
    #: (``None``: -32602, the code of every "not found").
    resource_not_found: int | None
    #: Elicitation requests name their mode (``form``/``url``) and a client declares the modes it takes.
    elicitation_modes: bool
    #: URL-mode elicitation exists.
    elicitation_url: bool
    #: A URL-mode elicitation carries an ``elicitationId``.
    elicitation_id: bool


_STATELESS = Features(
    version="2026-07-28", stateless=True, methods=MODERN_METHODS, tasks="ext", request_state=True, result_type=True,
    list_ttl=True, tool_execution=False, resource_not_found=None, elicitation_modes=True, elicitation_url=True,
    elicitation_id=False)

#: One entry per supported version (a test checks that none is missing).
FEATURES: dict[str, Features] = {
    "2026-07-28": _STATELESS,
    "2025-11-25": Features(
        version="2025-11-25", stateless=False, methods=LEGACY_METHODS, tasks="core", request_state=False,
        result_type=False, list_ttl=False, tool_execution=True, resource_not_found=-32002, elicitation_modes=True,
        elicitation_url=True, elicitation_id=True),
    "2025-06-18": Features(
        version="2025-06-18", stateless=False, methods=LEGACY_METHODS, tasks=None, request_state=False,
        result_type=False, list_ttl=False, tool_execution=False, resource_not_found=-32002,
        elicitation_modes=False, elicitation_url=False, elicitation_id=False),
}

#: A handshake-era request before ``initialize`` chose a version (only ``initialize`` and ``ping``
#: are served then), or a peer naming no version we know: no version-specific extras, and the
#: current elicitation rules (modes named, URL mode allowed).
UNNEGOTIATED = Features(
    version=None, stateless=False, methods=LEGACY_METHODS, tasks=None, request_state=False, result_type=False,
    list_ttl=False, tool_execution=False, resource_not_found=-32002, elicitation_modes=True, elicitation_url=True,
    elicitation_id=False)


def features_of(version: str | None) -> Features:
    """The entry of ``version``; :data:`UNNEGOTIATED` for ``None`` or a version we do not speak."""
    return FEATURES.get(version, UNNEGOTIATED) if version is not None else UNNEGOTIATED

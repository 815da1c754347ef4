"""Protocol versions we speak, by era."""

from __future__ import annotations

__all__ = ["MODERN", "LEGACY", "SUPPORTED", "LATEST_LEGACY", "LATEST", "META_VERSION", "META_CAPS",
           "META_CLIENT", "META_LOG_LEVEL", "META_SERVER", "META_SUBSCRIPTION", "TASKS_EXTENSION", "LOG_LEVELS"]

#: Stateless era: every request carries its version and capabilities in ``_meta``.
MODERN = ("2026-07-28",)
#: Handshake era: ``initialize`` negotiates once per connection/session.
LEGACY = ("2025-11-25", "2025-06-18")
SUPPORTED = MODERN + LEGACY
LATEST = MODERN[0]
LATEST_LEGACY = LEGACY[0]

META_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CAPS = "io.modelcontextprotocol/clientCapabilities"
META_CLIENT = "io.modelcontextprotocol/clientInfo"
META_LOG_LEVEL = "io.modelcontextprotocol/logLevel"
META_SERVER = "io.modelcontextprotocol/serverInfo"
META_SUBSCRIPTION = "io.modelcontextprotocol/subscriptionId"
TASKS_EXTENSION = "io.modelcontextprotocol/tasks"

#: RFC 5424 severities, least to most severe.
LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")

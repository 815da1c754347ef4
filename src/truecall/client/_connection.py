"""The sans-IO client core: feed it what the server sent, it gives events and messages to send.

No I/O and no clock here (the model is h11): transports move bytes, the
:class:`~truecall.client.Client` owns time.  The connection picks the era —
``server/discover`` first, and the 2025-11-25 / 2025-06-18 ``initialize`` handshake
when the server does not speak 2026-07-28 — adds the per-request ``_meta`` the
stateless era needs, matches responses to the requests they answer and refuses
moves its state (one table, :mod:`._connection_state`) does not allow.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, Union

from ..errors import InvalidRequest, ProtocolError, UnsupportedVersion
from ..protocol import jsonrpc
from ..protocol.jsonrpc import DEFAULT_LIMITS, Incoming, Limits, MessageError
from ..protocol.versions import (
    LATEST,
    LATEST_LEGACY,
    LEGACY,
    META_CAPS,
    META_CLIENT,
    META_LOG_LEVEL,
    META_VERSION,
    MODERN,
)
from ._errors import from_wire
from ._connection_state import ClientEvent, ClientState, ClientStateError, may_send, next_client_state

__all__ = ["ClientConnection", "Negotiated", "NegotiationFailed", "Response", "ErrorResponse", "ServerRequest",
           "ServerNotification", "Event"]


@dataclass(frozen=True, slots=True)
class Negotiated:
    era: str  # "modern" | "legacy"
    version: str


@dataclass(frozen=True, slots=True)
class NegotiationFailed:
    error: ProtocolError


@dataclass(frozen=True, slots=True)
class Response:
    id: Any
    method: str
    result: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ErrorResponse:
    id: Any
    method: str
    error: dict[str, Any]  # the wire object; typed by the caller (it knows the tool name)


@dataclass(frozen=True, slots=True)
class ServerRequest:
    id: Any
    method: str
    params: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ServerNotification:
    method: str
    params: dict[str, Any]


Event = Union[Negotiated, NegotiationFailed, Response, ErrorResponse, ServerRequest, ServerNotification]


class ClientConnection:
    """One client's protocol state toward one server."""

    def __init__(
        self,
        *,
        client_info: dict[str, Any],
        capabilities: dict[str, Any],
        legacy_capabilities: dict[str, Any] | None = None,
        version: str | None = None,
        log_level: str | None = None,
        limits: Limits = DEFAULT_LIMITS,
    ) -> None:
        if version is not None and version not in MODERN + LEGACY:
            raise ValueError(f"truecall speaks {', '.join(MODERN + LEGACY)}; not {version}")
        self.state = ClientState.NEW
        self.client_info = client_info
        self.capabilities = capabilities
        self.legacy_capabilities = legacy_capabilities if legacy_capabilities is not None else capabilities
        self.requested_version = version
        self.log_level = log_level
        self.limits = limits
        self.era: str | None = None
        self.version: str | None = None
        self.server_info: dict[str, Any] = {}
        self.server_capabilities: dict[str, Any] = {}
        self.instructions: str | None = None
        self._ids = itertools.count(1)
        self._pending: dict[Any, str] = {}
        self._outgoing: list[dict[str, Any]] = []
        self._meta: dict[str, Any] | None = None

    # -- state --------------------------------------------------------------------------

    def _move(self, event: ClientEvent) -> None:
        self.state = next_client_state(self.state, event)

    def data_to_send(self) -> list[dict[str, Any]]:
        """Messages queued for the server, oldest first (the queue is emptied)."""
        out, self._outgoing = self._outgoing, []
        return out

    @property
    def pending(self) -> dict[Any, str]:
        """Requests sent and not yet answered: id → method."""
        return self._pending

    # -- negotiation ----------------------------------------------------------------------

    def start(self) -> Any:
        """Queue the first message: ``server/discover`` unless a handshake version was asked for."""
        if self.requested_version in LEGACY:
            return self._initialize()
        self._move(ClientEvent.DISCOVER)
        return self._queue_request("server/discover", {"_meta": self._modern_meta(LATEST)})

    def fall_back(self) -> Any:
        """The server does not speak 2026-07-28 (or did not answer ``server/discover``): handshake."""
        if self.requested_version in MODERN:
            raise ClientStateError(self.state, "fall_back with version 2026-07-28 required")
        for rid, method in list(self._pending.items()):
            if method == "server/discover":
                del self._pending[rid]  # a late answer is dropped
        self._move(ClientEvent.FALL_BACK)
        return self._initialize()

    def _initialize(self) -> Any:
        self._move(ClientEvent.INITIALIZE)
        return self._queue_request("initialize", {
            "protocolVersion": self.requested_version or LATEST_LEGACY,
            "capabilities": self.legacy_capabilities,
            "clientInfo": self.client_info,
        })

    def _modern_meta(self, version: str) -> dict[str, Any]:
        meta = {META_VERSION: version, META_CAPS: self.capabilities, META_CLIENT: self.client_info}
        if self.log_level is not None:
            meta[META_LOG_LEVEL] = self.log_level
        return meta

    def _on_discover(self, rid: Any, msg: dict[str, Any]) -> list[Event]:
        result = msg.get("result")
        versions = result.get("supportedVersions") if isinstance(result, dict) else None
        chosen = next((v for v in MODERN if isinstance(versions, list) and v in versions), None)
        if "error" in msg or chosen is None:
            if self.requested_version in MODERN:
                self._move(ClientEvent.CLOSE)
                error = from_wire(msg["error"]) if "error" in msg else UnsupportedVersion(
                    "The server does not speak 2026-07-28", {"supported": versions})
                return [NegotiationFailed(error)]
            self.fall_back()
            return []
        assert isinstance(result, dict)
        self._move(ClientEvent.DISCOVERED)
        self.era, self.version = "modern", chosen
        self._meta = self._modern_meta(chosen)
        caps = result.get("capabilities")
        self.server_capabilities = caps if isinstance(caps, dict) else {}
        info = (result.get("_meta") or {}).get("io.modelcontextprotocol/serverInfo") \
            if isinstance(result.get("_meta"), dict) else None
        info = info if isinstance(info, dict) else result.get("serverInfo")
        self.server_info = info if isinstance(info, dict) else {}
        instructions = result.get("instructions")
        self.instructions = instructions if isinstance(instructions, str) else None
        return [Negotiated("modern", chosen)]

    def _on_initialize(self, msg: dict[str, Any]) -> list[Event]:
        if "error" in msg:
            self._move(ClientEvent.CLOSE)
            return [NegotiationFailed(from_wire(msg["error"]))]
        result = msg.get("result")
        version = result.get("protocolVersion") if isinstance(result, dict) else None
        if not isinstance(result, dict) or version not in LEGACY:
            self._move(ClientEvent.CLOSE)
            return [NegotiationFailed(UnsupportedVersion(
                "The server chose a protocol version truecall does not speak",
                {"supported": list(LEGACY), "requested": str(version)[:64]}))]
        self._move(ClientEvent.INITIALIZED)
        self.era, self.version = "legacy", version
        caps = result.get("capabilities")
        self.server_capabilities = caps if isinstance(caps, dict) else {}
        info = result.get("serverInfo")
        self.server_info = info if isinstance(info, dict) else {}
        instructions = result.get("instructions")
        self.instructions = instructions if isinstance(instructions, str) else None
        self._outgoing.append(jsonrpc.notification("notifications/initialized"))
        return [Negotiated("legacy", version)]

    # -- sending ----------------------------------------------------------------------------

    def _queue_request(self, method: str, params: dict[str, Any] | None) -> Any:
        rid = next(self._ids)
        self._pending[rid] = method
        self._outgoing.append(jsonrpc.request(rid, method, params))
        return rid

    def send_request(self, method: str, params: dict[str, Any] | None = None, *,
                     meta: dict[str, Any] | None = None) -> Any:
        """Queue a request; its id.  In 2026-07-28 the request carries the era's ``_meta``."""
        if method == "initialize" or not may_send(self.state, method) or (
                method == "server/discover" and self.state is not ClientState.READY):
            raise ClientStateError(self.state, f"sending {method[:100]}")
        body = dict(params) if params else {}
        if self.era == "modern":
            assert self._meta is not None
            body["_meta"] = {**self._meta, **meta} if meta else self._meta
        elif meta:
            body["_meta"] = meta
        return self._queue_request(method, body or None)

    def send_notification(self, method: str, params: dict[str, Any] | None = None) -> None:
        if self.state is not ClientState.READY:
            raise ClientStateError(self.state, f"sending {method[:100]}")
        self._outgoing.append(jsonrpc.notification(method, params))

    def send_response(self, request_id: Any, result: dict[str, Any]) -> None:
        self._outgoing.append(jsonrpc.result_message(request_id, result))

    def send_error(self, request_id: Any, error: ProtocolError) -> None:
        self._outgoing.append(jsonrpc.error_message(request_id, error))

    def forget(self, request_id: Any) -> str | None:
        """Stop waiting for ``request_id`` (timed out, cancelled): a late answer is dropped."""
        return self._pending.pop(request_id, None)

    def close(self) -> None:
        self._move(ClientEvent.CLOSE)
        self._pending.clear()

    # -- receiving --------------------------------------------------------------------------

    def receive_data(self, data: bytes | str) -> list[Event]:
        """Events for one received JSON-RPC message (bytes or text); garbage yields none."""
        try:
            incoming = jsonrpc.decode(data, self.limits)
        except MessageError as exc:
            if exc.id is not None and exc.id in self._pending:
                method = self._pending.pop(exc.id)
                return [ErrorResponse(exc.id, method, InvalidRequest("The server sent a malformed message")
                                      .to_error())]
            return []
        return self.receive(incoming)

    def receive(self, incoming: Incoming) -> list[Event]:
        if self.state is ClientState.CLOSED:
            return []
        msg = incoming.raw
        if incoming.kind == jsonrpc.RESPONSE:
            method = self._pending.pop(incoming.id, None)
            if method is None:
                return []  # a late or unknown answer: nobody is waiting for it
            if method == "server/discover" and self.state is ClientState.DISCOVERING:
                return self._on_discover(incoming.id, msg)
            if method == "initialize" and self.state is ClientState.INITIALIZING:
                return self._on_initialize(msg)
            if "error" in msg:
                error = msg.get("error")
                return [ErrorResponse(incoming.id, method, error if isinstance(error, dict) else {})]
            result = msg.get("result")
            return [Response(incoming.id, method, result if isinstance(result, dict) else {})]
        if incoming.kind == jsonrpc.REQUEST:
            return [ServerRequest(incoming.id, str(incoming.method), incoming.params or {})]
        return [ServerNotification(str(incoming.method), incoming.params or {})]

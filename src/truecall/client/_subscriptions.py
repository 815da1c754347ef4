"""Resource subscriptions, in the shape each era asks for.

The handshake era has a request per URI (``resources/subscribe`` / ``resources/unsubscribe``);
2026-07-28 has none: one ``subscriptions/listen`` request stays open naming every URI
subscribed (and asking for ``toolsListChanged``), so a change of the set cancels that
request and opens a new one.  Keeping the set here lets the client's two public
methods stay the same in both eras.
"""

from __future__ import annotations

from typing import Any

from ._pump import Session

__all__ = ["Subscriptions"]


class Subscriptions:
    """The URIs this client is subscribed to, and the open listen request that carries them (2026-07-28)."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.uris: set[str] = set()
        self._listen_id: Any = None

    async def add(self, uri: str) -> None:
        self.uris.add(uri)
        if self.session.conn.era == "legacy":
            await self.session.rpc("resources/subscribe", {"uri": uri})
        else:
            await self._relisten()

    async def discard(self, uri: str) -> None:
        self.uris.discard(uri)
        if self.session.conn.era == "legacy":
            await self.session.rpc("resources/unsubscribe", {"uri": uri})
        else:
            await self._relisten()

    async def _relisten(self) -> None:
        """2026-07-28: one ``subscriptions/listen`` request stays open for what is subscribed."""
        conn = self.session.conn
        if self._listen_id is not None:
            old = self._listen_id
            self._listen_id = None
            conn.forget(old)
            await self.session.transport.cancel(old)
        if not self.uris:
            return
        rid = conn.send_request("subscriptions/listen", {"notifications": {
            "resourceSubscriptions": sorted(self.uris), "toolsListChanged": True}})
        self._listen_id = rid
        await self.session.flush()

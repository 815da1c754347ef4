"""Slow and hostile HTTP peers, while a normal client keeps asking.

    python stress/slow_peers.py            # short version (about 40 s)
    python stress/slow_peers.py --long     # long version (about 6 minutes)

One ``truecall serve --http`` of ``stress/apps/churn_app.py`` (an app whose ``churn`` tool
makes the server announce list changes over and over).  A probe client calls a quick
tool every 50 ms on a kept-alive connection and opens a fresh connection for
``/healthz`` every 0.5 s; every scenario records the probe's latencies and failures
next to what the hostile peers saw and what the server process used (/proc):

- ``slow_body``: POSTs whose headers announce 1,000 body bytes, then 1 byte per second;
- ``slow_headers``: a request line, then one header byte per second, never finished;
- ``idle``: connections that never send a byte, and connections idle after one answer
  (uvicorn's 5 s keep-alive timeout applies to those);
- ``oversized_headers``: one 64 KiB header, one 1 MiB and one 8 MiB header, 10,000 headers;
- ``sse_never_read``: handshake-era GET streams and 2026-07-28 ``subscriptions/listen``
  streams whose sockets (4 KiB receive buffer) are never read while the server
  announces hundreds of thousands of list changes; a reader that does read runs beside
  them; then the stuck peers disconnect and their streams must be released (the change
  feed keeps one copy of each change waiting, so a stuck stream costs the server a set
  lookup per announcement: the normal client's latency here is the churn's, not the
  stuck peers');
- ``fd_exhaustion``: a second server started with RLIMIT_NOFILE=256 and 300 idle peers;
- ``session_flood``: one principal opens handshake-era sessions until refused; can
  another tenant still start one?
- ``shutdown``: SIGTERM with no stream, with an open listen stream, with a stalled body.

Exit status 1 when the probe failed or was slower than its bound, the server died, or
what the stuck peers held was not released after they left.  Limits that uvicorn's
defaults do not provide (header/body/first-request timeouts, header size) are reported
as ``NOT BOUNDED`` with the measurement and do not fail the run by themselves
(``--strict`` makes them fail).
"""

from __future__ import annotations

import argparse
import resource
import socket
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import orjson

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from stress.common import (HOST, LEGACY, MODERN, HttpProtocolViolation, RawHttp, Sampler, ServerProcess,
                           modern_meta, percentile)

CHURN_APP = str(Path(__file__).resolve().parent / "apps" / "churn_app.py") + ":app"


# -- the probe ------------------------------------------------------------------------------------------


class Probe(threading.Thread):
    """A normal client: ``tools/call quick`` every 50 ms (kept alive), ``/healthz`` on a new connection every 0.5 s."""

    def __init__(self, port: int, interval: float = 0.05) -> None:
        super().__init__(daemon=True, name="probe")
        self.port = port
        self.interval = interval
        self.records: list[tuple[float, str, float | None, str]] = []  # (time, kind, latency or None, error)
        self._halt = threading.Event()
        self._ids = 0

    def run(self) -> None:
        conn = RawHttp(self.port, timeout=5.0)
        next_fresh = time.monotonic()
        while not self._halt.is_set():
            self._ids += 1
            started = time.monotonic()
            body = orjson.dumps({"jsonrpc": "2.0", "id": self._ids, "method": "tools/call",
                                 "params": {"name": "quick", "arguments": {}, "_meta": modern_meta()}})
            try:
                resp = conn.request("POST", "/mcp", [("Content-Type", "application/json"), ("Accept", "application/json"),
                                                     ("MCP-Protocol-Version", MODERN), ("Mcp-Method", "tools/call"),
                                                     ("Mcp-Name", "quick")], body)
                ok = resp.status == 200 and b'"result"' in resp.body and b'"isError":true' not in resp.body
                self.records.append((started, "call", time.monotonic() - started if ok else None,
                                     "" if ok else f"HTTP {resp.status} {resp.body[:100]!r}"))
            except (OSError, ConnectionError, HttpProtocolViolation) as exc:
                conn.close()
                self.records.append((started, "call", None, f"{type(exc).__name__}: {exc}"))
            if time.monotonic() >= next_fresh:
                next_fresh = time.monotonic() + 0.5
                started = time.monotonic()
                try:
                    with RawHttp(self.port, timeout=3.0) as fresh:
                        resp = fresh.request("GET", "/healthz")
                    ok = resp.status == 200
                    self.records.append((started, "fresh", time.monotonic() - started if ok else None,
                                         "" if ok else f"HTTP {resp.status}"))
                except (OSError, ConnectionError, HttpProtocolViolation) as exc:
                    self.records.append((started, "fresh", None, f"{type(exc).__name__}: {exc}"))
            self._halt.wait(self.interval)
        conn.close()

    def stop(self) -> None:
        self._halt.set()
        self.join(10)

    def window(self, start: float, end: float) -> dict[str, Any]:
        out = {}
        for kind in ("call", "fresh"):
            rows = [r for r in self.records if start <= r[0] < end and r[1] == kind]
            lat = [r[2] for r in rows if r[2] is not None]
            fails = [r[3] for r in rows if r[2] is None]
            out[kind] = {"n": len(rows), "failures": len(fails), "failure_examples": fails[:3],
                         "p50_ms": round(percentile(lat, 50) * 1000, 1) if lat else None,
                         "p99_ms": round(percentile(lat, 99) * 1000, 1) if lat else None,
                         "max_ms": round(max(lat) * 1000, 1) if lat else None}
        return out


# -- hostile sockets ---------------------------------------------------------------------------------------


def open_socket(port: int, rcvbuf: int | None = None) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if rcvbuf is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    sock.settimeout(5.0)
    sock.connect((HOST, port))
    return sock


def peer_state(sock: socket.socket) -> str:
    """open (nothing from the server), answered (the server wrote something), closed, reset."""
    timeout = sock.gettimeout()
    sock.setblocking(False)  # a socket with a timeout would wait for data before peeking
    try:
        data = sock.recv(1, socket.MSG_PEEK)
    except BlockingIOError:
        return "open"
    except ConnectionResetError:
        return "reset"
    except OSError:
        return "closed"
    finally:
        try:
            sock.settimeout(timeout)
        except OSError:
            pass
    return "answered" if data else "closed"


def states(socks: list[socket.socket]) -> dict[str, int]:
    out: dict[str, int] = {}
    for sock in socks:
        s = peer_state(sock)
        out[s] = out.get(s, 0) + 1
    return out


def close_all(socks: list[socket.socket]) -> None:
    for sock in socks:
        try:
            sock.close()
        except OSError:
            pass
    socks.clear()


def drip(socks: list[socket.socket], seconds: float, payload_of: Callable[[int], bytes]) -> int:
    """Send one byte per second to every socket (while it accepts), for ``seconds``; returns bytes sent each."""
    sent = 0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for sock in socks:
            try:
                sock.send(payload_of(sent))
            except OSError:
                pass
        sent += 1
        time.sleep(min(1.0, max(0.0, deadline - time.monotonic())))
    return sent


# -- the run ------------------------------------------------------------------------------------------------


@dataclass
class Scenario:
    name: str
    started: float
    ended: float = 0.0
    facts: dict[str, Any] = field(default_factory=dict)
    limits: list[tuple[str, str, str]] = field(default_factory=list)  # (limit, HELD|NOT BOUNDED|BROKEN, evidence)
    probe: dict[str, Any] = field(default_factory=dict)
    server: dict[str, Any] = field(default_factory=dict)


class Runner:
    def __init__(self, workdir: Path, long: bool, probe_p99_ms: float, hold: float, *,
                 announcements: int | None = None, shutdown_wait: float | None = None,
                 fd_exhaustion: bool = True, progress: bool = True, hardened: bool = False,
                 session_flood: bool = True) -> None:
        self.workdir = workdir
        self.long = long
        self.probe_p99_ms = probe_p99_ms
        self.hold = hold
        self.announcements = announcements or (1_000_000 if long else 200_000)
        self.shutdown_wait = shutdown_wait or (20.0 if long else 8.0)
        self.with_fd_exhaustion = fd_exhaustion
        self.with_session_flood = session_flood
        self.progress = progress
        self.hardened = hardened
        self.server = self.new_server(workdir / "main")
        self.scenarios: list[Scenario] = []
        self.problems: list[str] = []

    @property
    def port(self) -> int:
        return self.server.port or 0

    def new_server(self, workdir: Path) -> ServerProcess:
        # ``truecall serve`` ships the guards (truecall.transports.guarded); deadlines are set
        # short enough to act within the hold time (TRUECALL_*_TIMEOUT_S configure them).
        hold = max(2.0, self.hold)
        env = {"TRUECALL_HEAD_TIMEOUT_S": str(hold / 3), "TRUECALL_BODY_TIMEOUT_S": str(hold / 2),
               "TRUECALL_SHUTDOWN_TIMEOUT_S": "2"}
        return ServerProcess(workdir, app=CHURN_APP, http=True, env=env)

    def modern_call(self, name: str, arguments: dict[str, Any], timeout: float = 10.0) -> dict[str, Any]:
        body = orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                             "params": {"name": name, "arguments": arguments, "_meta": modern_meta()}})
        with RawHttp(self.port, timeout=timeout) as conn:
            resp = conn.request("POST", "/mcp", [("Content-Type", "application/json"), ("Accept", "application/json"),
                                                 ("MCP-Protocol-Version", MODERN), ("Mcp-Method", "tools/call"),
                                                 ("Mcp-Name", name)], body)
        return orjson.loads(resp.body).get("result", {}).get("structuredContent") or {}

    def scenario(self, name: str) -> Scenario:
        if self.progress:
            print(f"[slow_peers] {name} ...", flush=True)
        sc = Scenario(name, time.monotonic())
        sc.server["before"] = str(self.server.stats())
        self.scenarios.append(sc)
        return sc

    def close(self, sc: Scenario) -> None:
        sc.ended = time.monotonic()
        sc.server["after"] = str(self.server.stats())
        sc.probe = self.probe.window(sc.started, sc.ended)
        call = sc.probe["call"]
        if call["failures"] or sc.probe["fresh"]["failures"]:
            self.problems.append(f"{sc.name}: the normal client failed {call['failures']} calls / "
                                 f"{sc.probe['fresh']['failures']} fresh connections: "
                                 f"{(call['failure_examples'] + sc.probe['fresh']['failure_examples'])[:2]}")
        if call["p99_ms"] is not None and call["p99_ms"] > self.probe_p99_ms:
            self.problems.append(f"{sc.name}: the normal client's p99 was {call['p99_ms']} ms "
                                 f"(bound {self.probe_p99_ms} ms)")
        if not self.server.alive():
            self.problems.append(f"{sc.name}: the server died")

    def run(self) -> None:
        self.server.start()
        self.sampler = Sampler(self.server.pid, 0.2)
        self.sampler.start()
        self.probe = Probe(self.port)
        self.probe.start()
        try:
            self.baseline()
            self.slow_body()
            self.slow_headers()
            self.idle()
            self.oversized_headers()
            self.sse_never_read()
        finally:
            for stop in (self.probe.stop, self.sampler.stop, self.server.stop):
                try:
                    stop()
                except Exception as exc:  # keep stopping the rest, the server above all
                    print(f"[slow_peers] while stopping: {exc!r}", flush=True)
        if self.with_fd_exhaustion:
            self.fd_exhaustion()
        if self.with_session_flood:
            self.session_flood()
        self.shutdown_with_open_streams()

    # scenarios --------------------------------------------------------------------------------------------

    def baseline(self) -> None:
        sc = self.scenario("baseline")
        time.sleep(3.0 if not self.long else 10.0)
        self.close(sc)

    def slow_body(self) -> None:
        sc = self.scenario("slow_body")
        n = 50
        fds0 = self.server.stats().fds
        socks = []
        for _ in range(n):
            sock = open_socket(self.port)
            sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                         b"Accept: application/json\r\nMCP-Protocol-Version: 2026-07-28\r\nContent-Length: 1000\r\n\r\n")
            socks.append(sock)
        sent = drip(socks, self.hold, lambda i: b" ")
        st = states(socks)
        fds_held = self.server.stats().fds - fds0
        sc.facts = {"peers": n, "seconds": self.hold, "bytes_sent_each": sent, "body_declared": 1000,
                    "peer_states": st, "server_fds_held": fds_held}
        bounded = st.get("open", 0) < n // 2
        sc.limits.append(("request body read timeout", "HELD" if bounded else "NOT BOUNDED",
                          f"{st.get('open', 0)}/{n} peers still open after {self.hold:.0f} s at 1 byte/s "
                          f"({sent} of 1000 bytes sent); the server holds {fds_held} descriptors for them"))
        close_all(socks)
        time.sleep(1.0)
        self.close(sc)
        self.released(sc, fds0, "slow body peers")

    def slow_headers(self) -> None:
        sc = self.scenario("slow_headers")
        n = 50
        fds0 = self.server.stats().fds
        socks = []
        for _ in range(n):
            sock = open_socket(self.port)
            sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
            socks.append(sock)
        sent = drip(socks, self.hold, lambda i: b"a")
        st = states(socks)
        fds_held = self.server.stats().fds - fds0
        sc.facts = {"peers": n, "seconds": self.hold, "header_bytes_sent_each": sent, "peer_states": st,
                    "server_fds_held": fds_held}
        bounded = st.get("open", 0) < n // 2
        sc.limits.append(("request header timeout (slowloris)", "HELD" if bounded else "NOT BOUNDED",
                          f"{st.get('open', 0)}/{n} peers still open after {self.hold:.0f} s sending one header "
                          f"byte per second; the server holds {fds_held} descriptors for them"))
        close_all(socks)
        time.sleep(1.0)
        self.close(sc)
        self.released(sc, fds0, "slow header peers")

    def idle(self) -> None:
        sc = self.scenario("idle")
        n = 200
        fds0 = self.server.stats().fds
        silent = [open_socket(self.port) for _ in range(n)]
        after_one = []
        for _ in range(n):
            conn = RawHttp(self.port, timeout=5.0)
            resp = conn.request("GET", "/healthz")
            assert resp.status == 200
            assert conn.sock is not None
            after_one.append(conn.sock)
            conn.sock = None  # keep the socket, forget the client
        fds_peak = self.server.stats().fds - fds0
        wait = max(self.hold, 6.5)  # past uvicorn's 5 s keep-alive timeout
        time.sleep(wait)
        st_silent, st_after = states(silent), states(after_one)
        fds_left = self.server.stats().fds - fds0
        sc.facts = {"silent_peers": n, "peers_idle_after_one_answer": n, "seconds": wait,
                    "silent_states": st_silent, "after_one_states": st_after,
                    "server_fds_with_all_open": fds_peak, "server_fds_after_wait": fds_left}
        closed_after = st_after.get("closed", 0) + st_after.get("reset", 0)
        sc.limits.append(("keep-alive idle timeout (after a response, 5 s)",
                          "HELD" if closed_after == n else "BROKEN",
                          f"{closed_after}/{n} idle keep-alive connections closed by the server within {wait:.0f} s"))
        open_silent = st_silent.get("open", 0)
        sc.limits.append(("idle timeout before the first request", "HELD" if open_silent < n // 2 else "NOT BOUNDED",
                          f"{open_silent}/{n} connections that never sent a byte still open after {wait:.0f} s; "
                          f"{fds_left} server descriptors still held for them"))
        close_all(silent)
        close_all(after_one)
        time.sleep(1.0)
        self.close(sc)
        self.released(sc, fds0, "idle peers")

    def oversized_headers(self) -> None:
        sc = self.scenario("oversized_headers")
        rss0 = self.server.stats().rss_kb
        hwm0 = _hwm_kb(self.server.pid)
        results = {}
        body = orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                             "params": {"name": "quick", "arguments": {}, "_meta": modern_meta()}})
        base = [("Content-Type", "application/json"), ("Accept", "application/json"),
                ("MCP-Protocol-Version", MODERN), ("Mcp-Method", "tools/call"), ("Mcp-Name", "quick")]
        variants = [("one 64 KiB header", [("X-Big", "a" * 65536)]),
                    ("one 1 MiB header", [("X-Big", "a" * (1 << 20))]),
                    ("one 8 MiB header", [("X-Big", "a" * (8 << 20))]),
                    ("10,000 headers", [(f"X-H{i}", "v") for i in range(10_000)])]
        if self.long:
            variants.append(("one 64 MiB header", [("X-Big", "a" * (64 << 20))]))
        for label, extra in variants:
            started = time.monotonic()
            try:
                with RawHttp(self.port, timeout=30.0) as conn:
                    resp = conn.request("POST", "/mcp", base + extra, body)
                results[label] = f"HTTP {resp.status} in {time.monotonic() - started:.2f} s"
            except (OSError, ConnectionError, HttpProtocolViolation) as exc:
                results[label] = f"{type(exc).__name__}: {exc}"
        rss_peak = max(self.sampler.max_rss_kb(), _hwm_kb(self.server.pid))
        sc.facts = {"answers": results, "rss_before_mib": round(rss0 / 1024, 1),
                    "peak_rss_before_mib (VmHWM)": round(hwm0 / 1024, 1),
                    "rss_peak_mib": round(rss_peak / 1024, 1),
                    "rss_after_mib": round(self.server.stats().rss_kb / 1024, 1)}
        accepted_big = [k for k, v in results.items() if v.startswith("HTTP 200") and "MiB" in k]
        sc.limits.append(("request header size limit", "NOT BOUNDED" if accepted_big else "HELD",
                          "; ".join(f"{k}: {v}" for k, v in results.items())
                          + f"; server RSS {rss0 / 1024:.0f} -> peak {rss_peak / 1024:.0f} MiB"))
        self.close(sc)

    def sse_never_read(self) -> None:
        sc = self.scenario("sse_never_read")
        per_kind = 10
        count = self.announcements
        fds0 = self.server.stats().fds
        listeners0 = self.modern_call("churning", {}).get("listeners")
        stuck: list[socket.socket] = []
        # handshake era: initialize, initialized, then a GET stream that is never read
        for i in range(per_kind):
            with RawHttp(self.port, timeout=5.0) as conn:
                resp = conn.request("POST", "/mcp", [("Content-Type", "application/json"),
                                                     ("Accept", "application/json, text/event-stream")],
                                    orjson.dumps({"jsonrpc": "2.0", "id": i, "method": "initialize",
                                                  "params": {"protocolVersion": LEGACY, "capabilities": {},
                                                             "clientInfo": {"name": "stuck", "version": "1"}}}))
                sid = resp.headers["mcp-session-id"]
                conn.request("POST", "/mcp", [("Content-Type", "application/json"),
                                              ("Accept", "application/json, text/event-stream"),
                                              ("Mcp-Session-Id", sid), ("MCP-Protocol-Version", LEGACY)],
                             b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
            sock = open_socket(self.port, rcvbuf=4096)
            sock.sendall(f"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n"
                         f"Mcp-Session-Id: {sid}\r\nMCP-Protocol-Version: {LEGACY}\r\n\r\n".encode())
            stuck.append(sock)
        # 2026-07-28: subscriptions/listen that is never read
        for i in range(per_kind):
            body = orjson.dumps({"jsonrpc": "2.0", "id": f"listen-{i}", "method": "subscriptions/listen",
                                 "params": {"_meta": modern_meta(), "notifications": {
                                     "toolsListChanged": True, "promptsListChanged": True,
                                     "resourcesListChanged": True}}})
            sock = open_socket(self.port, rcvbuf=4096)
            sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                         b"Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n"
                         b"Mcp-Method: subscriptions/listen\r\nContent-Length: " + str(len(body)).encode()
                         + b"\r\n\r\n" + body)
            stuck.append(sock)
        # one listener that does read
        reader = GoodListener(self.port)
        reader.start()
        time.sleep(0.5)
        listeners_open = self.modern_call("churning", {}).get("listeners")
        rss_before = self.server.stats().rss_kb
        started = time.monotonic()
        self.modern_call("churn", {"count": count, "burst": 500, "pause": 0.002})
        deadline = time.monotonic() + (600 if self.long else 120)
        while time.monotonic() < deadline:
            time.sleep(0.5)
            if self.modern_call("churning", {}).get("running") == 0:
                break
        churn_s = time.monotonic() - started
        window_peak = max((s.rss_kb for t, s in self.sampler.samples if t >= started), default=rss_before)
        rss_end = self.server.stats().rss_kb
        fds_held = self.server.stats().fds - fds0
        st = states(stuck)
        time.sleep(0.5)
        reader.stop()
        close_all(stuck)
        # released? the streams of peers that left must end
        released_at = None
        t0 = time.monotonic()
        while time.monotonic() - t0 < 15:
            if self.modern_call("churning", {}).get("listeners") == listeners0:
                released_at = time.monotonic() - t0
                break
            time.sleep(0.25)
        time.sleep(0.5)
        fds_after = self.server.stats().fds - fds0
        sc.facts = {"stuck_streams": {"legacy_get": per_kind, "listen": per_kind}, "announcements": count,
                    "churn_seconds": round(churn_s, 1), "listeners_while_open": listeners_open,
                    "stuck_peer_states": st, "good_reader_notifications": reader.received,
                    "rss_before_mib": round(rss_before / 1024, 1), "rss_peak_mib": round(window_peak / 1024, 1),
                    "rss_end_mib": round(rss_end / 1024, 1), "server_fds_held": fds_held,
                    "listeners_released_after_s": None if released_at is None else round(released_at, 2),
                    "server_fds_after_release": fds_after}
        growth = (window_peak - rss_before) / 1024
        sc.limits.append(("memory per stream that is never read", "HELD" if growth < 64 else "BROKEN",
                          f"{2 * per_kind} stuck streams, {count} announcements in {churn_s:.1f} s: server RSS "
                          f"{rss_before / 1024:.0f} -> peak {window_peak / 1024:.0f} MiB (+{growth:.1f} MiB); "
                          f"a reading listener got {reader.received} notifications"))
        sc.limits.append(("streams of departed peers released", "HELD" if released_at is not None else "BROKEN",
                          f"listeners back to {listeners0} {released_at:.2f} s after the peers closed"
                          if released_at is not None else "listeners still registered 15 s after the peers closed"))
        if released_at is None:
            self.problems.append("sse_never_read: stream listeners not released after their peers closed")
        if growth >= 64:
            self.problems.append(f"sse_never_read: RSS grew {growth:.0f} MiB with stuck readers")
        if reader.received == 0:
            self.problems.append("sse_never_read: the reading listener got no notification")
        self.close(sc)
        self.released(sc, fds0, "stuck stream peers")

    def released(self, sc: Scenario, fds0: int, what: str) -> None:
        deadline = time.monotonic() + 10
        fds = self.server.stats().fds
        while fds > fds0 + 2 and time.monotonic() < deadline:
            time.sleep(0.25)
            fds = self.server.stats().fds
        sc.facts["server_fds_after_peers_left"] = f"{fds} (before: {fds0})"
        if fds > fds0 + 2:
            self.problems.append(f"{sc.name}: {fds - fds0} descriptors still held after the {what} left")

    def fd_exhaustion(self) -> None:
        """A server limited to 256 descriptors and 300 peers that never send anything."""
        sc = Scenario("fd_exhaustion", time.monotonic())
        self.scenarios.append(sc)
        limited = self.new_server(self.workdir / "limited")
        limited.preexec = lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))
        limited.start()
        socks: list[socket.socket] = []
        try:
            base_fds = limited.stats().fds
            for _ in range(300):
                try:
                    socks.append(open_socket(limited.port or 0))
                except OSError:
                    break
            def try_new_clients() -> list[str]:
                out = []
                for _ in range(3):
                    started = time.monotonic()
                    try:
                        with RawHttp(limited.port or 0, timeout=3.0) as conn:
                            resp = conn.request("GET", "/healthz")
                        out.append(f"HTTP {resp.status} in {time.monotonic() - started:.2f} s")
                    except (OSError, ConnectionError, HttpProtocolViolation) as exc:
                        out.append(f"{type(exc).__name__} after {time.monotonic() - started:.2f} s")
                return out

            time.sleep(1.0)
            at_once = try_new_clients()
            time.sleep(max(0.0, self.hold - 1.0))
            results = try_new_clients()  # the silent peers are still connected (unless the server dropped them)
            held = limited.stats().fds
            served_while_full = sum(r.startswith("HTTP 200") for r in results)
            peer_states_full = states(socks)
            close_all(socks)
            time.sleep(1.5)
            try:
                with RawHttp(limited.port or 0, timeout=3.0) as conn:
                    recovered = f"HTTP {conn.request('GET', '/healthz').status}"
            except (OSError, ConnectionError, HttpProtocolViolation) as exc:
                recovered = f"{type(exc).__name__}"
            log = limited.stderr()
            emfile = log.count("Too many open files")
            sc.facts = {"server_fd_limit": 256, "idle_peers_connected": 300,
                        "server_fds_idle": base_fds, "server_fds_full": held,
                        "new_clients_after_1s": at_once, f"new_clients_after_{self.hold:.0f}s": results,
                        "peer_states": peer_states_full, "after_peers_left": recovered,
                        "EMFILE_log_lines": emfile}
            sc.limits.append(("connection limit (idle peers vs new clients)",
                              "HELD" if served_while_full == len(results) else "NOT BOUNDED",
                              f"300 silent peers on a 256-descriptor server: new clients after 1 s: {at_once}; "
                              f"after {self.hold:.0f} s with the peers still connected: {results}; after the "
                              f"peers left: {recovered}"))
            if not recovered.startswith("HTTP 200"):
                self.problems.append(f"fd_exhaustion: the server did not recover after the peers left ({recovered})")
            if not limited.alive():
                self.problems.append("fd_exhaustion: the server died")
        finally:
            close_all(socks)
            limited.stop()
        sc.ended = time.monotonic()

    def session_flood(self) -> None:
        """One principal opens handshake-era sessions until the server refuses: can others still start one?"""
        import concurrent.futures

        sc = Scenario("session_flood", time.monotonic())
        self.scenarios.append(sc)
        if self.progress:
            print("[slow_peers] session_flood ...", flush=True)
        desk = ServerProcess(self.workdir / "sessions", http=True,
                             launcher=self.new_server(self.workdir / "x").launcher)
        desk.start()
        refused_at = None
        try:
            def initialize(conn: RawHttp, token: str, n: int) -> int:
                resp = conn.request("POST", "/mcp", [("Content-Type", "application/json"),
                                                     ("Accept", "application/json, text/event-stream"),
                                                     ("Authorization", f"Bearer {token}")],
                                    orjson.dumps({"jsonrpc": "2.0", "id": n, "method": "initialize",
                                                  "params": {"protocolVersion": LEGACY, "capabilities": {},
                                                             "clientInfo": {"name": "flood", "version": "1"}}}))
                return resp.status

            rss0 = desk.stats().rss_kb
            started = time.monotonic()
            opened = 0
            limit = 12_000

            def flood(worker: int) -> int:
                nonlocal refused_at
                count = 0
                with RawHttp(desk.port or 0, timeout=10.0) as conn:
                    for n in range(worker, limit, 4):
                        if refused_at is not None:
                            break
                        status = initialize(conn, "demo-acme-reader", n)
                        if status == 200:
                            count += 1
                        elif refused_at is None:
                            refused_at = (n, status)
                return count

            with concurrent.futures.ThreadPoolExecutor(4) as pool:
                opened = sum(pool.map(flood, range(4)))
            took = time.monotonic() - started
            with RawHttp(desk.port or 0, timeout=10.0) as conn:
                other = initialize(conn, "demo-globex-reader", 1)
                same_tenant_other_user = initialize(conn, "demo-acme-operator", 2)
            sc.facts = {"sessions_opened_by_one_principal": opened, "seconds": round(took, 1),
                        "first_refusal": refused_at, "another_tenant_initialize": f"HTTP {other}",
                        "another_user_initialize": f"HTTP {same_tenant_other_user}",
                        "rss_before_mib": round(rss0 / 1024, 1), "rss_after_mib": round(desk.stats().rss_kb / 1024, 1)}
            sc.limits.append(("handshake-era sessions per principal",
                              "HELD" if other == 200 and same_tenant_other_user == 200 else "NOT BOUNDED",
                              f"one principal (demo-acme-reader) opened {opened} sessions in {took:.1f} s, then got "
                              f"{refused_at[1] if refused_at else '-'}; afterwards initialize from another tenant: "
                              f"HTTP {other}, another user: HTTP {same_tenant_other_user} (sessions idle out after 1 h)"))
        finally:
            desk.stop()
        sc.ended = time.monotonic()

    def shutdown_with_open_streams(self) -> None:
        """SIGTERM while a peer holds a stream (or a body) open: does the process stop?"""
        sc = Scenario("shutdown", time.monotonic())
        self.scenarios.append(sc)
        wait = self.shutdown_wait
        outcomes = {}
        for kind in ("no open stream", "subscriptions/listen stream", "slow request body"):
            server = self.new_server(self.workdir / f"shutdown-{len(outcomes)}")
            server.start()
            socks = []
            try:
                port = server.port or 0
                if kind == "subscriptions/listen stream":
                    body = orjson.dumps({"jsonrpc": "2.0", "id": "l", "method": "subscriptions/listen",
                                         "params": {"_meta": modern_meta(),
                                                    "notifications": {"toolsListChanged": True}}})
                    sock = open_socket(port)
                    sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                                 b"Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n"
                                 b"Mcp-Method: subscriptions/listen\r\nContent-Length: " + str(len(body)).encode()
                                 + b"\r\n\r\n" + body)
                    socks.append(sock)
                elif kind == "slow request body":
                    sock = open_socket(port)
                    sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\nab")
                    socks.append(sock)
                time.sleep(0.5)
                started = time.monotonic()
                assert server.proc is not None
                server.proc.terminate()  # SIGTERM, by PID
                try:
                    code = server.proc.wait(timeout=wait)
                    outcomes[kind] = f"exited ({code}) {time.monotonic() - started:.2f} s after SIGTERM"
                except Exception:
                    outcomes[kind] = f"STILL RUNNING {wait:.0f} s after SIGTERM"
            finally:
                close_all(socks)
                server.stop(timeout=5)
        sc.facts = {"outcomes": outcomes}
        hung = [k for k, v in outcomes.items() if v.startswith("STILL")]
        sc.limits.append(("graceful shutdown bounded in time", "NOT BOUNDED" if hung else "HELD",
                          "; ".join(f"{k}: {v}" for k, v in outcomes.items())))
        sc.ended = time.monotonic()

    # output -------------------------------------------------------------------------------------------------

    def summary(self, strict: bool) -> dict[str, Any]:
        not_bounded = [(sc.name, limit, evidence) for sc in self.scenarios for limit, verdict, evidence in sc.limits
                       if verdict != "HELD"]
        problems = list(self.problems)
        broken = [f"{name}: {limit} BROKEN" for sc in self.scenarios for limit, verdict, _ in sc.limits
                  if verdict == "BROKEN" for name in [sc.name]]
        problems += [b for b in broken if b not in problems]
        if strict:
            problems += [f"{name}: {limit} not bounded" for name, limit, _ in not_bounded]
        return {"scenarios": [{"name": sc.name, "seconds": round((sc.ended or time.monotonic()) - sc.started, 1),
                               "facts": sc.facts, "limits": sc.limits, "probe": sc.probe, "server": sc.server}
                              for sc in self.scenarios],
                "not_bounded": not_bounded, "problems": problems}


def _hwm_kb(pid: int) -> int:
    """The process's peak RSS so far (VmHWM)."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


class GoodListener(threading.Thread):
    """A ``subscriptions/listen`` client that reads everything (to show notifications keep flowing)."""

    def __init__(self, port: int) -> None:
        super().__init__(daemon=True, name="good-listener")
        self.port = port
        self.received = 0
        self._halt = threading.Event()

    def run(self) -> None:
        body = orjson.dumps({"jsonrpc": "2.0", "id": "good", "method": "subscriptions/listen",
                             "params": {"_meta": modern_meta(), "notifications": {"toolsListChanged": True}}})
        sock = open_socket(self.port)
        sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                     b"Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n"
                     b"Mcp-Method: subscriptions/listen\r\nContent-Length: " + str(len(body)).encode()
                     + b"\r\n\r\n" + body)
        sock.settimeout(0.5)
        buf = b""
        while not self._halt.is_set():
            try:
                chunk = sock.recv(65536)
            except socket.timeout:
                continue
            except OSError:
                break
            if not chunk:
                break
            buf += chunk
            self.received += buf.count(b"notifications/tools/list_changed")
            buf = buf[-64:]
        sock.close()

    def stop(self) -> None:
        self._halt.set()
        self.join(5)


def print_summary(s: dict[str, Any]) -> None:
    for sc in s["scenarios"]:
        print(f"\n== {sc['name']} ({sc['seconds']} s) ==")
        for key, value in sc["facts"].items():
            print(f"  {key}: {value}")
        for limit, verdict, evidence in sc["limits"]:
            print(f"  [{verdict}] {limit}: {evidence}")
        if sc["probe"]:
            call, fresh = sc["probe"]["call"], sc["probe"]["fresh"]
            print(f"  normal client: {call['n']} calls, {call['failures']} failed, p50 {call['p50_ms']} ms, "
                  f"p99 {call['p99_ms']} ms, max {call['max_ms']} ms; fresh connections {fresh['n']}, "
                  f"{fresh['failures']} failed, p99 {fresh['p99_ms']} ms")
        if sc["server"]:
            print(f"  server: before [{sc['server'].get('before')}] after [{sc['server'].get('after')}]")
    print("\nNOT BOUNDED by the current serve configuration:" if s["not_bounded"] else "\nevery limit held")
    for name, limit, evidence in s["not_bounded"]:
        print(f"  - {name}: {limit}: {evidence}")
    print("PROBLEMS: " + "; ".join(s["problems"]) if s["problems"] else "OK: the normal client was served throughout")


def _exit_on_sigterm() -> None:
    """SIGTERM unwinds normally, so every server this command started is stopped by its PID."""
    import signal

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))


def main(argv: list[str] | None = None) -> int:
    _exit_on_sigterm()
    import faulthandler
    import signal

    faulthandler.register(signal.SIGUSR1)  # kill -USR1 <pid> prints where every thread is
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--long", action="store_true", help="hold hostile peers 60 s, 1,000,000 announcements")
    parser.add_argument("--hold", type=float, default=None, help="seconds hostile peers are held (6 / 60)")
    parser.add_argument("--probe-p99-ms", type=float, default=500.0)
    parser.add_argument("--strict", action="store_true", help="unbounded limits fail the run")
    parser.add_argument("--hardened", action="store_true",
                        help="serve through stress/hardened_serve.py (the suggested uvicorn configuration)")
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="truecall-slow-peers-"))
    hold = args.hold if args.hold is not None else (60.0 if args.long else 6.0)
    runner = Runner(workdir, args.long, args.probe_p99_ms, hold, hardened=args.hardened)
    runner.run()
    summary = runner.summary(args.strict)
    print_summary(summary)
    if args.json:
        args.json.write_bytes(orjson.dumps(summary, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS))
    return 1 if summary["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())

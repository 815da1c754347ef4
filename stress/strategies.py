"""Fuzz cases for the real server: JSON-RPC/MCP messages, valid, near-valid and hostile.

One grammar, two sources of randomness:

- :func:`cases` / :func:`batches` are Hypothesis strategies (``st.composite``) for the CI
  slice: every choice is a Hypothesis draw, so failures print a reproducible example;
- :class:`CaseGenerator` drives the same grammar from a seeded :class:`random.Random`,
  fast enough for the 200,000-case long run.

A :class:`Case` is the bytes of one stdio line (which may contain further newlines when
it is raw garbage) or one HTTP request body, plus what HTTP needs (method, path,
headers, framing).  The :class:`Pool` carries values learned from the server
(``requestState`` tokens, task ids, handshake-era session ids, ids in flight) so that
near-valid retries reach the code behind the first check.

Bulk content (a 100 KiB string, a 5 MiB body, 100,000 nested arrays) is built from a
drawn size and seed, never drawn byte by byte: Hypothesis stays fast and shrinkable.
"""

from __future__ import annotations

import base64
import collections
import itertools
import json
import random
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import orjson
from hypothesis import strategies as st

__all__ = ["Case", "Pool", "Drawer", "RandomDrawer", "HypothesisDrawer", "CaseGenerator", "case", "batch", "cases",
           "batches", "dumps", "MAX_BYTES"]

MODERN = "2026-07-28"
LEGACY = "2025-11-25"
META_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CAPS = "io.modelcontextprotocol/clientCapabilities"
META_CLIENT = "io.modelcontextprotocol/clientInfo"
META_LOG = "io.modelcontextprotocol/logLevel"
TASKS_EXT = "io.modelcontextprotocol/tasks"
OPERATOR, READER, GLOBEX = "demo-acme-operator", "demo-acme-reader", "demo-globex-reader"

#: The server's message size limit (``Limits.max_bytes``); bulk cases stay clear of the edge.
MAX_BYTES = 4 * 1024 * 1024

NAME_FIELD = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri",
              "tasks/get": "taskId", "tasks/update": "taskId", "tasks/cancel": "taskId"}


# -- cases and the pool ----------------------------------------------------------------------


@dataclass
class Case:
    label: str
    body: bytes
    method: str = "POST"                       # HTTP only from here on
    path: str = "/mcp"
    headers: list[tuple[Any, Any]] = field(default_factory=list)
    framing: str = "length"                    # length | chunked | short | long | raw
    chunks: list[int] | None = None
    stream: bool = False                       # an SSE that stays open (listen, GET): peek, then close
    session: str | None = None                 # the handshake-era session it uses (answers go there)
    expect_session: bool = False               # an initialize whose session id the pool should learn
    delete_session: str | None = None          # a DELETE that ends this session

    def __repr__(self) -> str:
        return f"Case({self.label!r}, {self.method} {self.path}, {self.body[:160]!r}{'…' if len(self.body) > 160 else ''})"


class Pool:
    """What the runner learned from the server, for the generator to reuse (thread-safe enough)."""

    def __init__(self) -> None:
        self.request_states: collections.deque[tuple[str, dict[str, Any], str]] = collections.deque(maxlen=64)
        self.task_ids: collections.deque[str] = collections.deque(maxlen=64)
        self.sessions: collections.deque[str] = collections.deque(maxlen=32)
        self.dead_sessions: collections.deque[str] = collections.deque(maxlen=32)
        #: the version each session negotiated (its requests must name it in MCP-Protocol-Version)
        self.session_versions: dict[str, str] = {}
        self.recent_ids: collections.deque[Any] = collections.deque(maxlen=64)
        self.open_listens: collections.deque[Any] = collections.deque(maxlen=64)
        self._counter = itertools.count(1)
        self._lock = threading.Lock()

    def next_id(self) -> int:
        with self._lock:
            return next(self._counter)

    @staticmethod
    def snapshot(items: collections.deque[Any]) -> list[Any]:
        return list(items)


# -- randomness: one interface, two backends -----------------------------------------------------

ODD_PIECES = [
    "\u0000", "\u202e", "\u200b", "\u200d", "\ufeff", "\u2028", "\u2029", "\U0001F4A9", "e\u0301", "\u00e9",
    "\u0130", "\u00df", "\uffff", "\U0010FFFF", "\x7f", "\x1b[31m", "\t", "\r", "\n", "\\", '"', "/", "%00",
    "${jndi:x}", "<script>", "'; DROP TABLE incidents;--", "\u4e2d\u6587", "\u05e2\u05d1\u05e8\u05d9\u05ea",
    "\u0085", "\u00a0", "\ud83d\ude00", " ", "../..", "{{7*7}}", "%s%s%n", "\u0301\u0301\u0301", "\ufffd",
]
ASCII = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:/ "


class Drawer:
    """The choices the grammar makes."""

    def int(self, lo: int, hi: int) -> int:
        raise NotImplementedError

    def bool(self, p: float = 0.5) -> bool:
        return self.int(0, 999) < int(p * 1000)

    def choice(self, seq: Sequence[Any]) -> Any:
        return seq[self.int(0, len(seq) - 1)]

    def weighted(self, options: Sequence[tuple[Any, int]]) -> Any:
        options = [(v, w) for v, w in options if w > 0]
        total = sum(w for _, w in options)
        pick = self.int(0, total - 1)
        for value, weight in options:
            if pick < weight:
                return value
            pick -= weight
        return options[-1][0]

    def text(self, max_size: int = 24) -> str:
        raise NotImplementedError

    def seed(self) -> int:
        return self.int(0, 2**32 - 1)

    def pick(self, seq: Sequence[Any], fallback: Any = None) -> Any:
        """An element of a list whose length is not the grammar's (server-learned values):
        always one draw from a fixed range, so the draws never depend on outside state."""
        i = self.int(0, 1023)
        return seq[i % len(seq)] if seq else fallback

    def position(self, length: int) -> int:
        """A position in ``[0, length)``, drawn as a fraction (lengths vary with outside state)."""
        return (self.int(0, 999) * max(length, 1)) // 1000


class RandomDrawer(Drawer):
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def int(self, lo: int, hi: int) -> int:
        return self.rng.randint(lo, hi)

    def bool(self, p: float = 0.5) -> bool:
        return self.rng.random() < p

    def choice(self, seq: Sequence[Any]) -> Any:
        return self.rng.choice(seq)

    def weighted(self, options: Sequence[tuple[Any, int]]) -> Any:
        options = [(v, w) for v, w in options if w > 0]
        return self.rng.choices([v for v, _ in options], [w for _, w in options])[0]

    def text(self, max_size: int = 24) -> str:
        rng = self.rng
        n = rng.randint(0, max_size)
        if rng.random() < 0.5:
            return "".join(rng.choice(ASCII) for _ in range(n))
        out = []
        for _ in range(n):
            r = rng.random()
            if r < 0.35:
                out.append(rng.choice(ODD_PIECES))
            elif r < 0.5:
                out.append(chr(rng.randint(0x80, 0xD7FF)))
            elif r < 0.55:
                out.append(chr(rng.randint(0xE000, 0x10FFFF)))
            else:
                out.append(rng.choice(ASCII))
        return "".join(out)[: max(max_size, 1) * 4]

    def seed(self) -> int:
        return self.rng.getrandbits(32)


class HypothesisDrawer(Drawer):
    """Every choice is a Hypothesis draw (so it shrinks and replays)."""

    _ints: dict[tuple[int, int], Any] = {}
    _texts: dict[int, Any] = {}

    def __init__(self, draw: Callable[[Any], Any]) -> None:
        self.draw = draw

    def int(self, lo: int, hi: int) -> int:
        strategy = self._ints.get((lo, hi))
        if strategy is None:
            strategy = self._ints[(lo, hi)] = st.integers(lo, hi)
        return self.draw(strategy)

    def text(self, max_size: int = 24) -> str:
        strategy = self._texts.get(max_size)
        if strategy is None:
            strategy = self._texts[max_size] = st.one_of(
                st.text(alphabet=ASCII, max_size=max_size),
                st.text(max_size=max_size),  # all of Unicode but lone surrogates, edge cases first
                st.lists(st.sampled_from(ODD_PIECES), max_size=max(1, max_size // 3)).map("".join),
            )
        return self.draw(strategy)


# -- serialisation -------------------------------------------------------------------------------


def dumps(value: Any, d: Drawer | None = None) -> bytes:
    """JSON bytes; integers beyond 64 bits, NaN and lone surrogates go through ``json``."""
    try:
        return orjson.dumps(value)
    except (TypeError, orjson.JSONEncodeError):
        ascii_only = d.bool(0.5) if d is not None else True
        return json.dumps(value, ensure_ascii=ascii_only, allow_nan=True,
                          separators=(",", ":")).encode("utf-8", "surrogatepass")


# -- the grammar ---------------------------------------------------------------------------------

MODERN_METHODS = [
    ("tools/call", 30), ("tools/list", 9), ("server/discover", 5), ("resources/read", 8), ("resources/list", 3),
    ("resources/templates/list", 2), ("prompts/list", 2), ("prompts/get", 5), ("completion/complete", 4),
    ("subscriptions/listen", 4), ("tasks/get", 4), ("tasks/update", 3), ("tasks/cancel", 3),
]
LEGACY_METHODS = [
    ("initialize", 6), ("ping", 5), ("tools/list", 4), ("tools/call", 8), ("logging/setLevel", 2),
    ("resources/subscribe", 2), ("resources/unsubscribe", 1), ("resources/read", 2), ("prompts/get", 1),
    ("tasks/list", 2), ("tasks/get", 1), ("tasks/cancel", 1), ("tasks/result", 1), ("completion/complete", 1),
]
TOOLS = [("incident.search", 14), ("incident.escalate", 5), ("incident.reconcile", 2), ("incident.handle", 2),
         ("nope.unknown", 2)]
SERVICES = ["payments", "checkout", "search", "", "PAYMENTS"]
INCIDENTS = ["INC-1001", "INC-1002", "INC-1003", "INC-2001", "INC-0000"]
URIS = ["incident://acme/INC-1001", "incident://acme/INC-1003", "incident://globex/INC-2001",
        "ticket://acme/T-1", "incident://acme/", "file:///etc/passwd", "incident://acme/INC-1001/../x"]
LOG_LEVELS = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]
EDGE_INTS = [0, -1, 1, 2**31 - 1, 2**31, 2**53, 2**53 + 1, 2**63 - 1, -(2**63), 2**64 - 1, 2**64, -(2**63) - 1,
             10**30, -(10**30), 10**400]
EDGE_FLOATS = [0.0, -0.0, 1.5, 1e308, -1e308, 5e-324, 1e-400, float("nan"), float("inf")]


@dataclass
class Ctx:
    pool: Pool
    transport: str                      # "stdio" | "http"
    batch_ids: list[Any] = field(default_factory=list)


def json_value(d: Drawer, depth: int = 0) -> Any:
    kind = d.weighted([("str", 5), ("int", 3), ("float", 1), ("bool", 1), ("null", 1),
                       ("list", 2 if depth < 3 else 0), ("dict", 2 if depth < 3 else 0)])
    if kind == "str":
        return d.text(16)
    if kind == "int":
        return d.choice(EDGE_INTS) if d.bool(0.3) else d.int(-1000, 1000)
    if kind == "float":
        return d.choice(EDGE_FLOATS)
    if kind == "bool":
        return d.bool()
    if kind == "null":
        return None
    if kind == "list":
        return [json_value(d, depth + 1) for _ in range(d.int(0, 3))]
    return {d.text(8): json_value(d, depth + 1) for _ in range(d.int(0, 3))}


def wrong_type(d: Drawer, avoid: Any = None) -> Any:
    options = [None, True, False, 0, -1, 1.5, "", "x", [], [1], {}, {"a": 1}, d.choice(EDGE_INTS), d.text(8)]
    drawn = [d.choice(options) for _ in range(3)]  # always three draws, whatever ``avoid`` is
    return next((v for v in drawn if type(v) is not type(avoid)), None)


def request_id(d: Drawer, ctx: Ctx) -> Any:
    kind = d.weighted([("fresh", 70), ("fresh_str", 12), ("dup", 6), ("edge_int", 5), ("odd_str", 5), ("empty", 2)])
    if kind == "fresh":
        value: Any = ctx.pool.next_id()
    elif kind == "fresh_str":
        value = f"r-{ctx.pool.next_id()}"
    elif kind == "dup":
        value = d.pick(ctx.batch_ids, None)
        if value is None:
            value = ctx.pool.next_id()
    elif kind == "edge_int":
        value = d.choice([0, -1, 2**31, 2**53 + 1, 2**63 - 1, -(2**63), 2**64 - 1])
    elif kind == "odd_str":
        value = f"{d.text(12)}#{ctx.pool.next_id()}"
    elif kind == "empty":
        value = ""
    else:
        value = ctx.pool.next_id()
    ctx.batch_ids.append(value)
    return value


def client_caps(d: Drawer) -> dict[str, Any]:
    caps: dict[str, Any] = {}
    if d.bool(0.35):
        caps["elicitation"] = d.choice([{}, {"form": {}}, {"url": {}}, {"form": {}, "url": {}}])
    if d.bool(0.15):
        caps["sampling"] = {}
    if d.bool(0.1):
        caps["roots"] = {}
    if d.bool(0.3):
        caps["extensions"] = {TASKS_EXT: {}}
    return caps


def modern_meta(d: Drawer) -> dict[str, Any]:
    meta: dict[str, Any] = {META_VERSION: MODERN, META_CAPS: client_caps(d)}
    if d.bool(0.7):
        meta[META_CLIENT] = {"name": "fuzz", "version": "1"}
    if d.bool(0.1):
        meta[META_LOG] = d.choice(LOG_LEVELS)
    if d.bool(0.1):
        meta["progressToken"] = d.choice([d.int(0, 99), f"p-{d.int(0, 99)}"])
    return meta


def tool_arguments(d: Drawer, tool: str) -> dict[str, Any]:
    if tool == "incident.search":
        args: dict[str, Any] = {"service": d.choice(SERVICES) if d.bool(0.8) else d.text(20)}
        if d.bool(0.3):
            args["includeLinks"] = d.bool()
        return args
    if tool == "incident.escalate":
        return {"incidentId": d.choice(INCIDENTS)}
    if tool == "incident.handle":
        args = {"incidentId": d.choice(INCIDENTS)}
        if d.bool(0.5):
            args["idempotencyKey"] = f"fz-{d.int(0, 50)}"
        return args
    if tool == "incident.reconcile":
        return {} if d.bool(0.6) else {"taskId": d.choice(["t-x", "", "a" * 200])}
    return {"x": json_value(d)}


def params_for(d: Drawer, ctx: Ctx, method: str, modern: bool) -> dict[str, Any] | None:
    pool = ctx.pool
    params: dict[str, Any] = {}
    if method == "tools/call":
        if modern and d.bool(0.3):
            return mrtr_retry(d, pool.snapshot(pool.request_states))
        tool = d.weighted(TOOLS)
        params = {"name": tool, "arguments": tool_arguments(d, tool)}
        if not modern and tool == "incident.handle" and d.bool(0.6):
            params["task"] = {"ttl": d.choice([60000, 0, -5, 10**12])}
    elif method == "resources/read":
        params = {"uri": d.choice(URIS)}
    elif method == "prompts/get":
        params = {"name": d.choice(["incident.triage", "nope"]),
                  "arguments": {"service": d.choice(SERVICES)} if d.bool(0.8) else {}}
    elif method == "completion/complete":
        params = {"ref": d.choice([{"type": "ref/prompt", "name": "incident.triage"},
                                   {"type": "ref/resource", "uri": "incident://acme/{incident_id}"},
                                   {"type": "ref/nope"}]),
                  "argument": {"name": "service", "value": d.choice(["p", "", "ch", d.text(6)])}}
    elif method == "subscriptions/listen":
        wanted: dict[str, Any] = {}
        for flag in ("toolsListChanged", "promptsListChanged", "resourcesListChanged"):
            if d.bool(0.5):
                wanted[flag] = True
        if d.bool(0.3):
            wanted["resourceSubscriptions"] = [d.choice(URIS)]
        if d.bool(0.15):
            wanted["taskIds"] = [d.pick(pool.snapshot(pool.task_ids), "t-none")]
        params = {"notifications": wanted}
    elif method in ("tasks/get", "tasks/cancel", "tasks/result"):
        known, odd = d.pick(pool.snapshot(pool.task_ids), "t-none"), d.text(12)
        params = {"taskId": known if d.bool(0.7) else odd}
    elif method == "tasks/update":
        params = {"taskId": d.pick(pool.snapshot(pool.task_ids), "t-none"),
                  "inputResponses": {"escalation": {"action": "decline"}}}
    elif method == "initialize":
        return {"protocolVersion": d.choice([LEGACY, "2025-06-18", MODERN, "1999-01-01"]),
                "capabilities": client_caps(d) if d.bool(0.8) else {},
                "clientInfo": {"name": "fuzz", "version": "1"}}
    elif method == "logging/setLevel":
        return {"level": d.choice(LOG_LEVELS + ["loud"])}
    elif method in ("resources/subscribe", "resources/unsubscribe"):
        return {"uri": d.choice(URIS)}
    elif method in ("tools/list", "resources/list", "prompts/list", "resources/templates/list", "tasks/list"):
        if d.bool(0.05):
            params["cursor"] = d.text(8)
    elif method in ("ping", "server/discover"):
        pass
    if modern:
        params["_meta"] = modern_meta(d)
        return params
    return params or (None if d.bool(0.5) else {})


def mrtr_retry(d: Drawer, states: list[tuple[str, dict[str, Any], str]]) -> dict[str, Any]:
    """A stateless retry: the original params plus answers and the server's requestState
    (a made-up state when the server has not issued one yet)."""
    name, arguments, token = d.pick(states, ("incident.escalate", {"incidentId": "INC-1001"}, "no-state-yet"))
    answer = d.weighted([
        ({"action": "accept", "content": {"severity": d.choice(["P1", "P2", "P3"]), "reason": "fuzz"}}, 4),
        ({"action": "decline"}, 2), ({"action": "cancel"}, 1),
        ({"action": "accept", "content": {"severity": "P9"}}, 1), ("not-an-object", 1), ({}, 1),
    ])
    tamper = d.weighted([("none", 6), ("flip", 2), ("drop", 1), ("garbage", 1), ("other_args", 1)])
    i = d.position(len(token))
    if tamper == "flip" and token:
        token = token[:i] + ("A" if token[i] != "A" else "B") + token[i + 1:]
    elif tamper == "garbage":
        token = d.choice(["", "x", base64.urlsafe_b64encode(b"\x00" * 40).decode(), d.text(30)])
    params: dict[str, Any] = {"name": name,
                              "arguments": dict(arguments) if tamper != "other_args" else {"incidentId": "INC-1002"},
                              "inputResponses": {"escalation": answer} if d.bool(0.9) else wrong_type(d, {}),
                              "_meta": {META_VERSION: MODERN, META_CAPS: {"elicitation": {}}}}
    if tamper != "drop":
        params["requestState"] = token
    return params


def valid_message(d: Drawer, ctx: Ctx) -> tuple[dict[str, Any], dict[str, Any]]:
    """A well-formed request and what HTTP routing needs to know about it."""
    if ctx.transport == "http":
        modern = d.bool(0.8)
    else:
        modern = d.bool(0.75)
    method = d.weighted(MODERN_METHODS if modern else LEGACY_METHODS)
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id(d, ctx), "method": method}
    params = params_for(d, ctx, method, modern)
    if params is not None:
        message["params"] = params
    return message, {"era": "modern" if modern else "legacy", "method": method}


def http_headers(d: Drawer, ctx: Ctx, message: Any, info: dict[str, Any]) -> tuple[list[tuple[Any, Any]], str | None]:
    """The headers a correct client sends for ``message`` (era, routing, auth, session)."""
    method = info.get("method")
    sse = d.bool(0.7)
    headers: list[tuple[Any, Any]] = [
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream" if sse else "application/json"),
    ]
    token = d.weighted([(OPERATOR, 14), (READER, 3), (GLOBEX, 2)])
    headers.append(("Authorization", f"Bearer {token}"))
    session = None
    roll = d.int(0, 99)
    live = d.pick(ctx.pool.snapshot(ctx.pool.sessions), None)
    dead = d.pick(ctx.pool.snapshot(ctx.pool.dead_sessions), None)
    if info.get("era") == "modern":
        headers.append(("MCP-Protocol-Version", MODERN))
        if isinstance(method, str):
            headers.append(("Mcp-Method", method))
            field_name = NAME_FIELD.get(method)
            params = message.get("params") if isinstance(message, dict) else None
            if field_name and isinstance(params, dict) and isinstance(params.get(field_name), str):
                headers.append(("Mcp-Name", header_value(params[field_name])))
    else:
        if method != "initialize":
            if roll < 85:
                session = live
            elif roll < 95:
                session = dead  # a request after DELETE
            if session is not None:
                headers.append(("Mcp-Session-Id", session))
                headers.append(("MCP-Protocol-Version", ctx.pool.session_versions.get(session, LEGACY)))
    return headers, session


def header_value(value: str) -> str:
    """The spec's encoding: plain visible ASCII as is, anything else as ``=?base64?…?=``."""
    if value and all(0x20 <= ord(c) <= 0x7E for c in value) and value == value.strip() \
            and not (value.startswith("=?base64?") and value.endswith("?=")):
        return value
    return "=?base64?" + base64.b64encode(value.encode("utf-8", "surrogatepass")).decode() + "?="


# -- near-valid: one or two mutations of a valid message ---------------------------------------------

def mutate(d: Drawer, ctx: Ctx, message: dict[str, Any]) -> tuple[dict[str, Any], str]:
    message = json.loads(json.dumps(message))  # a private deep copy (plain JSON)
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    what = d.weighted([
        ("drop_jsonrpc", 2), ("jsonrpc_version", 2), ("drop_method", 2), ("method_type", 2), ("method_odd", 4),
        ("params_type", 3), ("drop_params", 2), ("drop_meta", 4), ("meta_type", 2), ("version_bad", 4),
        ("caps_bad", 3), ("loglevel_bad", 2), ("progress_odd", 2), ("id_bad", 6), ("id_huge", 3),
        ("extra_fields", 2), ("args_wrong", 6), ("args_extra", 2), ("name_odd", 3), ("cursor", 1),
        ("result_and_method", 1), ("id_and_error", 1),
    ])
    if what == "drop_jsonrpc":
        message.pop("jsonrpc", None)
    elif what == "jsonrpc_version":
        message["jsonrpc"] = d.choice(["1.0", "2", 2.0, 2, "2.0 ", None, ""])
    elif what == "drop_method":
        message.pop("method", None)
    elif what == "method_type":
        message["method"] = wrong_type(d, "")
    elif what == "method_odd":
        base = str(message.get("method", ""))
        message["method"] = d.choice([base.upper(), base + "/", "/" + base, base + "\u0000", base.replace("/", "\u2215"),
                                      "", " ", "rpc.discover", "notifications/initialized", "initialize",
                                      "tasks/result", "x" * d.int(1, 300), d.text(20)])
    elif what == "params_type":
        message["params"] = d.choice([[], [1, 2], "params", 5, True])
    elif what == "drop_params":
        message.pop("params", None)
    elif what == "drop_meta" and isinstance(params, dict):
        params.pop("_meta", None)
    elif what == "meta_type" and isinstance(params, dict):
        params["_meta"] = wrong_type(d, {})
    elif what == "version_bad" and isinstance(meta, dict):
        meta[META_VERSION] = d.choice(["1900-01-01", "", " 2026-07-28", "2026-07-28\u0000", LEGACY, "2025-06-18",
                                       2026, None, ["2026-07-28"], "9" * 1000, d.text(10)])
    elif what == "caps_bad" and isinstance(meta, dict):
        if d.bool(0.5):
            meta.pop(META_CAPS, None)
        else:
            meta[META_CAPS] = d.choice([None, [], "all", 1, {"extensions": []}, {"elicitation": "yes"},
                                        {"extensions": {TASKS_EXT: True}}])
    elif what == "loglevel_bad" and isinstance(meta, dict):
        meta[META_LOG] = d.choice(["loud", "", None, 3, "DEBUG", ["debug"]])
    elif what == "progress_odd" and isinstance(meta, dict):
        meta["progressToken"] = d.choice([True, None, 1.5, {"a": 1}, [], 2**63 - 1, d.text(10)])
    elif what == "id_bad":
        message["id"] = d.choice([None, True, False, 1.0, 1.5, -0.0, [], [1], {}, {"id": 1}])
    elif what == "id_huge":
        message["id"] = d.choice([2**64, -(2**63) - 1, 10**30, 10**400])
    elif what == "extra_fields":
        message[d.choice(["extra", "result", "error", "params2", "\u0000"])] = json_value(d)
    elif what == "args_wrong" and isinstance(params, dict):
        arguments = params.get("arguments")
        keys = sorted(arguments) if isinstance(arguments, dict) else []
        flip, key = d.bool(0.6), d.pick(keys, None)
        if key is not None and flip:
            arguments[key] = wrong_type(d, arguments[key])
        else:
            params[d.choice(["arguments", "name", "uri", "taskId", "notifications", "ref", "argument",
                             "inputResponses", "requestState", "protocolVersion", "capabilities"])] = wrong_type(d)
    elif what == "args_extra" and isinstance(params, dict) and isinstance(params.get("arguments"), dict):
        params["arguments"][d.text(10) or "k"] = json_value(d)
    elif what == "name_odd" and isinstance(params, dict):
        params["name" if "name" in params else "uri"] = d.choice(
            ["", " incident.search", "incident.search ", "INCIDENT.SEARCH", "incident.search\u0000", "x" * 5000,
             "../../etc/passwd", d.text(30)])
    elif what == "cursor" and isinstance(params, dict):
        params["cursor"] = d.choice(["", "abc", 5, None])
    elif what == "result_and_method":
        message["result"] = {}
    elif what == "id_and_error":
        message["error"] = {"code": -1, "message": "client error"}
    return message, what


# -- hostile ----------------------------------------------------------------------------------------

def deep_body(d: Drawer, ctx: Ctx) -> tuple[bytes, str]:
    depth = d.choice([62, 63, 64, 65, 66, 200, 1023, 1024, 1025, 5000, 100_000])
    open_, close = d.choice([(b"[", b"]"), (b'{"a":', b"}")])
    nest = open_ * depth + b"1" + close * depth
    where = d.choice(["arguments", "meta", "id", "params", "top"])
    rid = dumps(request_id(d, ctx))
    meta = dumps({META_VERSION: MODERN, META_CAPS: {}})
    if where == "arguments":
        body = (b'{"jsonrpc":"2.0","id":' + rid + b',"method":"tools/call","params":{"name":"incident.search",'
                b'"arguments":{"service":' + nest + b'},"_meta":' + meta + b'}}')
    elif where == "meta":
        body = (b'{"jsonrpc":"2.0","id":' + rid + b',"method":"tools/list","params":{"_meta":{"' +
                META_VERSION.encode() + b'":"' + MODERN.encode() + b'","' + META_CAPS.encode() + b'":' + nest + b'}}}')
    elif where == "id":
        body = b'{"jsonrpc":"2.0","id":' + nest + b',"method":"tools/list"}'
    elif where == "params":
        body = b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":' + nest + b'}}'
    else:
        body = nest
    return body, f"deep:{where}:{depth}"


def big_body(d: Drawer, ctx: Ctx) -> tuple[bytes, str]:
    size = d.weighted([(1000, 3), (100_000, 4), (1_000_000, 2), (3 * 1024 * 1024, 1), (MAX_BYTES + 512 * 1024, 1)])
    shape = d.choice(["string", "keys", "array"])
    rng = random.Random(d.seed())
    rid = dumps(request_id(d, ctx))
    head = (b'{"jsonrpc":"2.0","id":' + rid + b',"method":"tools/call","params":{"_meta":'
            + dumps({META_VERSION: MODERN, META_CAPS: {}}) + b',"name":"incident.search","arguments":')
    if shape == "string":
        filler = bytes(rng.choice(b"abcdefghij \xc3\xa9") for _ in range(min(size, 4096)))
        filler = (filler * (size // max(1, len(filler)) + 1))[:size]
        filler = filler.replace(b"\xc3", b"c").replace(b"\xa9", b"e")
        args = b'{"service":"' + filler + b'"}'
    elif shape == "keys":
        n = max(1, size // 12)
        args = b"{" + b",".join(b'"k%d":%d' % (i, i) for i in range(n)) + b"}"
    else:
        n = max(1, size // 2)
        args = b'{"service":[' + b",".join([b"1"] * n) + b"]}"
    return head + args + b"}}", f"big:{shape}:{size}"


def memory_primers(transport: str) -> list[Case]:
    """The grammar's heaviest documents, once each, for the start of a run: the biggest of big_body's
    shapes under the size limit and deep_body's deepest nesting.  Parsed, they set the server's memory
    high-water mark; sent first, they set it before the run's mid-point, so that growth after it
    (memory_verdict) means a leak, not where a rare heavy case happened to fall."""
    size = 3 * 1024 * 1024
    meta = dumps({META_VERSION: MODERN, META_CAPS: {}})
    # big_body's "keys" at 3 MiB is over the size limit and never parsed; its heaviest parsed
    # document is the one that fits: as many keys as 3 MiB holds
    n_keys, n_items = size // 17, size // 2
    arguments = {
        "big:string": b'{"service":"' + b"abcdefghij" * (size // 10) + b'"}',
        "big:keys": b"{" + b",".join(b'"k%d":%d' % (i, i) for i in range(n_keys)) + b"}",
        "big:array": b'{"service":[' + b",".join([b"1"] * n_items) + b"]}",
        "deep:list": b'{"service":' + b"[" * 100_000 + b"1" + b"]" * 100_000 + b"}",
        "deep:object": b'{"service":' + b'{"a":' * 100_000 + b"1" + b"}" * 100_000 + b"}",
    }
    primers = []
    for i, (label, args) in enumerate(arguments.items()):
        body = (b'{"jsonrpc":"2.0","id":"prime-%d","method":"tools/call","params":{"_meta":' % i + meta
                + b',"name":"incident.search","arguments":' + args + b"}}")
        headers: list[tuple[Any, Any]] = []
        if transport == "http":
            headers = [("Content-Type", "application/json"), ("Accept", "application/json"),
                       ("Authorization", f"Bearer {OPERATOR}"), ("MCP-Protocol-Version", MODERN),
                       ("Mcp-Method", "tools/call"), ("Mcp-Name", "incident.search")]
        primers.append(Case(f"hostile:prime:{label}", body, headers=headers))
    return primers


def number_body(d: Drawer, ctx: Ctx) -> tuple[bytes, str]:
    number = d.choice([b"1e400", b"-1e400", b"1" + b"0" * 5000, b"18446744073709551616", b"-9223372036854775809",
                       b"1.0e-400", b"NaN", b"Infinity", b"-0", b"0.000000000000000000000001", b"01", b"1.", b".5",
                       b"0x10", b"1_000", b"+1"])
    where = d.choice(["id", "arg", "ttl", "progress"])
    meta = dumps({META_VERSION: MODERN, META_CAPS: {}})
    rid = dumps(request_id(d, ctx))
    if where == "id":
        body = b'{"jsonrpc":"2.0","id":' + number + b',"method":"tools/list","params":{"_meta":' + meta + b"}}"
    elif where == "arg":
        body = (b'{"jsonrpc":"2.0","id":' + rid + b',"method":"tools/call","params":{"name":"incident.search",'
                b'"arguments":{"service":"payments","includeLinks":' + number + b'},"_meta":' + meta + b"}}")
    elif where == "ttl":
        body = (b'{"jsonrpc":"2.0","id":' + rid + b',"method":"tools/call","params":{"name":"incident.handle",'
                b'"arguments":{"incidentId":"INC-1001"},"task":{"ttl":' + number + b"}}}")
    else:
        body = (b'{"jsonrpc":"2.0","id":' + rid + b',"method":"tools/list","params":{"_meta":{"' +
                META_VERSION.encode() + b'":"' + MODERN.encode() + b'","' + META_CAPS.encode() +
                b'":{},"progressToken":' + number + b"}}}")
    return body, f"number:{where}:{number[:12].decode()}"


def unicode_body(d: Drawer, ctx: Ctx) -> tuple[bytes, str]:
    rid = request_id(d, ctx)
    kind = d.choice(["lone_escape", "lone_raw", "invalid_utf8", "overlong", "bom", "nul", "odd_method", "odd_id",
                     "odd_args", "rtl_name", "crlf"])
    meta = {META_VERSION: MODERN, META_CAPS: {}}
    base = {"jsonrpc": "2.0", "id": rid, "method": "tools/call",
            "params": {"name": "incident.search", "arguments": {"service": "payments"}, "_meta": meta}}
    raw = dumps(base)
    if kind == "lone_escape":
        body = raw.replace(b'"payments"', b'"pay\\ud800ments"')
    elif kind == "lone_raw":
        body = raw.replace(b'"payments"', b'"pay\xed\xa0\x80ments"')
    elif kind == "invalid_utf8":
        body = raw.replace(b'"payments"', b'"pay' + d.choice([b"\xff", b"\xc3", b"\x80\x80", b"\xf8\x88\x80\x80\x80"])
                           + b'ments"')
    elif kind == "overlong":
        body = raw.replace(b'"payments"', b'"pay\xc0\xafments"')
    elif kind == "bom":
        body = b"\xef\xbb\xbf" + raw
    elif kind == "nul":
        body = raw.replace(b'"payments"', b'"pay\\u0000ments"')
    elif kind == "odd_method":
        base["method"] = d.text(20) or "\u202e"
        body = dumps(base)
    elif kind == "odd_id":
        base["id"] = d.text(30) + f"#{ctx.pool.next_id()}"
        ctx.batch_ids.append(base["id"])
        body = dumps(base)
    elif kind == "odd_args":
        base["params"]["arguments"] = {"service": d.text(40) or "\u0000", "includeLinks": True}
        body = dumps(base)
    elif kind == "rtl_name":
        base["params"]["name"] = "incident.\u202ehcraes"
        body = dumps(base)
    else:
        body = raw + b"\r"
    return body, f"unicode:{kind}"


def text_mutation(d: Drawer, body: bytes) -> tuple[bytes, str]:
    what = d.choice(["truncate", "trailing", "dup_key", "byte_flip", "ws", "nul_byte", "two_objects", "comment",
                     "single_quotes"])
    at = d.position(len(body))
    if what == "truncate" and len(body) > 2:
        return body[: max(1, at)], what
    if what == "trailing":
        return body + d.choice([b"x", b"}", b",", b" {}", b"\x00"]), what
    if what == "dup_key" and body.startswith(b"{"):
        return b'{"id":' + dumps(d.choice([1, "dup", None])) + b"," + body[1:], what
    if what == "byte_flip" and body:
        return body[:at] + bytes([d.int(0, 255)]) + body[at + 1:], what
    if what == "ws":
        return b" \t" + body + b" \t ", what
    if what == "nul_byte" and body:
        return body[:at] + b"\x00" + body[at:], what
    if what == "two_objects":
        return body + body, what
    if what == "comment":
        return b"/* c */" + body, what
    return body.replace(b'"', b"'"), what


def garbage_body(d: Drawer) -> tuple[bytes, str]:
    rng = random.Random(d.seed())
    kind = d.choice(["bytes", "bytes_newlines", "json_scalar", "batch", "empty_batch", "ws", "http_in_stdio",
                     "control"])
    if kind == "bytes":
        return bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 600))).replace(b"\n", b" "), "garbage:bytes"
    if kind == "bytes_newlines":
        return bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 600))), "garbage:bytes_nl"
    if kind == "json_scalar":
        return d.choice([b"null", b"1", b'"str"', b"true", b"[]", b"{}", b"[null]", b'""']), "garbage:scalar"
    if kind == "batch":
        item = {"jsonrpc": "2.0", "id": d.int(1, 9), "method": "tools/list",
                "params": {"_meta": {META_VERSION: MODERN, META_CAPS: {}}}}
        return dumps([item, item]), "garbage:batch"
    if kind == "empty_batch":
        return b"[]", "garbage:empty_batch"
    if kind == "ws":
        return d.choice([b" ", b"\t", b"\r", b"\x0b\x0c", b""]), "garbage:ws"
    if kind == "http_in_stdio":
        return b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", "garbage:http"
    return bytes([d.int(0, 31)]) * d.int(1, 20), "garbage:control"


def notification(d: Drawer, ctx: Ctx) -> tuple[dict[str, Any], str]:
    kind = d.weighted([("initialized", 3), ("cancelled_odd", 2), ("progress", 1), ("roots", 1), ("unknown", 2),
                       ("modern_meta", 2)])
    if kind == "initialized":
        return {"jsonrpc": "2.0", "method": "notifications/initialized"}, "notif:initialized"
    if kind == "cancelled_odd":
        return {"jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": d.choice([{}, {"requestId": None}, {"requestId": [1]}, {"requestId": {"a": 1}},
                                    {"reason": d.text(10)}])}, "notif:cancel_odd"
    if kind == "progress":
        return {"jsonrpc": "2.0", "method": "notifications/progress",
                "params": {"progressToken": 1, "progress": 5}}, "notif:progress"
    if kind == "roots":
        return {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}, "notif:roots"
    if kind == "modern_meta":
        return {"jsonrpc": "2.0", "method": d.choice(["notifications/cancelled", "notifications/x"]),
                "params": {"_meta": {META_VERSION: MODERN, META_CAPS: {}}, "requestId": d.int(0, 5)}}, "notif:modern"
    return {"jsonrpc": "2.0", "method": d.choice(["notifications/unknown", "x", d.text(12) or "y"]),
            "params": {"v": json_value(d)}}, "notif:unknown"


def client_response(d: Drawer, ctx: Ctx) -> tuple[dict[str, Any], str]:
    rid = d.choice(["s-1", "s-2", "s-999", 1, ctx.pool.next_id()])
    if d.bool(0.5):
        return {"jsonrpc": "2.0", "id": rid, "result": json_value(d) if d.bool(0.3) else {}}, "client_result"
    return {"jsonrpc": "2.0", "id": rid, "error": {"code": d.int(-33000, 0), "message": d.text(10)}}, "client_error"


def cancel(d: Drawer, ctx: Ctx) -> tuple[dict[str, Any], str]:
    """``notifications/cancelled`` for something just sent, an open listen, or nothing at all."""
    target = d.weighted([("batch", 6), ("listen", 3), ("recent", 2), ("unknown", 1)])
    candidates = {"batch": ctx.batch_ids, "listen": ctx.pool.snapshot(ctx.pool.open_listens),
                  "recent": ctx.pool.snapshot(ctx.pool.recent_ids)}.get(target) or []
    nobody = d.choice([10**9, "nobody"])
    rid = d.pick(candidates, nobody)
    params: dict[str, Any] = {"requestId": rid}
    if d.bool(0.5):
        params["reason"] = d.text(20)
    return {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params}, f"cancel:{target}"


# -- HTTP-only variations -------------------------------------------------------------------------

def http_header_mutation(d: Drawer, headers: list[tuple[Any, Any]]) -> tuple[list[tuple[Any, Any]], str]:
    headers = list(headers)
    names = [str(n).lower() for n, _ in headers]
    what = d.weighted([("drop_version", 3), ("drop_method", 3), ("drop_name", 2), ("mismatch_method", 3),
                       ("mismatch_name", 2), ("b64_bad", 2), ("b64_name", 2), ("version_bad", 2), ("no_auth", 3),
                       ("bad_auth", 3), ("basic_auth", 1), ("origin_bad", 2), ("origin_ok", 1), ("host_bad", 2),
                       ("ctype_bad", 2), ("accept_odd", 2), ("session_junk", 2), ("nonascii", 2), ("dup_header", 2),
                       ("big_header", 1), ("ws_value", 2)])

    def drop(name: str) -> None:
        headers[:] = [(n, v) for n, v in headers if str(n).lower() != name]

    def replace(name: str, value: Any) -> None:
        drop(name)
        headers.append((name, value))

    if what == "drop_version":
        drop("mcp-protocol-version")
    elif what == "drop_method":
        drop("mcp-method")
    elif what == "drop_name":
        drop("mcp-name")
    elif what == "mismatch_method":
        replace("mcp-method", d.choice(["tools/list", "TOOLS/CALL", "", "x"]))
    elif what == "mismatch_name":
        replace("mcp-name", d.choice(["incident.escalate", "other", "", "=?base64?aW5jaWRlbnQuc2VhcmNo?="]))
    elif what == "b64_bad":
        replace("mcp-name", d.choice(["=?base64?!!!?=", "=?base64?aW5j?=", "=?BASE64?aW5jaWRlbnQuc2VhcmNo?=",
                                      "=?base64??=", "=?base64?/w==?="]))
    elif what == "b64_name":
        replace("mcp-name", "=?base64?aW5jaWRlbnQuc2VhcmNo?=")
    elif what == "version_bad":
        replace("mcp-protocol-version", d.choice([LEGACY, "1900-01-01", "", "2026-07-28, 2025-11-25", "2024-11-05"]))
    elif what == "no_auth":
        drop("authorization")
    elif what == "bad_auth":
        replace("authorization", d.choice(["Bearer nope", "Bearer ", "Bearer demo-acme-operatorX", "bearer",
                                           "Bearer " + "A" * 5000, "Bearer \u00e9"]))
    elif what == "basic_auth":
        replace("authorization", "Basic " + base64.b64encode(b"user:pass").decode())
    elif what == "origin_bad":
        headers.append(("Origin", d.choice(["http://evil.example", "null", "http://127.0.0.1.evil.example",
                                            "file://", "http://localhost:8000/path", "\u00e9"])))
    elif what == "origin_ok":
        headers.append(("Origin", "http://localhost:3000"))
    elif what == "host_bad":
        headers.append(("Host", d.choice(["evil.example", "127.0.0.1.nip.io", "", "localhost:80:80", "[::2]"])))
    elif what == "ctype_bad":
        replace("content-type", d.choice(["text/plain", "application/x-www-form-urlencoded", "", "application/json;"
                                          " charset=latin-1", "multipart/form-data; boundary=x"]))
    elif what == "accept_odd":
        replace("accept", d.choice(["text/event-stream", "*/*", "", "text/html", "application/json;q=0"]))
    elif what == "session_junk":
        replace("mcp-session-id", d.choice(["x" * 200, "", "\u00e9", "../../", "0" * 32]))
    elif what == "nonascii":
        headers.append((d.choice(["X-Odd", "Mcp-Name", "Mcp-Param-Service"]),
                        d.choice([b"\xff\xfe", b"caf\xc3\xa9", b"a\x7fb", b"\x80"])))
    elif what == "dup_header":
        for n, v in list(headers):
            if str(n).lower() in ("mcp-method", "mcp-protocol-version", "authorization"):
                headers.append((n, v if d.bool(0.5) else "other"))
                break
    elif what == "big_header":
        headers.append(("X-Big", "a" * d.choice([8 * 1024, 64 * 1024])))
    elif what == "ws_value":
        for i, (n, v) in enumerate(headers):
            if str(n).lower() in ("mcp-method", "mcp-name") and isinstance(v, str):
                headers[i] = (n, " " + v + "\t")
                break
    del names
    return headers, what


def http_odd(d: Drawer, ctx: Ctx) -> Case:
    """Everything on HTTP that is not a POSTed JSON-RPC message: other verbs, paths, framing, sessions."""
    kind = d.weighted([("get_stream", 4), ("get_plain", 2), ("delete", 3), ("other_verb", 2), ("other_path", 3),
                       ("chunked", 4), ("short_length", 1), ("long_length", 1), ("bad_length", 2), ("raw", 3),
                       ("abandon", 2), ("initialize", 3)])
    auth = ("Authorization", f"Bearer {OPERATOR}")
    live = d.pick(ctx.pool.snapshot(ctx.pool.sessions), None)
    use_live = d.bool(0.8)
    meta = {META_VERSION: MODERN, META_CAPS: {}}
    list_body = dumps({"jsonrpc": "2.0", "id": request_id(d, ctx), "method": "tools/list",
                              "params": {"_meta": meta}})
    list_headers = [("Content-Type", "application/json"), ("Accept", "application/json"), auth,
                    ("MCP-Protocol-Version", MODERN), ("Mcp-Method", "tools/list")]
    if kind == "get_stream":
        junk = d.choice(["no-such-session", "x" * 129])
        session = live if live and use_live else junk
        return Case("http:get_stream", b"", method="GET", headers=[("Accept", "text/event-stream"), auth,
                                                                    ("Mcp-Session-Id", session)],
                    stream=True, session=session)
    if kind == "get_plain":
        return Case("http:get_plain", b"", method="GET", headers=[("Accept", d.choice(["application/json", "*/*"])),
                                                                   auth])
    if kind == "delete":
        junk = d.choice(["no-such-session", ""])
        session = live if live and use_live else junk
        headers = [auth] + ([("Mcp-Session-Id", session)] if d.bool(0.95) else [])
        return Case("http:delete", b"", method="DELETE", headers=headers, delete_session=session)
    if kind == "other_verb":
        return Case("http:verb", b"", method=d.choice(["PUT", "PATCH", "OPTIONS", "HEAD", "TRACE", "FOO"]),
                    headers=[auth])
    if kind == "other_path":
        return Case("http:path", list_body, path=d.choice(["/", "/mcp/", "/MCP", "/mcp?x=1", "/healthz", "/readyz",
                                                           "/metrics", "/.well-known/oauth-protected-resource",
                                                           "/.well-known/oauth-protected-resource/mcp",
                                                           "/%2e%2e/mcp", "/mcp%00", "/" + "a" * 4000]),
                    headers=list_headers)
    if kind == "chunked":
        sizes = [d.int(1, 64) for _ in range(d.int(1, 8))]
        return Case("http:chunked", list_body, headers=list_headers, framing="chunked", chunks=sizes)
    if kind == "short_length":
        return Case("http:short_length", list_body, headers=list_headers + [("Content-Length", str(len(list_body) - 5))],
                    framing="short")
    if kind == "long_length":
        return Case("http:long_length", list_body, headers=list_headers + [("Content-Length", str(len(list_body) + 50))],
                    framing="long")
    if kind == "bad_length":
        return Case("http:bad_length", list_body, headers=list_headers + [("Content-Length", d.choice(
            ["-1", "abc", "1e3", "99999999999999999999", " 10", "0x10"]))], framing="raw")
    if kind == "abandon":
        body = dumps({"jsonrpc": "2.0", "id": request_id(d, ctx), "method": "tools/call",
                             "params": {"name": "incident.search", "arguments": {"service": "payments"},
                                        "_meta": meta}})
        return Case("http:abandon", body, headers=[("Content-Type", "application/json"), ("Accept", "application/json"),
                                                   auth, ("MCP-Protocol-Version", MODERN), ("Mcp-Method", "tools/call"),
                                                   ("Mcp-Name", "incident.search")], framing="abandon")
    if kind == "raw":
        rng = random.Random(d.seed())
        data = d.choice([
            bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 300))),
            b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
            b"POST /mcp HTTP/9.9\r\n\r\n",
            b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" * 3,
            b"\r\n\r\n\r\n",
            b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
            b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
            b"GET /\x00 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
        ])
        return Case("http:raw", data, framing="raw")
    # initialize: a handshake-era session the pool will learn
    caps = client_caps(d)
    body = dumps({"jsonrpc": "2.0", "id": request_id(d, ctx), "method": "initialize",
                         "params": {"protocolVersion": d.choice([LEGACY, "2025-06-18"]), "capabilities": caps,
                                    "clientInfo": {"name": "fuzz", "version": "1"}}})
    return Case("http:initialize", body, headers=[("Content-Type", "application/json"),
                                                  ("Accept", "application/json, text/event-stream"), auth],
                expect_session=True)


# -- one case -------------------------------------------------------------------------------------

def case(d: Drawer, ctx: Ctx) -> Case:
    http = ctx.transport == "http"
    kind = d.weighted([("valid", 40), ("near", 28), ("hostile", 10), ("notification", 6), ("client_response", 3),
                       ("cancel", 0 if http else 5), ("garbage", 4), ("http_odd", 9 if http else 0)])
    if kind == "http_odd":
        return http_odd(d, ctx)
    info: dict[str, Any] = {}
    message: Any = None
    if kind == "valid":
        message, info = valid_message(d, ctx)
        label = f"valid:{info['era']}:{info['method']}"
        body = dumps(message, d)
    elif kind == "near":
        message, info = valid_message(d, ctx)
        message, what = mutate(d, ctx, message)
        if d.bool(0.2):
            message, what2 = mutate(d, ctx, message)
            what += "+" + what2
        body = dumps(message, d)
        if d.bool(0.12):
            body, text_what = text_mutation(d, body)
            what += "+" + text_what
        label = f"near:{info['era']}:{what}"
    elif kind == "hostile":
        builder = d.weighted([(deep_body, 3), (big_body, 2), (number_body, 3), (unicode_body, 4)])
        body, label = builder(d, ctx)
        info = {"era": "modern", "method": "tools/call"}
        try:
            message = orjson.loads(body) if len(body) < 200_000 else None
        except orjson.JSONDecodeError:
            message = None
        if isinstance(message, dict) and isinstance(message.get("method"), str):
            info["method"] = message["method"]
        label = "hostile:" + label
    elif kind == "notification":
        message, label = notification(d, ctx)
        info = {"era": "modern" if d.bool(0.6) else "legacy", "method": message.get("method")}
        body = dumps(message, d)
    elif kind == "client_response":
        message, label = client_response(d, ctx)
        info = {"era": "legacy" if d.bool(0.6) else "modern", "method": None}
        body = dumps(message, d)
    elif kind == "cancel":
        message, label = cancel(d, ctx)
        body = dumps(message, d)
    else:
        body, label = garbage_body(d)
        info = {"era": "modern", "method": None}
    if not http:
        return Case(label, body)
    headers, session = http_headers(d, ctx, message, info)
    if kind in ("near", "hostile", "garbage") and d.bool(0.35) or kind == "valid" and d.bool(0.06):
        headers, what = http_header_mutation(d, headers)
        label += f"+hdr:{what}"
    stream = isinstance(message, dict) and message.get("method") == "subscriptions/listen"
    return Case(label, body, headers=headers, session=session, stream=stream,
                expect_session=isinstance(message, dict) and message.get("method") == "initialize")


def batch(d: Drawer, pool: Pool, transport: str, size: int) -> list[Case]:
    ctx = Ctx(pool, transport)
    return [case(d, ctx) for _ in range(size)]


# -- the two front ends ---------------------------------------------------------------------------


@st.composite
def cases(draw: Any, pool: Pool, transport: str = "stdio") -> Case:
    """One case (Hypothesis strategy)."""
    return case(HypothesisDrawer(draw), Ctx(pool, transport))


@st.composite
def batches(draw: Any, pool: Pool, transport: str = "stdio", min_size: int = 10, max_size: int = 30) -> list[Case]:
    """A batch of cases sharing ids (duplicates, cancels of what was just sent) (Hypothesis strategy)."""
    d = HypothesisDrawer(draw)
    return batch(d, pool, transport, d.int(min_size, max_size))


class CaseGenerator:
    """The same grammar from a seeded ``random.Random``: for the long run."""

    def __init__(self, seed: int, pool: Pool, transport: str) -> None:
        self.rng = random.Random(seed)
        self.drawer = RandomDrawer(self.rng)
        self.pool = pool
        self.transport = transport

    def batch(self, size: int) -> list[Case]:
        return batch(self.drawer, self.pool, self.transport, size)

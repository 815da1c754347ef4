"""Where truecall's time goes: py-spy on a server under the benchmark's load.

    python bench/profile.py [--transport stdio|http] [--seconds 10] [--no-audit] [--top 25]

Starts ``truecall serve bench/peers/truecall_app.py:app`` (stdio: pipelined, 64
in flight; http: 2026-07-28 JSON, 16 keep-alive clients), samples it with
py-spy (installed into bench/.venv-peers on first use) while the load runs, and
prints the hottest functions, inclusive and self, as shares of the sampled
(non-idle) time.  The collapsed stacks are kept in bench/results/ for flame
graphs (e.g. ``flamegraph.pl`` or speedscope).
"""

from __future__ import annotations

import argparse
import collections
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from _drivers import StdioPeer, http_cell, run_async, stop  # noqa: E402
from run import PEERS, PEERS_VENV, RESULTS, ROOT, Runner, ensure_peers_venv, free_port, wait_listening  # noqa: E402

#: Frames every sample shares (interpreter start-up, the CLI, the event loop's entry): left out.
_WRAPPERS = ("process ", "thread ", "<frozen runpy>", "typer/", "click/", "truecall/cli/_commands.py", "truecall/__main__.py",
             "truecall/cli/serving.py", "uvloop/__init__",
             "stdlib/asyncio/runners.py", "asyncio/runners.py", "uvicorn/main.py", "uvicorn/server.py:Server.run",
             "uvicorn/server.py:Server.serve", "uvicorn/server.py:Server._serve")
_FRAME = re.compile(r"^(?P<fn>.*?) \((?P<file>[^()]*?)(?::(?P<line>\d+))?\)$")


def py_spy() -> str:
    ensure_peers_venv(lambda m: print(m, file=sys.stderr))
    exe = PEERS_VENV / "bin" / "py-spy"
    if not exe.exists():
        subprocess.run([str(PEERS_VENV / "bin" / "python"), "-m", "pip", "install", "--quiet", "py-spy==0.4.3"],
                       check=True)
    return str(exe)


def short(frame: str) -> str:
    m = _FRAME.match(frame.strip())
    if not m:
        return frame.strip()
    path = m.group("file")
    for marker in ("/src/", "/site-packages/", "/lib/python3."):
        if marker in path:
            path = path.split(marker, 1)[1]
            if marker == "/lib/python3.":
                path = "stdlib/" + path.split("/", 1)[-1]
            break
    return f"{path}:{m.group('fn')}"


def summarize(raw: Path, top: int) -> str:
    inclusive: collections.Counter[str] = collections.Counter()
    own: collections.Counter[str] = collections.Counter()
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        n = int(count)
        frames = [short(f) for f in stack.split(";")]
        frames = [f for f in frames if not f.startswith(_WRAPPERS)]
        if not frames:
            continue
        total += n
        own[frames[-1]] += n
        for f in set(frames):
            inclusive[f] += n
    out = [f"{total} samples (non-idle)", "", "inclusive (function and everything it calls):"]
    for f, n in inclusive.most_common(top):
        out.append(f"  {100 * n / total:5.1f}%  {f}")
    out += ["", "self (the function's own code):"]
    for f, n in own.most_common(top):
        out.append(f"  {100 * n / total:5.1f}%  {f}")
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description="py-spy profile of truecall under load")
    parser.add_argument("--transport", choices=("stdio", "http"), default="stdio")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--no-audit", action="store_true")
    parser.add_argument("--sequential", action="store_true", help="stdio: one call at a time instead of 64")
    parser.add_argument("--rate", type=int, default=250, help="samples per second")
    parser.add_argument("--top", type=int, default=25)
    ns = parser.parse_args()

    spy = py_spy()
    RESULTS.mkdir(parents=True, exist_ok=True)
    attr = "app_noaudit" if ns.no_audit else "app"
    argv = [sys.executable, "-m", "truecall", "serve", f"{PEERS / 'truecall_app.py'}:{attr}"]
    tmp = tempfile.mkdtemp(prefix="tc-profile-")
    logs = RESULTS / "profile-logs"
    logs.mkdir(exist_ok=True)
    runner = Runner({}, logs, verbose=False)
    name = f"profile-{ns.transport}{'-seq' if ns.sequential else ''}{'-noaudit' if ns.no_audit else ''}"
    raw = RESULTS / f"{name}.collapsed.txt"
    port = free_port()
    if ns.transport == "http":
        argv += ["--http", "--port", str(port)]
    proc = runner.spawn(argv, tmp, f"{name}.log", stdio=ns.transport == "stdio")
    try:
        if ns.transport == "http":
            wait_listening(proc, port)
        else:
            peer = StdioPeer(proc)
            peer.handshake()
            peer.warm_up(1.0)
        # py-spy runs in its own thread so the load starts while it attaches
        record = subprocess.Popen([spy, "record", "--pid", str(proc.pid), "--format", "raw", "--rate", str(ns.rate),
                                   "--duration", str(int(ns.seconds)), "--nonblocking", "-o", str(raw)],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        time.sleep(0.5)
        load_s = ns.seconds + 1.0
        if ns.transport == "http":
            cell = run_async(http_cell(port, "modern", False, 16, 0.2, load_s, proc.pid))
        elif ns.sequential:
            cell = peer.sequential(load_s)
        else:
            cell = peer.pipelined(load_s, 64)
        _, err = record.communicate(timeout=ns.seconds + 30)
        if record.returncode != 0:
            sys.exit(f"py-spy failed: {err.decode(errors='replace')}")
    finally:
        stop(proc)
    s = cell.summary()
    head = (f"truecall {ns.transport} ({'sequential' if ns.sequential else '64 in flight' if ns.transport == 'stdio' else '2026-07-28 JSON, 16 clients'}, "
            f"audit {'off' if ns.no_audit else 'on'}): {s['calls_per_s']:,.0f} calls/s, "
            f"server CPU {s['server_cpu_us_per_call']} µs/call (with py-spy attached)")
    text = head + "\n" + summarize(raw, ns.top)
    (RESULTS / f"{name}.summary.txt").write_text(text + "\n")
    print(text)
    print(f"\nstacks: {raw.relative_to(ROOT)}")


if __name__ == "__main__":
    main()

"""The documentation is tested: the site builds with ``--strict`` and every code block of
``docs/**/*.md`` runs.

How a page's blocks are checked, in the order they appear (one temporary folder and one Python
namespace per page; each port a page serves on, ``--port 8000`` or ``127.0.0.1:8000``, is
replaced by a free one):

- ``python``: executed in this process, in the page's folder (the folder is on ``sys.path``);
  with ``title="server.py"`` the block is a file: it is compiled and written, not run.
- ``bash``: run with ``bash -euo pipefail``, the test's virtual environment first on ``PATH``;
  it must exit 0 (or the status a ``doctest: exit=N`` says).
- ``json`` / ``toml``: parsed (and written when titled).
- ``text``: must follow a block it shows the output of (``doctest: output``; ``...`` stands for
  any text) or say it is not code (``doctest: prose``).

A directive is an HTML comment on the line before the fence, invisible on the site:

- ``<!-- doctest: background ready=http://127.0.0.1:8000/healthz -->`` starts a command (a
  server) that the next blocks talk to; it must become ready and still run when the page ends,
  when it is stopped.
- ``<!-- doctest: stdio -->`` starts a stdio server and checks that it answers ``initialize``
  and ``tools/list`` on its stdin/stdout (as a desktop assistant would talk to it).
- ``<!-- doctest: mcp-config project=/path/to/project -->`` on a JSON block: a desktop
  assistant's ``mcpServers``; every entry is started (``command``, spoken to as by ``stdio``) or
  reached (``url``, with ``truecall.Client``) and must list tools. ``project`` is the reader's
  folder in the example: it stands for the page's folder, where ``.venv`` is the test's.
- ``<!-- doctest: layout -->`` on a text block: a tree of the repository; every path it names
  must exist.
- ``<!-- doctest: syntax -->`` for a command that must not run here (it installs, or needs a
  host that the test does not have): its shell syntax is checked and each ``truecall``
  command in it must accept the options it is given (they are looked up in its ``--help``).
- ``<!-- doctest: root -->`` runs a bash block in the repository's root (``bench/…``) instead.
- ``<!-- doctest: env=NAME=VALUE -->`` adds an environment variable for that block; the value
  ``{pg}`` is a fresh PostgreSQL schema of the suite's private server.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
import tomllib
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import pytest
from pg_support import pg_schemas, pg_url  # noqa: F401  (a fresh schema for env=…={pg})

from _paths import ROOT
DOCS = ROOT / "docs"
BIN = Path(sys.executable).parent
PAGES = sorted(p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md"))

_FENCE = re.compile(r"^(?P<indent> *)(?P<fence>`{3,}|~{3,})\s*(?P<lang>[\w+-]*)(?P<attrs>[^`]*)$")
_DIRECTIVE = re.compile(r"^\s*<!--\s*doctest:(?P<body>.*?)-->\s*$")
_TITLE = re.compile(r'title="(?P<title>[^"]+)"')
#: A port a page names: ``--port 8000``, ``127.0.0.1:8000`` or ``localhost:8000`` (80xx).
_PORT = re.compile(r"(?<=--port )80\d\d\b|(?<=--port=)80\d\d\b|(?<=127\.0\.0\.1:)80\d\d\b|(?<=localhost:)80\d\d\b")
_KNOWN = {"output", "prose", "background", "ready", "stdio", "syntax", "exit", "env", "root", "mcp-config", "project", "layout"}


@dataclass
class Block:
    page: str
    line: int
    lang: str
    code: str
    title: str | None = None
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def where(self) -> str:
        return f"docs/{self.page}:{self.line}"


def parse_blocks(page: str, source: str) -> list[Block]:
    """The fenced blocks of a Markdown page with their directives (indented ones too)."""
    lines = source.splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence = len(m["indent"]), m["fence"]
        options: dict[str, Any] = {}
        previous = lines[i - 1] if i else ""
        d = _DIRECTIVE.match(previous)
        if d:
            for word in shlex.split(d["body"]):
                key, _, value = word.partition("=")
                if key not in _KNOWN:
                    raise AssertionError(f"docs/{page}:{i}: unknown doctest directive {key!r}")
                if key == "env":
                    name, _, val = value.partition("=")
                    options.setdefault("env", {})[name] = val
                else:
                    options[key] = value or True
        title = _TITLE.search(m["attrs"])
        body: list[str] = []
        j = i + 1
        while j < len(lines) and not re.match(rf"^ {{0,{indent + 3}}}{re.escape(fence[0])}{{{len(fence)},}}\s*$",
                                              lines[j]):
            body.append(lines[j][indent:] if lines[j][:indent].strip() == "" else lines[j])
            j += 1
        if j == len(lines):
            raise AssertionError(f"docs/{page}:{i + 1}: unclosed code fence")
        blocks.append(Block(page, i + 1, m["lang"], "\n".join(body) + "\n", title["title"] if title else None,
                            options))
        i = j + 1
    return blocks


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def matches(expected: str, actual: str) -> bool:
    """``expected`` (a page's output block) against what ran: lines compared without trailing
    spaces; a line ``...`` stands for any lines, ``...`` inside a line for any text."""
    pattern = []
    for line in expected.rstrip("\n").splitlines():
        line = line.rstrip()
        if line == "...":
            pattern.append(r"(?:.*\n)*?")
        else:
            pattern.append(".*?".join(re.escape(part) for part in line.split("...")) + r"[ \t]*\n")
    text = "\n".join(l.rstrip() for l in actual.rstrip("\n").splitlines()) + "\n"
    return re.fullmatch("".join(pattern), text) is not None


class PageRun:
    """Runs one page's blocks in order, sharing a folder, a namespace and the started servers."""

    def __init__(self, page: str, folder: Path, pg_url: Any) -> None:
        self.page = page
        self.folder = folder
        self.ports: dict[str, int] = {}  # a port the page names (8000) -> a free one
        self.pg_url = pg_url
        self.namespace: dict[str, Any] = {"__name__": "__docs__"}
        self.background: list[tuple[Block, subprocess.Popen[bytes]]] = []
        self.last_output: str | None = None
        # A reader's shell: none of this suite's own settings (TRUECALL_*, or PYTEST_ADDOPTS such as
        # --durations, which would change the output a page shows of a pytest run).
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("TRUECALL_", "PYTEST_"))}
        self.env["PATH"] = f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"
        self.env["PYTHONUNBUFFERED"] = "1"
        self.env.pop("VIRTUAL_ENV", None)

    def code(self, block: Block) -> str:
        return _PORT.sub(lambda m: str(self.port_for(m.group(0))), block.code)

    def port_for(self, documented: str) -> int:
        if documented not in self.ports:
            self.ports[documented] = _free_port()
        return self.ports[documented]

    def block_env(self, block: Block) -> dict[str, str]:
        env = dict(self.env)
        for name, value in block.options.get("env", {}).items():
            env[name] = self.pg_url() if value == "{pg}" else value
        return env

    def run(self, block: Block) -> None:
        handler = getattr(self, f"run_{block.lang}", None)
        if handler is None:
            raise AssertionError(f"{block.where}: a {block.lang or 'plain'!r} block cannot be checked; use "
                                 "python, bash, json, toml, or text with doctest: output / prose")
        handler(block)

    # -- languages ------------------------------------------------------------------------------

    def run_python(self, block: Block) -> None:
        code = self.code(block)
        compiled = compile(code, block.where, "exec")
        if block.title:
            (self.folder / block.title).write_text(code, encoding="utf-8")
            return
        out = io.StringIO()
        with _inside(self.folder, self.block_env(block)), contextlib.redirect_stdout(out):
            try:
                exec(compiled, self.namespace)
            except BaseException as exc:
                raise AssertionError(f"{block.where}: the block raised {type(exc).__name__}: {exc}\n"
                                     f"--- printed:\n{out.getvalue()}") from exc
        self.last_output = out.getvalue()

    def run_bash(self, block: Block) -> None:
        if block.title:
            (self.folder / block.title).write_text(self.code(block), encoding="utf-8")
            return
        if "syntax" in block.options:
            return self.check_syntax(block)
        if "background" in block.options:
            return self.start(block)
        if "stdio" in block.options:
            return self.talk_stdio(block, ["bash", "-c", self.code(block)], self.block_env(block))
        cwd = ROOT if "root" in block.options else self.folder
        proc = subprocess.run(["bash", "-euo", "pipefail", "-c", self.code(block)], cwd=cwd,
                              env=self.block_env(block), capture_output=True, text=True, timeout=120)
        expected = int(block.options.get("exit", 0))
        assert proc.returncode == expected, (f"{block.where}: exit status {proc.returncode}, not {expected}\n"
                                             f"--- stdout:\n{proc.stdout}\n--- stderr:\n{proc.stderr}")
        self.last_output = proc.stdout + proc.stderr if expected else proc.stdout

    def run_json(self, block: Block) -> None:
        code = self.code(block)
        project = block.options.get("project")
        if isinstance(project, str):  # the reader's project folder: this page's folder, with its .venv
            code = code.replace(project, str(self.folder))
            venv = self.folder / ".venv"
            if not venv.exists():
                venv.symlink_to(sys.prefix, target_is_directory=True)
        try:
            data = json.loads(code)
        except ValueError as exc:
            raise AssertionError(f"{block.where}: not JSON: {exc}") from None
        if block.title:
            (self.folder / block.title).write_text(code, encoding="utf-8")
        if "mcp-config" in block.options:
            self.check_mcp_config(block, data)

    def check_mcp_config(self, block: Block, data: Any) -> None:
        """A desktop assistant's ``mcpServers``: each entry is started (a command) or reached (a URL)
        as the assistant would, and must list its tools."""
        servers = data.get("mcpServers") if isinstance(data, dict) else None
        assert isinstance(servers, dict) and servers, f"{block.where}: no mcpServers"
        for name, entry in servers.items():
            if "command" in entry:
                env = {**self.env, **entry.get("env", {})}
                env["PATH"] = os.defpath  # an assistant does not start with the reader's shell PATH...
                elsewhere = self.folder / "elsewhere"  # ...nor in the project's folder
                elsewhere.mkdir(exist_ok=True)
                self.talk_stdio(block, [entry["command"], *entry.get("args", [])], env, elsewhere)
            else:
                import asyncio

                from truecall import Client

                async def tools() -> list[Any]:
                    async with Client(entry["url"], headers=entry.get("headers")) as client:
                        return await client.list_tools()

                assert asyncio.run(tools()), f"{block.where}: {name} at {entry['url']} lists no tools"

    def run_toml(self, block: Block) -> None:
        tomllib.loads(self.code(block))

    def run_text(self, block: Block) -> None:
        if "prose" in block.options:
            return
        if "layout" in block.options:
            return self.check_layout(block)
        assert "output" in block.options, f"{block.where}: a text block says doctest: output or doctest: prose"
        assert self.last_output is not None, f"{block.where}: an output block follows no block that ran"
        actual = self.last_output
        for documented, port in self.ports.items():
            actual = re.sub(rf"\b{port}\b", documented, actual)
        assert matches(block.code, actual), f"{block.where}: the output differs\n--- page:\n{block.code}" \
                                            f"--- actual:\n{actual}"

    def check_layout(self, block: Block) -> None:
        """A tree of the repository: every path it names exists (an indented line is inside the
        last unindented folder; each ``name.py`` or ``dir/`` mentioned on a line is looked up)."""
        parent = ROOT
        for line in block.code.splitlines():
            if not line.strip():
                continue
            path, _, comment = line.strip().partition(" ")
            base = parent if line.startswith(" ") else ROOT
            if not line.startswith(" "):
                parent = ROOT / path
            named = [path] + re.findall(r"(?<![\w/.])([\w./-]+(?:\.py|\.md|/))(?=[\s:;,)]|$)", comment)
            for name in named:
                candidates = [base / name, ROOT / name, parent / name, ROOT / "src" / name]
                assert any(c.exists() for c in candidates), f"{block.where}: {name} does not exist"

    # -- servers --------------------------------------------------------------------------------

    def start(self, block: Block) -> None:
        proc = subprocess.Popen(["bash", "-c", self.code(block)], cwd=self.folder,
                                env=self.block_env(block), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True)
        self.background.append((block, proc))
        ready = _PORT.sub(lambda m: str(self.port_for(m.group(0))), str(block.options.get("ready", "")))
        assert ready, f"{block.where}: a background block says when it is ready (ready=URL)"
        deadline = time.monotonic() + 30
        while True:
            if proc.poll() is not None:
                raise AssertionError(f"{block.where}: exited with {proc.returncode} before it was ready:\n"
                                     f"{proc.stderr.read().decode(errors='replace')}")  # type: ignore[union-attr]
            try:
                with urllib.request.urlopen(ready, timeout=2) as answer:
                    if answer.status == 200:
                        return
            except OSError:
                pass
            assert time.monotonic() < deadline, f"{block.where}: not ready at {ready} after 30 s"
            time.sleep(0.1)

    def talk_stdio(self, block: Block, argv: list[str], env: dict[str, str], cwd: Path | None = None) -> None:
        """Speak MCP to a stdio server as a desktop assistant does: initialize, then tools/list."""
        messages = [
            {"jsonrpc": "2.0", "id": 1, "method": "initialize",
             "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                        "clientInfo": {"name": "docs-test", "version": "1"}}},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        ]
        proc = subprocess.Popen(argv, cwd=cwd or self.folder, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True)
        answers: dict[int, Any] = {}
        try:
            assert proc.stdin is not None and proc.stdout is not None
            proc.stdin.write(json.dumps(messages[0]).encode() + b"\n")
            proc.stdin.flush()
            for _ in range(2):
                line = _readline(proc, 30)
                if not line:
                    _stop(proc, keep_stderr=True)
                    raise AssertionError(f"{block.where}: no answer on stdout:\n{_stderr(proc)}")
                answer = json.loads(line)
                answers[answer.get("id")] = answer
                if answer.get("id") == 1:
                    for message in messages[1:]:
                        proc.stdin.write(json.dumps(message).encode() + b"\n")
                    proc.stdin.flush()
        finally:
            _stop(proc)
        assert "result" in answers.get(1, {}), f"{block.where}: initialize was not answered: {answers}"
        tools = answers.get(2, {}).get("result", {}).get("tools")
        assert isinstance(tools, list) and tools, f"{block.where}: tools/list listed nothing: {answers}"
        self.last_output = json.dumps({"tools": [t["name"] for t in tools]})

    def check_syntax(self, block: Block) -> None:
        code = self.code(block)
        proc = subprocess.run(["bash", "-n", "-c", code], capture_output=True, text=True)
        assert proc.returncode == 0, f"{block.where}: not valid shell: {proc.stderr}"
        for line in code.replace("\\\n", " ").splitlines():
            for command in re.split(r"&&|\|\||;|\|", line):
                words = shlex.split(command, comments=True)
                while words and re.fullmatch(r"\w+=.*", words[0]):
                    words.pop(0)
                if not words or Path(words[0]).name != "truecall":
                    continue
                sub = []  # the (sub)command: `serve`, `tasks list`
                for word in words[1:3]:
                    if word.startswith("-") or not re.fullmatch(r"[a-z]+", word):
                        break
                    sub.append(word)
                env = {**self.env, "COLUMNS": "200"}  # options in full, however wide the help is
                helped = subprocess.run([str(BIN / "truecall"), *sub, "--help"], capture_output=True, text=True,
                                        env=env, timeout=60)
                if helped.returncode != 0 and len(sub) > 1:
                    sub = sub[:1]
                    helped = subprocess.run([str(BIN / "truecall"), *sub, "--help"], capture_output=True,
                                            text=True, env=env, timeout=60)
                assert helped.returncode == 0, f"{block.where}: `truecall {' '.join(sub)} --help` fails"
                for word in words:
                    option = word.split("=", 1)[0]
                    if option.startswith("--"):
                        assert option in helped.stdout, f"{block.where}: truecall {sub[0]} has no {option}"

    def close(self) -> None:
        problems = []
        for block, proc in self.background:
            if proc.poll() is not None:
                problems.append(f"{block.where}: the server exited early ({proc.returncode}):\n{_stderr(proc)}")
            _stop(proc)
        assert not problems, "\n".join(problems)


def _readline(proc: subprocess.Popen[bytes], timeout: float) -> bytes:
    import selectors

    assert proc.stdout is not None
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        if not sel.select(timeout):
            return b""
    return proc.stdout.readline()


def _stderr(proc: subprocess.Popen[bytes]) -> str:
    if proc.poll() is None or proc.stderr is None or proc.stderr.closed:
        return ""
    return proc.stderr.read().decode(errors="replace")


def _stop(proc: subprocess.Popen[bytes], keep_stderr: bool = False) -> None:
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
    for stream in (proc.stdin, proc.stdout, None if keep_stderr else proc.stderr):
        if stream is not None and not stream.closed:
            stream.close()


@contextlib.contextmanager
def _inside(folder: Path, env: dict[str, str]) -> Iterator[None]:
    """cwd, environment and import path of a block run in this process, restored afterwards."""
    saved_env, saved_cwd, saved_path = dict(os.environ), os.getcwd(), list(sys.path)
    os.environ.clear()
    os.environ.update(env)
    os.chdir(folder)
    sys.path.insert(0, str(folder))
    try:
        yield
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
        sys.path[:] = saved_path


def _forget_modules(folder: Path) -> None:
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None) or ""
        if file.startswith(str(folder)):
            del sys.modules[name]


# -- the tests ---------------------------------------------------------------------------------------


def test_there_are_pages():
    assert "index.md" in PAGES and len(PAGES) > 1


@pytest.mark.parametrize("page", PAGES)
def test_every_code_block_runs(page: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    blocks = parse_blocks(page, (DOCS / page).read_text(encoding="utf-8"))
    folder = tmp_path / "work"
    folder.mkdir()

    def pg_url() -> str:
        return request.getfixturevalue("pg_url")

    for block in blocks:  # the page's own files win over any module of that name imported before
        if block.title and block.title.endswith(".py"):
            sys.modules.pop(block.title[:-3], None)
    run = PageRun(page, folder, pg_url)
    try:
        for block in blocks:
            run.run(block)
    finally:
        try:
            run.close()
        finally:
            _forget_modules(folder)


def test_the_site_builds_strict(tmp_path: Path) -> None:
    """``scripts/docs`` (``mkdocs build --strict``): a broken link, a missing page in the nav or a
    reference to a name the code no longer has fails here."""
    site = tmp_path / "site"
    proc = subprocess.run([str(ROOT / "scripts" / "docs"), "build", "-d", str(site)], capture_output=True,
                          text=True, timeout=300, env={**os.environ, "PYTHON": sys.executable})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # The reference is split by area (issue 26: it was one 44,000-pixel page), one page each.
    api = "\n".join(page.read_text(encoding="utf-8") for page in sorted((site / "reference").glob("*/index.html")))
    import truecall

    anchors = set(re.findall(r'id="(truecall\.[\w.]+)"', api))
    missing = [n for n in truecall.__all__ if f"truecall.{n}" not in anchors
               and not any(a.endswith(f".{n}") for a in anchors)]
    assert not missing, f"public names without an entry in the API reference: {missing}"
    private = sorted(a for a in anchors if re.search(r"\._", a))
    assert not private, f"private names in the API reference: {private[:5]}"
    assert "_depth" not in api, "a private parameter in a public signature"
    # signatures are formatted (ruff, one parameter a line when they do not fit), not one long line
    assert re.search(r'Server</span><span class="p">\(</span>\s*\n\s+<span class="n">name', api) or \
        "Server(\n    name" in re.sub(r"<[^>]+>", "", api), "the API reference's signatures are not formatted"
    roles = re.findall(r":(?:class|meth|func|mod|attr|exc):<code>[^<]*</code>", api)
    assert not roles, f"Sphinx roles shown raw (scripts/mkdocs_hooks.py): {roles[:3]}"


# -- the checker itself -------------------------------------------------------------------------------


def test_parse_blocks_reads_fences_directives_and_titles():
    source = ("text\n<!-- doctest: background ready=http://127.0.0.1:8000/ env=A=1 -->\n```bash\nserve\n```\n"
              '!!! note\n    ```python title="s.py"\n    x = 1\n    ```\n````text\n```\n````\n')
    blocks = parse_blocks("p.md", source)
    assert [(b.lang, b.line, b.code, b.title) for b in blocks] == [
        ("bash", 3, "serve\n", None), ("python", 7, "x = 1\n", "s.py"), ("text", 10, "```\n", None)]
    assert blocks[0].options == {"background": True, "ready": "http://127.0.0.1:8000/", "env": {"A": "1"}}
    with pytest.raises(AssertionError, match="unknown doctest directive"):
        parse_blocks("p.md", "<!-- doctest: skip -->\n```bash\nx\n```\n")
    with pytest.raises(AssertionError, match="unclosed"):
        parse_blocks("p.md", "```bash\nx\n")


def test_output_matching_is_exact_except_for_ellipses():
    assert matches("a\n...\nz\n", "a\nb\nc\nz\n")
    assert matches("count: ...\n", "count: 3  \n")
    assert not matches("a\nz\n", "a\nb\nz\n")
    assert not matches("count: 2\n", "count: 3\n")


def test_a_failing_block_fails_and_says_where(tmp_path: Path) -> None:
    run = PageRun("p.md", tmp_path, lambda: "")
    with pytest.raises(AssertionError, match=r"docs/p.md:1: the block raised ZeroDivisionError"):
        run.run(Block("p.md", 1, "python", "1 / 0\n"))
    with pytest.raises(AssertionError, match="exit status 3"):
        run.run(Block("p.md", 2, "bash", "exit 3\n"))
    with pytest.raises(AssertionError, match="cannot be checked"):
        run.run(Block("p.md", 3, "", "whatever\n"))
    run.run(Block("p.md", 4, "bash", "echo hi\n"))
    with pytest.raises(AssertionError, match="output differs"):
        run.run(Block("p.md", 5, "text", "ho\n", options={"output": True}))
    with pytest.raises(AssertionError, match="has no --nope"):
        run.run(Block("p.md", 6, "bash", "truecall serve --nope\n", options={"syntax": True}))


def test_every_setting_and_command_the_guide_names_exists():
    """A renamed environment variable or CLI command must not live on in the guide."""
    source = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "src").rglob("*.py"))
    guide = "\n".join((DOCS / page).read_text(encoding="utf-8") for page in PAGES)
    settings = set(re.findall(r"\bTRUECALL_[A-Z0-9_]*[A-Z0-9]\b", guide))
    unknown = sorted(s for s in settings if s not in source and not s.startswith("TRUECALL_TEST_"))
    assert not unknown, f"settings the guide names that no code reads: {unknown}"
    helped = subprocess.run([str(BIN / "truecall"), "--help"], capture_output=True, text=True, timeout=60,
                            env={**os.environ, "COLUMNS": "200"})
    commands = set(re.findall(r"`truecall ([a-z]+)\b", guide))
    missing = sorted(c for c in commands if not re.search(rf"^\W*{c}\b", helped.stdout, re.M))
    assert not missing, f"commands the guide names that truecall does not have: {missing}"


def _free_names(code: str) -> list[str]:
    """Names a block uses that it neither defines nor imports (nor are builtins)."""
    import builtins
    import symtable

    top = symtable.symtable(code, "<block>", "exec")
    defined = {s.get_name() for s in top.get_symbols() if s.is_assigned() or s.is_imported()}
    used: set[str] = set()
    stack = [top]
    while stack:
        table = stack.pop()
        used.update(s.get_name() for s in table.get_symbols() if s.is_referenced() and (table is top or s.is_global()))
        stack.extend(table.get_children())
    return sorted(used - defined - set(dir(builtins)) - {"__file__", "__name__"})


@pytest.mark.parametrize("page", PAGES)
def test_every_python_block_stands_alone_or_says_what_it_continues(page: str) -> None:
    """A reader copies one block: it runs in a fresh process (its imports are there), or its first line
    says which blocks it continues and what it takes from them (issue 26: the quickstart's in-memory
    block and tasks.md's "Input while running" did not say, and failed when copied)."""
    for block in parse_blocks(page, (DOCS / page).read_text(encoding="utf-8")):
        if block.lang != "python" or block.title:
            continue
        free = _free_names(block.code)
        if not free:
            continue
        first = block.code.splitlines()[0]
        assert first.startswith("# continues"), f"{block.where}: uses {free} without defining or importing them"
        assert all(name in first for name in free), f"{block.where}: its first line does not name {free}"


@pytest.mark.parametrize("page", PAGES)
def test_an_app_a_page_names_is_an_attribute_of_the_file_it_shows(page: str) -> None:
    """``shop.py:server`` in the prose, where the page's ``shop.py`` defines ``build`` (issue 26,
    testing.md): every ``file.py:attr`` of a page whose file the page shows must name what it defines."""
    source = (DOCS / page).read_text(encoding="utf-8")
    files = {b.title: b.code for b in parse_blocks(page, source) if b.title and b.title.endswith(".py")}
    for name, attr in set(re.findall(r"\b([\w-]+\.py):(\w+)", source)):
        if name in files:
            assert re.search(rf"^(?:async )?(?:def|class) {attr}\b|^{attr}\s*[:=]", files[name], re.MULTILINE), \
                f"docs/{page} names {name}:{attr}, and its {name} defines no {attr!r}"


def test_no_page_serves_on_the_port_scripts_docs_serve_holds() -> None:
    """``scripts/docs serve`` previews the site on 127.0.0.1:8001: a page's server there collides with it
    while the docs are edited (issue 26, operations.md)."""
    held = re.search(r"127\.0\.0\.1:(\d+)", (ROOT / "scripts" / "docs").read_text()).group(1)  # type: ignore[union-attr]
    for page in PAGES:
        assert f"--port {held}" not in (DOCS / page).read_text(encoding="utf-8"), f"docs/{page} serves on {held}"

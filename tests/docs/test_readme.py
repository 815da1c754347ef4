"""The README runs as written.

Every fenced block of README.md and every ``truecall …`` command quoted in its "Using it" section
is extracted and run on this checkout, whatever the README says at the time (the examples may be
rewritten; this test follows them):

- ``python`` blocks that make a ``Server`` are saved as a file and served over stdio and over
  Streamable HTTP exactly as the README's commands say, and called with the official ``mcp``
  client (every tool the server lists); a fragment with top-level ``await`` is compiled and its
  imports are run;
- ``bash`` blocks: each command is run, or, where a test cannot (installing, the whole suite),
  checked for what it can be (the program exists, the module it names, the file it runs);
- ``json`` blocks are parsed; a client configuration's command is run (stdio) or its URL and headers
  are used against the server the README says to start (HTTP); a token file is written and served;
- the layout block's paths exist.

Placeholders in angle brackets are filled from what the README's own commands printed (the token and
its SHA-256); ``path/to/`` is the file saved from the block, port 8000 a free port.  A block of a kind
this test does not know fails it, so a new block cannot go unchecked.
"""

from __future__ import annotations

import ast
import os
import re
import shlex
import shutil
import subprocess
import sys
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, AsyncIterator

import anyio
import httpx
import httpx2
import orjson
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from http_support import served

from _paths import ROOT
README = ROOT / "README.md"
#: Where the README's ``.venv/bin/…`` programs are in the environment running the tests.
BIN = Path(sys.executable).parent
#: The settings a README command must not inherit from the test run (it runs as a new user's would).
SETTINGS = ("TRUECALL_DB", "TRUECALL_PRINCIPAL", "TRUECALL_TOKEN_FILE", "TRUECALL_DEBUG", "TRUECALL_LANG",
            "TRUECALL_JWT_ISSUER", "TRUECALL_JWT_AUDIENCE", "TRUECALL_JWKS")


# -- reading the README ------------------------------------------------------------------------------


@dataclass
class Block:
    lang: str
    text: str
    section: str
    line: int
    before: str  # the prose between the previous block and this one

    def __str__(self) -> str:
        return f"README.md:{self.line} ({self.lang or 'plain'} block in '{self.section}')"


def read_blocks() -> list[Block]:
    blocks: list[Block] = []
    section, prose = "", []
    lines = README.read_text().splitlines()
    n = 0
    while n < len(lines):
        line = lines[n]
        fence = re.match(r"^```(\w*)\s*$", line)
        if fence:
            start, body = n + 1, []
            n += 1
            while not lines[n].startswith("```"):
                body.append(lines[n])
                n += 1
            blocks.append(Block(fence.group(1), "\n".join(body) + "\n", section, start, "\n".join(prose)))
            prose = []
        else:
            if line.startswith("## "):
                section = line[3:].strip()
            prose.append(line)
        n += 1
    return blocks


def section_prose(name: str) -> str:
    """The text of section ``name`` outside its code blocks."""
    out, inside, fenced = [], False, False
    for line in README.read_text().splitlines():
        if line.startswith("## "):
            inside = line[3:].strip() == name
            continue
        if line.startswith("```"):
            fenced = not fenced
            continue
        if inside and not fenced:
            out.append(line)
    return "\n".join(out)


def inline_code(text: str) -> list[str]:
    return [" ".join(span.split()) for span in re.findall(r"`([^`]+)`", text)]


BLOCKS = read_blocks()


def blocks_of(lang: str) -> list[Block]:
    return [b for b in BLOCKS if b.lang == lang]


def server_blocks() -> list[Block]:
    return [b for b in blocks_of("python") if re.search(r"^\w+ = Server\(", b.text, re.M)]


# -- running what it says ----------------------------------------------------------------------------


@dataclass
class Printed:
    """What the README's own commands printed, for the placeholders of later blocks."""

    token: str | None = None
    digest: str | None = None
    key: str | None = None
    seen: list[str] = field(default_factory=list)


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in SETTINGS}
    env.update(extra)
    return env


def python_c(argv: list[str], printed: Printed, cwd: Path) -> None:
    """``python -c CODE``: run it; remember a token/digest pair or a key if that is what it printed."""
    out = subprocess.run([sys.executable, *argv[1:]], capture_output=True, text=True, cwd=cwd, timeout=60,
                         env=clean_env())
    assert out.returncode == 0, out.stderr
    words = out.stdout.split()
    printed.seen.append(out.stdout)
    if len(words) == 2 and re.fullmatch(r"[0-9a-f]{64}", words[1]):
        printed.token, printed.digest = words
        from truecall import hash_token

        assert hash_token(printed.token) == printed.digest
    elif len(words) == 1:
        printed.key = words[0]


@pytest.fixture(scope="module")
def printed(tmp_path_factory: pytest.TempPathFactory) -> Printed:
    """Every ``python -c`` of the README's bash blocks, run once."""
    seen = Printed()
    cwd = tmp_path_factory.mktemp("readme-printed")
    for block in blocks_of("bash"):
        for argv in commands(block):
            if argv[0] in ("python", "python3") and argv[1:2] == ["-c"]:
                python_c(argv, seen, cwd)
    return seen


def fill(text: str, printed: Printed) -> str:
    """The angle-bracket placeholders, filled from what the README's commands printed."""
    def one(match: re.Match[str]) -> str:
        words = match.group(1).lower()
        if "sha-256" in words or "sha256" in words:
            assert printed.digest, "the README asks for a SHA-256 that none of its commands printed"
            return printed.digest
        if "token" in words:
            assert printed.token, "the README asks for a token that none of its commands printed"
            return printed.token
        raise AssertionError(f"a placeholder the test cannot fill: {match.group(0)}")

    return re.sub(r"<([^<>\n]+)>", one, text)


def commands(block: Block) -> list[list[str]]:
    """The commands of a bash block: comments dropped, ``&&`` chains split."""
    out = []
    for line in block.text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        for part in re.split(r"\s*&&\s*", line):
            out.append(shlex.split(part))
    return out


def tool_arguments(tool: Any, examples: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The README's own example call for ``tool`` if it has one, else its required arguments made up
    from the input schema (a string is ``payments``, the service every example counts)."""
    if tool.name in examples:
        return examples[tool.name]
    made = {}
    schema = tool.input_schema or {}
    for name in schema.get("required", []):
        prop = schema.get("properties", {}).get(name, {})
        kind = prop.get("type")
        made[name] = prop["enum"][0] if "enum" in prop else {"string": "payments", "integer": 1, "number": 1,
                                                            "boolean": True}.get(kind, "payments")
    return made


def example_calls(text: str) -> dict[str, dict[str, Any]]:
    """``server.call_tool("name", {...}, …)`` quoted in the README: name → arguments."""
    calls = {}
    for name, args in re.findall(r'call_tool\("([^"]+)",\s*(\{[^{}]*\})', text):
        calls[name] = ast.literal_eval(args)
    return calls


async def exercise(client: Client, examples: dict[str, dict[str, Any]], only: set[str] | None = None) -> list[str]:
    """List the tools and call each (or those in ``only``); a README example call must succeed."""
    listed = await client.list_tools()
    names = [t.name for t in listed.tools]
    assert names, "the server lists no tools"
    for tool in listed.tools:
        if only is not None and tool.name not in only:
            continue
        result = await client.call_tool(tool.name, tool_arguments(tool, examples))
        if tool.name in examples or only is not None:
            assert result.is_error is False, (tool.name, result)
        assert result.content, (tool.name, result)
        if tool.output_schema is not None and not result.is_error:
            assert isinstance(result.structured_content, dict), (tool.name, result)
    return names


@asynccontextmanager
async def http_client(url: str, headers: dict[str, str]) -> AsyncIterator[Client]:
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30.0, read=60.0)) as http:
        async with Client(streamable_http_client(url, http_client=http), read_timeout_seconds=30) as client:
            yield client


def stdio(command: str, args: list[str], cwd: Path, errlog: Any, env: dict[str, str] | None = None) -> Client:
    params = StdioServerParameters(command=command, args=args, env=clean_env(**(env or {})), cwd=str(cwd))
    return Client(stdio_client(params, errlog=errlog), read_timeout_seconds=30)


def truecall_program(word: str) -> str:
    """``truecall`` or ``.venv/bin/truecall`` as the README writes it: the program installed here."""
    name = Path(word).name
    assert name == "truecall", word
    found = BIN / name if (BIN / name).exists() else shutil.which(name)
    assert found, "the README's truecall command is not installed beside this Python"
    return str(found)


def serve_stdio(args: list[str], cwd: Path, examples: dict[str, dict[str, Any]], only: set[str] | None = None,
                env: dict[str, str] | None = None) -> tuple[list[str], str]:
    """``truecall ARGS`` (a stdio serve) driven by the official client; the tool names and stderr."""
    log = cwd / f"stderr-{len(list(cwd.glob('stderr-*')))}.log"

    async def main() -> list[str]:
        with open(log, "w") as errlog:
            async with stdio(truecall_program("truecall"), args, cwd, errlog, env) as client:
                return await exercise(client, examples, only)

    names = anyio.run(main)
    return names, log.read_text()


def without_port(args: list[str]) -> list[str]:
    """The README's ``--port 8000`` is left to the harness, which picks a free port."""
    out, skip = [], False
    for a in args:
        if skip:
            skip = False
        elif a == "--port":
            skip = True
        else:
            out.append(a)
    return out


def serve_http(args: list[str], cwd: Path, examples: dict[str, dict[str, Any]], headers: dict[str, str],
               only: set[str] | None = None) -> tuple[list[str], str]:
    with served(cwd, *without_port(args[1:])) as server:
        async def main() -> list[str]:
            async with http_client(server.url, headers) as client:
                return await exercise(client, examples, only)

        names = anyio.run(main)
        return names, server.log.read_text(errors="replace")


# -- the blocks --------------------------------------------------------------------------------------


KNOWN = {"bash", "python", "json", "text", ""}


def test_every_block_is_of_a_kind_this_test_runs() -> None:
    assert BLOCKS, "no code blocks found in README.md"
    unknown = [str(b) for b in BLOCKS if b.lang not in KNOWN]
    assert unknown == [], f"blocks this test does not run: {unknown}"
    assert server_blocks(), "the README shows no server"


@pytest.fixture
def app_files(tmp_path: Path) -> list[Path]:
    """Each server block of the README saved as a file, as a reader would paste it."""
    files = []
    for n, block in enumerate(server_blocks()):
        path = tmp_path / f"app{n}" / "file.py"
        path.parent.mkdir()
        path.write_text(block.text)
        files.append(path)
    return files


def serve_commands() -> list[list[str]]:
    """The ``truecall serve …`` / ``truecall inspect …`` commands quoted in "Using it"."""
    found = []
    for span in inline_code(section_prose("Using it")):
        if span.startswith("truecall ") and "path/to/file.py" in span:
            found.append(shlex.split(span))
    return found


def test_using_it_quotes_the_commands_to_serve_it() -> None:
    cmds = serve_commands()
    assert any("--http" not in c and c[1] == "serve" for c in cmds), "no stdio serve command in 'Using it'"
    assert any("--http" in c and "--token-file" in c for c in cmds), "no HTTP serve command with tokens"


def test_the_using_it_servers_serve_over_stdio_as_written(app_files: list[Path]) -> None:
    examples = example_calls(section_prose("Using it"))
    for path in app_files:
        for argv in serve_commands():
            if argv[1] != "serve" or "--http" in argv:
                continue
            args = [a.replace("path/to/file.py", str(path)) for a in argv[1:]]
            names, stderr = serve_stdio(args, path.parent, examples)
            # no principal configured: served as the local user, and said so once
            notes = [line for line in stderr.splitlines() if "no principal configured" in line]
            assert len(notes) == 1, stderr
            assert "Traceback" not in stderr


def test_the_using_it_servers_serve_over_http_with_the_readme_token_file(app_files: list[Path],
                                                                         printed: Printed) -> None:
    [token_block] = [b for b in blocks_of("json") if '"tokens"' in b.text]
    examples = example_calls(section_prose("Using it"))
    for path in app_files:
        (path.parent / "tokens.json").write_text(fill(token_block.text, printed))
        for argv in serve_commands():
            if argv[1] != "serve" or "--token-file" not in argv:
                continue
            args = [a.replace("path/to/file.py", str(path)) for a in argv[1:]]
            names, log = serve_http(args, path.parent, examples, {"Authorization": f"Bearer {printed.token}"})
            assert "Traceback" not in log


def test_http_without_credentials_says_how_to_configure_them(app_files: list[Path]) -> None:
    """The README's HTTP command without a token file: the server says at start what a token file
    is and how to make a token, and answers 401 (no silent 401s)."""
    [plain] = [c for c in serve_commands() if "--http" in c and "--token-file" not in c]
    path = app_files[0]
    args = [a.replace("path/to/file.py", str(path)) for a in plain[1:]]
    with served(path.parent, *without_port(args[1:])) as server:
        reply = httpx.post(server.url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, timeout=10,
                           headers={"Accept": "application/json, text/event-stream"})
        log = server.log.read_text()
    assert reply.status_code == 401
    assert "no credentials configured" in log and '"sha256"' in log and "new_token" in log
    assert "demo-acme-operator" in log and "--token-file" in log


def test_inspect_as_written(app_files: list[Path]) -> None:
    for argv in serve_commands():
        if argv[1] != "inspect":
            continue
        for path in app_files:
            args = [a.replace("path/to/file.py", str(path)) for a in argv[1:]]
            out = subprocess.run([truecall_program(argv[0]), *args], capture_output=True, text=True, timeout=60,
                                 cwd=path.parent, env=clean_env())
            assert out.returncode == 0, out.stderr


def test_python_fragments_compile_and_import() -> None:
    """A block that is not a whole program (a client ``async with`` at top level) cannot run alone:
    it must at least be valid Python (top-level await allowed) whose imports exist."""
    fragments = [b for b in blocks_of("python") if b not in server_blocks()]
    for block in fragments:
        tree = compile(block.text, str(block), "exec", flags=ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
        imports = [node for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))]  # type: ignore[attr-defined]
        assert imports, f"{block}: nothing to check"
        exec(compile(ast.Module(body=imports, type_ignores=[]), str(block), "exec"), {})


# -- bash ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("block", blocks_of("bash"), ids=str)
def test_bash_block(block: Block, printed: Printed, tmp_path: Path) -> None:
    for argv in commands(block):
        program = argv[0]
        if program in ("python", "python3"):
            assert shutil.which(program) or program == "python", f"{program} is not on PATH"
            if argv[1:3] == ["-m", "venv"]:  # part of installing: not repeated, but it would run
                import importlib.util

                assert importlib.util.find_spec("venv") and importlib.util.find_spec("ensurepip")
            elif argv[1:2] == ["-c"]:
                assert any(printed.seen), "the module fixture ran it"  # run once, in the fixture
            else:
                raise AssertionError(f"{block}: a python command this test does not run: {argv}")
        elif Path(program).name == "pip":
            # Installing is not repeated in a test: pip is there and the project it installs is this one.
            assert argv[1:] == ["install", "-e", "."], argv
            assert subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True).returncode == 0
            assert 'truecall = "truecall.__main__:main"' in (ROOT / "pyproject.toml").read_text()
        elif Path(program).name == "truecall":
            truecall_program(program)
            if argv[1:] == ["serve"]:  # the desk, over stdio
                names, stderr = serve_stdio(["serve"], tmp_path, {"incident.search": {"service": "payments"}},
                                            only={"incident.search"})
                assert "incident.search" in names and "Traceback" not in stderr
                assert (tmp_path / ".truecall" / "desk.db").is_file()  # the default database
            else:
                raise AssertionError(f"{block}: a truecall command this test does not run: {argv}")
        elif program in (".", "source"):
            # Activating the environment the install made: the script is where the README says.
            assert argv[1:] == [".venv/bin/activate"], argv
            assert (BIN / "activate").is_file(), "this environment has no activate script"
        elif program.startswith("./"):
            script = ROOT / program
            # The whole suite is not run from inside itself: the script is there and runs pytest.
            assert script.is_file() and os.access(script, os.X_OK), program
        else:
            raise AssertionError(f"{block}: a command this test does not run: {argv}")


def test_the_readme_key_command_makes_a_key_both_settings_take(printed: Printed,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    assert printed.key, "the README's key command printed nothing"
    from truecall.storage._keys import keys_from_env
    from truecall.protocol import Sealer

    monkeypatch.setenv("TRUECALL_STATE_KEYS", printed.key)
    monkeypatch.setenv("TRUECALL_AUDIT_KEY", printed.key)
    sealer = Sealer.from_env()
    assert sealer.open(sealer.seal({"who": "me"}), {"who": "me"})["who"] == "me"
    assert len(keys_from_env("TRUECALL_AUDIT_KEY")) == 1


# -- json ----------------------------------------------------------------------------------------------


def test_every_json_block_parses(printed: Printed) -> None:
    for block in blocks_of("json"):
        orjson.loads(fill(block.text, printed))


def test_the_token_file_block_is_a_token_file(printed: Printed, tmp_path: Path) -> None:
    from truecall.auth import StaticTokens

    [block] = [b for b in blocks_of("json") if '"tokens"' in b.text]
    path = tmp_path / "tokens.json"
    path.write_text(fill(block.text, printed))
    principal = StaticTokens.from_file(path).authenticate(printed.token)
    assert principal.subject and principal.tenant


def client_configs() -> list[tuple[Block, str, dict[str, Any]]]:
    out = []
    for block in blocks_of("json"):
        data = orjson.loads(block.text) if "<" not in block.text else {}
        for name, entry in data.get("mcpServers", {}).items():
            out.append((block, name, entry))
    return out


@pytest.mark.parametrize("block, name, entry", client_configs(), ids=lambda v: v if isinstance(v, str) else "")
def test_client_configuration_works(block: Block, name: str, entry: dict[str, Any], tmp_path: Path) -> None:
    examples = {"incident.search": {"service": "payments"}}
    if "command" in entry:  # stdio: the command is run as the host would
        truecall_program(entry["command"].replace("/path/to/.venv/bin/", ""))
        env = {k: v.replace("/path/to/", f"{tmp_path}/") for k, v in entry.get("env", {}).items()}
        names, stderr = serve_stdio(entry["args"], tmp_path, examples, only={"incident.search"}, env=env)
        assert "incident.search" in names and "Traceback" not in stderr
        for value in env.values():
            if value.startswith(str(tmp_path)):
                assert Path(value).exists()  # the database it names is the one used
    else:  # HTTP: the server the README says to start, called at its URL with its headers
        [command] = [shlex.split(c) for c in inline_code(block.before) if c.startswith("truecall serve")]
        assert entry["url"].startswith("http://127.0.0.1:8000/")
        with served(tmp_path, *without_port(command[2:])) as server:
            url = entry["url"].replace("http://127.0.0.1:8000", f"http://127.0.0.1:{server.port}")

            async def main() -> list[str]:
                async with http_client(url, entry.get("headers", {})) as client:
                    return await exercise(client, examples, {"incident.search"})

            assert "incident.search" in anyio.run(main)


# -- the probe report -----------------------------------------------------------------------------------


def test_the_probe_report_is_what_the_probe_prints(tmp_path: Path) -> None:
    """The README's report comes from the command it names: every finding it shows and its summary
    line are what that command prints today (a report that drifted from the probe fails here)."""
    [report] = [b for b in blocks_of("text") if b.text.startswith("truecall probe ")]
    lines = report.text.splitlines()
    argv = shlex.split(lines[0])
    assert argv[:2] == ["truecall", "probe"] and "--" in argv
    cut = argv.index("--")
    command = [str(BIN / "truecall"), *argv[1:cut + 1], sys.executable, *argv[cut + 2:]]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "TRUECALL_LANG": "en"})
    printed = done.stdout.splitlines()
    shown = [line for line in lines if line.startswith(("  FAILURE ", "  WARNING "))]
    assert shown, "the README's report shows no finding"
    missing = [line for line in shown if line not in printed]
    assert missing == [], f"findings the probe no longer prints: {missing}\n{done.stdout[-3000:]}"
    summary = [line for line in lines if line.startswith("summary: ")]
    assert summary and summary[0] in printed, done.stdout[-2000:]
    assert done.returncode == 2  # failures found, as the summary says


def test_every_link_of_the_readme_reaches_a_file_or_a_section() -> None:
    """The README is an index into docs/: a link to a page that moved, or to a section that is gone, fails."""
    text = README.read_text()
    sections = {re.sub(r"[^a-z0-9 -]", "", h.lower()).replace(" ", "-") for h in re.findall(r"^#+ (.+)$", text, re.M)}
    broken = []
    for target in re.findall(r"\]\(([^)]+)\)", text):
        if target.startswith(("http://", "https://")):
            continue
        path, _, anchor = target.partition("#")
        if path and not (ROOT / path).exists():
            broken.append(target)
        elif not path and anchor not in sections:
            broken.append(target)
    assert broken == []

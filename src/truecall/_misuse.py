"""One line per mistake: how the ``truecall`` commands report what stopped them.

A wrong APP path, a setting whose value cannot work, a database that cannot be opened or a port
that is taken is the operator's to fix, and a traceback buries the one line that says what to
fix.  Each is a :class:`Misuse`: reported as one line naming the setting, exit status 2.  Any
other exception is a bug (ours or the app's) and is reported as one line too, naming its type,
exit status 1.  ``--debug`` or ``TRUECALL_DEBUG=1`` prints the traceback as well.

Both entries use it: ``truecall serve`` (argparse, :mod:`truecall.cli.serving`) and every other
command (typer, :mod:`truecall.cli`).
"""

from __future__ import annotations

import os
import sys
import traceback
from typing import Sequence

__all__ = ["Misuse", "ServeError", "SettingError", "ENV_DEBUG", "DEBUG_FLAG", "take_debug", "debug_from_env", "report"]

ENV_DEBUG = "TRUECALL_DEBUG"
DEBUG_FLAG = "--debug"


class Misuse(Exception):
    """A usage or configuration error: its message is the whole line and names the setting."""

    status = 2
    #: Whether the line should say how to see the traceback: true when the misuse surfaced as an
    #: exception in the app's own code, whose traceback points at the line to fix.
    traceback_helps = False


class ServeError(Misuse):
    """A usage or configuration error: said in one line, exit status 2 (the traceback only with ``--debug``).

    Raised by ``truecall serve`` (:mod:`truecall.cli.serving`, which exports it) and by its ``--workers``
    supervisor (:mod:`truecall.cli._workers`), which ``serving`` imports: it lives here, below both."""


class SettingError(Misuse, ValueError):
    """A setting (environment variable, option, argument) whose value cannot work.

    A :class:`ValueError` too, so that code which validates values and catches ``ValueError``
    keeps working; the entries report it as one line instead of a traceback."""


def debug_from_env() -> bool:
    return os.environ.get(ENV_DEBUG, "").strip().lower() not in ("", "0", "false", "no", "off")


def take_debug(argv: Sequence[str]) -> tuple[list[str], bool]:
    """``argv`` without ``--debug`` (anywhere before a ``--``), and whether the traceback is wanted
    (the flag or ``TRUECALL_DEBUG``).  Taken out before the command's own parser sees it, so that
    ``--debug`` works after any command without each declaring it."""
    args = list(argv)
    end = args.index("--") if "--" in args else len(args)
    head = [a for a in args[:end] if a != DEBUG_FLAG]
    return head + args[end:], len(head) != end or debug_from_env()


def report(exc: BaseException, prog: str, debug: bool) -> int:
    """Say what stopped ``prog`` on stderr, in one line (after the traceback with ``debug``); the exit status.

    The line ends with how to see the traceback when there is one worth seeing: a bug, or a
    misuse that an exception in the app's own code revealed (:attr:`Misuse.traceback_helps`)."""
    if debug:
        traceback.print_exception(exc)
    status = exc.status if isinstance(exc, Misuse) else 1
    worth_a_traceback = exc.traceback_helps if isinstance(exc, Misuse) else True
    hint = f" ({DEBUG_FLAG} or {ENV_DEBUG}=1 shows the traceback)" if worth_a_traceback and not debug else ""
    print(f"{prog}: {describe(exc)}{hint}", file=sys.stderr, flush=True)
    return status


def one_line(text: str) -> str:
    """``text`` with its line breaks and runs of blanks made single spaces."""
    return " ".join(text.split())


def describe(exc: BaseException) -> str:
    """One line for an exception of unknown kind: the message, with the type when it is not one of ours."""
    if isinstance(exc, Misuse):
        return one_line(str(exc))
    message = one_line(str(exc))
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__

"""One worker process of ``truecall serve --http --workers N``: ``python -m truecall.cli._worker_process``.

The supervisor (:mod:`truecall.cli._workers`) starts each worker as a fresh interpreter running this
module, with its listening socket and its lifeline inherited; the worker reads what to serve from the
lifeline and runs :func:`truecall.cli.serving.serve` as one of the supervisor's workers.

Its own module because it sits above both: ``serving`` starts the supervisor, the worker calls
``serving``.  In ``_workers`` it made ``_workers`` and ``serving`` import each other (each from inside a
function, a cycle the import graph did not show).
"""

from __future__ import annotations

import socket
import sys

from . import serving
from .._misuse import describe, report
from ._workers import WorkerSide, _die_with_parent, _read_config, _watch_lifeline

__all__ = ["worker_main"]


def worker_main(argv: list[str]) -> int:
    """``python -m truecall.cli._worker_process LISTEN_FD LINE_FD``: serve on the inherited socket."""
    listener = socket.socket(fileno=int(argv[0]))
    line = socket.socket(fileno=int(argv[1]))
    for sock in (listener, line):  # a subprocess a tool starts inherits neither
        sock.set_inheritable(False)
    config = _read_config(line)
    _die_with_parent(int(config["supervisor"]))
    _watch_lifeline(line)
    options = dict(config["options"])

    def ready() -> None:
        try:
            line.sendall(b"ready\n")
        except OSError:
            pass

    side = WorkerSide(listener, bool(config["banner"]), dict(config["keys"]), ready)
    try:
        serving.serve(options.pop("target"), http=True, **options, worker=side)
    except Exception as exc:
        return report(exc, "truecall serve", bool(config.get("debug")))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(worker_main(sys.argv[1:]))
    except KeyboardInterrupt:
        sys.exit(130)
    except BaseException as exc:  # pragma: no cover - say why in one line
        if isinstance(exc, SystemExit):
            raise
        print(f"truecall serve: worker: {describe(exc)}", file=sys.stderr, flush=True)
        sys.exit(1)

"""The ``truecall`` command.  ``truecall serve`` starts without loading the CLI framework (a
server would carry typer and click in memory for nothing); every other command is
``truecall.cli``'s."""

from __future__ import annotations

import sys


def main() -> None:
    args = sys.argv[1:]
    if args in (["--version"], ["-V"]):
        from ._version import __version__

        print(f"truecall {__version__}")
        return
    if args[:1] == ["serve"] and not {"--help", "-h"} & set(args):  # help: the one style, typer's
        from .cli.serving import main as serve

        raise SystemExit(serve(args[1:]))
    from .cli._commands import main as cli

    cli()


if __name__ == "__main__":
    main()

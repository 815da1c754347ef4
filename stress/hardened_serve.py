"""Kept for ``slow_peers.py --hardened``: the guards now ship in ``truecall serve`` itself
(``truecall.transports.guarded``), so this simply runs the real CLI."""

from __future__ import annotations

import sys


def main() -> None:
    from truecall.__main__ import main as truecall_main

    sys.argv[0] = "truecall"
    truecall_main()


if __name__ == "__main__":
    main()

"""``python -m truecall.cli``: the ``truecall`` command, as ``python -m truecall``."""

from ._commands import main

main()

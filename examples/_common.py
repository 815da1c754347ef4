"""Shared set-up for the examples: a desk on a throw-away database."""

import os
import tempfile

# These examples print the desk's Chinese lines: ask for them (truecall speaks English by default).
# `TRUECALL_LANG=en python 01_search.py` shows the English product instead.
os.environ.setdefault("TRUECALL_LANG", "zh")

from truecall.incidents import build_desk  # noqa: E402

OPERATOR_TOKEN = "demo-acme-operator"


def desk():
    # Built without I/O; started here, as serving would, since the examples call it directly.
    return build_desk(os.path.join(tempfile.mkdtemp(prefix="truecall-example-"), "desk.db")).start()

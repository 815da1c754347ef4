"""Shared set-up for the examples: a desk on a throw-away database."""

import os
import tempfile

from truecall.incidents import build_desk

OPERATOR_TOKEN = "demo-acme-operator"


def desk():
    return build_desk(os.path.join(tempfile.mkdtemp(prefix="truecall-example-"), "desk.db"))

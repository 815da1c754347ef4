"""Reliability battery for truecall: protocol fuzzing, load/soak and hostile HTTP peers.

Run the long versions from the repository root (``python stress/fuzz.py ...``); the CI
slices live in ``tests/reliability/test_reliability.py`` and ``test_slow_peers.py`` and import these modules.
"""

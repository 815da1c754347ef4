"""The suite's own objects are frozen out of garbage collection (tests/conftest.py
``pytest_collection_finish``): a test that times a server from this process must not charge it with
this process's full collections (~165 ms each over what collection made, unfrozen)."""

from __future__ import annotations

import gc

import pytest


def test_what_collection_made_is_frozen(request: pytest.FixtureRequest) -> None:
    items = request.session.items
    assert items, "run inside a collected session"
    # every collected item is a few objects at least (the item, its node id, its keywords, ...)
    assert gc.get_freeze_count() >= 5 * len(items), (gc.get_freeze_count(), len(items))
    oldest = {id(o) for o in gc.get_objects(generation=2)}  # (frozen objects are in no generation)
    assert not any(id(item) in oldest for item in items[:3])

"""The store's conformance suite runs here: ``store`` is on SQLite and on PostgreSQL."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from workers.store import TaskStore


@pytest.fixture
def store(make_store: Callable[..., TaskStore]) -> TaskStore:
    return make_store()

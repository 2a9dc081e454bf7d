"""Counting a database's commits: what a batch's one transaction is held to."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import sqlalchemy as sa


@contextlib.contextmanager
def counting_commits(engine: sa.Engine) -> Iterator[list[sa.Connection]]:
    """A list that gets each connection's commit on ``engine`` while the block runs."""
    commits: list[sa.Connection] = []

    def committed(conn: sa.Connection) -> None:
        commits.append(conn)

    sa.event.listen(engine, "commit", committed)
    try:
        yield commits
    finally:
        sa.event.remove(engine, "commit", committed)

"""Two desktops (two hosts) on one shared queue: a watched file is submitted once, a finished
run is told once — whichever host gets there first, however they race. Each side has its own
connections to the database, as two hosts have."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from fredica_app.database import open_shared_database
from fredica_app.library.watched import WatchedFiles
from tests.support import postgres
from workers.spec import parse_spec, prepare_run
from workers.store import TaskStore
from workers.tasktypes import TaskTypeRegistry


@pytest.fixture
def pg(postgres_database: postgres.PostgresDatabase) -> str:
    postgres_database.reset()
    return postgres_database.url


def test_two_hosts_watching_one_folder_take_each_file_in_once(pg: str) -> None:
    engines = [open_shared_database(pg) for _ in range(2)]
    hosts = [WatchedFiles(e) for e in engines]
    won: list[list[Any]] = [[], []]
    start = threading.Barrier(2)

    def watch(i: int) -> None:
        start.wait()
        for n in range(60):
            row = hosts[i].take_in(
                folder="/mnt/media/in",
                template="transcode_mp4",
                content_fingerprint=f"fp-{n}",
                path=f"/mnt/media/in/clip-{n}.mkv",
            )
            if row is not None:
                won[i].append(row.content_fingerprint)

    threads = [threading.Thread(target=watch, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    for e in engines:
        e.dispose()
    assert sorted(won[0] + won[1]) == sorted(f"fp-{n}" for n in range(60))
    assert not set(won[0]) & set(won[1])


async def test_two_windows_tell_each_finished_run_once(pg: str, registry: TaskTypeRegistry) -> None:
    from workers.db import create_postgres_engine

    a, b = TaskStore(create_postgres_engine(pg)), TaskStore(create_postgres_engine(pg))
    try:
        runs = []
        for i in range(20):
            spec = {"tasks": [{"key": f"n{i}", "type": "NOOP"}]}
            created = await a.create_run(prepare_run(parse_spec(spec), registry))
            [claim] = await a.claim("w")
            await a.complete(claim.id, claim.lease_token)
            runs.append(created.run_id)
        told: list[str] = []
        for batch in await asyncio.gather(
            *(s.take_notices(limit=3) for s in (a, b, a, b, a, b, a, b, a, b, a, b, a, b))
        ):
            told += [n.workflow_run_id for n in batch]
        told += [n.workflow_run_id for n in await a.take_notices()]
        assert sorted(told) == sorted(runs)  # each run told once, by one window
    finally:
        await a.close()
        await b.close()


async def test_each_window_tells_the_runs_its_own_host_submitted(
    pg: str, registry: TaskTypeRegistry
) -> None:
    """Two hosts' windows on one queue: a run is told by the window of the host it was
    submitted from, whichever engine ran it; a run that says no home (submitted before runs
    said theirs) by either, once."""
    from workers.db import create_postgres_engine

    stores = {home: TaskStore(create_postgres_engine(pg)) for home in ("laptop", "studio")}
    anonymous = TaskStore(create_postgres_engine(pg))
    for home, store in stores.items():
        store.home_id = home
    try:
        submitted: dict[str, list[str]] = {"laptop": [], "studio": [], "none": []}
        for i in range(12):
            home = ("laptop", "studio", "none")[i % 3]
            store = anonymous if home == "none" else stores[home]
            spec = {"tasks": [{"key": f"n{i}", "type": "NOOP"}]}
            created = await store.create_run(prepare_run(parse_spec(spec), registry))
            submitted[home].append(created.run_id)
        # One engine (the studio's) runs them all.
        for _ in range(12):
            [claim] = await stores["studio"].claim("studio-worker")
            await stores["studio"].complete(claim.id, claim.lease_token)
        told = {
            home: [n.workflow_run_id for n in await store.take_notices()]
            for home, store in stores.items()
        }
        assert set(submitted["laptop"]) <= set(told["laptop"])
        assert set(submitted["studio"]) <= set(told["studio"])
        assert not set(submitted["laptop"]) & set(told["studio"])
        assert not set(submitted["studio"]) & set(told["laptop"])
        # The runs without a home: told once, by the first window that asked.
        every = [run for runs in submitted.values() for run in runs]
        assert sorted(told["laptop"] + told["studio"]) == sorted(every)
        assert await stores["laptop"].take_notices() == []
    finally:
        for store in (*stores.values(), anonymous):
            await store.close()

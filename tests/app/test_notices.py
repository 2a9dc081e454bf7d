"""What the desktop app is told of finished runs (``services.notices``): the notices the store
kept, dressed with the material's title and what failed, each taken once."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from fredica_app.services import Fredica
from fredica_app.services.notices import take_run_notices
from tests.support.apps import opened_app, submit_chain
from workers.states import ErrorType


@pytest.fixture
async def app(tmp_path: Path) -> AsyncIterator[Fredica]:
    async with opened_app(tmp_path / "data") as app:
        yield app


async def test_a_completed_and_a_failed_run_are_told_once_with_names_and_what_failed(
    app: Fredica,
) -> None:
    material = app.library.add(
        source="/media/Interview.mkv", title="Interview", local_path=None, kind="video"
    )
    done = await submit_chain(app, material.id, "a")
    broken = await submit_chain(app, None, "probe", "convert")
    store = app.store
    while claimed := await store.claim("w", limit=1):
        [c] = claimed
        if c.task.key == "probe" and c.task.workflow_run_id == broken:
            await store.complete(c.id, c.lease_token)
        elif c.task.key == "convert":
            await store.fail(
                c.id, c.lease_token, "ffmpeg exited 1\nmore detail", ErrorType.PAYLOAD_ERROR
            )
        else:
            await store.complete(c.id, c.lease_token)
    taken = await take_run_notices(app)
    assert (taken.total, taken.failed) == (2, 1)
    notices = taken.notices
    assert [(n.kind, n.run_id) for n in notices] == [
        ("run_completed", done),
        ("run_failed", broken),
    ]
    completed, failed = notices
    assert completed.title == "Interview" and not completed.failed
    assert completed.failed_task is None and completed.error is None
    # No material: the run is named by its id (no template either).
    assert failed.title == broken[:8] and failed.failed
    assert failed.failed_task == "NOOP" and failed.error == "ffmpeg exited 1\nmore detail"
    assert (await take_run_notices(app)).notices == []


async def test_a_notice_of_a_run_removed_before_it_was_shown_is_dropped(app: Fredica) -> None:
    gone = await submit_chain(app, None, "a")
    kept = await submit_chain(app, None, "b")
    while claimed := await app.store.claim("w", limit=1):
        await app.store.complete(claimed[0].id, claimed[0].lease_token)
    await app.store.delete_run(gone)
    assert [n.run_id for n in (await take_run_notices(app)).notices] == [kept]


async def test_thousands_finished_are_counted_true_and_told_in_part(app: Fredica) -> None:
    """2,000 runs finished unseen (a third failed): the counts are the true ones, the detail
    is the first 200, and all are taken — none is told again."""
    for n in range(2000):
        await app.submit({"tasks": [{"key": "a", "type": "NOOP", "priority": n}]})
    n = 0
    while claimed := await app.store.claim("w", limit=50):
        for c in claimed:
            if n % 3 == 0:
                await app.store.fail(c.id, c.lease_token, "broken", ErrorType.PAYLOAD_ERROR)
            else:
                await app.store.complete(c.id, c.lease_token)
            n += 1
    taken = await take_run_notices(app)
    assert (taken.total, taken.failed) == (2000, 667)
    assert len(taken.notices) == 200
    again = await take_run_notices(app)
    assert (again.total, again.notices) == (0, [])

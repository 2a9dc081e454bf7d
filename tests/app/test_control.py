"""The front door for control (``Fredica.control``): every verb, with the engine in this
process (told directly: the executor sees the change at once) and with the engine in another
process (a real ``fredica worker`` on the same data directory, which reads the database)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from fredica_app.errors import InvalidState, NotFound
from fredica_app.services import Control, ControlResult, Fredica
from tests.support.apps import opened_app
from workers.engine import WorkerEngine
from workers.events import Event, TaskChanged

EXE = str(Path(sys.executable).parent / "fredica")

#: A long SLEEP (it never ends by itself during a test) and a NOOP after it.
SPEC = {
    "tasks": [
        {"key": "sleep", "type": "SLEEP", "payload": {"seconds": 120}},
        {"key": "after", "type": "NOOP", "depends_on": ["sleep"]},
    ]
}


async def until(check: Callable[[], Awaitable[bool]], what: str, within: float = 10.0) -> float:
    """Wait until ``check()``; the seconds it took."""
    start = time.monotonic()
    while not await check():
        if time.monotonic() - start > within:
            raise AssertionError(f"not within {within} s: {what}")
        await asyncio.sleep(0.05)
    return time.monotonic() - start


class Watch:
    """Reads of one task, for :func:`until`."""

    def __init__(self, app: Fredica, task_id: str) -> None:
        self.app, self.id = app, task_id

    async def status(self) -> str:
        return (await self.app.store.get_task(self.id)).status.value

    async def running(self) -> bool:
        task = await self.app.store.get_task(self.id)
        return task.status.value == "running" and not task.is_paused and task.progress > 0

    async def parked(self) -> bool:
        """Paused, and its executor has stopped for it ("paused", no longer "pausing…")."""
        task = await self.app.store.get_task(self.id)
        return task.is_paused and task.status_text == "paused"

    async def progress(self) -> float:
        return (await self.app.store.get_task(self.id)).progress

    async def advancing(self, since: float) -> bool:
        task = await self.app.store.get_task(self.id)
        return not task.is_paused and task.progress > since


@contextlib.asynccontextmanager
async def engine_here(app: Fredica) -> AsyncIterator[WorkerEngine]:
    """An engine running in this process, in the test's event loop."""
    async with app.engine_session() as engine:
        runner = asyncio.create_task(engine.run())
        try:
            yield engine
        finally:
            await engine.stop()
            await runner


# --- the engine in this process ---------------------------------------------------------------


async def test_in_process_every_verb_reaches_the_executor_at_once(tmp_path: Path) -> None:
    async with opened_app(tmp_path / "data") as app:
        created = await app.submit(SPEC)
        run_id, sleep, after = created.run_id, created.task_ids["sleep"], created.task_ids["after"]
        both = {sleep, after}
        control = app.control
        assert control.engine is None  # no engine yet: the store would be written
        async with engine_here(app) as engine:
            # What a database write tells the engine it reads at its next poll or heartbeat
            # (one second or more from here); what reaches the executor sooner came through
            # the engine's own methods.
            engine.watch_interval = engine.heartbeat_interval = 60.0
            events: list[Event] = []
            engine.bus.subscribe(events.append)
            watch = Watch(app, sleep)
            assert control.engine is engine
            await until(watch.running, "the sleep runs")

            result = await control.pause(sleep)
            assert result == ControlResult(sleep, "pause", "task", (sleep,))
            # Published by the engine before the call returned: it was told, not the store.
            assert TaskChanged(sleep, run_id, "paused") in events
            assert await until(watch.parked, "the executor stops for the pause") < 2.0
            held_at = await watch.progress()
            await asyncio.sleep(0.3)
            assert await watch.progress() == held_at  # stopped, not merely marked

            result = await control.resume(sleep)
            assert result == ControlResult(sleep, "resume", "task", (sleep,))
            assert TaskChanged(sleep, run_id, "resumed") in events
            await until(lambda: watch.advancing(held_at), "the sleep goes on", within=5.0)
            assert (await control.resume(sleep)).changed == ()  # nothing held: no change

            result = await control.cancel(sleep)
            assert (result.target, set(result.changed)) == ("task", both)
            assert await watch.status() == "cancelled"

            async def stopped() -> bool:
                return sleep not in engine.running_ids

            assert await until(stopped, "the executor ends on the cancel") < 2.0

            result = await control.retry(sleep)
            assert (result.action, result.target, set(result.changed)) == ("retry", "task", both)
            await until(watch.running, "the retried sleep is claimed", within=5.0)

            # The same verbs on the whole run.
            result = await control.pause(run_id)
            assert (result.target, set(result.changed)) == ("run", both)
            await until(watch.parked, "the run's running task stops", within=5.0)
            held_at = await watch.progress()
            result = await control.resume(run_id)
            assert (result.target, set(result.changed)) == ("run", both)
            await until(lambda: watch.advancing(held_at), "the run goes on", within=5.0)
            result = await control.cancel(run_id)
            assert (result.target, set(result.changed)) == ("run", both)
            await until(stopped, "the run's executor ends", within=5.0)
            assert (await app.store.get_run(run_id)).status.value == "cancelled"
            result = await control.retry(run_id)
            assert (result.target, set(result.changed)) == ("run", both)
            await until(watch.running, "the retried run runs", within=5.0)
            await control.cancel(run_id)
        assert control.engine is None  # the session ended: back to the store


async def test_in_process_queue_pause_stops_claims_at_once(tmp_path: Path) -> None:
    async with opened_app(tmp_path / "data") as app, engine_here(app) as engine:
        control = app.control
        await control.pause_queue()
        assert engine.queue_paused and control.queue_paused and app.queue_flag.exists()
        created = await app.submit(
            {"tasks": [{"key": "s", "type": "SLEEP", "payload": {"seconds": 0.1}}]}
        )
        engine.wake()  # as a submission in this process does
        watch = Watch(app, created.task_ids["s"])
        await asyncio.sleep(1.0)  # the engine's flag watcher has looked twice meanwhile
        assert await watch.status() == "pending" and engine.queue_paused

        await control.resume_queue()
        assert not engine.queue_paused and not control.queue_paused
        assert not app.queue_flag.exists()

        async def done() -> bool:
            return await watch.status() == "completed"

        assert await until(done, "the task runs once the queue is resumed") < 2.0


@pytest.mark.parametrize("where", ["engine here", "no engine"])
async def test_errors_and_no_ops_are_the_same_either_way(tmp_path: Path, where: str) -> None:
    async with opened_app(tmp_path / "data") as app:
        finished = await app.submit({"tasks": [{"key": "n", "type": "NOOP"}]})
        async with app.engine_session() as engine:
            await engine.run(until_idle=True)
        done_run, done_task = finished.run_id, finished.task_ids["n"]
        waiting = (await app.submit(SPEC)).task_ids["sleep"]

        async with contextlib.AsyncExitStack() as stack:
            if where == "engine here":
                await stack.enter_async_context(engine_here(app))
                await until(Watch(app, waiting).running, "the sleep runs")
            control = app.control
            assert (control.engine is None) == (where == "no engine")
            await _same_errors(control, done_run, done_task, waiting)
            await control.cancel(waiting)  # a stopping engine would wait for it to checkpoint


async def _same_errors(control: Control, done_run: str, done_task: str, waiting: str) -> None:
    for verb in (control.pause, control.resume, control.cancel, control.retry):
        with pytest.raises(NotFound, match=r"^no task or run with id 'nope'$"):
            await verb("nope")
    for verb in (control.pause, control.resume, control.cancel):
        with pytest.raises(InvalidState, match=rf"^task {done_task} is already completed$"):
            await verb(done_task)
    with pytest.raises(InvalidState, match="only failed or cancelled tasks can be retried"):
        await control.retry(done_task)
    with pytest.raises(InvalidState, match="only failed or cancelled tasks can be retried"):
        await control.retry(waiting)  # pending or running: nothing to retry
    with pytest.raises(InvalidState, match=rf"^run {done_run} has no failed or cancelled task"):
        await control.retry(done_run)
    # A finished run has nothing left to hold or cancel: no change, no error.
    for verb in (control.pause, control.resume, control.cancel):
        assert (await verb(done_run)).changed == ()
    with pytest.raises(ValueError, match="unknown action"):
        await control.apply("explode", done_run)  # type: ignore[arg-type]


# --- the engine in another process --------------------------------------------------------------


@contextlib.asynccontextmanager
async def worker(data: Path) -> AsyncIterator[None]:
    """A real ``fredica worker`` on ``data``, running one task at a time: a task it claims
    shows that the attempt it ran before has ended."""
    proc = await asyncio.create_subprocess_exec(
        EXE,
        "--data-dir",
        str(data),
        "worker",
        "--max-workers",
        "1",
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        yield
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = await asyncio.wait_for(proc.communicate(), 60)
        assert proc.returncode == 0, err.decode()


async def fredica_cli(data: Path, *args: str) -> tuple[int, str]:
    """The ``fredica`` command, run as a user would (its own process)."""
    proc = await asyncio.create_subprocess_exec(
        EXE,
        "--data-dir",
        str(data),
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "FREDICA_DATA_DIR": str(data)},
    )
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode is not None
    return proc.returncode, out.decode() + err.decode()


@pytest.mark.slow
async def test_a_worker_in_another_process_follows_the_front_door(tmp_path: Path) -> None:
    data = tmp_path / "data"
    async with opened_app(data) as app:
        finished = await app.submit({"tasks": [{"key": "n", "type": "NOOP"}]})
        created = await app.submit(SPEC)
        run_id, sleep, after = created.run_id, created.task_ids["sleep"], created.task_ids["after"]
        both = {sleep, after}
        watch = Watch(app, sleep)
        control = app.control
        async with worker(data):
            await until(watch.running, "the worker runs the sleep", within=60)
            assert control.engine is None  # not ours: through the database

            result = await control.pause(sleep)
            assert result == ControlResult(sleep, "pause", "task", (sleep,))
            await until(watch.parked, "the worker's executor stops for the pause", within=5)
            held_at = await watch.progress()
            await asyncio.sleep(0.3)
            assert await watch.progress() == held_at
            result = await control.resume(sleep)
            assert result == ControlResult(sleep, "resume", "task", (sleep,))
            await until(lambda: watch.advancing(held_at), "the worker resumes it", within=5)

            result = await control.cancel(sleep)
            assert (result.target, set(result.changed)) == ("task", both)
            assert await watch.status() == "cancelled"
            result = await control.retry(sleep)
            assert (result.target, set(result.changed)) == ("task", both)
            # One task at a time: claimed again, so the cancelled attempt has ended.
            await until(watch.running, "the worker claims the retried sleep", within=5)

            # The run, through the CLI (its own process, its own front door).
            code, out = await fredica_cli(data, "pause", run_id, "--json")
            assert code == 0, out
            shown = json.loads(out)
            assert (shown["id"], shown["action"], set(shown["changed"])) == (run_id, "pause", both)
            await until(watch.parked, "the run's running task stops", within=5)
            held_at = await watch.progress()
            result = await control.resume(run_id)
            assert (result.target, set(result.changed)) == ("run", both)
            await until(lambda: watch.advancing(held_at), "the run goes on", within=5)
            code, out = await fredica_cli(data, "cancel", run_id)
            assert (code, out) == (0, "cancel: 2 task(s) changed\n")
            assert (await app.store.get_run(run_id)).status.value == "cancelled"

            # The queue: paused, the retried run waits; resumed, the worker claims it.
            code, out = await fredica_cli(data, "pause-queue")
            assert code == 0 and out.startswith("queue paused")
            assert control.queue_paused
            await asyncio.sleep(1.0)  # the worker looks at the flag every half second
            result = await control.retry(run_id)
            assert (result.target, set(result.changed)) == ("run", both)
            await asyncio.sleep(1.5)
            assert await watch.status() == "pending"
            await control.resume_queue()
            assert not app.queue_flag.exists()
            await until(watch.running, "the worker claims it again", within=5)

            # Errors as with an engine here (the NOOP ran first: it was submitted first).
            assert (await app.store.get_run(finished.run_id)).status.value == "completed"
            await _same_errors(control, finished.run_id, finished.task_ids["n"], sleep)
            code, out = await fredica_cli(data, "retry", "nope")
            assert (code, out) == (1, "fredica: error: no task or run with id 'nope'\n")
            await control.cancel(run_id)  # the worker then stops without waiting for it

"""Plumbing shared by the store's parts: tables, the clock, transactions on the store's
threads, run counters, the cascade, row helpers."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import random
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar

import sqlalchemy as sa

from workers import states
from workers.db import DB_NOW, READ_ONLY
from workers.errors import NotFound, StoreUnavailable, store_unavailable
from workers.models import dep_t, log_t, run_t, task_t, worker_t
from workers.records import (
    TaskRecord,
)
from workers.spec import PreparedTask
from workers.states import BackoffPolicy, ErrorType, RunStatus, TaskStatus
from workers.store import _hot
from workers.store._dialect import (
    POSTGRESQL,
    driver_errors,
    driver_operational_errors,
    driver_sql,
    portable,
)

T = TypeVar("T")

log = logging.getLogger(__name__)

S = TaskStatus
HELD = (S.CLAIMED, S.RUNNING)
#: Interruptions of a task in all, charged or not (crashes of the engine, stops of the
#: endpoints server), at which it is held for review instead of being started again: nothing
#: loops for ever.
MAX_TOTAL_INTERRUPTIONS = 100
#: The ends of a run that leave a notice (a cancel is the user's own doing: none), by kind.
NOTICED = {RunStatus.COMPLETED: "run_completed", RunStatus.FAILED: "run_failed"}


# Statements built once: SQLAlchemy then reuses their cache keys and compiled forms instead
# of rebuilding and re-keying a statement on every call. (The hottest ones go to the driver
# directly: see _hot.)
B = sa.bindparam
MARK_RUNNING_STMT = (
    sa.update(task_t)
    .where(
        task_t.c.id == B("task_id"),
        task_t.c.lease_token == B("token"),
        task_t.c.status == S.CLAIMED,
    )
    .values(status=S.RUNNING, started_at=B("now"), heartbeat_at=B("now"))
    .returning(task_t.c.workflow_run_id)
)
UPSTREAM_STMT = (
    sa.select(task_t.c.id, task_t.c.key, task_t.c.result)
    .join(dep_t, dep_t.c.depends_on_id == task_t.c.id)
    .where(dep_t.c.task_id == B("task_id"))
)
#: Draw ``?`` numbers of the change stream (workers.models, "the change stream"): the last one.
DRAW_SEQ_SQL = "UPDATE change_counter SET seq = seq + ? WHERE id = 1 RETURNING seq"
#: What moves when another host writes (PostgreSQL's stand-in for SQLite's data_version).
PG_VERSION_SQL = (
    "SELECT (SELECT seq FROM change_counter WHERE id = 1), "
    "(SELECT coalesce(max(id), 0) FROM notice)"
)
#: How many times a write transaction is run (PostgreSQL: again after a deadlock or a dead
#: connection found at its start, see StoreBase._tx).
TX_ATTEMPTS = 3
#: The database's clock as Unix seconds (PostgreSQL).
DB_CLOCK_SQL = "SELECT extract(epoch FROM clock_timestamp())"


def downstream(roots: list[str]) -> sa.CTE:
    """A recursive CTE of every task downstream of ``roots`` (column ``task_id``)."""
    down = (
        sa.select(dep_t.c.task_id)
        .where(dep_t.c.depends_on_id.in_(roots))
        .cte("down", recursive=True)
    )
    return down.union(
        sa.select(dep_t.c.task_id).join(down, dep_t.c.depends_on_id == down.c.task_id)
    )


def upstream(roots: list[str]) -> sa.CTE:
    """A recursive CTE of every task upstream of ``roots`` (column ``task_id``)."""
    up = (
        sa.select(dep_t.c.depends_on_id.label("task_id"))
        .where(dep_t.c.task_id.in_(roots))
        .cte("up", recursive=True)
    )
    return up.union(sa.select(dep_t.c.depends_on_id).join(up, dep_t.c.task_id == up.c.task_id))


#: How far past the longest backoff a retry's timer may lie before it is taken for one set
#: before the wall clock went back (and so as due), seconds.
CLOCK_SLACK = 60.0


class _Clock:
    """Unix seconds for the times the store keeps (leases, retry timers, timestamps): the
    wall clock, strictly increasing within this process (tasks created in one transaction
    keep their spec order under ``ORDER BY created_at``), and never going back. When the wall
    clock jumps back (a user's setting, a bad NTP step), this clock goes on from where it was
    at the rate of the monotonic clock, so that a retry's backoff or a lease lasts what it
    should, not an hour more; when the wall clock is ahead (it jumped forward, or the machine
    slept, which the monotonic clock does not count), it follows it."""

    def __init__(
        self,
        source: Callable[[], float] = time.time,
        monotonic: Callable[[], float] | None = None,
    ) -> None:
        self._source = source
        # A clock a test hands in is its own monotonic clock too, unless it gives one: its
        # time then moves only when the test moves it.
        self._monotonic = monotonic or (time.monotonic if source is time.time else source)
        self._last = 0.0
        self._last_mono = self._monotonic()
        self._lock = threading.Lock()

    def advance_past(self, t: float) -> None:
        """Timestamps handed out after this are later than ``t`` (``t`` was used already)."""
        with self._lock:
            self._last = max(self._last, t)

    def __call__(self) -> float:
        with self._lock:
            wall, mono = self._source(), self._monotonic()
            now = max(wall, self._last + max(0.0, mono - self._last_mono))
            if now <= self._last:
                now = self._last + 1e-6
            self._last, self._last_mono = now, mono
            return now


class StoreBase:
    """Transactions on the store's threads, and the helpers every part of the store uses."""

    def __init__(
        self,
        engine: sa.Engine,
        *,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] | None = None,
        backoff: BackoffPolicy = BackoffPolicy(),  # noqa: B008 - frozen
        rng: random.Random | None = None,
        lease_seconds: float = 30.0,
    ) -> None:
        self._engine = engine
        self._closed = False
        self._read_engine = engine.execution_options(**{READ_ONLY: True})
        #: ``sqlite`` or ``postgresql``: where the store's SQL text differs (_dialect).
        self.dialect = engine.dialect.name
        #: On PostgreSQL, the database's clock less this host's monotonic clock, read at the
        #: start of every write transaction (workers.db): several hosts then stamp leases
        #: and times by one clock, the database's, whatever their own clocks say.
        self._db_offset: float | None = None
        if self.dialect == POSTGRESQL and clock is time.time:
            clock, monotonic = self._database_time, time.monotonic
        self.now = _Clock(clock, monotonic)
        self.backoff = backoff
        self._rng = rng or random.Random()
        self.lease_seconds = lease_seconds
        #: On a shared database, the task types (and for each the newest payload version)
        #: the engine on this store can run: it claims nothing else, so that a task a host's
        #: build does not understand waits for one that does (set by the engine).
        self.claim_types: Mapping[str, int] | None = None
        #: The home (a host's data directory, ``fredica_app.paths.home_id``) this store's runs
        #: are submitted from and whose notices it takes; None: any (tests, tools).
        self.home_id: str | None = None
        self._writer = ThreadPoolExecutor(1, thread_name_prefix="fredica-db-write")
        self._readers = ThreadPoolExecutor(2, thread_name_prefix="fredica-db-read")
        self._watcher = ThreadPoolExecutor(1, thread_name_prefix="fredica-db-watch")
        self._data_version: int | tuple[Any, ...] | None = None
        #: Called on the writer thread after each commit that changed the status of runs,
        #: with ``[(run_id, new status)]``. Listeners must be quick and thread-safe.
        self.run_listeners: list[Callable[[list[tuple[str, RunStatus]]], None]] = []
        #: Called on the writer thread after each write transaction commits (with no
        #: argument): how a reader of the change stream in this process learns at once that
        #: there may be something new. Listeners must be quick and thread-safe.
        self.commit_listeners: list[Callable[[], None]] = []
        self._run_changes: list[tuple[str, RunStatus]] = []
        self._batch: _Batch | None = None
        self._write_conn: sa.Connection | None = None
        #: A write through this store that :meth:`data_changed` reports (on SQLite, where
        #: the writer's own commits do not move its ``data_version``); the writer's thread.
        self._loud = False
        #: Called (on the listener's thread) when another connection's commit changed the
        #: queue: a shared database's LISTEN/NOTIFY, a hint only (see _listen).
        self._wakeups: list[Callable[[], None]] = []
        self._listener: Any = None
        #: The database file as first opened (device, inode): a file deleted or replaced
        #: under the store is told, not written into (see :meth:`_check_file`).
        self._file = _file_path(engine)
        self._file_id: tuple[int, int] | None = None

    @property
    def engine(self) -> sa.Engine:
        return self._engine

    @property
    def shared(self) -> bool:
        """Whether engines of several hosts may run on this database at once (PostgreSQL):
        recovery then goes by leases and homes, not by the data directory's lock."""
        return self.dialect == POSTGRESQL

    def _database_time(self) -> float:
        """The database's clock now, as last read (PostgreSQL): first read here if no
        transaction has read it yet."""
        if self._db_offset is None:
            try:
                with self._engine.connect() as conn:
                    db_now = conn.exec_driver_sql(DB_CLOCK_SQL).scalar_one()
            except sa.exc.OperationalError as exc:
                raise store_unavailable(exc) from exc
            self._db_offset = float(db_now) - time.monotonic()
        return time.monotonic() + self._db_offset

    def _exec(
        self, conn: sa.Connection, sql: str, params: Mapping[str, Any] | Sequence[Any] = ()
    ) -> Any:
        """Run one of the store's SQL texts (written for SQLite) on the driver, as this
        database's dialect takes it (see _dialect)."""
        if self.dialect == POSTGRESQL and not params:
            params = {}
        return conn.exec_driver_sql(driver_sql(sql, self.dialect), params)

    def _text(self, sql: str) -> sa.TextClause:
        """One of the store's SQL texts as a SQLAlchemy text for this database's dialect."""
        return sa.text(portable(sql, self.dialect))

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, self._shutdown)

    def add_wakeup(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` (on another thread: it must be quick and thread-safe) when a
        commit of any host changed the queue — on a shared database, from its notifications
        (a hint: a lost one is found by polling). Nothing on SQLite, where another process's
        commit is seen by :meth:`data_changed`."""
        self._wakeups.append(callback)
        if self.shared and self._listener is None:
            from workers.store._listen import Listener

            self._listener = Listener(self._engine.url, self._wake_all)
            self._listener.start()

    def remove_wakeup(self, callback: Callable[[], None]) -> None:
        if callback in self._wakeups:
            self._wakeups.remove(callback)

    def _wake_all(self) -> None:
        for callback in list(self._wakeups):
            callback()

    def _shutdown(self) -> None:
        if self._listener is not None:
            self._listener.stop()
        self._writer.submit(self._close_write_conn).result()
        self._writer.shutdown(wait=True)
        self._readers.shutdown(wait=True)
        self._watcher.shutdown(wait=True)
        self._engine.dispose()

    def _close_write_conn(self) -> None:
        if self._write_conn is not None:
            self._write_conn.close()
            self._write_conn = None

    async def data_changed(self) -> bool:
        """Whether any other connection — another process included — committed since the
        last call. Costs no disk read: it is how an idle engine notices a submission from the
        CLI quickly.

        On SQLite it is ``PRAGMA data_version`` on the writer's own connection, on the
        writer's thread: the value moves for every other connection's commit and never for
        that connection's own, so an engine's bookkeeping of its attempts (the writes made
        ``quiet``: claims, progress, outcomes) does not make it read its control state and
        look for work again; the other writes through this store are reported. On PostgreSQL it
        is the change stream's counter, which the store's own writes move too (notifications
        are the quick path there)."""
        loop = asyncio.get_running_loop()
        sqlite = self.dialect != POSTGRESQL
        try:
            return await loop.run_in_executor(
                self._writer if sqlite else self._watcher, self._data_changed
            )
        except (*driver_operational_errors(), sa.exc.OperationalError) as exc:  # type: ignore[misc]
            raise store_unavailable(exc) from exc

    def _check_file(self) -> None:
        """Raise :class:`StoreUnavailable` when the database file was deleted or replaced
        (by a backup restored, a sync tool, a user's cleaning) since the store opened it: its
        connections would go on writing into the old file, which no one can open again.
        A ``stat`` (microseconds): run before each write and each look for changes."""
        if self._file is None:
            return
        try:
            st = os.stat(self._file)
            now: tuple[int, int] | None = (st.st_dev, st.st_ino)
        except FileNotFoundError:
            now = None
        if self._file_id is None and now is not None:
            self._file_id = now
        elif now != self._file_id:
            what = "deleted" if now is None else "replaced by another file"
            raise StoreUnavailable(
                f"the database {self._file} was {what} while Fredica had it open: Fredica "
                "stopped rather than write into a file no one can open again; start it again "
                "(it opens what is there now)"
            )

    def _data_changed(self) -> bool:
        self._check_file()
        if self.dialect == POSTGRESQL:
            # Every visible change and every insert moves the change stream's counter; the
            # notices' newest id covers what the stream does not number.
            with self._read_engine.connect() as conn:
                version = tuple(conn.exec_driver_sql(PG_VERSION_SQL).one())
            changed = self._data_version is not None and version != self._data_version
            self._data_version = version
            return changed
        # The driver's own connection: a PRAGMA there opens no transaction (SQLAlchemy's
        # connection would begin one, and the store's begin takes the write lock).
        driver = self._writer_conn().connection.driver_connection
        version = driver.execute("PRAGMA data_version").fetchone()[0]  # type: ignore[union-attr]
        changed = self._loud or (self._data_version is not None and version != self._data_version)
        self._data_version, self._loud = version, False
        return changed

    def retry_horizon(self, now: float) -> float:
        """A retry timer later than this was set before the wall clock went back (no backoff
        reaches so far): it is due (see ``_hot.PROMOTE_DUE_SQL``)."""
        return now + self.backoff.cap + CLOCK_SLACK

    # --- plumbing -------------------------------------------------------------------------

    async def _write(self, fn: Callable[..., T], *args: Any, quiet: bool = False) -> T:
        """Run ``fn(conn, *args)`` in one write transaction on the writer thread.

        The transaction runs to its end even if the awaiting task is cancelled. ``quiet``:
        an engine's own bookkeeping of its attempts (claims, progress, outcomes), which
        :meth:`data_changed` does not report; every other write through this store (a
        submission, a retry, a pause) it does, as another program's commit. (Removals and
        pruning, :meth:`_timed_write`, are quiet too: they give an engine nothing to do.)
        """
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(
            self._writer, functools.partial(self._noted_tx, quiet, fn, *args)
        )

    def _noted_tx(self, quiet: bool, fn: Callable[..., T], *args: Any) -> T:
        result = self._tx(fn, *args)
        self._loud = self._loud or not quiet  # committed
        return result

    def _writer_conn(self) -> sa.Connection:
        """The writer thread's connection, connected now if it has none. The thread keeps it
        between transactions: no pool checkout and reset per transaction (a checkout checks
        a pooled connection first: pool_pre_ping)."""
        if self._write_conn is None:
            try:
                self._write_conn = self._engine.connect()
            except sa.exc.OperationalError as exc:  # the server cannot be reached
                raise store_unavailable(exc) from exc
        return self._write_conn

    def _tx(self, fn: Callable[..., T], *args: Any) -> T:
        self._check_file()
        for attempt in range(1, TX_ATTEMPTS + 1):
            self._run_changes = []
            self._batch = None
            conn = self._writer_conn()
            try:
                began = False
                with conn.begin():
                    began = True
                    db_now = conn.info.pop(DB_NOW, None)
                    if db_now is not None:
                        self._db_offset = db_now - time.monotonic()
                    result = fn(conn, *args)
                break
            except BaseException as exc:
                if not began and isinstance(
                    exc, (sa.exc.OperationalError, *driver_operational_errors())
                ):
                    # Failed at its start (PostgreSQL's lock and clock, sent by the begin hook
                    # on the driver): the connection is dead, and SQLAlchemy did not see it.
                    with contextlib.suppress(Exception):
                        conn.invalidate()
                if conn.invalidated or conn.closed:
                    self._write_conn = None
                # PostgreSQL: a transaction chosen as a deadlock's victim (a program that
                # writes without Fredica's lock), or a connection found dead before anything
                # was sent (the server restarted since the last transaction), is run again:
                # nothing of it was written.
                again = self.dialect == POSTGRESQL and attempt < TX_ATTEMPTS
                if again and (_conflict(exc) or (not began and self._write_conn is None)):
                    log.info("a write transaction is run again (%s)", type(exc).__name__)
                    continue
                if _unavailable(exc):
                    raise store_unavailable(exc) from exc
                raise
        if self._run_changes:
            changes, self._run_changes = self._run_changes, []
            for listener in list(self.run_listeners):
                listener(changes)
        for on_commit in list(self.commit_listeners):
            on_commit()
        return result

    async def _read(self, fn: Callable[..., T], *args: Any) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(
            self._readers, functools.partial(self._read_tx, fn, *args)
        )

    def _read_tx(self, fn: Callable[..., T], *args: Any) -> T:
        for attempt in range(1, TX_ATTEMPTS + 1):
            try:
                with self._read_engine.begin() as conn:
                    return fn(conn, *args)
            except Exception as exc:
                if not _unavailable(exc):
                    raise
                # PostgreSQL: a pooled connection the server ended (a restart) fails the read's
                # first statement, before anything was read: the read runs again on another.
                if self.dialect == POSTGRESQL and attempt < TX_ATTEMPTS:
                    log.info("a read is run again (%s)", type(exc).__name__)
                    continue
                raise store_unavailable(exc) from exc
        raise AssertionError("unreachable")  # pragma: no cover

    def _insert_tasks(
        self,
        conn: sa.Connection,
        run_id: str,
        tasks: Sequence[PreparedTask],
        ids: Mapping[str, str],
        *,
        completed: frozenset[str],
        now: float,
    ) -> None:
        """Insert tasks whose ``depends_on`` are keys of ``ids``; ``completed`` are ids that
        already completed (they do not count as unmet)."""
        if not tasks:
            return
        rows = []
        edges: list[dict[str, str]] = []
        for i, t in enumerate(tasks):
            dep_ids = [ids[k] for k in t.depends_on]
            rows.append(
                {
                    "id": ids[t.key],
                    "key": t.key,
                    "type": t.type,
                    "workflow_run_id": run_id,
                    "material_id": t.material_id,
                    "status": S.PENDING,
                    "priority": t.priority,
                    "depends_on": dep_ids,
                    "payload": t.payload,
                    "idempotency_key": t.idempotency_key,
                    "max_retries": t.max_retries,
                    "resource": t.resource,
                    "created_at": now + i * 1e-6,
                    "unmet_deps": sum(1 for d in dep_ids if d not in completed),
                }
            )
            edges.extend({"task_id": ids[t.key], "depends_on_id": d} for d in dep_ids)
        # Numbered for the change stream here, all at once, in this write transaction (so
        # in commit order, as the triggers number): the insert trigger then leaves the rows
        # alone, instead of two statements per row.
        top = self._exec(conn, DRAW_SEQ_SQL, (len(rows),)).scalar_one()
        for i, row in enumerate(rows):
            row["change_seq"] = top - len(rows) + 1 + i
        conn.execute(sa.insert(task_t), rows)
        if edges:
            conn.execute(sa.insert(dep_t), edges)
        self.now.advance_past(now + len(tasks) * 1e-6)

    def _cascade(
        self,
        conn: sa.Connection,
        roots: list[str],
        now: float,
        events: list[dict[str, Any]],
        delta: Counter[TaskStatus],
    ) -> list[str]:
        """Cancel every unfinished task downstream of ``roots`` with DEPENDENCY_FAILED.

        Only pending tasks can be downstream of an unfinished task (a task with an unmet
        dependency is never claimed), so the cascade is pending → cancelled.
        """
        down = downstream(roots)
        rows = conn.execute(
            sa.update(task_t)
            .where(task_t.c.id.in_(sa.select(down.c.task_id)), task_t.c.status == S.PENDING)
            .values(
                status=S.CANCELLED,
                error_type=ErrorType.DEPENDENCY_FAILED,
                error="an upstream task failed or was cancelled",
                completed_at=now,
            )
            .returning(task_t.c.id, task_t.c.workflow_run_id)
        ).all()
        for r in rows:
            events.append(
                _event_row(r.id, r.workflow_run_id, "cancelled", now, {"reason": "dependency"})
            )
        delta[S.PENDING] -= len(rows)
        delta[S.CANCELLED] += len(rows)
        return [r.id for r in rows]

    def _recount_unmet(self, conn: sa.Connection, ids: Iterable[str]) -> None:
        parent = task_t.alias("parent")
        unmet = (
            sa.select(sa.func.count())
            .select_from(dep_t.join(parent, parent.c.id == dep_t.c.depends_on_id))
            .where(dep_t.c.task_id == task_t.c.id, parent.c.status != S.COMPLETED)
            .scalar_subquery()
        )
        conn.execute(sa.update(task_t).where(task_t.c.id.in_(list(ids))).values(unmet_deps=unmet))

    # --- the run's counters ---------------------------------------------------------------

    # --- batching a transaction's run updates and events ------------------------------------

    def _begin_batch(self) -> None:
        """From now until :meth:`_flush_batch`, run deltas add up per run and events queue, so
        that a transaction of many task changes writes each run once (and never publishes a
        run status that only existed half-way through the transaction)."""
        self._batch = _Batch()

    def _flush_batch(self, conn: sa.Connection, now: float) -> None:
        batch, self._batch = self._batch, None
        if batch is None:
            return
        for run_id, delta in batch.deltas.items():
            self._apply_run_delta(conn, run_id, delta, now)
        self._insert_events(conn, batch.events)

    def _insert_events(self, conn: sa.Connection, events: list[dict[str, Any]]) -> None:
        if not events:
            return
        if self._batch is not None:
            self._batch.events.extend(events)
            return
        cur = _hot.cursor(conn)
        try:
            _hot.insert_events(cur, events)
        finally:
            cur.close()

    def _apply_run_delta(
        self, conn: sa.Connection, run_id: str, delta: Mapping[TaskStatus, int], now: float
    ) -> None:
        if self._batch is not None:
            self._batch.deltas.setdefault(run_id, Counter()).update(delta)
            return
        cur = _hot.cursor(conn)
        try:
            applied = _hot.apply_run_delta(cur, run_id, delta)
            if applied is None:
                return
        finally:
            cur.close()
        stored, counts = applied
        status = states.derive_run_status(counts)
        if status != stored:
            self._set_run_status(conn, run_id, status, now)

    def _set_run_status(
        self, conn: sa.Connection, run_id: str, status: RunStatus, now: float
    ) -> None:
        finished = status in (RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.CANCELLED)
        cur = _hot.cursor(conn)
        try:
            cur.execute(
                _hot.SET_RUN_STATUS_SQL,
                {
                    "status": status.value,
                    "completed_at": now if finished else None,
                    "run_id": run_id,
                },
            )
            if status in NOTICED:
                cur.execute(_hot.DROP_UNSHOWN_NOTICE_SQL, {"run_id": run_id})
                cur.execute(
                    _hot.ADD_NOTICE_SQL,
                    {"kind": NOTICED[status], "run_id": run_id, "of_run": run_id, "now": now},
                )
        finally:
            cur.close()
        self._run_changes.append((run_id, status))

    def _renew_worker(self, conn: sa.Connection, worker_id: str, now: float) -> bool:
        """Renew an engine's row (in its heartbeat's transaction); whether it is asked to
        drain."""
        row = conn.execute(
            sa.update(worker_t)
            .where(worker_t.c.id == worker_id)
            .values(heartbeat_at=now)
            .returning(worker_t.c.draining)
        ).first()
        return bool(row and row.draining)

    def _upstream(self, conn: sa.Connection, task_id: str) -> dict[str, dict[str, Any] | None]:
        """The results of the tasks ``task_id`` depends on, by spec key (or id)."""
        rows = conn.execute(UPSTREAM_STMT, {"task_id": task_id}).all()
        return {r.key or r.id: r.result for r in rows}

    def _mark_log_retried(self, conn: sa.Connection, task_ids: Iterable[str]) -> None:
        """Restart-log entries of tasks the user retried are settled."""
        conn.execute(
            sa.update(log_t)
            .where(log_t.c.task_id.in_(list(task_ids)), log_t.c.disposition == "pending_review")
            .values(disposition="retried", updated_at=self.now())
        )

    def _require_run(self, conn: sa.Connection, run_id: str) -> None:
        if conn.execute(sa.select(run_t.c.id).where(run_t.c.id == run_id)).first() is None:
            raise NotFound(f"no run {run_id}")


# --- row helpers ----------------------------------------------------------------------------


def _file_path(engine: sa.Engine) -> str | None:
    """The file of a SQLite database (None for another backend or an in-memory one)."""
    if engine.dialect.name != "sqlite":
        return None
    name = engine.url.database
    return None if not name or name == ":memory:" or name.startswith("file:") else name


def _conflict(exc: BaseException) -> bool:
    """A deadlock's victim or a serialization failure (PostgreSQL's 40P01, 40001)."""
    code = getattr(getattr(exc, "orig", exc), "sqlstate", None)
    return code in ("40P01", "40001")


def _unavailable(exc: BaseException) -> bool:
    """An error of the database itself, not of what a transaction tried to write: disk full,
    locked, read-only, I/O. (A constraint violation is the data's fault, and a damaged file
    is a :class:`DatabaseCorrupt` matter for whoever opens it.)"""
    if isinstance(exc, (sa.exc.DBAPIError, *driver_errors())) and "read-only" in str(exc):
        # PostgreSQL's read-only transaction (25006) is an "internal" error to its driver.
        return True
    code = getattr(getattr(exc, "orig", exc), "sqlstate", None) or ""
    if code.startswith(("08", "57P")) or code == "25P03":
        # PostgreSQL: the connection is gone (08…), the server is shutting down or ended the
        # session (57P…), or ended it for sitting idle in a transaction (25P03: this process
        # was stopped mid-transaction) — whatever class its driver gives them.
        return True
    return isinstance(exc, (sa.exc.OperationalError, *driver_operational_errors()))


def _task_record(row: Mapping[Any, Any]) -> TaskRecord:
    return TaskRecord.from_row(row)


def _event(task: TaskRecord, kind: str, at: float, detail: dict[str, Any] | None) -> dict[str, Any]:
    return _event_row(task.id, task.workflow_run_id, kind, at, detail)


def _event_row(
    task_id: str, run_id: str | None, kind: str, at: float, detail: dict[str, Any] | None
) -> dict[str, Any]:
    return {"task_id": task_id, "workflow_run_id": run_id, "at": at, "kind": kind, "detail": detail}


@dataclass
class _Batch:
    """Writes a transaction defers to its end: one run update per run, one events insert."""

    deltas: dict[str, Counter[TaskStatus]] = field(default_factory=dict)
    events: list[dict[str, Any]] = field(default_factory=list)

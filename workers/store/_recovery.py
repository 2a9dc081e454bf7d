"""Start-up recovery's SQL, and the restart log.

Set-based: a handful of statements whatever the number of interrupted tasks. The log rows are
written first, from the tasks as they were found; then each kind of task is moved on in one
statement; then the runs' counters are recounted from their tasks and their statuses derived.

An interruption is not a failure: a task that was running when the app stopped goes back to
``pending`` (from its checkpoint when its executor is resumable, from the start otherwise) and
uses none of its retries. A crash while it ran adds one to ``task.interruptions``; it is
*charged* to the task (``task.charged_interruptions``) only when the task could have caused it:
its work runs in the engine's own process, and it saved no checkpoint since its previous
interruption. Past ``max_interruptions`` charged ones the task fails ``INTERRUPTED`` (it may be
what takes the app down). Uncharged ones have a ceiling too (:data:`MAX_TOTAL_INTERRUPTIONS`
in all), so that nothing loops for ever: there the task is held for review, never failed.

A graceful stop does not count: the engine marks the attempts it stops with
:meth:`RecoveryMixin.release_for_shutdown` — the task stays ``running`` (so recovery takes it
over and the restart log lists it) with ``lease_until`` set to NULL. A claim or a heartbeat
always sets ``lease_until``, so a held task without one was released by its engine, and one
with one was cut off by a crash.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Collection, Iterable
from typing import Any

import sqlalchemy as sa

from workers import states
from workers.errors import NotFound
from workers.models import log_t, run_t, task_t
from workers.records import CHARGED, NOT_CHARGED, RecoveryReport, RestartLogEntry
from workers.states import RunStatus, TaskStatus
from workers.store import _hot
from workers.store._base import HELD, MAX_TOTAL_INTERRUPTIONS, StoreBase

DISPOSITIONS = ("pending_review", "dismissed", "retried", "settled")

#: Recovery's scope at a start on SQLite: every held task (the data directory's lock says no
#: other engine runs).
ALL_HELD = "status IN ('claimed', 'running')"
#: What a home's starting engine takes over on a shared database: what its home's earlier
#: engines held (they are gone: the data directory's lock), and any lease that ran out.
HOME_OR_EXPIRED = (
    "(status IN ('claimed', 'running') AND (worker_id IN "
    "(SELECT w.id FROM worker AS w WHERE w.home_id = :home AND w.id <> :me) "
    "OR (lease_until IS NOT NULL AND lease_until < :now)))"
)
#: Held by one of this home's engines (the scope's ``ours``: charged as on SQLite).
HOME_HELD = "(worker_id IN (SELECT w.id FROM worker AS w WHERE w.home_id = :home))"
#: Whether any lease ran out (a read before the write lock).
#: What every engine takes over at any time on a shared database: leases that ran out, and
#: attempts an engine released at a graceful stop (lease_until NULL) but could not requeue
#: itself (the database went away meanwhile), once silent for a lease.
EXPIRED = (
    "(status IN ('claimed', 'running') AND ((lease_until IS NOT NULL AND lease_until < :now) "
    "OR (lease_until IS NULL AND heartbeat_at < :now - :lease)))"
)
#: Whether any lease ran out (a read before the write lock).
ANY_EXPIRED_SQL = "SELECT 1 FROM task WHERE {expired} LIMIT 1"
#: Attempts an engine released at its graceful stop (:meth:`release_for_shutdown`), requeued
#: by it at once on a shared database.
RELEASED = (
    "(status IN ('claimed', 'running') AND lease_until IS NULL "
    "AND id IN (SELECT value FROM json_each(:released)))"
)

# An entry waiting for review whose task has since completed, or was cancelled by the user, is
# settled: nothing is left to review. (Retrying marks it ``retried`` in the retry's own
# transaction; a task that failed again stays to review.)
SETTLE_SQL = """UPDATE restart_task_log SET disposition = 'settled', updated_at = :now
WHERE disposition = 'pending_review' AND EXISTS (
    SELECT 1 FROM task AS t WHERE t.id = restart_task_log.task_id
      AND (t.status = 'completed' OR (t.status = 'cancelled' AND t.error_type = 'CANCELLED'))
)"""

B = sa.bindparam
RELEASE_STMT = (
    sa.update(task_t)
    .where(
        task_t.c.id == B("task_id"),
        task_t.c.lease_token == B("token"),
        task_t.c.status.in_(HELD),
    )
    .values(lease_until=None)
)


class RecoveryMixin(StoreBase):
    async def release_for_shutdown(
        self,
        attempts: Iterable[tuple[str, str]],
        *,
        requeue: bool = False,
        session_id: str = "",
        resumable_types: Collection[str] = (),
    ) -> int:
        """Mark attempts that an engine stopped on a graceful shutdown, given as ``(task id,
        lease token)``: the next recovery takes them over without counting an interruption.

        Each task stays ``claimed``/``running`` with its worker and token; only its
        ``lease_until`` is cleared (the marker). Fenced by the lease token: an attempt that is
        no longer ours (cancelled, finished, taken over) is left alone. Returns how many were
        marked.

        With ``requeue`` (an engine on a shared database) they are requeued at once, in the
        same transaction, as recovery would (``session_id``, ``resumable_types``): another
        host may take them now rather than wait for this one to come back.
        """
        pairs = [{"task_id": task_id, "token": token} for task_id, token in attempts]
        if not pairs:
            return 0
        requeued = list(resumable_types) if requeue else None
        return await self._write(self._release_tx, pairs, session_id, requeued)

    def _release_tx(
        self,
        conn: sa.Connection,
        pairs: list[dict[str, str]],
        session_id: str = "",
        resumable: list[str] | None = None,
    ) -> int:
        marked = sum(conn.execute(RELEASE_STMT, p).rowcount for p in pairs)
        if resumable is not None and marked:
            released = json.dumps([p["task_id"] for p in pairs])
            self._recover_tx(
                conn,
                session_id,
                resumable,
                [],
                MAX_TOTAL_INTERRUPTIONS,
                MAX_TOTAL_INTERRUPTIONS,
                False,
                RELEASED,
                {"released": released},
                "FALSE",
            )
        return marked

    async def recover(
        self,
        session_id: str,
        resumable_types: Collection[str],
        *,
        in_process_types: Collection[str] = (),
        max_interruptions: int = 5,
        max_total_interruptions: int = MAX_TOTAL_INTERRUPTIONS,
        hold: bool = False,
        home: str | None = None,
        worker_id: str | None = None,
    ) -> RecoveryReport:
        """Take over what a previous session left unfinished.

        With ``home`` (a shared database: PostgreSQL), only what this home's earlier engines
        held, and leases that ran out (see :meth:`requeue_expired`); ``worker_id`` is the
        starting engine's own.

        ``claimed`` → pending (``requeued``). ``running`` → pending, using no retry: from its
        checkpoint when its type is in ``resumable_types`` (``resumed``), else from the start
        with its checkpoint and progress cleared (``restarted``); with ``hold``, held
        (``is_paused``) for the user's review instead (``held``). A crash (not a graceful stop,
        see :meth:`release_for_shutdown`) while it ran is an interruption; it is charged when
        the task's type is in ``in_process_types`` (its work runs in the engine's process) and
        it saved no checkpoint since its previous interruption. A task whose charged count
        would exceed ``max_interruptions`` fails ``INTERRUPTED`` and its downstream is
        cancelled (``failed``); one interrupted ``max_total_interruptions`` times in all is
        held for review (``held``). A paused task stays paused (``kept_paused``); tasks
        without a run fail ``ORPHANED``. Only held tasks and orphans are touched: the caller
        guarantees that no other engine is running on this database (the data directory's
        lock).
        """
        scope: tuple[Any, ...] = ()
        if home is not None:
            scope = (HOME_OR_EXPIRED, {"home": home, "me": worker_id or ""}, HOME_HELD)
        return await self._write(
            self._recover_tx,
            session_id,
            list(resumable_types),
            list(in_process_types),
            max_interruptions,
            max_total_interruptions,
            hold,
            *scope,
        )

    async def requeue_expired(
        self,
        session_id: str,
        resumable_types: Collection[str],
        *,
        max_total_interruptions: int = MAX_TOTAL_INTERRUPTIONS,
    ) -> RecoveryReport:
        """Take over the tasks whose lease ran out (their engine elsewhere stopped answering:
        a cut link, a host that died or was stopped), as recovery does and at any time: back
        to pending (from their checkpoints when resumable), an interruption that is not
        charged; the restart log keeps them, under the home of the engine that held them.
        An engine that held one and comes back finds it no longer its own (its lease token
        changed): what it writes late changes nothing. Cheap when nothing ran out (a read)."""
        if not await self._read(self._any_expired_tx):
            return RecoveryReport(session_id)
        return await self._write(
            self._recover_tx,
            session_id,
            list(resumable_types),
            [],
            MAX_TOTAL_INTERRUPTIONS,
            max_total_interruptions,
            False,
            EXPIRED,
            {"lease": self.lease_seconds},
            "FALSE",
        )

    def _any_expired_tx(self, conn: sa.Connection) -> bool:
        sql = ANY_EXPIRED_SQL.format(expired=EXPIRED)
        return bool(self._exec(conn, sql, {"now": self.now(), "lease": self.lease_seconds}).first())

    def _recover_tx(
        self,
        conn: sa.Connection,
        session_id: str,
        resumable: list[str],
        in_process: list[str],
        max_interruptions: int,
        ceiling: int,
        hold: bool,
        scope: str = ALL_HELD,
        scope_params: dict[str, Any] | None = None,
        ours: str = "TRUE",
    ) -> RecoveryReport:
        """Recovery's one transaction over the held tasks ``scope`` selects (SQL on ``task``;
        with :data:`ALL_HELD`, every one: start-up on SQLite). Only a task that ``ours``
        holds of (SQL: its engine was this home's) may be charged its interruption: one
        whose engine elsewhere stopped answering (its lease ran out) cannot have caused that
        here."""
        now = self.now()
        params: dict[str, Any] = {f"t{i}": name for i, name in enumerate(resumable)}
        params.update({f"p{i}": name for i, name in enumerate(in_process)})
        params.update(
            {
                "session": session_id,
                "now": now,
                "limit": max_interruptions,
                "ceiling": ceiling,
                "hold": hold,
                **(scope_params or {}),
            }
        )
        # Every expression reads the row as recovery found it (SQLite and PostgreSQL evaluate
        # an UPDATE's SET list on the old row), so the log and the update agree.
        is_resumable = _type_in("t", resumable)
        runs_here = f"({_type_in('p', in_process)} AND {ours})"
        crashed = "(status = 'running' AND NOT is_paused AND lease_until IS NOT NULL)"
        progressed = "(checkpoint_seq <> coalesce(checkpoint_seq_at_interruption, 0))"
        charged = f"({crashed} AND {runs_here} AND NOT {progressed})"
        total = f"(interruptions + CASE WHEN {crashed} THEN 1 ELSE 0 END)"
        count = f"(charged_interruptions + CASE WHEN {charged} THEN 1 ELSE 0 END)"
        at_ceiling = f"({crashed} AND {total} >= :ceiling)"
        from_start = f"(status = 'running' AND NOT ({is_resumable}))"
        action = f"""CASE
            WHEN workflow_run_id IS NULL THEN 'failed'
            WHEN status = 'claimed' THEN 'requeued'
            WHEN is_paused THEN 'kept_paused'
            WHEN {count} > :limit THEN 'failed'
            WHEN {at_ceiling} OR :hold THEN 'held'
            WHEN {is_resumable} THEN 'resumed'
            ELSE 'restarted' END"""
        so_far = f"'charged so far: ' || {count} || ' of ' || :limit"
        detail = f"""CASE WHEN workflow_run_id IS NULL THEN 'its workflow run no longer exists'
            WHEN {charged} THEN '{CHARGED}' || {count} || ' of ' || :limit
                || ' (interruption ' || {total} || ' in all)'
            WHEN {crashed} THEN '{NOT_CHARGED} ('
                || CASE WHEN NOT ({ours}) THEN 'its engine elsewhere stopped answering'
                    WHEN NOT {runs_here} THEN 'its work runs in another process'
                    ELSE 'it saved progress since its last interruption' END
                || '); ' || {so_far} || ', ' || {total} || ' in all'
            ELSE CASE WHEN lease_until IS NULL THEN 'graceful stop' ELSE 'crash' END
                || ', not counted; ' || {so_far}
            END
            || CASE WHEN {at_ceiling} AND {count} <= :limit
                THEN '; held: interrupted ' || {total} || ' times in all' ELSE '' END
            || coalesce('; last status: ' || status_text, '')"""
        # Held tasks are selected with the predicate of the partial index ix_task_held, word
        # for word, so that SQLite scans that index and not the whole table (which also holds
        # every finished task); orphans through ix_task_workflow_run_id.
        where = f"({scope} OR (workflow_run_id IS NULL AND status = 'pending'))"
        conn.execute(
            self._text(
                f"""INSERT INTO restart_task_log (session_id, task_id, task_type,
                    workflow_run_id, material_id, status_at_restart, progress, action,
                    disposition, detail, created_at, updated_at, home_id)
                SELECT :session, id, type, workflow_run_id, material_id, status, progress,
                    {action}, 'pending_review', {detail}, :now, :now,
                    (SELECT w.home_id FROM worker AS w WHERE w.id = task.worker_id)
                FROM task WHERE {where}"""
            ),
            params,
        )
        # Left by a crash (not released by a graceful stop, not paused): what a person is
        # told about at the next start; a graceful stop was their own doing.
        n_crashed = conn.execute(
            self._text(
                f"SELECT count(*) FROM task WHERE {where} AND lease_until IS NOT NULL "
                "AND NOT is_paused"
            ),
            params,
        ).scalar_one()
        counts: dict[str, int] = dict(
            conn.execute(
                self._text(
                    "SELECT action, count(*) FROM restart_task_log WHERE session_id = :session "
                    "GROUP BY action"
                ),
                {"session": session_id},
            ).all()
        )
        if not counts:
            return RecoveryReport(session_id)
        orphans = list(
            conn.execute(
                self._text(
                    "UPDATE task SET status = 'failed', error_type = 'ORPHANED', "
                    "error = 'the task''s workflow run no longer exists', completed_at = :now, "
                    "lease_token = NULL, lease_until = NULL "
                    f"WHERE workflow_run_id IS NULL AND (status = 'pending' OR {scope}) "
                    "RETURNING id"
                ),
                params,
            ).scalars()
        )
        # Every held task in one statement: requeued, resumed, restarted, held, kept paused,
        # or failed INTERRUPTED. retry_count is left alone: an interruption is not a failure.
        conn.execute(
            self._text(
                f"""UPDATE task SET
                        status = CASE WHEN {action} = 'failed' THEN 'failed' ELSE 'pending' END,
                        interruptions = {total},
                        charged_interruptions = {count},
                        checkpoint_seq_at_interruption = CASE WHEN {crashed}
                            THEN checkpoint_seq ELSE checkpoint_seq_at_interruption END,
                        is_paused = CASE WHEN {action} = 'held' THEN TRUE ELSE is_paused END,
                        checkpoint = CASE WHEN {from_start} THEN NULL ELSE checkpoint END,
                        progress = CASE WHEN {from_start} THEN 0 ELSE progress END,
                        error = CASE WHEN {action} = 'failed'
                            THEN 'Fredica stopped ' || {count} || ' times while this task '
                                || 'ran; it may be what makes it stop: retry it to try again'
                            ELSE error END,
                        error_type = CASE WHEN {action} = 'failed' THEN 'INTERRUPTED'
                            ELSE error_type END,
                        completed_at = CASE WHEN {action} = 'failed' THEN :now
                            ELSE completed_at END,
                        status_text = CASE {action}
                            WHEN 'kept_paused' THEN 'paused (kept across a restart)'
                            WHEN 'held' THEN CASE WHEN {at_ceiling}
                                THEN 'held: interrupted ' || {total} || ' times in all; '
                                    || 'resume it to try again'
                                ELSE 'held after a restart: review it' END
                            WHEN 'resumed' THEN 'resuming after a restart'
                            WHEN 'restarted' THEN 'starting again after a restart'
                            WHEN 'requeued' THEN 'requeued after a restart'
                            ELSE status_text END,
                        lease_token = NULL, lease_until = NULL, worker_id = NULL
                    WHERE {scope}"""
            ),
            params,
        )
        failed_ids = list(
            conn.execute(
                self._text(
                    "SELECT task_id FROM restart_task_log WHERE session_id = :session "
                    "AND action = 'failed' AND workflow_run_id IS NOT NULL"
                ),
                {"session": session_id},
            ).scalars()
        )
        events: list[dict[str, Any]] = []
        if failed_ids:
            self._cascade(conn, failed_ids, now, events, Counter())
        self._insert_events(conn, events)
        runs = set(
            conn.execute(
                self._text(
                    "SELECT DISTINCT workflow_run_id FROM restart_task_log "
                    "WHERE session_id = :session AND workflow_run_id IS NOT NULL"
                ),
                {"session": session_id},
            ).scalars()
        )
        self._recount_runs(conn, runs, now)
        return RecoveryReport(
            session_id=session_id,
            resumed=counts.get("resumed", 0),
            restarted=counts.get("restarted", 0),
            requeued=counts.get("requeued", 0),
            held=counts.get("held", 0),
            kept_paused=counts.get("kept_paused", 0),
            failed=len(failed_ids),
            orphaned=len(orphans),
            failed_ids=tuple(failed_ids),
            crashed=int(n_crashed),
        )

    def _recount_runs(self, conn: sa.Connection, run_ids: Collection[str], now: float) -> None:
        """Set each run's counters from its tasks, then derive its status."""
        if not run_ids:
            return
        ids = list(run_ids)
        counts: dict[str, Counter[TaskStatus]] = {r: Counter() for r in ids}
        for row in conn.execute(
            sa.select(task_t.c.workflow_run_id, task_t.c.status, sa.func.count().label("n"))
            .where(task_t.c.workflow_run_id.in_(ids))
            .group_by(task_t.c.workflow_run_id, task_t.c.status)
        ):
            counts[row.workflow_run_id][TaskStatus(row.status)] = row.n
        current = dict(
            conn.execute(sa.select(run_t.c.id, run_t.c.status).where(run_t.c.id.in_(ids))).all()
        )
        for run_id, c in counts.items():
            values: dict[str, Any] = {col: c.get(s, 0) for s, col in _hot.COUNT_COLUMNS.items()}
            values["total_tasks"] = sum(c.values())
            conn.execute(sa.update(run_t).where(run_t.c.id == run_id).values(**values))
            status = states.derive_run_status(c)
            if status != current.get(run_id):
                self._set_run_status(conn, run_id, RunStatus(status), now)

    # --- the restart log ------------------------------------------------------------------

    async def restart_log(
        self, *, only_pending: bool = False, home: str | None = None
    ) -> list[RestartLogEntry]:
        """The restart log, oldest first. Entries whose task has completed since, or was
        cancelled by the user, are settled first (``settled``), in the same transaction: the
        engine's completions (its hot path) never touch the log, which is rarely read.

        ``home`` (a shared database): only what that home's engines ran (and entries of no
        known home) — each host reviews what it ran itself."""
        return await self._write(self._restart_log_tx, only_pending, home)

    def _settle(self, conn: sa.Connection) -> None:
        self._exec(conn, SETTLE_SQL, {"now": self.now()})

    def _restart_log_tx(
        self, conn: sa.Connection, only_pending: bool, home: str | None = None
    ) -> list[RestartLogEntry]:
        self._settle(conn)
        q = sa.select(log_t).order_by(log_t.c.id)
        if only_pending:
            q = q.where(log_t.c.disposition == "pending_review")
        if home is not None:
            q = q.where(sa.or_(log_t.c.home_id == home, log_t.c.home_id.is_(None)))
        return [RestartLogEntry.from_row(r) for r in conn.execute(q).mappings()]

    async def set_disposition(self, entry_id: int | None, disposition: str) -> int:
        """Mark one entry (or, with ``None``, every pending one) dismissed or retried."""
        if disposition not in DISPOSITIONS:
            raise ValueError(f"disposition must be one of {', '.join(DISPOSITIONS)}")
        return await self._write(self._disposition_tx, entry_id, disposition)

    def _disposition_tx(self, conn: sa.Connection, entry_id: int | None, disposition: str) -> int:
        self._settle(conn)
        q = sa.update(log_t).values(disposition=disposition, updated_at=self.now())
        if entry_id is None:
            q = q.where(log_t.c.disposition == "pending_review")
        else:
            q = q.where(log_t.c.id == entry_id)
        changed = conn.execute(q).rowcount
        if entry_id is not None and changed == 0:
            raise NotFound(f"no restart-log entry {entry_id}")
        return int(changed)


def _type_in(prefix: str, types: list[str]) -> str:
    """``type IN (:p0, :p1…)`` for the parameters named ``prefix`` + index (FALSE if none)."""
    if not types:
        return "FALSE"
    return f"type IN ({', '.join(f':{prefix}{i}' for i in range(len(types)))})"

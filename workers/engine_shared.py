"""The engine on a shared queue (several hosts on one PostgreSQL database): its row in
``worker``, lease renewals, taking over the work of engines whose leases ran out, drains, and
stopping its own attempts when it cannot renew their leases.

A mixin of :class:`~workers.engine.WorkerEngine`, kept apart so that each module holds one
concept. On the data directory's own SQLite queue the engine is alone: only the heartbeat
and the control it carries apply (docs/architecture.md, "Several hosts").
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import time
from collections.abc import Mapping

from workers.errors import StoreUnavailable
from workers.events import EventBus, Notification
from workers.executor import TaskExecutor
from workers.records import HeartbeatOutcome, RecoveryReport, WorkerInfo
from workers.running import Running
from workers.slots import SlotTable
from workers.store import TaskStore
from workers.tasktypes import TaskTypeRegistry

log = logging.getLogger("workers.engine")


class SharedQueue:
    """Leases, heartbeats and drains; what several hosts on one queue need of an engine."""

    # What the engine provides (set in WorkerEngine.__init__).
    store: TaskStore
    bus: EventBus
    executors: Mapping[str, TaskExecutor]
    registry: TaskTypeRegistry
    worker_id: str
    home_id: str
    build: str
    heartbeat_interval: float
    draining: bool
    session_id: str
    _slots: SlotTable
    _running: dict[str, Running]
    _renewed_at: float
    _registered: bool
    _claim_hint: bool

    def wake(self) -> None:
        raise NotImplementedError

    def _fail_engine(self, exc: StoreUnavailable) -> None:
        raise NotImplementedError

    def _asked(self) -> tuple[list[str], frozenset[str]]:
        raise NotImplementedError

    def _apply_control(self, beat: HeartbeatOutcome, asked: frozenset[str]) -> None:
        raise NotImplementedError

    def _check_stalls(self) -> None:
        raise NotImplementedError

    @property
    def lease_renewal(self) -> float:
        """Seconds between two renewals of our leases: the heartbeat, and on a shared database
        at most a third of the lease, so that a lease outlasts two missed renewals."""
        if not self.store.shared:
            return self.heartbeat_interval
        return min(self.heartbeat_interval, self.store.lease_seconds / 3)

    def task_versions(self) -> dict[str, int]:
        """The task types this engine runs, each with the newest payload version it knows."""
        out: dict[str, int] = {}
        for name in self.executors:
            t = self.registry.get(name)
            versions = getattr(getattr(t, "payload_model", None), "SUPPORTED_VERSIONS", None)
            out[name] = max(versions) if versions else 1
        return out

    async def _register(self) -> None:
        """Say that this engine runs (a shared queue), with what its build can run: it
        claims nothing else, so that a task it does not understand waits for a host that
        does."""
        self.store.claim_types = self.task_versions()
        await self.store.register_worker(
            WorkerInfo(
                self.worker_id,
                socket.gethostname(),
                self.home_id,
                os.getpid(),
                self.build,
                self._slots.slots,
                self.store.claim_types,
            )
        )
        self._registered = True
        self._renewed_at = time.monotonic()

    async def _heartbeat_loop(self) -> None:
        while True:
            await asyncio.sleep(self.lease_renewal)
            if self._running or self.store.shared:
                try:
                    if self.store.shared:
                        # A renewal that does not come back (a cut link: the statement waits
                        # for the network) counts as one that failed, in time to stop our
                        # attempts before their leases run out. (Not asyncio.wait_for: on
                        # Python 3.11 a cancel that lands as the renewal ends is lost there,
                        # and this loop, the engine's run with it, would never end.)
                        async with asyncio.timeout(self.store.lease_seconds / 3):
                            await self.heartbeat()
                    else:
                        await self.heartbeat()
                except StoreUnavailable as exc:
                    self._lease_at_risk()
                    self._fail_engine(exc)
                except TimeoutError:
                    log.info(
                        "a lease renewal did not come back in %.1f s", self.store.lease_seconds / 3
                    )
                    self._lease_at_risk()
                except Exception:
                    log.exception("heartbeat failed")
                    self._lease_at_risk()

    async def heartbeat(self) -> None:
        """Extend our leases; learn of cancels and pauses made by other processes; fail
        attempts that stalled. On a shared database, also renew this engine's row, learn
        whether it is asked to drain, and take over the tasks of engines whose leases ran
        out (any engine does, at any time: not only at a start)."""
        ids, asked = self._asked()
        beat = await self.store.heartbeat(self.worker_id, ids)
        self._renewed_at = time.monotonic()
        self._apply_control(beat, asked)
        self._check_stalls()
        if self.store.shared:
            if beat.draining != self.draining:
                log.info(
                    "engine %s: %s",
                    self.worker_id,
                    "draining" if beat.draining else "claiming again",
                )
                self.draining = beat.draining
                self.wake()
            await self.requeue_expired()

    async def requeue_expired(self) -> RecoveryReport:
        """Take over tasks whose engines stopped answering (their leases ran out)."""
        resumable = [name for name, e in self.executors.items() if e.resumable]
        report = await self.store.requeue_expired(self.session_id, resumable)
        if report.total:
            log.info("took over work of engines that stopped answering: %s", report.summary)
            self._claim_hint = True
            self.wake()
        return report

    def _lease_at_risk(self) -> None:
        """Our leases could not be renewed. Past the lease less one renewal, another engine
        may take our tasks over at any moment: stop working on them, writing nothing (what
        they did is kept by their checkpoints), rather than run on without a lease."""
        if not self.store.shared or not self._running:
            return
        silent = time.monotonic() - self._renewed_at
        if silent < self.store.lease_seconds - self.lease_renewal:
            return
        log.warning(
            "leases not renewed for %.0f s: stopping %d attempt(s), for another engine to "
            "take over",
            silent,
            len(self._running),
        )
        for r in list(self._running.values()):
            r.shutdown = True
            if r.job is not None and not r.job.done():
                r.job.cancel()
        self.bus.publish(
            Notification(
                "Fredica stopped its running tasks",
                "The database could not be reached for longer than a lease: its tasks go to "
                "another host (or back to the queue), from their last checkpoints.",
                "warning",
            )
        )

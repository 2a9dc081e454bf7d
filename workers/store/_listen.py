"""Wake-ups on a shared queue: ``LISTEN fredica`` on a connection of its own, on a thread.

Every change of the queue notifies channel ``fredica`` at its commit (migration 0011). A
hint only: a notification lost — the listener's connection dropped, the server restarted, a
notification sent while it reconnected — loses no work, because the engine's poll of the
change counter (every ``watch_interval``) stays the fallback. After each (re)connection the
listener calls back once, since something may have changed while it was away.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

import sqlalchemy as sa

from workers.models import NOTIFY_CHANNEL

log = logging.getLogger(__name__)

#: How the listener's connection shows in ``pg_stat_activity``.
APPLICATION_NAME = "fredica-listen"
#: Seconds between attempts to connect again, doubling up to the longest.
RECONNECT_FIRST = 0.5
RECONNECT_LONGEST = 5.0


class Listener:
    """Calls ``callback`` (on its own thread) for each notification on the queue's channel."""

    def __init__(self, url: sa.URL, callback: Callable[[], None]) -> None:
        url = url.set(drivername="postgresql").update_query_dict(
            {"application_name": APPLICATION_NAME}
        )
        self._conninfo = url.render_as_string(hide_password=False)
        self._callback = callback
        self._stop = threading.Event()
        self._conn: Any = None
        self._thread = threading.Thread(target=self._run, name="fredica-db-listen", daemon=True)
        #: Connections made so far (a test reads it to see a reconnection).
        self.connections = 0
        self.connected = threading.Event()

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        conn = self._conn
        if conn is not None:
            try:
                conn.cancel_safe()  # ends a wait for notifications at once
            except Exception:  # pragma: no cover - already gone
                pass
        self._thread.join(10)

    def _run(self) -> None:
        import psycopg

        wait = RECONNECT_FIRST
        while not self._stop.is_set():
            try:
                with psycopg.connect(self._conninfo, autocommit=True, connect_timeout=10) as conn:
                    self._conn = conn
                    conn.execute(f"LISTEN {NOTIFY_CHANNEL}")
                    self.connections += 1
                    self.connected.set()
                    wait = RECONNECT_FIRST
                    self._callback()  # something may have changed while we were away
                    while not self._stop.is_set():
                        for _ in conn.notifies(timeout=1.0):
                            self._callback()
                            if self._stop.is_set():
                                break
            except psycopg.Error as exc:
                self.connected.clear()
                if self._stop.is_set():
                    break
                log.info("the queue's wake-ups stopped (%s); polling meanwhile", exc)
                self._stop.wait(wait)
                wait = min(RECONNECT_LONGEST, wait * 2)
            finally:
                self._conn = None
                self.connected.clear()

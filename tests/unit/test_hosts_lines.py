"""``fredica hosts``' table: one line per engine, its state and the heartbeat's age."""

from __future__ import annotations

from fredica_app.cli.hosts import hosts_lines
from fredica_app.cli.shapes import worker_json
from workers.records import WorkerRecord


def worker(wid: str, **kw: object) -> WorkerRecord:
    base: dict[str, object] = {
        "id": wid,
        "host": wid.split(":")[0],
        "home_id": "h",
        "pid": 1,
        "build": "0.1.0",
        "slots": {"gpu": 1, "cpu": 3},
        "task_types": {"SLEEP": 1},
        "draining": False,
        "started_at": 0.0,
        "heartbeat_at": 100.0,
        "stopped_at": None,
        "running": 0,
    }
    base.update(kw)
    return WorkerRecord(**base)  # type: ignore[arg-type]


def test_each_engine_says_its_state_and_the_age_of_its_heartbeat() -> None:
    lines = hosts_lines(
        [
            worker("gpu-box:10:aa", running=2),
            worker("nas:11:bb", draining=True, heartbeat_at=100.0 - 300),
            worker("laptop:12:cc", stopped_at=50.0, heartbeat_at=100.0 - 4 * 3600),
        ],
        now=103.0,
    )
    assert lines[0].split() == ["WORKER", "HOST", "HEARTBEAT", "RUNNING", "SLOTS", "STATE", "BUILD"]
    assert lines[1].split() == [
        "gpu-box:10:aa",
        "gpu-box",
        "3",
        "s",
        "ago",
        "2",
        "cpu:3",
        "gpu:1",
        "claiming",
        "0.1.0",
    ]
    assert "5 min ago" in lines[2] and lines[2].split()[-2] == "draining"
    assert "4.0 h ago" in lines[3] and lines[3].split()[-2] == "stopped"
    # Columns line up: every row's state starts where the header's STATE does.
    at = lines[0].index("STATE")
    assert [line[at:].split()[0] for line in lines[1:]] == ["claiming", "draining", "stopped"]


def test_no_engine_is_said_in_words() -> None:
    assert hosts_lines([], 0.0) == [
        "no engine is running on this queue (start one: fredica worker)"
    ]


def test_the_json_names_every_field() -> None:
    got = worker_json(worker("a:1:x", running=1))
    assert got["worker_id"] == "a:1:x" and got["running"] == 1 and got["stopped_at"] is None
    assert set(got) >= {"host", "slots", "task_types", "draining", "heartbeat_at", "build"}

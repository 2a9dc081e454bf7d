"""``fredica runs`` for a big queue: filters (state, template, material, age), a terminal's
page with a line saying how many more, ``--all``, and JSON that pages with a cursor — never
cut silently; the plain read and the store's read give the same pages."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from fredica_app.cli import main
from fredica_app.cli import run_filter as rf
from fredica_app.dbfile import open_current
from fredica_app.errors import FredicaError
from fredica_app.library import quick as library_quick
from tests.support.apps import opened_app
from workers.changes import RunFilter
from workers.states import ErrorType, RunStatus
from workers.store import quick as queue_quick

RUNS = 60


def fredica(capsys: pytest.CaptureFixture[str], data: Path, *args: str) -> tuple[int, str, str]:
    code = main(["--data-dir", str(data), *args])
    out, err = capsys.readouterr()
    return code, out, err


async def fill(data: Path) -> dict[str, list[str]]:
    """60 runs: of two templates, three materials, some failed, some a week old."""
    made: dict[str, list[str]] = {"failed": [], "old": [], "Film": [], "noop_chain": []}
    async with opened_app(data) as app:
        film = app.library.add(source="/media/Film 100%.mkv", title="Film 100%",
                               local_path=None, kind="video")  # fmt: skip
        talk = app.library.add(source="/media/talk.mkv", title="Talk", local_path=None,
                               kind="video")  # fmt: skip
        for n in range(RUNS):
            template = "noop_chain" if n % 3 == 0 else "diagnostic"
            material = film.id if n % 4 == 0 else talk.id
            # The one to fail is claimed first: above every other run's pending task.
            task = {"key": "a", "type": "NOOP", "priority": 9 if n % 5 == 0 else 0}
            spec = {"template": template, "material_id": material, "tasks": [task]}
            run_id = (await app.submit(spec)).run_id
            if n % 5 == 0:
                [c] = await app.store.claim("w", limit=1)
                await app.store.fail(c.id, c.lease_token, "broken", ErrorType.PAYLOAD_ERROR)
                made["failed"].append(run_id)
            if n < 10:
                made["old"].append(run_id)
            if material == film.id:
                made["Film"].append(run_id)
            if template == "noop_chain":
                made["noop_chain"].append(run_id)

        def age(conn: object) -> None:
            marks = ", ".join("?" * len(made["old"]))
            conn.exec_driver_sql(  # type: ignore[attr-defined]
                f"UPDATE workflow_run SET created_at = created_at - 7 * 86400 "
                f"WHERE id IN ({marks})",
                tuple(made["old"]),
            )

        with app.store.engine.begin() as conn:
            age(conn)
    return made


def ids_of(out: str) -> list[str]:
    return [line.split()[0] for line in out.splitlines()[1:] if not line.startswith("…")]


async def test_a_page_says_how_many_more_and_all_shows_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    await fill(data)
    code, out, _ = fredica(capsys, data, "runs", "--limit", "10")
    assert code == 0 and len(ids_of(out)) == 10
    assert out.splitlines()[-1] == "… 50 more: --all or --limit N (showing 10)"
    code, out, _ = fredica(capsys, data, "runs", "--all")
    assert len(ids_of(out)) == RUNS and "more:" not in out
    code, out, _ = fredica(capsys, data, "runs")  # not a terminal: every run
    assert len(ids_of(out)) == RUNS
    with pytest.raises(SystemExit):
        fredica(capsys, data, "runs", "--limit", "5", "--all")
    assert "not allowed with" in capsys.readouterr().err


async def test_json_pages_with_a_cursor_and_never_cuts_silently(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    await fill(data)
    code, out, _ = fredica(capsys, data, "runs", "--json")
    every = [r["id"] for r in json.loads(out)]
    assert code == 0 and len(every) == RUNS  # a list of every run, as before
    seen: list[str] = []
    cursor: str | None = None
    pages = []
    while True:
        args = ["runs", "--json", "--limit", "25"] + (["--cursor", cursor] if cursor else [])
        page = json.loads(fredica(capsys, data, *args)[1])
        seen += [r["id"] for r in page["runs"]]
        pages.append((len(page["runs"]), page["more"]))
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert pages == [(25, 35), (25, 10), (10, 0)]
    assert seen == every  # each run once, newest first
    code, _, err = fredica(capsys, data, "runs", "--json", "--cursor", "nope")
    assert code == 1 and "is not a cursor" in err


async def test_the_filters_pick_their_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    made = await fill(data)

    def listed(*args: str) -> set[str]:
        code, out, err = fredica(capsys, data, "runs", "--json", *args)
        assert code == 0, err
        return {r["id"] for r in json.loads(out)}

    assert listed("--status", "failed") == set(made["failed"])
    assert listed("--template", "noop_chain") == set(made["noop_chain"])
    assert listed("--material", "fILM 100%") == set(made["Film"])  # any case, % literal
    assert listed("--material", "100_") == set()  # _ literal too
    assert listed("--since", "1d") == set(listed()) - set(made["old"])
    both = listed("--status", "failed", "--template", "noop_chain", "--since", "2d")
    assert both == (set(made["failed"]) & set(made["noop_chain"])) - set(made["old"])
    assert listed("--material", "no such thing") == set()
    code, _, err = fredica(capsys, data, "runs", "--since", "yesterday")
    assert code == 1 and "give a duration such as 30m" in err


async def test_the_plain_read_pages_as_the_store_does(tmp_path: Path) -> None:
    made = await fill(tmp_path / "data")
    async with opened_app(tmp_path / "data") as app:
        film = app.library.matching("film")
        filters = [
            RunFilter(limit=7),
            RunFilter(limit=None),
            RunFilter(status=(RunStatus.FAILED,), limit=3),
            RunFilter(templates=("noop_chain",), material_ids=film, limit=2),
            RunFilter(material_ids=(), limit=5),
            RunFilter(since=0.0, limit=50),
        ]
        with open_current(app.paths.database) as conn:
            assert conn is not None
            assert library_quick.matching(conn, "film") == film and film
            for f in filters:
                ours = queue_quick.run_page(conn, f)
                theirs = await app.store.run_page(f)
                assert ours == theirs, f
                if ours[1] is not None:  # the next page too
                    after = RunFilter(**{**_fields(f), "after": ours[1]})
                    assert queue_quick.run_page(conn, after) == await app.store.run_page(after)
    assert len(made["failed"]) == 12


def _fields(f: RunFilter) -> dict[str, object]:
    return {name: getattr(f, name) for name in f.__dataclass_fields__}


def test_the_page_size_durations_and_cursors() -> None:
    args = argparse.Namespace(all=False, limit=None, json=False)
    assert rf.page_size(args, terminal=True) == 50
    assert rf.page_size(args, terminal=False) is None
    assert rf.page_size(argparse.Namespace(all=False, limit=None, json=True), terminal=True) is None
    assert rf.page_size(argparse.Namespace(all=True, limit=None, json=False), terminal=True) is None
    with pytest.raises(FredicaError, match="1 or more"):
        rf.page_size(argparse.Namespace(all=False, limit=0, json=False), terminal=True)
    assert [rf.parse_duration(t) for t in ("90s", "30m", "2h", "1.5d", "1w")] == [
        90, 1800, 7200, 129600, 604800,
    ]  # fmt: skip
    key = (1764985412.123456, "3f1c0a9e-1b2c-4d5e-8f90-0123456789ab")
    assert rf.decode_cursor(rf.encode_cursor(key)) == key
    for bad in ("", "1~", "x~abc", "1~a b", "nan~abc"):
        with pytest.raises(FredicaError):
            rf.decode_cursor(bad)
    assert rf.footer(10, 0) is None
    assert rf.footer(50, 1950) == "… 1,950 more: --all or --limit N (showing 50)"

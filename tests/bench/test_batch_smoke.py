"""``python -m bench.batch --quick``: the start-up and remux parts run end to end as real
processes and print their tables, verdicts and JSON. The figures are the bench's to judge
(they move with the machine's load); here only the shape, and what the bench itself checks:
every command ran cleanly, every output read back, Fredica's ffmpeg commands were the hand
lanes'."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def _table(tmp_path: Path, *command: str) -> dict[str, str]:
    """Run ``python -m`` ``command`` (a bench that prints a table); its rows, measure ->
    value. Temporary files go under ``tmp_path``."""
    done = subprocess.run(
        [sys.executable, "-m", *command],
        cwd=ROOT,
        env={**os.environ, "TMPDIR": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return {
        line.split("|")[0].strip(): line.split("|")[1].strip()
        for line in done.stdout.splitlines()
        if "|" in line
    }


def _bench(tmp_path: Path, part: str) -> tuple[str, dict[str, Any]]:
    """Run one quick part; its text and its JSON. Temporary files (the clip cache, the work
    folder) go under ``tmp_path``."""
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "bench.batch", "--quick", "--part", part, "--json"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    text, _, rest = done.stdout.partition("\ntime: total ")
    _, _, blob = rest.partition("\n")
    return text, json.loads(blob)


def test_startup_part_times_each_command_and_profiles_the_slowest(tmp_path: Path) -> None:
    text, out = _bench(tmp_path, "startup")
    assert "measure" in text and "fredica process CLIP -> first task started_at" in text
    s = out["startup"]
    assert set(s["times_s"]) == {"python -c pass", "--version", "runs", "process"}
    assert all(len(v) == 1 and v[0] > 0 for v in s["times_s"].values())
    # process is timed to its first task, within its whole run.
    assert 0 < s["median_s"]["process"] < s["process_whole_s"]
    assert s["problems"] == []
    slowest = max(("--version", "runs", "process"), key=lambda n: s["median_s"][n])
    # --quick profiles the slowest alone.
    assert [p["command"] for p in s["profiles"]] == [slowest]
    imports = s["profiles"][0]["importtime"]
    top = imports["top"]
    assert len(top) == 15 and top[0]["module"]
    cumulative = [r["cumulative_ms"] for r in top]
    assert cumulative == sorted(cumulative, reverse=True)
    assert imports["total_ms"] >= cumulative[0] and imports["modules"] > 15
    names = {c["name"]: c["ok"] for c in out["checks"]}
    assert names["start-up: every command ran cleanly"] is True
    assert len([n for n in names if n.startswith("start-up: ")]) == 4
    assert text.count("PASS  ") + text.count("FAIL  ") == 4


def test_remux_part_runs_four_lanes_on_the_same_commands(tmp_path: Path) -> None:
    text, out = _bench(tmp_path, "remux")
    m = out["remux"]
    assert m["clips"] == 2 and m["rounds"] == 1
    for lane in ("fredica", "process", "sequential", "xargs"):
        assert len(m["walls_s"][lane]) == 1 and m["walls_s"][lane][0] > 0
        assert 0 < m["busy"][lane] <= 1
    best = min(("sequential", "xargs"), key=lambda lane: m["median_s"][lane])
    assert m["best_hand"] == best
    assert m["ratio"] == m["median_s"]["fredica"] / m["median_s"][best]
    assert m["ratio_process"] == m["median_s"]["process"] / m["median_s"][best]
    # Fredica's real ffmpeg commands were captured and are the ones the hand lanes run.
    assert m["argv_check"]["captured"] >= 1
    assert m["argv_check"]["identical"] == m["argv_check"]["captured"]
    assert m["problems"] == []
    # Its worker's time is accounted for from the task table.
    assert m["transcodes_at_once"] >= 1 and m["phases_s"]["worker_s"] > 0
    checks = {c["name"]: c["ok"] for c in out["checks"]}
    assert checks["remux: every run completed, outputs valid"] is True
    assert checks["remux: Fredica's ffmpeg commands are the hand lanes' (captured once)"] is True
    assert "Fredica / the faster hand lane <= 1.25x" in text
    assert "Fredica process / the faster hand lane <= 1.25x" in text
    # The clips were made once, in the cache under the temporary folder, and are kept.
    assert len(list((tmp_path / "fredica-bench-clips" / "mkv-5s-2").glob("clip*.mkv"))) == 2


def test_jobs_part_runs_every_endpoint_and_times_its_first_frame(tmp_path: Path) -> None:
    text, out = _bench(tmp_path, "jobs")
    j = out["jobs"]
    assert j["n"] == 4 and j["lanes"] == 2 and j["server_start_s"] > 0
    endpoints = {e["endpoint"] for e in j["endpoints"].values()}
    # Every endpoint the server offers but the two that need what cannot run here (a model
    # server, a video site).
    assert endpoints >= {
        "sleep",
        "probe",
        "transcode_mp4",
        "extract_audio",
        "extract_subtitles",
        "thumbnail",
        "transcribe",
        "export_subtitles",
        "analyze",
        "download",
    }
    for name, e in j["endpoints"].items():
        assert e["jobs"] == 4 and e["failed"] == [], name
        assert 0 < e["first_p50_s"] <= e["first_p99_s"], name
        assert e["first_p50_s"] <= e["total_p50_s"], name
    assert text.count("PASS  ") + text.count("FAIL  ") == len(j["endpoints"])


def test_process_cpu_times_a_child_s_start_and_splits_a_batch_s_cpu(tmp_path: Path) -> None:
    """``python -m bench.process_cpu --quick``: both ways of starting a child (the fork
    server where it is used), and CPU for the app's process, ffmpeg and the server's side."""
    rows = _table(tmp_path, "bench.process_cpu", "--quick")
    assert rows["child start, spawn"].endswith(" ms")
    if sys.platform.startswith("linux"):
        assert rows["child start, fork server"].endswith(" ms")
    for kind in ("the app's process", "ffmpeg", "endpoints server, fork server, job children"):
        assert float(rows[f"CPU: {kind}"].removesuffix(" s")) > 0, kind
        # The start's share: taken before the end, so no more than the whole run's.
        before = float(rows[f"CPU before the first ffmpeg: {kind}"].removesuffix(" s"))
        assert before <= float(rows[f"CPU: {kind}"].removesuffix(" s")), kind
    assert float(rows["CPU before the first ffmpeg: the app's process"].removesuffix(" s")) > 0
    assert rows["process DIR, wall"].endswith(" s")
    ms = {k: float(v.removesuffix(" ms")) for k, v in rows.items() if k.startswith("per ")}
    for job in ("PROBE", "TRANSCODE_MP4 remux"):
        # CPU clocks tick by 10 ms: three jobs may show none of a part's few milliseconds.
        for part in ("the server's process", "its job children", "the client"):
            assert ms[f"per {job} job: {part}"] >= 0, (job, part)
        assert ms[f"per {job} job: wall"] > 0, job
    # The remux's ffmpeg is counted apart from the child that ran it; a probe runs none.
    assert (
        ms["per TRANSCODE_MP4 remux job: ffmpeg"]
        > ms["per TRANSCODE_MP4 remux job: its job children"]
    )
    assert ms["per PROBE job: ffmpeg"] == 0
    inside = {
        k.removeprefix("inside a remux job: "): float(v.removesuffix(" ms"))
        for k, v in rows.items()
        if k.startswith("inside a remux job: ")
    }
    assert inside["wall"] > 0 and inside["ffmpeg CPU"] > 0
    for phase in ("probe the input (PyAV)", "start ffmpeg", "read the output back (PyAV)"):
        assert 0 < inside[phase] < inside["wall"], phase  # each phase ran, within the job
    if sys.platform.startswith("linux"):
        starts = [v for k, v in rows.items() if k.startswith("start a process from a job's")]
        assert len(starts) == 2 and all(v.endswith(" ms") for v in starts)


def test_process_cpu_splits_a_worker_s_cpu_too() -> None:
    """``--command worker``: the folder added, then run by a real ``worker --until-idle``,
    whose tree is sampled as ``process``'s is: its app started the server, which ran ffmpeg."""
    from bench.process_cpu import cpu_by_kind

    wall, whole, start = cpu_by_kind(2, "remux", "worker")
    assert wall > 0
    assert whole["ffmpeg"][0] > 0 and whole["the app's process"][1] == 1
    assert 0 < start["the app's process"][0] <= whole["the app's process"][0]
    assert start["endpoints server, fork server, job children"][0] > 0


def test_drain_part_drains_every_lane(tmp_path: Path) -> None:
    """NOOP and SLEEP through real ``fredica worker`` processes, SLEEP again with the
    setting ``sqlite_synchronous`` NORMAL, and Huey: every task of every lane completed."""
    text, out = _bench(tmp_path, "drain")
    d = out["drain"]
    assert set(d["tasks_per_s"]) == {"NOOP", "SLEEP", "SLEEP_NORMAL", "huey"}
    assert all(rate > 0 for rate in d["tasks_per_s"].values())
    assert set(d["ratio"]) == {"NOOP", "SLEEP", "SLEEP_NORMAL"}
    assert d["problems"] == []
    assert "the same, sqlite_synchronous NORMAL" in text
    names = {c["name"]: c["ok"] for c in out["checks"]}
    assert names["drain: every task completed"] is True
    assert text.count("PASS  ") + text.count("FAIL  ") == 3


def test_start_pieces_times_each_piece_against_what_it_replaced(tmp_path: Path) -> None:
    """``python -m bench.start_pieces --rounds 1 --against HEAD``: the imports both ways, the
    encoder tests both ways, and ``add``, ``worker`` and ``process`` from a checkout of HEAD
    and from this one."""

    def worktrees() -> list[str]:
        listed = subprocess.run(
            ["git", "worktree", "list"], cwd=ROOT, capture_output=True, text=True, check=True
        )
        return listed.stdout.splitlines()

    before = worktrees()
    rows = _table(tmp_path, "bench.start_pieces", "--rounds", "1", "--against", "HEAD")

    def seconds(row: str) -> float:
        return float(rows[row].removesuffix(" s"))

    for way in ("on", "off"):
        assert seconds(f"import fredica_app.services.app, collector {way}") > 0
    assert sum(k.startswith("hardware encoder tests, ") for k in rows) == 2
    for tree in ("HEAD", "this checkout"):
        assert seconds(f"add CLIP, {tree}") > 0
        for lane, first in (("worker", "first claim"), ("process CLIP", "first task")):
            start = seconds(f"{lane}: start -> {first}, {tree}")
            assert 0 < start < seconds(f"{lane}: whole run, {tree}"), (lane, tree)
    assert worktrees() == before  # the checkout it made is gone


def test_short_part_runs_many_clips_through_extract_audio_against_xargs(tmp_path: Path) -> None:
    text, out = _bench(tmp_path, "short")
    s = out["short"]
    assert s["clips"] == 20 and s["problems"] == []  # every run completed, every WAV made
    assert s["fredica_s"] > 0 and s["xargs_s"] > 0 and s["ratio"] > 0
    assert "Fredica / xargs" in text and "PASS  short: every clip made its WAV" in text

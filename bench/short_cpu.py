"""Where the CPU of a folder of short files goes: Fredica's own processes beside ffmpeg's.

One ``fredica --data-dir NEW process DIR --template extract_audio`` of N of the 1 s clips of
``bench/batch.py --part short`` (default 1,000) with the bundled ffmpeg chosen in the settings
(so that every clip goes through the ffmpeg command, not PyAV), the same ffmpeg commands
through ``xargs -P <cores>``, and ``process`` as installed (short clips through PyAV: its CPU
as a whole), each lane's CPU counted exactly by the kernel: every process of a lane
runs in a cgroup of its own (cgroup v1 ``cpuacct``, which needs root), and the endpoints server
— with the fork server, the job children, setpriv and ffmpeg under it — is moved into a second
one as soon as it appears (before it forks anything). Printed: wall and CPU per clip of each
lane; the app's process; the server's tree less the xargs lane's CPU (ffmpeg's, the same
commands): the server's own and its children's. Where a cgroup cannot be made, says so and
stops (psutil's sampling misses most of a short process; ``bench/process_cpu.py`` uses it
for long jobs).

    python -m bench.short_cpu [--clips N]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

from bench._batch_lanes import fredica, run
from bench._batch_short import hand_template, short_clips
from bench.batch import byte_compile

CPUACCT = Path("/sys/fs/cgroup/cpuacct")


def _group(name: str) -> Path:
    group = CPUACCT / f"fredica-bench-{os.getpid()}-{name}"
    group.mkdir()
    return group


def _cpu(group: Path) -> float:
    return int((group / "cpuacct.usage").read_text()) / 1e9


def _join(group: Path, pid: int) -> None:
    (group / "cgroup.procs").write_text(str(pid))


def _lane(argv: list[str], group: Path, server_group: Path | None = None) -> float:
    """Run ``argv`` in ``group`` (its server's tree in ``server_group``): wall seconds."""
    started = time.perf_counter()
    command = subprocess.Popen(
        argv,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        preexec_fn=lambda: _join(group, os.getpid()),
    )
    moved: set[int] = set()
    root = psutil.Process(command.pid)
    while command.poll() is None:
        if server_group is not None:
            try:
                for p in root.children(recursive=True):
                    if p.pid not in moved and "python_endpoints" in " ".join(p.cmdline()):
                        _join(server_group, p.pid)
                        moved.add(p.pid)
            except psutil.Error:
                pass
        time.sleep(0.002 if server_group is not None and not moved else 0.1)
    if command.returncode:
        raise RuntimeError(f"{argv[:4]}… exited {command.returncode}")
    if server_group is not None and not moved:
        raise RuntimeError("the endpoints server was not seen: its CPU would count as the app's")
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.short_cpu", description=__doc__)
    p.add_argument("--clips", type=int, default=1000, help="how many clips (at most 2,000)")
    args = p.parse_args(argv)
    try:
        probe = _group("probe")
        probe.rmdir()
    except OSError as exc:
        print(f"no cgroup can be made here ({exc}): run as root with cgroup v1's cpuacct")
        return 2
    byte_compile()
    clips = short_clips(2000)[: args.clips]
    n = len(clips)
    groups: list[Path] = []
    with tempfile.TemporaryDirectory(prefix="fredica-bench-") as tmp:
        work = Path(tmp)
        folder = work / "clips"
        folder.mkdir()
        for clip in clips:
            (folder / clip.name).symlink_to(clip)
        out = work / "out"
        out.mkdir()
        stems = work / "stems"
        stems.write_text("".join(f"{c.stem}\n" for c in clips))
        template = hand_template(clips[0], out)
        template[template.index(str(clips[0].parent / "{}.mkv"))] = str(folder / "{}.mkv")
        # The split lane runs the same ffmpeg commands as the hand lane: the bundled ffmpeg
        # chosen in the settings sends every clip through an ffmpeg process (without it, a
        # clip this short has its sound taken out with PyAV in the job's process).
        data, direct = work / "data", work / "direct"
        run(fredica(data, "runs"), "fredica runs (untimed: the database made)")
        run(fredica(direct, "runs"), "fredica runs (untimed: the database made)")
        (data / "settings.json").write_text(json.dumps({"ffmpeg_path": template[0]}))
        try:
            groups = [_group(name) for name in ("xargs", "app", "server", "direct")]
            cores = str(os.cpu_count() or 1)
            hand = ["xargs", "-a", str(stems), "-P", cores, "-I", "{}", *template]
            xargs_wall = _lane(hand, groups[0])
            command = fredica(data, "process", str(folder), "--template", "extract_audio")
            wall = _lane(command, groups[1], groups[2])
            command = fredica(direct, "process", str(folder), "--template", "extract_audio")
            direct_wall = _lane(command, groups[3])
            time.sleep(0.5)  # the last exits accounted
            ffmpeg, app, server, pyav = (_cpu(g) for g in groups)
        finally:
            for g in groups:
                _remove(g)
    ms = 1000 / n
    own = app + server - ffmpeg
    lines = [
        f"{n} clips of 1 s, extract_audio; {cores} cores",
        f"  xargs -P{cores}: wall {xargs_wall:.2f} s, CPU {ffmpeg:.2f} s "
        f"({ffmpeg * ms:.1f} ms a clip: ffmpeg)",
        f"  fredica process, the bundled ffmpeg chosen: wall {wall:.2f} s "
        f"({wall / xargs_wall:.2f}x), CPU {app + server:.2f} s ({(app + server) * ms:.1f} ms "
        "a clip)",
        f"    the app's process (engine, store, display; its start): {app * ms:.1f} ms a clip",
        f"    the server's tree less ffmpeg (server, job children, setpriv): "
        f"{(server - ffmpeg) * ms:.1f} ms a clip",
        f"  Fredica's own CPU beside ffmpeg's: {own * ms:.1f} ms a clip",
        f"  fredica process as installed (short clips through PyAV): wall {direct_wall:.2f} s "
        f"({direct_wall / xargs_wall:.2f}x), CPU {pyav:.2f} s ({pyav * ms:.1f} ms a clip, "
        f"{pyav / ffmpeg:.2f}x the hand lane's)",
    ]
    print("\n".join(lines))
    return 0


def _remove(group: Path) -> None:
    try:
        group.rmdir()
    except OSError:
        pass  # a process still in it: left for the system's cleanup


if __name__ == "__main__":
    sys.exit(main())

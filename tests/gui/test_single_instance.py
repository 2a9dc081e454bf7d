"""One Fredica per user and data directory.

End to end with real processes: a first ``fredica gui`` runs offscreen; a second ``fredica
FILE`` hands the file over and exits 0, and the first imports it and comes to the front; a
start on another data directory is an instance of its own; SIGTERM stops an instance
gracefully, leaving no process behind. In-process: the protocol refuses what is not valid
(with a log line, never a crash), a socket left by a killed instance does not stop the next
start, and the window side imports the items once the data directory is open and brings the
window to the front.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import shutil
import signal
import socket
import socket as pysocket
import sqlite3
import stat
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import psutil
import pytest
from PySide6.QtNetwork import QLocalSocket

from fredica_app.cli import main as cli_main
from fredica_app.cli.parser import build_parser, gui_shorthand
from fredica_app.errors import FredicaError
from fredica_app.gui import single
from fredica_app.gui.app import GuiApp
from fredica_app.gui.host import Mode
from fredica_app.gui.launch import FrontDoor
from fredica_app.gui.single import InstanceServer, Listen
from python_endpoints.jobs.sample import make_sample
from tests.gui.hosting import call
from tests.support.host import NOBODY, as_another_user, folder_for_another_user

FREDICA = str(Path(sys.executable).parent / "fredica")
WAIT = 60.0  # s: a shared two-core machine
T = TypeVar("T")


# --- helpers ----------------------------------------------------------------------------------


def wait_for(what: str, done: Callable[[], bool], within: float = WAIT) -> None:
    deadline = time.monotonic() + within
    while not done():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


def answers(name: str) -> bool:
    probe = QLocalSocket()
    probe.connectToServer(name)
    ok = probe.waitForConnected(500)
    probe.abort()
    return ok


def log_lines(data_dir: Path, pid: int) -> list[str]:
    path = data_dir / "logs" / "fredica.log"
    if not path.exists():
        return []
    return [line for line in path.read_text().splitlines() if f"[{pid}]" in line]


def sources(data_dir: Path) -> list[str]:
    """The library's sources, read from the database (read-only) while an instance runs."""
    db = data_dir / "fredica.db"
    if not db.exists():
        return []
    with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
        try:
            return [row[0] for row in conn.execute("SELECT source FROM material")]
        except sqlite3.OperationalError:  # not migrated yet
            return []


def materials(data_dir: Path) -> list[dict[str, Any]]:
    """The library, read by a command while the instance holds the engine's lock."""
    done = subprocess.run(
        [FREDICA, "--data-dir", str(data_dir), "materials", "--json"],
        capture_output=True,
        text=True,
        timeout=WAIT,
    )
    assert done.returncode == 0, done.stderr
    found: list[dict[str, Any]] = json.loads(done.stdout)
    return found


class Instance:
    """A real ``fredica … gui`` child process, offscreen."""

    def __init__(self, data_dir: Path, *args: str) -> None:
        self.data_dir = data_dir
        self.name = single.server_name(data_dir)
        self.err = tempfile.TemporaryFile()
        self.process = subprocess.Popen(
            [FREDICA, "--data-dir", str(data_dir), *args],
            env={**os.environ, "QT_QPA_PLATFORM": "offscreen"},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=self.err,
        )

    def wait_listening(self) -> None:
        wait_for(
            "the instance to listen",
            lambda: (
                self.process.poll() is None
                and any("listening for later starts" in s for s in self.logs())
            ),
        )
        assert answers(self.name)

    def logs(self) -> list[str]:
        return log_lines(self.data_dir, self.process.pid)

    def stop(self) -> int:
        """SIGTERM, then wait; every process it started must be gone too."""
        if self.process.poll() is None:
            children = psutil.Process(self.process.pid).children(recursive=True)
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(WAIT)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(WAIT)
                raise
            _, alive = psutil.wait_procs(children, timeout=WAIT)
            assert not alive, f"left behind: {alive}"
        self.err.close()
        return int(self.process.returncode)

    def stderr(self) -> str:
        self.err.seek(0)
        return self.err.read().decode(errors="replace")


@pytest.fixture
def instances() -> Iterator[list[Instance]]:
    started: list[Instance] = []
    yield started
    for instance in started:
        if instance.process.poll() is None:
            instance.process.kill()
            instance.process.wait(WAIT)


# --- real processes ---------------------------------------------------------------------------


def test_a_second_start_hands_its_file_to_the_first_and_exits(
    tmp_path: Path, instances: list[Instance]
) -> None:
    data = tmp_path / "data"
    clip = make_sample(tmp_path / "media" / "clip one.mkv", 2.0)
    first = Instance(data, "gui")
    instances.append(first)
    first.wait_listening()

    # From another working directory, with a relative path: the sender resolves it.
    second = subprocess.run(
        [FREDICA, "--data-dir", str(data), os.path.join("media", "clip one.mkv")],
        cwd=tmp_path,
        env={**os.environ, "QT_QPA_PLATFORM": "offscreen"},
        capture_output=True,
        text=True,
        timeout=WAIT,
    )
    assert second.returncode == 0, second.stderr
    assert first.process.poll() is None  # still the one instance
    wait_for("the first to import the clip", lambda: sources(data) == [str(clip)])
    assert [m["source"] for m in materials(data)] == [str(clip)]
    logs = "\n".join(first.logs())
    assert "a later start handed over 1 item(s)" in logs
    assert "a later start asked for the window" in logs
    assert "brought the window to the front" in logs
    # The second opened no window and no engine: it only handed over.
    mine = log_lines(data, _pid_of(data, "handed 1 item(s) over"))
    assert mine and not any("workers.engine" in line for line in mine)

    # Another data directory: an instance of its own, which imports its command line's
    # folder itself.
    other = Instance(tmp_path / "other", "gui", str(clip.parent))
    instances.append(other)
    other.wait_listening()
    assert other.name != first.name
    wait_for("the other to import the folder", lambda: sources(tmp_path / "other") == [str(clip)])
    assert sources(data) == [str(clip)]

    for instance in (other, first):
        assert instance.stop() == 0, instance.stderr()
        assert any("stopping the engine gracefully" in s for s in instance.logs())
    assert not answers(first.name) and not answers(other.name)


def _pid_of(data_dir: Path, text: str) -> int:
    for line in (data_dir / "logs" / "fredica.log").read_text().splitlines():
        if text in line:
            return int(line.split("[", 1)[1].split("]", 1)[0])
    raise AssertionError(f"no log line says {text!r}")


def test_a_socket_left_by_a_killed_instance_does_not_stop_the_next(tmp_path: Path) -> None:
    name = short_name()
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                """
                import sys
                from PySide6.QtCore import QCoreApplication
                from fredica_app.gui.single import InstanceServer
                app = QCoreApplication([])
                server = InstanceServer(sys.argv[1])
                print(server.listen().value, flush=True)
                app.exec()
                """
            ),
            name,
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    with child.stdout:
        try:
            assert child.stdout.readline().strip() == "listening"
        finally:
            child.kill()  # a crash: nothing removes its socket
            child.wait(WAIT)
    assert Path(name).exists()
    assert single.hand_off(name, ["/a.mkv"]) is False  # nothing answers: start normally
    server = InstanceServer(name)
    assert server.listen() is Listen.LISTENING
    assert answers(name)
    server.close()
    assert not Path(name).exists()


# --- in-process: the protocol -----------------------------------------------------------------


def short_name() -> str:
    """A socket path short enough for every system (pytest's temporary folders are long)."""
    folder = tempfile.mkdtemp(prefix="fs-")
    return os.path.join(folder, "s")


@pytest.fixture
def server(qtbot: Any) -> Iterator[InstanceServer]:
    name = short_name()
    server = InstanceServer(name)
    assert server.listen() is Listen.LISTENING
    yield server
    server.close()
    shutil.rmtree(os.path.dirname(name), ignore_errors=True)


def off_thread(qtbot: Any, work: Callable[[], T]) -> T:
    """Run a blocking client in a thread while this thread's event loop serves it."""
    with ThreadPoolExecutor(1) as pool:
        future: Future[T] = pool.submit(work)
        qtbot.waitUntil(future.done, timeout=int(WAIT * 1000))
        return future.result()


HAND_OFF = textwrap.dedent(
    """
    import json, sys
    from fredica_app.gui import single
    from fredica_app.errors import FredicaError
    name, items, activate, reply_ms = json.load(sys.stdin)
    try:
        ok = single.hand_off(name, items, activate=activate, reply_ms=reply_ms)
        print(json.dumps({"ok": ok}))
    except FredicaError as exc:
        print(json.dumps({"error": str(exc)}))
    """
)


def hand_off(
    qtbot: Any, name: str, items: list[str], activate: bool = True, reply_ms: int = 10_000
) -> Any:
    """:func:`single.hand_off` from another process, as a later start runs it (in this one,
    its blocking waits would hold the interpreter while this thread's server must answer)."""

    def run() -> Any:
        done = subprocess.run(
            [sys.executable, "-c", HAND_OFF],
            input=json.dumps([name, items, activate, reply_ms]),
            capture_output=True,
            text=True,
            timeout=WAIT,
        )
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    answer = off_thread(qtbot, run)
    if "error" in answer:
        raise FredicaError(answer["error"])
    return answer["ok"]


def raw(name: str, data: bytes) -> bytes:
    """Send ``data`` on a plain Unix socket; what comes back until a newline or the end."""
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(WAIT)
        s.connect(name)
        s.sendall(data)
        got = b""
        while not got.endswith(b"\n"):
            chunk = s.recv(65536)
            if not chunk:
                break
            got += chunk
        return got


unix_only = pytest.mark.skipif(sys.platform == "win32", reason="named pipes on Windows")


def test_a_file_whose_name_is_not_utf8_is_handed_over_as_it_is(
    qtbot: Any, server: InstanceServer
) -> None:
    """``fredica caf\\xe9.mkv`` with a window open: the path arrives as the same string (its
    undecodable byte as a ``\\udc..`` escape on the socket), not refused, not changed."""
    received: list[Any] = []
    server.items_received.connect(lambda items: received.append(items))
    latin1 = "/home/ann/" + os.fsdecode(b"caf\xe9.mkv")
    assert hand_off(qtbot, server.name, [latin1], activate=False) is True
    qtbot.waitUntil(lambda: len(received) == 1)
    assert received == [[latin1]]


def test_items_and_activate_arrive_as_signals(qtbot: Any, server: InstanceServer) -> None:
    received: list[Any] = []
    server.items_received.connect(lambda items: received.append(items))
    server.activate_requested.connect(lambda: received.append("activate"))
    items = ["/home/ann/a b.mkv", "https://example.org/v?id=1"]
    assert hand_off(qtbot, server.name, items) is True
    qtbot.waitUntil(lambda: len(received) == 2)
    assert received == [items, "activate"]
    # --minimized's hand-over: the items, no activation.
    received.clear()
    assert hand_off(qtbot, server.name, ["/b.mkv"], activate=False)
    qtbot.waitUntil(lambda: len(received) == 1)
    assert received == [["/b.mkv"]]


@unix_only
@pytest.mark.parametrize(
    ("line", "error"),
    [
        (b"{not json", "not JSON"),
        (b'{"fredica": 1, "type": "open", "items": ["relative/a.mkv"]}', "absolute path"),
        (b'{"fredica": 1, "type": "open", "items": ["ftp://h/a.mkv"]}', "absolute path"),
        (b'{"fredica": 1, "type": "open", "items": "/a.mkv"}', "valid list"),
        (b'{"fredica": 1, "type": "open", "items": [1]}', "valid string"),
        (b'{"fredica": 2, "type": "activate"}', "protocol version 2"),
        (b'{"fredica": 1, "type": "quit"}', "does not match"),
        (b'{"fredica": 1, "type": "activate", "x": 1}', "Extra inputs"),
        (b"[]", "object"),
    ],
)
def test_an_invalid_request_is_refused_with_a_log_line(
    qtbot: Any,
    server: InstanceServer,
    caplog: pytest.LogCaptureFixture,
    line: bytes,
    error: str,
) -> None:
    received: list[Any] = []
    server.items_received.connect(received.append)
    server.activate_requested.connect(lambda: received.append("activate"))
    with caplog.at_level(logging.WARNING, logger="fredica_app.gui.single"):
        reply = json.loads(off_thread(qtbot, lambda: raw(server.name, line + b"\n")))
    assert reply["type"] == "error" and error in reply["error"]
    assert any("refused a request" in r.getMessage() for r in caplog.records)
    assert received == []
    # The server goes on: a valid request after it is served.
    activate = b'{"fredica": 1, "type": "activate"}\n'
    assert json.loads(off_thread(qtbot, lambda: raw(server.name, activate)))["type"] == "ack"
    assert received == ["activate"]


@unix_only
def test_an_oversized_message_is_refused_and_dropped(
    qtbot: Any, server: InstanceServer, caplog: pytest.LogCaptureFixture
) -> None:
    received: list[Any] = []
    server.items_received.connect(received.append)
    huge = b'{"fredica": 1, "type": "open", "items": ["/' + b"a" * (single.MAX_LINE + 10)
    with caplog.at_level(logging.WARNING, logger="fredica_app.gui.single"):
        reply = json.loads(off_thread(qtbot, lambda: raw(server.name, huge)))
    assert reply == {"fredica": 1, "type": "error", "error": reply["error"]}
    assert "more than" in reply["error"]
    assert any("more than" in r.getMessage() for r in caplog.records)
    assert received == []


@unix_only
def test_a_client_that_says_nothing_is_dropped(
    qtbot: Any, server: InstanceServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(single, "IDLE_TIMEOUT_MS", 300)
    assert off_thread(qtbot, lambda: raw(server.name, b'{"fredica": 1')) == b""  # closed


class FakeInstance:
    """A FAKE running instance on a plain Unix socket: it answers each line with ``reply``
    (None: never answers), as another version or a hung instance would."""

    def __init__(self, name: str, reply: bytes | None) -> None:
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.bind(name)
        self.sock.listen(1)
        self.reply = reply
        self.pool = ThreadPoolExecutor(1)
        self.pool.submit(self._serve)

    def _serve(self) -> None:
        conn, _ = self.sock.accept()
        with conn:
            conn.settimeout(WAIT)
            while True:
                data = conn.recv(65536)
                if not data:
                    return
                if self.reply is not None:
                    conn.sendall(self.reply)

    def close(self) -> None:
        self.sock.close()
        self.pool.shutdown(wait=True)


@unix_only
@pytest.mark.parametrize(
    ("reply", "error"),
    [
        (b'{"fredica": 1, "type": "error", "error": "no"}\n', "refused the request: no"),
        (b'{"fredica": 9, "type": "ack"}\n', "another version"),
        (None, "does not answer"),
    ],
)
def test_an_instance_that_refuses_or_is_silent_is_a_clear_error(
    qtbot: Any, reply: bytes | None, error: str
) -> None:
    name = short_name()
    fake = FakeInstance(name, reply)
    try:
        with pytest.raises(FredicaError, match=error):
            hand_off(qtbot, name, ["/a.mkv"], reply_ms=500)
    finally:
        fake.close()


def test_items_that_no_instance_may_take_are_refused_by_the_sender() -> None:
    with pytest.raises(FredicaError, match="absolute path"):
        single.hand_off(short_name(), ["relative.mkv"])


def test_thousands_of_items_arrive_whole(qtbot: Any, server: InstanceServer) -> None:
    received: list[str] = []
    server.items_received.connect(received.extend)
    items = [f"/media/{'long folder ' * 20}/clip {i:05}.mkv" for i in range(25_000)]
    assert hand_off(qtbot, server.name, items, activate=False) is True
    qtbot.waitUntil(lambda: len(received) == len(items))
    assert received == items


def test_prepare_items_resolves_paths_against_the_senders_folder(tmp_path: Path) -> None:
    url = "https://example.org/watch?v=1&t=2"
    prepared = single.prepare_items(["a.mkv", "../b.mkv", "/abs/c.mkv", url], tmp_path / "x")
    assert prepared == [
        str(tmp_path / "x" / "a.mkv"),
        str(tmp_path / "b.mkv"),
        "/abs/c.mkv",
        url,
    ]
    assert all(single.check_item(item) for item in prepared)


def test_the_name_is_per_user_and_per_data_directory(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "a")
    name = single.server_name(tmp_path / "a", "ann")
    assert name == single.server_name(tmp_path / "link", "ann")  # the resolved folder
    assert name == single.server_name(tmp_path / "a" / ".." / "a", "ann")
    assert name != single.server_name(tmp_path / "b", "ann")
    assert name != single.server_name(tmp_path / "a", "bob")
    # macOS's socket paths hold 104 bytes, and its temporary folder takes about 50.
    assert len(os.path.basename(single.server_name(tmp_path, "x" * 200))) <= 41


@unix_only
def test_the_socket_lives_in_a_private_runtime_folder_when_there_is_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    private = tmp_path / "run"
    private.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(private))
    name = single.server_name(tmp_path / "data", "ann")
    assert os.path.dirname(name) == str(private) and os.path.basename(name).startswith(
        "fredica-ann-"
    )
    # Others may enter it, or there is none: a folder of this user's alone in the temporary
    # folder instead (before: a name in /tmp, which another user could take first).
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    ours = temp / f"fredica-{os.getuid()}"
    private.chmod(0o755)
    assert single.server_name(tmp_path / "data", "ann") == str(ours / os.path.basename(name))
    assert stat.S_IMODE(ours.stat().st_mode) == 0o700
    monkeypatch.delenv("XDG_RUNTIME_DIR")
    assert single.server_name(tmp_path / "data", "ann") == str(ours / os.path.basename(name))


@unix_only
def test_a_socket_folder_another_user_made_first_is_not_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Someone made ``fredica-UID`` in the temporary folder before us (open to all, or theirs):
    the socket goes into the data directory's private ``run`` folder instead."""
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    taken = temp / f"fredica-{os.getuid()}"
    taken.mkdir(mode=0o777)
    taken.chmod(0o777)
    if os.geteuid() == 0:
        os.chown(taken, NOBODY, NOBODY)
    data = tmp_path / "data"
    name = single.server_name(data, "ann")
    assert os.path.dirname(name) == str(data / "run")
    assert stat.S_IMODE((data / "run").stat().st_mode) == 0o700


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="SO_PEERCRED is Linux's")
def test_a_connection_from_another_user_is_refused_by_the_kernel_s_word(
    qtbot: Any, tmp_path: Path
) -> None:
    """Even where another user could reach the socket (its folder and file opened to all, as
    the test does on purpose), the server asks the kernel who connected (``SO_PEERCRED``) and
    hands another user's request nothing; this user's goes through."""
    if os.geteuid() != 0:
        pytest.skip("connecting as another user needs root (CI runs as root)")
    with folder_for_another_user() as shared:
        name = str(shared / "fredica-test")
        _refuses_another_user(qtbot, name)


def _refuses_another_user(qtbot: Any, name: str) -> None:
    server = single.InstanceServer(name)
    received: list[Any] = []
    server.items_received.connect(lambda items: received.append(items))
    assert server.listen() is single.Listen.LISTENING
    try:
        os.chmod(name, 0o777)
        request = single.encode(single.Open(items=["/home/ann/secret.mkv"]))

        def connect_and_send() -> None:
            with pysocket.socket(pysocket.AF_UNIX, pysocket.SOCK_STREAM) as s:
                s.connect(name)
                s.sendall(request)

        as_another_user(connect_and_send)
        qtbot.wait(500)
        assert received == []
        assert hand_off(qtbot, name, ["/home/ann/mine.mkv"], activate=False) is True
        qtbot.waitUntil(lambda: received == [["/home/ann/mine.mkv"]])
    finally:
        server.close()


def test_another_data_directorys_name_is_free(qtbot: Any, tmp_path: Path) -> None:
    """An instance on one data directory does not take a start on another."""
    names = [single.server_name(tmp_path / d) for d in ("one", "two")]
    first = InstanceServer(names[0])
    assert first.listen() is Listen.LISTENING
    try:
        assert hand_off(qtbot, names[1], []) is False
        second = InstanceServer(names[1])
        assert second.listen() is Listen.LISTENING
        assert InstanceServer(names[0]).listen() is Listen.TAKEN
        second.close()
    finally:
        first.close()


# --- in-process: the window's side -----------------------------------------------------------


def test_items_wait_for_the_data_directory_then_the_window_comes_forward(
    qtbot: Any, qapp: Any, data_dir: Path, tmp_path: Path
) -> None:
    clip = make_sample(tmp_path / "media" / "clip.mkv", 2.0)
    gui = GuiApp(qapp, data_dir)
    qtbot.addWidget(gui.window)
    front = FrontDoor(gui, None)
    host, window = gui.host, gui.window
    assert gui.tray is None  # offscreen: no tray, so --minimized minimises
    gui.start(hidden=True)
    front.start_hidden()
    qtbot.waitUntil(window.isMinimized)
    front.open_items([str(clip)])  # before the data directory is open: kept
    try:
        qtbot.waitUntil(lambda: host.state.mode is Mode.ENGINE, timeout=30_000)
        qtbot.waitUntil(
            lambda: len(call(host, lambda app: asyncio.to_thread(app.library.list))) == 1,
            timeout=30_000,
        )
        assert window.nav.currentRow() == window.LIBRARY
        front.activate()
        qtbot.waitUntil(lambda: not window.isMinimized())
        window.hide()  # hidden in the tray
        front.activate()
        assert window.isVisible()
    finally:
        host.shutdown()
        assert host.join(60)


def test_a_file_open_event_imports_the_file_and_brings_the_window_forward(
    qtbot: Any, qapp: Any, data_dir: Path, tmp_path: Path
) -> None:
    """What macOS sends a running app for Finder's "Open With": a QFileOpenEvent."""
    from PySide6.QtCore import QCoreApplication
    from PySide6.QtGui import QFileOpenEvent

    clip = make_sample(tmp_path / "media" / "clip.mkv", 2.0)
    gui = GuiApp(qapp, data_dir)
    qtbot.addWidget(gui.window)
    FrontDoor(gui, None)
    host, window = gui.host, gui.window
    gui.start()
    try:
        qtbot.waitUntil(lambda: host.state.mode is Mode.ENGINE, timeout=30_000)
        window.showMinimized()
        QCoreApplication.sendEvent(qapp, QFileOpenEvent(str(clip)))
        qtbot.waitUntil(
            lambda: len(call(host, lambda app: asyncio.to_thread(app.library.list))) == 1,
            timeout=30_000,
        )
        qtbot.waitUntil(lambda: not window.isMinimized())
        assert window.nav.currentRow() == window.LIBRARY
    finally:
        host.shutdown()
        assert host.join(60)


def test_shorthand_opens_files_and_urls_and_leaves_commands_alone(tmp_path: Path) -> None:
    parser = build_parser()
    clip = tmp_path / "a.mkv"
    clip.touch()
    assert gui_shorthand(parser, [str(clip)]) == ["gui", str(clip)]
    assert gui_shorthand(parser, ["--data-dir", "d", str(clip), "x"]) == [
        "--data-dir", "d", "gui", str(clip), "x",
    ]  # fmt: skip
    assert gui_shorthand(parser, ["--data-dir=d", "https://h/v"]) == [
        "--data-dir=d", "gui", "https://h/v",
    ]  # fmt: skip
    assert gui_shorthand(parser, ["runs"]) == ["runs"]
    assert gui_shorthand(parser, ["gui", str(clip)]) == ["gui", str(clip)]
    assert gui_shorthand(parser, ["--version"]) == ["--version"]
    assert gui_shorthand(parser, []) == []
    args = parser.parse_args(gui_shorthand(parser, [str(clip), "--minimized"]))
    assert (args.command, args.items, args.minimized) == ("gui", [str(clip)], True)


def test_an_unknown_word_that_is_no_path_is_still_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        cli_main(["--data-dir", str(tmp_path), str(tmp_path / "no-such.mkv")])
    assert exited.value.code == 2
    assert "invalid choice" in capsys.readouterr().err

"""``fredica remove MATERIAL|RUN [--outputs]`` and how URL materials are titled, on a real data
directory through the real command."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from fredica_app.cli import main
from fredica_app.library.importer import url_file_name, url_title


def fredica(capsys: pytest.CaptureFixture[str], data: Path, *args: str) -> tuple[int, str, str]:
    code = main(["--data-dir", str(data), *args])
    out, err = capsys.readouterr()
    return code, out, err


def ok(capsys: pytest.CaptureFixture[str], data: Path, *args: str) -> Any:
    code, out, err = fredica(capsys, data, *args, "--json")
    assert code == 0, err
    return json.loads(out)


def count(data: Path, statement: str, *args: Any) -> int:
    with sqlite3.connect(data / "fredica.db") as conn:
        return int(conn.execute(statement, args).fetchone()[0])


def add(capsys: pytest.CaptureFixture[str], data: Path, item: str) -> dict[str, Any]:
    (entry,) = ok(capsys, data, "add", item, "--template", "transcode_mp4")
    return dict(entry)


def test_a_material_with_an_active_run_is_refused_then_removed_once_cancelled(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "d"
    clip = tmp_path / "clip.mkv"
    clip.write_bytes(b"m" * 100)
    entry = add(capsys, data, str(clip))
    material, run_id = entry["material"]["id"], entry["run_id"]
    folder = data / "library" / f"clip-{material[:8]}"
    assert folder.is_dir()

    code, out, err = fredica(capsys, data, "remove", material)
    assert code == 1 and out == "" and err.count("\n") == 1
    assert err.startswith("fredica: error: material 'clip' has 1 active run(s): ")
    assert f"{run_id} (transcode_mp4, pending)" in err and "fredica cancel" in err
    assert [m["id"] for m in ok(capsys, data, "materials")] == [material]  # nothing removed
    assert ok(capsys, data, "run", run_id)["status"] == "pending"

    fredica(capsys, data, "cancel", run_id)
    code, out, err = fredica(capsys, data, "remove", material)
    assert code == 0, err
    assert out.splitlines() == [
        f"removed material 'clip' ({material}) with 1 finished run(s): 1 task(s), "
        "1 timeline event(s)",
        f"its outputs are kept in {folder} (`--outputs` deletes them)",
    ]
    assert ok(capsys, data, "materials") == []
    assert ok(capsys, data, "runs") == []
    assert count(data, "SELECT count(*) FROM task") == 0
    assert count(data, "SELECT count(*) FROM task_event") == 0
    assert folder.is_dir() and clip.read_bytes() == b"m" * 100


def test_outputs_go_with_the_material_only_inside_its_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "d"
    clip = tmp_path / "clip.mkv"
    clip.write_bytes(b"m" * 100)
    entry = add(capsys, data, str(clip))
    material = entry["material"]["id"]
    folder = data / "library" / f"clip-{material[:8]}"
    (folder / "clip.mp4").write_bytes(b"out")
    (folder / "subs").mkdir()
    (folder / "subs" / "clip.en.srt").write_text("1\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "precious.txt").write_text("keep me")
    (folder / "link").symlink_to(elsewhere)  # removed as a link, never followed
    fredica(capsys, data, "cancel", entry["run_id"])

    removed = ok(capsys, data, "remove", material, "--outputs")
    assert removed == {
        "removed": "material",
        "id": material,
        "title": "clip",
        "runs": [entry["run_id"]],
        "tasks": 1,
        "events": 1,
        "restart_log": 0,
        "outputs_dir": str(folder),
        "outputs_deleted": True,
        "files_deleted": 3,
        "poster_removed": False,  # never looked at (no window): it had none
    }
    assert not folder.exists()
    assert clip.read_bytes() == b"m" * 100  # the user's source file
    assert (elsewhere / "precious.txt").read_text() == "keep me"
    assert (data / "library").is_dir()


def test_the_users_source_file_is_kept_even_inside_the_output_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "d"
    clip = tmp_path / "clip.mkv"
    clip.write_bytes(b"m")
    entry = add(capsys, data, str(clip))
    material = entry["material"]["id"]
    folder = data / "library" / f"clip-{material[:8]}"
    inside = folder / "my-recording.mkv"  # a user who keeps media in the library folder
    inside.write_bytes(b"mine")
    (folder / "clip.mp4").write_bytes(b"out")
    with sqlite3.connect(data / "fredica.db") as conn:
        conn.execute("UPDATE material SET local_path = ? WHERE id = ?", (str(inside), material))
    fredica(capsys, data, "cancel", entry["run_id"])
    code, out, err = fredica(capsys, data, "remove", material, "--outputs")
    assert code == 0, err
    assert f"deleted its outputs: {folder} (1 file(s))" in out
    assert inside.read_bytes() == b"mine" and not (folder / "clip.mp4").exists()


def test_an_output_folder_that_is_a_link_is_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "d"
    clip = tmp_path / "clip.mkv"
    clip.write_bytes(b"m")
    entry = add(capsys, data, str(clip))
    folder = data / "library" / f"clip-{entry['material']['id'][:8]}"
    folder.rmdir()
    target = tmp_path / "target"
    target.mkdir()
    (target / "file").write_text("x")
    folder.symlink_to(target)
    fredica(capsys, data, "cancel", entry["run_id"])
    code, out, err = fredica(capsys, data, "remove", entry["material"]["id"], "--outputs")
    assert code == 0, err
    assert f"its outputs are kept in {folder}: it is a symbolic link" in out
    assert (target / "file").read_text() == "x"


def test_a_run_is_removed_with_what_belongs_to_it_and_an_active_one_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "d"
    spec = tmp_path / "spec.json"
    spec.write_text(
        json.dumps(
            {
                "tasks": [
                    {"key": "a", "type": "NOOP"},
                    {"key": "b", "type": "NOOP", "depends_on": ["a"]},
                ]
            }
        )
    )
    done = ok(capsys, data, "submit", str(spec))
    assert fredica(capsys, data, "worker", "--until-idle")[0] == 0
    pending = ok(capsys, data, "submit", str(spec))
    a = done["task_ids"]["a"]
    with sqlite3.connect(data / "fredica.db") as conn:  # what recovery once logged for it
        conn.execute(
            "INSERT INTO restart_task_log (session_id, task_id, task_type, workflow_run_id, "
            "status_at_restart, progress, action, disposition, created_at, updated_at) "
            "VALUES ('s', ?, 'NOOP', ?, 'running', 0, 'requeued', 'pending_review', 0, 0)",
            (a, done["run_id"]),
        )

    code, _, err = fredica(capsys, data, "remove", pending["run_id"])
    assert code == 1 and err == (
        f"fredica: error: run {pending['run_id']} is pending (0/2 tasks done): cancel it first "
        f"(`fredica cancel {pending['run_id']}`), then remove it\n"
    )
    code, _, err = fredica(capsys, data, "remove", done["run_id"], "--outputs")
    assert code == 1 and "--outputs goes with a material" in err

    removed = ok(capsys, data, "remove", done["run_id"])
    assert (removed["removed"], removed["runs"], removed["tasks"]) == ("run", [done["run_id"]], 2)
    assert removed["restart_log"] == 1 and removed["outputs_dir"] is None
    assert [r["id"] for r in ok(capsys, data, "runs")] == [pending["run_id"]]
    assert count(data, "SELECT count(*) FROM task WHERE workflow_run_id = ?", done["run_id"]) == 0
    assert count(data, "SELECT count(*) FROM task_dependency") == 1  # the pending run's edge
    assert count(data, "SELECT count(*) FROM restart_task_log") == 0

    code, _, err = fredica(capsys, data, "remove", done["run_id"])
    assert code == 1 and f"no material or run with id {done['run_id']!r}" in err


@pytest.mark.parametrize(
    ("url", "title", "file"),
    [
        ("http://127.0.0.1:8765/", "127.0.0.1:8765", "127.0.0.1_8765.mkv"),
        ("https://example.org/media/talk.mp4", "talk.mp4 (example.org)", "talk.mp4"),
        ("https://example.org/v/My%20Talk.webm?x=1", "My Talk.webm (example.org)", "My_Talk.webm"),
        ("https://www.example.org/watch?v=abc", "watch (www.example.org)", "watch.mkv"),
        ("http://[::1]:8080/a/b/", "b ([::1]:8080)", "b.mkv"),
    ],
)
def test_urls_are_titled_by_their_last_segment_and_host(url: str, title: str, file: str) -> None:
    assert (url_title(url), url_file_name(url)) == (title, file)


def test_a_url_materials_files_keep_a_plain_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "d"
    bare = add(capsys, data, "http://127.0.0.1:8765/")
    assert bare["material"]["title"] == "127.0.0.1:8765"
    entry = add(capsys, data, "https://example.org/media/talk.mp4")
    material = entry["material"]
    assert material["title"] == "talk.mp4 (example.org)"
    folder = data / "library" / f"talk-{material['id'][:8]}"
    assert material["local_path"] == str(folder / "source" / "talk.mp4")
    tasks = {t["key"]: t for t in ok(capsys, data, "run", entry["run_id"])["tasks"]}
    assert tasks["download"]["payload"]["output"] == str(folder / "source" / "talk.mp4")
    assert tasks["transcode"]["payload"]["output"] == str(folder / "talk.mp4")
    # Removing it with its outputs takes what was downloaded for it, in its folder.
    (folder / "source").mkdir()
    (folder / "source" / "talk.mp4").write_bytes(b"downloaded")
    fredica(capsys, data, "cancel", entry["run_id"])
    removed = ok(capsys, data, "remove", material["id"], "--outputs")
    assert removed["outputs_dir"] == str(folder) and removed["files_deleted"] == 1
    assert not folder.exists()

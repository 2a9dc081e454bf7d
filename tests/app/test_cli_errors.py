"""The command as a newcomer meets it: every error is one ``fredica: error: …`` line, a closed
pipe ends quietly, and ``sample`` neither overwrites nor makes folders behind one's back."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import av
import pytest

from fredica_app import cli
from fredica_app.cli import main

EXE = str(Path(sys.executable).parent / "fredica")


def fredica(capsys: pytest.CaptureFixture[str], data: Path, *args: str) -> tuple[int, str, str]:
    code = main(["--data-dir", str(data), *args])
    out, err = capsys.readouterr()
    return code, out, err


def one_error_line(err: str) -> str:
    assert err.startswith("fredica: error: ") and err.count("\n") == 1, err
    return err


def test_a_folder_or_a_media_file_given_as_a_spec_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = fredica(capsys, tmp_path / "d", "submit", str(tmp_path))
    assert code == 1 and out == ""
    assert f"{tmp_path} is a folder" in one_error_line(err)

    clip = tmp_path / "clip.mkv"
    clip.write_bytes(b"\x1a\x45\xdf\xa3\x93\x42\x82\x88matroska\xff\xfe")
    code, out, err = fredica(capsys, tmp_path / "d", "submit", str(clip))
    assert code == 1 and out == ""
    assert f"{clip} is not a workflow spec" in one_error_line(err) and "fredica add" in err


def test_a_data_dir_that_is_a_file_and_an_endpoints_server_without_a_token_are_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    not_a_folder = tmp_path / "some-file.txt"
    not_a_folder.write_text("hello")
    code, out, err = fredica(capsys, not_a_folder, "runs")
    assert code == 1 and out == ""
    assert str(not_a_folder) in one_error_line(err) and "--data-dir" in err
    assert not_a_folder.read_text() == "hello"

    assert main(["endpoints"]) == 1
    out, err = capsys.readouterr()
    assert "no token" in one_error_line(err)


def test_add_says_which_folder_holds_no_media(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "todo.txt").write_text("not media")
    data = tmp_path / "d"
    code, out, err = fredica(capsys, data, "add", str(empty), str(notes), "--template", "media")
    assert code == 1 and out == ""
    assert f"no media found in {empty} (no file" in one_error_line(err)
    assert f"no media found in {notes} (1 file(s), none with a media extension" in err

    media = tmp_path / "media"
    media.mkdir()
    (media / "talk.mkv").write_bytes(b"not really a video, but named like one")
    code, out, err = fredica(
        capsys, data, "add", str(empty), str(media), "--template", "media", "--json"
    )
    assert code == 0 and len(json.loads(out)) == 1
    assert (
        err == f"fredica: warning: no media found in {empty} (no file; hidden files are skipped)\n"
    )


def test_an_unexpected_error_is_one_line_and_its_traceback_is_in_the_log(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    async def broken(app: object, args: object) -> int:
        raise RuntimeError("a bug somewhere deep")

    monkeypatch.setitem(cli.COMMANDS, "materials", broken)
    code, out, err = fredica(capsys, tmp_path, "materials")
    log = tmp_path / "logs" / "fredica.log"
    assert code == 1 and out == ""
    assert one_error_line(err) == (
        "fredica: error: unexpected RuntimeError: a bug somewhere deep (the traceback is in "
        f"{log}; please report it if the cause is not clear)\n"
    )
    text = log.read_text()
    assert "unexpected error in `fredica materials`" in text
    assert "Traceback (most recent call last)" in text and "in broken" in text


@pytest.mark.parametrize("command", [["templates"], ["runs"], ["runs", "--json"], ["settings"]])
def test_a_closed_pipe_ends_quietly(tmp_path: Path, command: list[str]) -> None:
    """`fredica runs | head -1`: the reader is gone before the command writes. No traceback,
    no message; the status a shell reports for a tool ended by SIGPIPE."""
    done = subprocess.run(
        [EXE, "--data-dir", str(tmp_path), "submit", "-"],
        input=json.dumps({"template": "diagnostic"}),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    reader = subprocess.Popen(
        [EXE, "--data-dir", str(tmp_path), *command],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert reader.stdout is not None and reader.stderr is not None
    reader.stdout.close()  # before the command starts writing: every write fails with EPIPE
    err = reader.stderr.read()
    reader.stderr.close()
    assert reader.wait(timeout=60) == cli.EXIT_BROKEN_PIPE
    assert err == b""


def test_sample_refuses_an_existing_file_and_a_missing_folder_and_warns_of_a_wrong_extension(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "d"
    out = tmp_path / "clip.avi"
    code, stdout, err = fredica(capsys, data, "sample", str(out), "--seconds", "1")
    assert code == 0 and stdout.strip() == str(out)
    assert err == (
        f"fredica: warning: {out} will hold Matroska (--kind mkv) whatever its extension says; "
        "name it .mkv or choose the --kind that matches\n"
    )
    with av.open(str(out)) as container:
        assert "matroska" in container.format.name

    before = out.read_bytes()
    code, stdout, err = fredica(capsys, data, "sample", str(out), "--seconds", "2")
    assert code == 1 and stdout == ""
    assert one_error_line(err) == f"fredica: error: {out} exists; pass --force to replace it\n"
    assert out.read_bytes() == before

    code, stdout, err = fredica(
        capsys, data, "sample", str(out), "--seconds", "1", "--kind", "mp4", "--force"
    )
    assert code == 0 and "will hold MP4 (--kind mp4)" in err
    with av.open(str(out)) as container:
        assert "mp4" in container.format.name

    nested = tmp_path / "no" / "such" / "folder" / "clip.mkv"
    code, stdout, err = fredica(capsys, data, "sample", str(nested), "--seconds", "1")
    assert code == 1 and stdout == ""
    assert f"no folder {nested.parent}" in one_error_line(err)
    assert not (tmp_path / "no").exists()

    good = tmp_path / "clip.mkv"
    code, _, err = fredica(capsys, data, "sample", str(good), "--seconds", "1", "--kind", "legacy")
    assert code == 0 and err == "" and good.is_file()


def test_a_broken_pipe_that_is_not_standard_output_is_no_quiet_exit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only a reader of our output that went away ends quietly: a pipe to anything else that
    breaks (a child process, a socket) is an error like any other."""
    read_end, write_end = os.pipe()
    with os.fdopen(write_end, "w") as stdout:
        monkeypatch.setattr(sys, "stdout", stdout)

        async def broken(app: object, args: object) -> int:
            raise BrokenPipeError(32, "Broken pipe")

        monkeypatch.setitem(cli.COMMANDS, "materials", broken)
        code = main(["--data-dir", str(tmp_path), "materials"])
        _, err = capsys.readouterr()
        assert code == 1 and err.startswith("fredica: error: unexpected BrokenPipeError")
        os.close(read_end)  # now our reader is gone
        code = main(["--data-dir", str(tmp_path), "materials"])
        _, err = capsys.readouterr()
        assert code == cli.EXIT_BROKEN_PIPE and err == ""
        monkeypatch.undo()

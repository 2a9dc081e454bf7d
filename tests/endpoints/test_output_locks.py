"""The endpoints server's output locks, without a server: who may write which final path when,
and when a job that waited finds its output made meanwhile. The locks at work in a real server,
with real ffmpeg: ``test_media_jobs.py`` ("two tasks, one output")."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from python_endpoints.catalogue import CATALOGUE
from python_endpoints.jobs import outputs
from python_endpoints.params import TranscodeParams
from python_endpoints.serving.child import JobFailed
from python_endpoints.serving.outputlocks import (
    OutputLocks,
    grantable,
    made_meanwhile,
    remove_leftovers,
    skippable,
)
from python_endpoints.serving.registry import ENDPOINTS


def test_claims_are_granted_first_come_first_served_per_path() -> None:
    assert grantable(set(), []) == []
    assert grantable({"x"}, [{"y"}, {"x"}, set(), {"z"}]) == [0, 2, 3]
    # A later claim of "y" does not pass an earlier claim of "x" and "y" waiting for "x":
    # a job of several outputs is not starved by a stream of jobs of one.
    assert grantable({"x"}, [{"x", "y"}, {"y"}, {"z"}]) == [2]
    assert grantable(set(), [{"x", "y"}, {"y"}, {"x"}]) == [0]


def test_a_claim_waits_for_the_holder_then_gets_all_its_paths(tmp_path: Path) -> None:
    locks = OutputLocks()
    mp4, srt = tmp_path / "m.mp4", tmp_path / "m.srt"
    first = locks.claim([mp4])
    both = locks.claim([mp4, srt])
    second = locks.claim([srt])
    nothing = locks.claim([])  # a job that writes nothing (PROBE) never waits
    assert first.granted.is_set() and nothing.granted.is_set()
    assert not both.granted.is_set() and not second.granted.is_set()
    assert locks.blocking(both) == [mp4]
    assert locks.blocking(second) == [srt]  # claimed before it by the waiting job
    locks.release(first)
    assert both.granted.is_set() and not second.granted.is_set()
    locks.release(first)  # twice: nothing more is released
    assert not second.granted.is_set()
    locks.release(both)
    assert second.granted.is_set()
    locks.release(second)
    again = locks.claim([mp4, srt])
    assert again.granted.is_set()


def test_a_withdrawn_claim_lets_the_next_one_go() -> None:
    locks = OutputLocks()
    holder = locks.claim([Path("/a/x")])
    cancelled = locks.claim([Path("/a/x"), Path("/a/y")])
    later = locks.claim([Path("/a/y")])
    assert not later.granted.is_set()
    locks.release(cancelled)  # cancelled while it waited
    assert later.granted.is_set() and holder.granted.is_set()


def test_one_file_under_two_names_is_one_lock(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    locks = OutputLocks()
    holder = locks.claim([tmp_path / "real" / "m.mp4"])
    for other in (tmp_path / "link" / "m.mp4", tmp_path / "real" / ".." / "real" / "m.mp4"):
        claim = locks.claim([other])
        assert holder.granted.is_set() and not claim.granted.is_set(), other
        locks.release(claim)


def test_a_skip_after_the_wait_needs_the_output_made_meanwhile(tmp_path: Path) -> None:
    source, output = tmp_path / "in.mkv", tmp_path / "out.mp4"
    source.write_bytes(b"input")
    params = {"input": str(source), "output": str(output)}
    job, transcode = "transcode_mp4", ENDPOINTS["transcode_mp4"]
    assert made_meanwhile(transcode, params, None) is None  # nothing there
    output.write_bytes(b"made before")
    outputs.write_sidecar(output, source, job, TranscodeParams(**params).model_dump())
    before = outputs.sidecar_stamp(output)
    assert before is not None
    # Current, but it was so before the wait: the job runs (a task without check_skip).
    assert made_meanwhile(transcode, params, before) is None
    output.write_bytes(b"made by the task it waited for")
    os.utime(output, ns=(1, 1))
    outputs.write_sidecar(output, source, job, TranscodeParams(**params).model_dump())
    skipped = {"outputs": [str(output)], "skipped": True}
    assert made_meanwhile(transcode, params, before) == skipped
    assert made_meanwhile(transcode, params, None) == skipped
    # Other params that shape the output, invalid params, or another job: it runs.
    assert made_meanwhile(transcode, {**params, "crf": 30}, before) is None
    assert made_meanwhile(transcode, {**params, "keep_free_bytes": -1}, before) is None
    assert made_meanwhile(ENDPOINTS["extract_audio"], params, before) is None
    assert made_meanwhile(ENDPOINTS["analyze"], params, before) is None


def test_the_jobs_skipped_after_a_wait_are_those_whose_skip_rule_is_current() -> None:
    current = {job.name for job in CATALOGUE if job.skip == "current"}
    assert {name for name, cls in ENDPOINTS.items() if skippable(cls)} == current
    assert {"transcode_mp4", "extract_audio", "thumbnail"} <= current
    # A file at the final path ("exists") says nothing of the params it was made with.
    assert not skippable(ENDPOINTS["download"])


def test_leftovers_are_removed_and_nothing_else(tmp_path: Path) -> None:
    out = tmp_path / "m.mp4"
    left = [outputs.temp_path(out, "deadbeef"), outputs.temp_path(out, "0123abcd")]
    kept = [
        out,
        tmp_path / ".m.mp4.fredica-part.mp4.part",
        outputs.temp_path(tmp_path / "n.mp4", "deadbeef"),
    ]
    for path in left + kept:
        path.write_text("x")
    assert remove_leftovers("TRANSCODE_MP4", {"output": str(out)}) == sorted(left)
    assert sorted(tmp_path.iterdir()) == sorted(kept)


def test_a_leftover_that_cannot_be_removed_does_not_stop_the_job(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "m.mp4"
    left = outputs.temp_path(out, "deadbeef")
    left.write_text("x")

    def refuse(self: Path, missing_ok: bool = False) -> None:
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "unlink", refuse)
    assert remove_leftovers("TRANSCODE_MP4", {"output": str(out)}) == []
    monkeypatch.undo()
    assert left.exists()


def test_an_output_is_put_in_place_only_in_the_folder_it_was_written_in(tmp_path: Path) -> None:
    """``outputs.commit`` opens the folder without following a link and renames in it: the
    usual case puts the file in place; a folder replaced by a link while the job ran (leading
    elsewhere) is refused, and nothing lands there."""
    folder, elsewhere = tmp_path / "talk", tmp_path / "elsewhere"
    folder.mkdir()
    elsewhere.mkdir()
    final = folder / "talk.mp4"
    temp = outputs.temp_path(final, outputs.new_part_id())
    temp.write_bytes(b"made")
    outputs.commit(temp, final)
    assert final.read_bytes() == b"made" and not temp.exists()

    temp = outputs.temp_path(final, outputs.new_part_id())
    temp.write_bytes(b"again")
    folder.rename(tmp_path / "talk-real")
    folder.symlink_to(elsewhere)
    (elsewhere / temp.name).write_bytes(b"planted")  # as if written through the link
    with pytest.raises(JobFailed, match="was replaced by a link while the job ran") as raised:
        outputs.commit(temp, final)
    assert raised.value.error_type == "PAYLOAD_ERROR"
    assert sorted(os.listdir(elsewhere)) == [temp.name]  # nothing put in place there
    assert (tmp_path / "talk-real" / "talk.mp4").read_bytes() == b"made"

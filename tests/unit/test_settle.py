"""The watch folders' pure rules: which names are candidates, and when a file has settled."""

from __future__ import annotations

from pathlib import PurePosixPath as P

import pytest

from fredica_app.watching.settle import (
    Observation,
    SettleTracker,
    is_candidate,
    is_hidden,
    is_partial,
    matches,
)

# --- names ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    ["talk.mp4", "TALK.MKV", "song.flac", "my.talk.webm", "~talk.mov", "clip~1.mp4"],
)
def test_media_files_are_candidates(name: str) -> None:
    assert is_candidate(name)


@pytest.mark.parametrize(
    "name",
    [
        ".talk.mp4",  # hidden (Fredica's own temporary outputs are such names)
        ".talk.1a2b.fredica-part.mp4",
        "talk.mp4.part",  # a browser still downloading
        "talk.mp4.PART",
        "talk.mp4.crdownload",
        "talk.mp4.partial",
        "talk.mp4.tmp",
        "talk.mp4.filepart",
        "talk.mp4.!qB",
        "talk.mp4~",  # a backup
        "~$talk.mp4",  # an office lock file
        "notes.txt",  # not media
        "talk",  # no extension
        "mp4",
    ],
)
def test_hidden_partial_and_other_files_are_not(name: str) -> None:
    assert not is_candidate(name)


def test_hidden_and_partial_names() -> None:
    assert is_hidden(".cache") and not is_hidden("a.b")
    assert is_partial("a.mkv.Download") and is_partial("x~") and is_partial("~$x")
    assert not is_partial("a.mkv") and not is_partial("a~b.mkv")


def test_patterns_narrow_the_media_files_whatever_the_case() -> None:
    assert matches("anything", [])
    assert is_candidate("GH010001.MP4", ["gh01*"])
    assert is_candidate("talk.mkv", ["*.MP4", "*.mkv"])
    assert not is_candidate("talk.mov", ["*.mp4", "*.mkv"])
    # A pattern never adds a file that is not media: a camera's thumbnail stays out.
    assert matches("GH010001.THM", ["GH01*"]) and not is_candidate("GH010001.THM", ["GH01*"])
    # Nor a partial one.
    assert not is_candidate("talk.mp4.part", ["*"])


# --- settling ---------------------------------------------------------------------------------

A, B, C = P("/w/a.mp4"), P("/w/b.mp4"), P("/w/sub/c.mp4")


def test_a_file_settles_once_seen_unchanged_for_the_settle_time() -> None:
    t = SettleTracker(2.0)
    t.observe(A, 100, 1, now=0.0)
    assert t.settled() == [] and t.unsettled() == [A]
    t.observe(A, 100, 1, now=1.9)
    assert t.settled() == []
    t.observe(A, 100, 1, now=2.0)
    assert t.settled() == [A]
    # Reported once: not again while it stays as it is, and no longer waiting.
    t.observe(A, 100, 1, now=10.0)
    assert t.settled() == [] and t.unsettled() == []
    assert A in t and len(t) == 1


def test_time_alone_settles_nothing_a_look_must_confirm_it() -> None:
    t = SettleTracker(1.0)
    t.observe(A, 100, 1, now=0.0)
    # No look since: however much time has passed, it is not known to be unchanged.
    assert t.settled() == []


def test_a_file_still_being_written_waits_for_its_last_change() -> None:
    t = SettleTracker(1.0)
    for i in range(5):  # grows every half second
        t.observe(A, 100 * (i + 1), i, now=i * 0.5)
        assert t.settled() == []
    t.observe(A, 500, 4, now=2.9)  # 0.9 s since its last change
    assert t.settled() == []
    t.observe(A, 500, 4, now=3.0)
    assert t.settled() == [A]


def test_a_touch_alone_restarts_the_wait() -> None:
    t = SettleTracker(1.0)
    t.observe(A, 100, 1, now=0.0)
    t.observe(A, 100, 2, now=0.8)  # same size, new mtime
    t.observe(A, 100, 2, now=1.5)
    assert t.settled() == []
    t.observe(A, 100, 2, now=1.8)
    assert t.settled() == [A]


def test_a_changed_file_is_reported_again_once_it_settles_again() -> None:
    t = SettleTracker(1.0)
    t.observe(A, 100, 1, now=0.0)
    t.observe(A, 100, 1, now=1.0)
    assert t.settled() == [A]
    t.observe(A, 200, 5, now=5.0)  # changed after it was reported
    assert t.unsettled() == [A] and t.settled() == []
    t.observe(A, 200, 5, now=6.0)
    assert t.settled() == [A]


def test_an_older_look_arriving_late_changes_nothing() -> None:
    t = SettleTracker(1.0)
    t.observe(A, 100, 1, now=5.0)
    t.observe(A, 100, 1, now=4.0)  # a look from before, reported after
    t.observe(A, 100, 1, now=5.5)
    assert t.settled() == []
    t.observe(A, 100, 1, now=6.0)
    assert t.settled() == [A]


def test_settled_files_come_sorted() -> None:
    t = SettleTracker(0.0)
    for path in (C, B, A):
        t.observe(path, 1, 1, now=0.0)
    assert t.unsettled() == [A, B, C]
    assert t.settled() == [A, B, C]


def test_forget_drops_a_file_or_a_folder_and_what_is_under_it() -> None:
    t = SettleTracker(1.0)
    for path in (A, B, C):
        t.observe(path, 1, 1, now=0.0)
    t.forget(P("/w/sub"))
    assert C not in t and len(t) == 2
    t.forget(A)
    assert t.unsettled() == [B]
    t.forget(P("/w/nothing"))  # not watched: nothing happens
    assert len(t) == 1
    # A file that comes back is new again: reported again once it settles.
    t.observe(B, 1, 1, now=1.0)
    assert t.settled() == [B]
    t.forget(B)
    t.observe(B, 1, 1, now=2.0)
    t.observe(B, 1, 1, now=3.0)
    assert t.settled() == [B]


def test_sync_observes_a_full_scan_and_forgets_what_it_did_not_find() -> None:
    t = SettleTracker(1.0)
    t.observe(A, 1, 1, now=0.0)
    t.observe(B, 1, 1, now=0.0)
    t.sync([Observation(A, 1, 1), Observation(C, 2, 2)], now=1.0)
    assert B not in t
    assert t.settled() == [A]
    t.sync([Observation(A, 1, 1), Observation(C, 2, 2)], now=2.0)
    assert t.settled() == [C]
    t.sync([], now=3.0)
    assert len(t) == 0


def test_rearm_reports_a_settled_file_again() -> None:
    t = SettleTracker(1.0)
    t.observe(A, 1, 1, now=0.0)
    t.rearm(A)  # not settled yet: it still waits
    assert t.settled() == []
    t.observe(A, 1, 1, now=1.0)
    assert t.settled() == [A]
    t.rearm(A)
    assert t.settled() == [A]
    assert t.settled() == []
    t.rearm(B)  # not watched: nothing to do
    assert B not in t


def test_a_negative_settle_time_is_refused() -> None:
    with pytest.raises(ValueError, match="0 or more seconds"):
        SettleTracker(-1)
    assert SettleTracker(0).settle == 0

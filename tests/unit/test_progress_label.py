"""The progress bar's label says the percent once (fredica_app/views/progress_label.py)."""

from __future__ import annotations

import pytest

from fredica_app.views.progress_label import bar_label, fitted_label, without_percent


@pytest.mark.parametrize(
    ("text", "label"),
    [
        ("transcoding 60 % (13.5x)", "60 % · transcoding (13.5x)"),
        ("downloading 60% of 12 MB", "60 % · downloading of 12 MB"),
        ("transcoding: 2 of 4 segments done", "60 % · transcoding: 2 of 4 segments done"),
        ("60 %", "60 %"),
        ("", "60 %"),
        ("reading the audio 12.5 % · 3 s left", "60 % · reading the audio · 3 s left"),
    ],
)
def test_the_percent_is_said_once(text: str, label: str) -> None:
    assert bar_label(60.0, text) == label


def test_text_without_a_percent_is_left_as_it_is() -> None:
    assert without_percent("waiting for GPU  (2 queued)") == "waiting for GPU  (2 queued)"
    assert without_percent("50 % done") == "done"


def _advance(text: str) -> int:
    return 10 * len(text)  # 10 px a character


def _elide(text: str, width: int) -> str:
    return text[: width // 10 - 1] + "…"


@pytest.mark.parametrize(
    ("width", "shown"),
    [
        (400, "60 % · transcoding (13.5x)"),  # it fits
        (200, "60 % · transcoding"),  # without the speed
        (120, "60 %"),  # the status would be cut: the percent alone
        (30, "60…"),  # not even the percent: cut
    ],
)
def test_a_label_too_long_keeps_its_percent_whole(width: int, shown: str) -> None:
    assert fitted_label("60 % · transcoding (13.5x)", width, _advance, _elide) == shown


def test_a_status_that_is_only_a_bracket_is_not_left_empty() -> None:
    assert fitted_label("60 % · (13.5x)", 120, _advance, _elide) == "60 %"
    assert fitted_label("60 % · waiting for the GPU", 200, _advance, _elide) == "60 %"


def test_a_label_of_one_part_is_cut() -> None:
    assert fitted_label("waiting for the GPU", 100, _advance, _elide) == "waiting f…"

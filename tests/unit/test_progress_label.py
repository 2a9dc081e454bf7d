"""The progress bar's label says the percent once (fredica_app/views/progress_label.py)."""

from __future__ import annotations

import pytest

from fredica_app.views.progress_label import bar_label, without_percent


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

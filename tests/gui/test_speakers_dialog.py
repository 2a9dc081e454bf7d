"""Naming and merging a run's speakers in the window: a real transcript run (eSpeak NG's two
voices, real Whisper, the real voice encoder) through the real host and engine, then the run
details page's *Speakers…* and its dialog, typed into and saved — the files written again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from PySide6.QtWidgets import QComboBox, QLineEdit

from fredica_app.gui.details import RunDetailsPage
from fredica_app.gui.speakers import NAME, SAME, SpeakersDialog, minutes
from tests.gui.hosting import call
from tests.support.voices import SpeechCache

pytestmark = pytest.mark.slow


def cell(dialog: SpeakersDialog, row: int, column: int) -> Any:
    return dialog.table.cellWidget(row, column)


def test_minutes_read_as_a_clock() -> None:
    assert [minutes(s) for s in (0.4, 59.6, 65, 3600)] == ["0:00", "1:00", "1:05", "60:00"]


def test_the_speakers_of_a_run_are_named_and_merged_from_the_window(
    qtbot: Any, app_host: Any, live: RunDetailsPage, tmp_path: Path
) -> None:
    (tmp_path / "voices").mkdir()
    audio, _ = SpeechCache(tmp_path / "voices").dialogue(turns=4)
    talk = tmp_path / "media" / "talk.wav"
    talk.parent.mkdir()
    talk.write_bytes(audio.read_bytes())

    async def submit(app: Any) -> Any:
        [material] = (await app.import_items([str(talk)])).materials
        return await app.submit_for_material(material, "transcript", params={"speakers": "2"})

    created = call(app_host, submit)
    live.show_run(created.run_id)
    assert live.speakers_button.isHidden()  # nothing to name before the exports are written
    qtbot.waitUntil(lambda: "completed" in live.meta.text(), timeout=180_000)
    qtbot.waitUntil(live.speakers_button.isVisible, timeout=10_000)

    dialog = live.edit_speakers()
    assert dialog is not None
    qtbot.waitUntil(lambda: dialog.table.rowCount() == 2, timeout=20_000)
    assert dialog.table.item(0, 0).text() == "Speaker 1"
    assert cell(dialog, 0, NAME).placeholderText() == "Speaker 1"
    assert [cell(dialog, 0, SAME).itemText(i) for i in range(2)] == ["nobody else", "Speaker 2"]
    # Nothing typed: nothing saved, and the dialog says so.
    dialog.save()
    assert "Nothing to save" in dialog.problem.text() and dialog.problem.isVisible()

    name = cell(dialog, 0, NAME)
    assert isinstance(name, QLineEdit)
    qtbot.keyClicks(name, "Ana")
    with qtbot.waitSignal(dialog.saved, timeout=60_000):
        dialog.save()
        assert not dialog.table.isEnabled()  # busy while the files are written again
    assert dialog.table.isEnabled() and dialog.heading.text().startswith("Saved: 5 file(s)")
    assert dialog.found is not None
    [srt_file] = [Path(p) for p in dialog.found.exports if p.endswith(".srt")]
    srt = srt_file.read_text()
    assert srt.count("ANA: ") == 2 and "SPEAKER 1" not in srt and srt.count("SPEAKER 2: ") == 2
    assert cell(dialog, 0, NAME).text() == "Ana"  # read back as saved
    assert cell(dialog, 1, SAME).itemText(1) == "Ana"

    # Speaker 2 is Ana too: merged, one speaker left, said once at the top.
    same = cell(dialog, 1, SAME)
    assert isinstance(same, QComboBox)
    same.setCurrentIndex(1)
    with qtbot.waitSignal(dialog.saved, timeout=60_000):
        dialog.save()
    assert dialog.table.rowCount() == 1
    srt = srt_file.read_text()
    assert srt.count("ANA: ") == 1 and "SPEAKER" not in srt
    dialog.close()


def test_a_run_without_speakers_says_so_in_the_dialog(
    qtbot: Any, app_host: Any, live: RunDetailsPage
) -> None:
    created = call(app_host, lambda app: app.submit({"tasks": [{"key": "n", "type": "NOOP"}]}))
    live.show_run(created.run_id)
    qtbot.waitUntil(lambda: "completed" in live.meta.text(), timeout=30_000)
    assert live.speakers_button.isHidden()
    dialog = live.edit_speakers()  # as if asked for all the same
    assert dialog is not None
    qtbot.waitUntil(dialog.problem.isVisible, timeout=20_000)
    assert dialog.heading.text() == "The speakers could not be read."
    assert "did not find its speakers" in dialog.problem.text()
    assert not dialog.buttons.button(dialog.buttons.StandardButton.Save).isEnabled()
    dialog.close()

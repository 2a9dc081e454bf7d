"""The interface's translations: every string the code marks is in the Chinese file and
translated (plurals and placeholders right), the compiled file matches its source, and the
window speaks Chinese when asked to."""

from __future__ import annotations

import re
import shutil
import sys
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "packaging"))
import translations  # noqa: E402

from tests.gui.factory import running  # noqa: E402
from workers.changes import Snapshot  # noqa: E402

PLACEHOLDER = re.compile(r"%n|%\d|\{[a-z_]+\}")


def messages(ts: Path) -> dict[tuple[str, str, str], ET.Element]:
    """(context, source, disambiguation) → its <message>."""
    found: dict[tuple[str, str, str], ET.Element] = {}
    for context in ET.parse(ts).getroot().iter("context"):
        name = context.findtext("name") or ""
        for message in context.iter("message"):
            key = (name, message.findtext("source") or "", message.findtext("comment") or "")
            found[key] = message
    return found


@pytest.fixture(scope="module")
def committed() -> dict[tuple[str, str, str], ET.Element]:
    return messages(translations.ts_file("zh_CN"))


def test_every_marked_string_of_the_code_is_in_the_file(tmp_path: Path, committed: Any) -> None:
    fresh = tmp_path / "fresh.ts"
    shutil.copy(translations.ts_file("zh_CN"), fresh)
    translations.lupdate(fresh)  # what `packaging/translations.py update` would make of it
    now = messages(fresh)
    missing = sorted(set(now) - set(committed))
    obsolete = sorted(set(committed) - set(now))
    assert not missing, f"run `python packaging/translations.py update` and translate: {missing}"
    assert not obsolete, f"strings the code no longer has: {obsolete}"


def test_every_string_is_translated_with_its_placeholders(committed: Any) -> None:
    problems = []
    for (context, source, _), message in committed.items():
        translation = message.find("translation")
        assert translation is not None
        if translation.get("type") in ("unfinished", "vanished", "obsolete"):
            problems.append((context, source, "not translated"))
            continue
        if message.get("numerus") == "yes":
            forms = [f.text or "" for f in translation.iter("numerusform")]
            # Chinese has one plural form, and it must say how many.
            if len(forms) != 1 or "%n" not in forms[0]:
                problems.append((context, source, f"plural forms {forms}"))
                continue
            text = forms[0]
        else:
            text = translation.text or ""
        if not text.strip():
            problems.append((context, source, "empty"))
        elif sorted(PLACEHOLDER.findall(source)) != sorted(PLACEHOLDER.findall(text)):
            problems.append((context, source, f"placeholders differ in {text!r}"))
    assert not problems, problems


def test_the_compiled_file_is_built_from_the_source(tmp_path: Path) -> None:
    built = tmp_path / "fresh.qm"
    translations.lrelease(translations.ts_file("zh_CN"), built)
    assert built.read_bytes() == translations.qm_file("zh_CN").read_bytes(), (
        "run `python packaging/translations.py build`"
    )


def test_the_window_speaks_chinese_when_asked(qapp: Any, qtbot: Any, data_dir: Path) -> None:
    from PySide6.QtCore import QModelIndex, Qt
    from PySide6.QtWidgets import QTableView, QTreeView

    from fredica_app.gui.app import Translations
    from fredica_app.gui.host import AppHost
    from fredica_app.gui.models import PROGRESS_ROLE
    from fredica_app.gui.status_words import status_words
    from fredica_app.gui.window import MainWindow
    from python_endpoints.status import parts_of, said

    languages = Translations(qapp)
    assert languages.install("zh_CN") == "zh_CN"
    try:
        window = MainWindow(AppHost(data_dir), data_dir)
        qtbot.addWidget(window)
        names = [window.nav.item(i).text() for i in range(window.nav.count())]
        assert names[0] != "Library" and all(names)
        # A plural with its number: Chinese has one form.
        tasks = tuple(running(n, 10.0) for n in range(3))
        window.feed.snapshot.emit(Snapshot(cursor=1, tasks=tasks))
        assert "3" in window.activity_label.text()
        assert "task(s)" not in window.activity_label.text()
        # Every table's column headers (the library's were English: a helper's strings that
        # the extraction could not see).
        headers = {
            str(view.model().headerData(c, Qt.Orientation.Horizontal))
            for view in window.findChildren(QTableView) + window.findChildren(QTreeView)
            if view.model() is not None
            for c in range(view.model().columnCount(QModelIndex()))
        }
        english = sorted(h for h in headers if re.fullmatch(r"[A-Za-z ]+", h))
        assert len(headers) > 10 and not english, english
        # What a job says it does, in Chinese; the engine's own words over it, as they are.
        said_it = said("step.transcoding") + said("percent", percent=42) + said("speed", speed=3.1)
        task = running(7, 42.0, str(said_it), status_parts=parts_of(said_it))
        assert status_words(task) == "转码中 42 % (3.1x)"
        window.feed.snapshot.emit(Snapshot(cursor=2, tasks=(task,)))
        tasks = window.queue.tasks
        qtbot.waitUntil(lambda: tasks.rowCount() == 1)
        cell = tasks.index(0, tasks.PROGRESS).data(PROGRESS_ROLE)
        assert cell.label == "42 % · 转码中 (3.1x)"
        pausing = replace(task, status_text=f"pausing ({said_it})")
        assert status_words(pausing) == "pausing (transcoding 42 % (3.1x))"
    finally:
        languages.install("en")
    window = MainWindow(AppHost(data_dir), data_dir)
    qtbot.addWidget(window)
    assert window.nav.item(0).text() == "Library"

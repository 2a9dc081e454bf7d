"""A task's status text in the interface's language.

A job says what it does as message ids and arguments (:mod:`python_endpoints.status`); the
task keeps them beside the English text (``status_parts``). Each message's template is
translated in the ``Status`` context (marked in that catalogue, so ``lupdate`` finds them) and
its arguments filled in. The parts are used only while their English is the task's status
text: the engine writes texts of its own over a job's ("pausing (…)", "interrupted…"), and
those are shown as they are.
"""

from __future__ import annotations

from PySide6.QtCore import QCoreApplication

from python_endpoints.status import render
from workers.records import TaskRecord


def _translated(english: str) -> str:
    return QCoreApplication.translate("Status", english)


def _english(english: str) -> str:
    return english


def status_words(task: TaskRecord) -> str:
    """What the task says it is doing, translated where its job said it in messages."""
    text = task.status_text or ""
    parts = task.status_parts
    if not parts or not text or render(parts, _english) != text:
        return text
    return render(parts, _translated) or text

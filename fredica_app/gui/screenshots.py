"""Renders the GUI's views offscreen into PNG files, for the documentation.

    python -m fredica_app.gui.screenshots OUT_DIR

For now one view: the queue's task table with its progress bars (``queue-model.png``), over a
few tasks in different states. Runs without a display (Qt's offscreen platform).
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from workers.records import TaskRecord
from workers.states import TaskStatus

# Before Qt starts: the offscreen platform unless told otherwise.
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QHeaderView, QTableView

from fredica_app.gui.delegates import ProgressDelegate
from fredica_app.gui.models import TaskTableModel

_RUN = "8f3a2c1e-5b7d-4e0a-9c61-2d4b8e7f1a30"


def _task(n: int, key: str, type_: str, status: TaskStatus, **fields: Any) -> TaskRecord:
    return TaskRecord(
        **{
            **dict.fromkeys(f.name for f in TaskRecord.__dataclass_fields__.values()),
            "id": f"{n:08x}-0000-4000-8000-000000000000",
            "key": key,
            "type": type_,
            "workflow_run_id": _RUN,
            "status": status,
            "priority": 0,
            "depends_on": [],
            "payload": {},
            "retry_count": 0,
            "max_retries": 2,
            "progress": 0.0,
            "is_paused": False,
            "is_pausable": True,
            "created_at": 1_700_000_000.0 + n,
            "unmet_deps": 0,
            "attempt": 1,
            "interruptions": 0,
            "resource": "cpu",
            **fields,
        }
    )


def sample_tasks() -> list[TaskRecord]:
    """A run of a video's pipeline, caught midway."""
    done = TaskStatus.COMPLETED
    return [
        _task(1, "probe", "PROBE", done, progress=100.0),
        _task(2, "transcode", "TRANSCODE_MP4", TaskStatus.RUNNING, progress=30.0,
              status_text="transcoding"),
        _task(3, "thumbnail", "THUMBNAIL", TaskStatus.RUNNING, progress=63.0, is_paused=True,
              status_text="paused"),
        _task(4, "extract_audio", "EXTRACT_AUDIO", TaskStatus.FAILED, progress=12.0, attempt=2,
              error_type="NO_SPACE", error="not enough free space on the library's disk"),
        _task(5, "transcribe", "TRANSCRIBE", TaskStatus.PENDING, attempt=0, unmet_deps=1),
        _task(6, "export_subtitles", "EXPORT_SUBTITLES", TaskStatus.PENDING, attempt=0,
              unmet_deps=1),
        _task(7, "download_model", "DOWNLOAD_MODEL", TaskStatus.RUNNING,
              status_text="listing the model's files"),
    ]  # fmt: skip


def queue_view(out: Path) -> Path:
    """The task table: a running task at 42 %, a paused, a failed, a done and a waiting one."""
    now = [0.0]
    model = TaskTableModel(clock=lambda: now[0])
    tasks = sample_tasks()
    model.load(tasks)
    # A minute later the transcoding has gone from 30 % to 42 %: its ETA can be told.
    now[0] = 60.0
    model.apply([replace(tasks[1], progress=42.0)])
    view = QTableView()
    view.setModel(model)
    view.setItemDelegateForColumn(TaskTableModel.PROGRESS, ProgressDelegate(view))
    view.verticalHeader().hide()
    view.setShowGrid(False)
    view.setAlternatingRowColors(True)
    view.setSelectionBehavior(QTableView.SelectionBehavior.SelectRows)
    view.setFocusPolicy(Qt.FocusPolicy.NoFocus)  # no focus frame around the first cell
    view.resizeColumnsToContents()
    header = view.horizontalHeader()
    for column in range(model.columnCount()):  # contents plus some air between columns
        view.setColumnWidth(column, view.columnWidth(column) + 18)
    header.setSectionResizeMode(TaskTableModel.PROGRESS, QHeaderView.ResizeMode.Stretch)
    view.resize(900, 40 + view.verticalHeader().defaultSectionSize() * model.rowCount())
    view.show()
    QApplication.processEvents()
    path = out / "queue-model.png"
    view.grab().save(str(path))
    view.close()
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Render the GUI's views into PNG files.")
    parser.add_argument("out_dir", type=Path)
    args = parser.parse_args(argv)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    app = QApplication.instance() or QApplication([])
    assert isinstance(app, QApplication)
    app.setStyle("Fusion")  # the same look on every platform, and in the documentation
    print(queue_view(args.out_dir))
    return 0


if __name__ == "__main__":
    sys.exit(main())

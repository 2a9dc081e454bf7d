"""Watch folders: new or changed media files in the folders a user chose, once they have
settled, are added to the library and submitted to each folder's template — once.

- :mod:`.settle` (pure): when a file has settled, and which names are candidates at all.
- :mod:`.watcher`: :class:`FolderWatcher`, the watcher itself (file events, rescans, taking
  files in and submitting them through the services), and :class:`WatchReport`, what it says
  of each file and folder for the CLI to print and the GUI to show.

What was taken in is recorded by :mod:`fredica_app.library.watched`.
"""

from __future__ import annotations

from fredica_app.watching.watcher import FolderWatcher, WatchReport, check_template

__all__ = ["FolderWatcher", "WatchReport", "check_template"]

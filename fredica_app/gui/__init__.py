"""The desktop app (PySide6). The only package allowed to import Qt (import-linter).

What it shows is decided in ``fredica_app.views`` without Qt; here that is turned into Qt's
models, delegates and widgets:

- ``table``: a flat table model of records keyed by id, kept current by change batches;
- ``models``: the queue's tables — :class:`~fredica_app.gui.models.TaskTableModel`,
  :class:`~fredica_app.gui.models.RunTableModel`;
- ``delegates``: the progress bar drawn in a cell;
- ``bridge``: the change stream, read off the GUI thread and handed to it in batches;
- ``screenshots``: renders the views offscreen for the documentation.
"""

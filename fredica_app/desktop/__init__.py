"""What Fredica does beside its window so that it can be left running for days, without Qt:
the operating system's side of it, shared by the CLI and the GUI (docs/desktop.md).

- :mod:`.power`: when the queue is done — nothing, a notification, quit, sleep or shut down;
  the command each system runs for it.
- :mod:`.awake`: keep the computer awake while tasks run (a systemd-inhibit or caffeinate
  child, or SetThreadExecutionState), held and released from the engine's events.
- :mod:`.autostart`: start at login.

The GUI's side (the when-done menu and its countdown dialog) is in :mod:`fredica_app.gui`.
"""

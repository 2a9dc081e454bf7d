"""What the GUI shows, decided without Qt: tested as plain Python.

Each module here takes plain values (records, ids, numbers) and returns plain values; the Qt
widgets only draw what these decide. Nothing here does I/O, imports Qt or runs an event loop.
"""

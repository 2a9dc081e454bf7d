"""File paths as the database keeps them: losslessly, whatever bytes their names hold.

On Linux a file name is bytes, and not always UTF-8 (``caf\\xe9.avi`` from an old Latin-1
archive). Python holds such a name with a lone surrogate for each undecodable byte, which
SQLite refuses to store as text. So a path that is not valid UTF-8 is stored as
``fsbytes:`` and its bytes, percent-encoded (``fsbytes:/media/caf%E9.avi``), and read back as
the very ``str`` it was: the file opens again. A valid path is stored as it is (one that
begins with the prefix itself is encoded too, so that reading back is never ambiguous).

A path is shown to people through :func:`fredica_app.views.records.shown`, never as stored.

Pure: strings in, strings out.
"""

from __future__ import annotations

import os
from urllib.parse import quote, unquote_to_bytes

PREFIX = "fsbytes:"
#: Left as they are in the encoded form: printable ASCII but ``%`` (the escape itself).
_SAFE = "".join(chr(c) for c in range(0x20, 0x7F) if chr(c) != "%")


def to_stored(path: str) -> str:
    """``path`` as a text column holds it (see the module's docstring)."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        pass
    else:
        if not path.startswith(PREFIX):
            return path
    return PREFIX + quote(os.fsencode(path), safe=_SAFE)


def from_stored(text: str) -> str:
    """The path :func:`to_stored` stored as ``text``."""
    if not text.startswith(PREFIX):
        return text
    return os.fsdecode(unquote_to_bytes(text[len(PREFIX) :]))

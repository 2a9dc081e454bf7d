"""A token kept in a file: read only when no other user can read the file.

Standard library only: the endpoints server reads its own token with it before anything else,
and the app reads an endpoint host's.
"""

from __future__ import annotations

import os
from pathlib import Path


class TokenFileError(Exception):
    """The file cannot be used, in words that follow "the token file PATH": "can be read by
    other users…", "cannot be read: …", "is empty"."""


def read_token_file(path: Path) -> str:
    """The token in ``path`` (stripped). Refused when its owner's group or other users may
    read it (on POSIX), when it cannot be read, or when it holds nothing."""
    try:
        mode = path.stat().st_mode
        if os.name == "posix" and mode & 0o077:
            raise TokenFileError(
                f"can be read by other users (mode {mode & 0o777:o}); run `chmod 600 {path}`"
            )
        token = path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise TokenFileError(f"cannot be read: {exc}") from None
    if not token:
        raise TokenFileError("is empty")
    return token

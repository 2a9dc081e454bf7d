"""Where Fredica keeps its files.

``--data-dir`` (or ``FREDICA_DATA_DIR``) overrides everything: the database, settings, cache
and logs all live under that one folder, which is what tests and CI use. Otherwise the
platform's conventional folders are used (platformdirs).
"""

from __future__ import annotations

import os
import stat
import uuid
from dataclasses import dataclass
from pathlib import Path

import platformdirs

from fredica_app.errors import DataDirError

APP_NAME = "Fredica"
ENV_DATA_DIR = "FREDICA_DATA_DIR"
#: A shared queue's database URL (PostgreSQL), before the settings' ``database_url``.
ENV_DB_URL = "FREDICA_DB_URL"


@dataclass(frozen=True, slots=True)
class AppPaths:
    data_dir: Path
    config_dir: Path
    cache_dir: Path
    log_dir: Path

    @property
    def database(self) -> Path:
        return self.data_dir / "fredica.db"

    @property
    def settings_file(self) -> Path:
        return self.config_dir / "settings.json"

    @property
    def queue_flag(self) -> Path:
        """Present while the queue is paused (``pause-queue``), for every process of the app."""
        return self.data_dir / "queue.paused"

    @property
    def engine_lock(self) -> Path:
        return self.data_dir / "engine.lock"

    @property
    def log_file(self) -> Path:
        """The log of the command line and the engine (every process of the app)."""
        return self.log_dir / "fredica.log"

    @property
    def endpoints_log_file(self) -> Path:
        """The log of the app's endpoints servers and their job processes."""
        return self.log_dir / "endpoints.log"

    @property
    def default_library_dir(self) -> Path:
        return self.data_dir / "library"

    @property
    def posters_dir(self) -> Path:
        return posters_dir(self.data_dir)

    @property
    def default_models_dir(self) -> Path:
        return self.data_dir / "models"

    def ensure(self) -> AppPaths:
        """Create the folders, private to the user, and make private what an older version
        left readable to others (see :func:`make_private`); :class:`DataDirError` naming the
        folder that cannot be made."""
        for d in (self.data_dir, self.config_dir, self.cache_dir, self.log_dir):
            try:
                d.mkdir(mode=PRIVATE_DIR, parents=True, exist_ok=True)
            except FileExistsError:
                raise DataDirError(
                    f"cannot use {d} as a folder for Fredica's files: a file of that name (or "
                    "of a folder above it) is in the way; choose another --data-dir"
                ) from None
            except OSError as exc:
                raise DataDirError(
                    f"cannot create the folder {d}: {exc.strerror or exc}; choose another "
                    "--data-dir"
                ) from exc
        for d in dict.fromkeys((self.data_dir, self.config_dir, self.cache_dir, self.log_dir)):
            make_private(d)
        return self


#: The modes of Fredica's own folders and files on POSIX: the user's alone. The database holds
#: file paths and task payloads, the logs what ran; another local user reads none of it.
PRIVATE_DIR = 0o700
PRIVATE_FILE = 0o600


def make_private(folder: Path) -> None:
    """Take from others (group and world) what they may do in ``folder`` and to the files
    directly in it — not below: the library, with the user's media and outputs, keeps its own
    modes. An existing data directory of an older version is mended so at its next start.
    Nothing to do on Windows (a profile's folders are the user's), or where a file is not the
    user's to change (it stays as it is)."""
    if os.name != "posix":
        return
    for path in (folder, *_entries(folder)):
        try:
            st = path.lstat()
            if stat.S_ISLNK(st.st_mode) or not st.st_mode & 0o077:
                continue
            if stat.S_ISDIR(st.st_mode) and path != folder:
                continue
            path.chmod(stat.S_IMODE(st.st_mode) & ~0o077)
        except OSError:
            continue


def _entries(folder: Path) -> list[Path]:
    try:
        return list(folder.iterdir())
    except OSError:
        return []


def resolve_paths(data_dir: Path | str | None = None) -> AppPaths:
    """The folders to use: ``data_dir`` if given, else ``$FREDICA_DATA_DIR``, else the
    platform's defaults."""
    chosen = data_dir if data_dir is not None else os.environ.get(ENV_DATA_DIR) or None
    if chosen is not None:
        root = Path(chosen).expanduser().resolve()
        return AppPaths(root, root, root / "cache", root / "logs")
    dirs = platformdirs.PlatformDirs(APP_NAME, appauthor=False)
    return AppPaths(
        Path(dirs.user_data_dir),
        Path(dirs.user_config_dir),
        Path(dirs.user_cache_dir),
        Path(dirs.user_log_dir),
    )


def posters_dir(data_dir: Path) -> Path:
    """The library's poster frames in this data directory: one JPEG per video material, named
    by its id (:mod:`fredica_app.services.inspection`)."""
    return data_dir / "posters"


def home_id(data_dir: Path) -> str:
    """This data directory's id among the engines of a shared queue (its *home*: see
    the ``worker`` table): made once, kept in ``<data>/home-id``."""
    path = data_dir / "home-id"
    try:
        text = path.read_text(encoding="ascii").strip()
        if text:
            return text
    except (FileNotFoundError, UnicodeDecodeError):
        pass
    made = uuid.uuid4().hex
    tmp = path.with_name(f".home-id.{made}")
    tmp.write_text(made + "\n", encoding="ascii")
    try:
        os.link(tmp, path)  # whole, and never over one another process made meanwhile
    except FileExistsError:
        return path.read_text(encoding="ascii").strip()
    finally:
        tmp.unlink()
    return made

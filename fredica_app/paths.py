"""Where Fredica keeps its files.

``--data-dir`` (or ``FREDICA_DATA_DIR``) overrides everything: the database, settings, cache
and logs all live under that one folder, which is what tests and CI use. Otherwise the
platform's conventional folders are used (platformdirs).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import platformdirs

APP_NAME = "Fredica"
ENV_DATA_DIR = "FREDICA_DATA_DIR"


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
    def engine_lock(self) -> Path:
        return self.data_dir / "engine.lock"

    @property
    def default_library_dir(self) -> Path:
        return self.data_dir / "library"

    @property
    def default_models_dir(self) -> Path:
        return self.data_dir / "models"

    def ensure(self) -> AppPaths:
        for d in (self.data_dir, self.config_dir, self.cache_dir, self.log_dir):
            d.mkdir(parents=True, exist_ok=True)
        return self


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

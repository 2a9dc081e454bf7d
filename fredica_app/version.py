"""Fredica's version, as installed (the distribution's metadata; a frozen bundle carries it)."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version


def fredica_version() -> str:
    try:
        return version("fredica")
    except PackageNotFoundError:  # pragma: no cover - running from a bare checkout
        return "0+unknown"

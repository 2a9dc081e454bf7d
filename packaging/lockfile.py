"""What ``uv.lock`` pins for the bundle: the runtime closure of Fredica on each Python.

The lock is universal: one file for every Python and system the project supports, with
environment markers saying which package (and which version of it) each of them takes. The
licence report covers what the project pins, so it reads the versions from here rather than
from whatever environment it runs in; that keeps the committed report a fact of the
repository, the same on every machine.

Everything here is a function of the lock's text and a target (a Python version and a
system), never of the host: :func:`closure` evaluates the markers for the target given.
"""

from __future__ import annotations

import dataclasses
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from packaging.markers import Marker
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

#: The marker environments of the systems a report may describe, by ``sysconfig.get_platform()``
#: (the names the report's ``Platform:`` line uses). The Python version is filled in per call.
SYSTEMS: Mapping[str, Mapping[str, str]] = {
    "linux-x86_64": {
        "os_name": "posix",
        "sys_platform": "linux",
        "platform_system": "Linux",
        "platform_machine": "x86_64",
    },
    "linux-aarch64": {
        "os_name": "posix",
        "sys_platform": "linux",
        "platform_system": "Linux",
        "platform_machine": "aarch64",
    },
    "win-amd64": {
        "os_name": "nt",
        "sys_platform": "win32",
        "platform_system": "Windows",
        "platform_machine": "AMD64",
    },
    "macosx-arm64": {
        "os_name": "posix",
        "sys_platform": "darwin",
        "platform_system": "Darwin",
        "platform_machine": "arm64",
    },
}

#: How far past the newest Python a marker names the lock is looked at (one minor: the range
#: that starts there is open-ended, and every later minor resolves the same).
_PAST_THE_MARKERS = 1


class LockError(Exception):
    """The lock cannot be read as uv writes it: the message says what and what to do."""


@dataclasses.dataclass(frozen=True)
class PythonRange:
    """Consecutive Python minors the lock resolves the same way: ``first`` to ``last``
    (``None``: and every later one)."""

    first: str  # "3.12"
    last: str | None  # "3.14"; None for an open end

    def __str__(self) -> str:
        if self.last is None:
            return f"Python {self.first} and later"
        if self.last == self.first:
            return f"Python {self.first}"
        return f"Python {self.first} to {self.last}"

    def holds(self, minor: str) -> bool:
        v = Version(minor)
        return Version(self.first) <= v and (self.last is None or v <= Version(self.last))


@dataclasses.dataclass(frozen=True)
class Lock:
    """The lock's packages, keyed by (canonical name, version)."""

    requires_python: SpecifierSet
    packages: Mapping[tuple[str, str], Mapping[str, Any]]
    by_name: Mapping[str, tuple[str, ...]]  # name -> its locked versions

    @classmethod
    def parse(cls, text: str) -> Lock:
        try:
            data = tomllib.loads(text)
            packages = {
                (canonicalize_name(p["name"]), str(p.get("version", ""))): p
                for p in data["package"]
            }
            requires = SpecifierSet(data.get("requires-python", ""))
        except (tomllib.TOMLDecodeError, KeyError, TypeError) as exc:
            raise LockError(f"uv.lock is not a lock uv wrote ({exc}): run `uv lock`") from exc
        by_name: dict[str, list[str]] = {}
        for name, version in packages:
            by_name.setdefault(name, []).append(version)
        return cls(requires, packages, {k: tuple(v) for k, v in by_name.items()})

    @classmethod
    def read(cls, path: Path) -> Lock:
        try:
            return cls.parse(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise LockError(f"cannot read {path.name}: {exc}") from exc

    def minors(self) -> list[str]:
        """The Python minors worth resolving: from the lowest ``requires-python`` admits to
        one past the newest any marker of the lock names (Python 3 only)."""
        lowest = next(m for m in range(100) if self.requires_python.contains(f"3.{m}.99"))
        named = {lowest}
        for package in self.packages.values():
            for dep in package.get("dependencies", []):
                named |= set(_minors_in(dep.get("marker", "")))
            for marker in package.get("resolution-markers", []):
                named |= set(_minors_in(marker))
        return [f"3.{m}" for m in range(lowest, max(named) + _PAST_THE_MARKERS + 1)]

    def closure(self, root: str, python: str, system: str) -> dict[str, str]:
        """The packages ``root`` takes at run time (not its extras, not its dependency
        groups) on Python ``python`` ("3.12") and ``system`` (a key of :data:`SYSTEMS`):
        canonical name -> version. ``root`` itself is not in it."""
        env = environment(python, system)
        found: dict[str, str] = {}
        todo = [self._key(canonicalize_name(root), None)]
        while todo:
            todo += self._follow(self.packages[todo.pop()].get("dependencies", []), env, found)
        return dict(sorted(found.items()))

    def _follow(
        self, deps: Iterable[Mapping[str, Any]], env: Mapping[str, str], found: dict[str, str]
    ) -> list[tuple[str, str]]:
        """The packages ``deps`` take in ``env`` that ``found`` lacks (added to it), with the
        extras they ask for followed."""
        new = []
        for dep in deps:
            if dep.get("marker") and not Marker(dep["marker"]).evaluate(dict(env)):
                continue
            key = self._key(canonicalize_name(dep["name"]), dep.get("version"))
            if found.get(key[0]) != key[1]:
                found[key[0]] = key[1]
                new.append(key)
            for extra in dep.get("extra", []):
                extras = self.packages[key].get("optional-dependencies", {}).get(extra, [])
                new += self._follow(extras, env, found)
        return new

    def _key(self, name: str, version: str | None) -> tuple[str, str]:
        versions = self.by_name.get(name)
        if not versions:
            raise LockError(f"{name} is not in uv.lock: run `uv lock`")
        if version is None:
            if len(versions) > 1:
                raise LockError(f"uv.lock holds {name} {', '.join(versions)} with no marker")
            return name, versions[0]
        if version not in versions:
            raise LockError(f"uv.lock refers to {name} {version}, which it does not hold")
        return name, version

    def ranges(self, root: str, system: str) -> list[tuple[PythonRange, dict[str, str]]]:
        """The Python ranges over which ``root``'s closure is the same, each with it."""
        minors = self.minors()
        groups: list[tuple[list[str], dict[str, str]]] = []
        for minor in minors:
            found = self.closure(root, minor, system)
            if groups and groups[-1][1] == found:
                groups[-1][0].append(minor)
            else:
                groups.append(([minor], found))
        return [
            (PythonRange(names[0], None if names[-1] == minors[-1] else names[-1]), found)
            for names, found in groups
        ]


def environment(python: str, system: str) -> dict[str, str]:
    """The marker environment of CPython ``python`` ("3.12") on ``system``."""
    try:
        env = dict(SYSTEMS[system])
    except KeyError:
        raise LockError(
            f"no marker environment for the platform {system!r}: add it to lockfile.SYSTEMS"
        ) from None
    env.update(
        python_version=python,
        python_full_version=f"{python}.0",
        implementation_name="cpython",
        implementation_version=f"{python}.0",
        platform_python_implementation="CPython",
        platform_release="",
        platform_version="",
        extra="",
    )
    return env


def _minors_in(marker: str) -> Iterable[int]:
    """The minors of the Python 3 versions a marker names ("python_full_version < '3.13'"
    -> 13)."""
    for quoted in marker.split("'")[1::2]:
        pieces = quoted.split(".")
        if len(pieces) >= 2 and pieces[0] == "3" and pieces[1].isdigit():
            yield int(pieces[1])

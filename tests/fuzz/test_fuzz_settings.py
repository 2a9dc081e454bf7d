"""Hostile settings files: any bytes, any JSON, and settings-shaped JSON whose values are each
right, nearly right or hostile — read as the app reads them at every start.

What the app documents (``fredica_app/settings.py``): a file that cannot be used is never
silently replaced — it is copied aside, the defaults are used for the session, and the problem
is said once, naming the file. A file that can be used is used: it saves and loads back the
same, and the app opens and runs work with it. Never a traceback.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from fredica_app.cli import main
from fredica_app.errors import SettingsError
from fredica_app.services import Fredica
from fredica_app.settings import Settings, load_settings, read_settings_data, save_settings
from tests.fuzz.hostile import (
    HOSTILE_JSON_TEXTS,
    fuzz,
    hostile_float,
    hostile_int,
    hostile_text,
    json_values,
    nested,
)
from workers.spec import RESOURCE_CLASSES
from workers.states import RunStatus

#: Plausible values of each kind of setting, so that most files get past the first check.
PATHS = st.sampled_from(["/srv/media", "relative/dir", "~/Videos", "/", "/a\x00b", "/caf\udce9"])
LITERALS = {
    name: list(get_args(field.annotation))
    for name, field in Settings.model_fields.items()
    if get_origin(field.annotation) is Literal
}


def plausible(name: str) -> st.SearchStrategy[Any]:
    """Values the setting ``name`` could plausibly be given: its kind, any content."""
    if name in LITERALS:
        return st.sampled_from(LITERALS[name])
    annotation = str(Settings.model_fields[name].annotation)
    if "Path" in annotation:
        return st.none() | PATHS
    if name == "slots":
        return st.dictionaries(st.sampled_from(RESOURCE_CLASSES) | hostile_text, hostile_int)
    if name == "watch_folders":
        folder = st.fixed_dictionaries(
            {"folder": PATHS}, optional={"template": hostile_text, "patterns": json_values(3)}
        )
        return st.lists(folder, max_size=2)
    if "bool" in annotation:
        return st.booleans()
    if "int" in annotation:
        return st.integers(1, 8) | hostile_int
    if "float" in annotation:
        return st.floats(0.5, 100) | hostile_float
    return hostile_text


@st.composite
def settings_data(draw: st.DrawFn) -> dict[str, Any]:
    """A settings file's object: some settings, mostly of their kind, sometimes anything."""
    names = draw(st.lists(st.sampled_from(sorted(Settings.model_fields)), unique=True, max_size=4))
    # Of its kind nine times in ten (the first of a sampled tuple is what a draw shrinks to).
    kind = st.sampled_from((True,) * 9 + (False,))
    data = {name: draw(plausible(name) if draw(kind) else json_values(3)) for name in names}
    if not draw(kind):
        data[draw(hostile_text)] = draw(json_values(2))
    return data


documents = st.one_of(
    settings_data().map(json.dumps),
    st.sampled_from(HOSTILE_JSON_TEXTS),
    json_values().map(json.dumps),
)
contents = documents.map(lambda t: t.encode("utf-8", "surrogatepass")) | st.binary(max_size=200)


def write(folder: Path, content: bytes) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "settings.json"
    path.write_bytes(content)
    return path


@fuzz(300)
@given(content=contents)
@example(content=nested(100_000).encode())  # RecursionError, before
@example(content=b'{"max_workers": ' + b"1" * 5000 + b"}")  # ValueError, before
@example(content=b'{"slots": {"\\ud800": 1}}')  # the engine's claim raised, before
@example(content=b'{"max_interruptions": 100000000000000000000000}')  # OverflowError, before
@example(content=b'{"model_base_url": "\\udc80"}')  # saving it raised, before
@example(content=b'{"keep_events_days": Infinity}')  # not JSON: it was saved as null, before
def test_a_settings_file_is_used_or_set_aside_with_one_problem(
    content: bytes, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """``load_settings`` never raises. A file it cannot use gets one problem naming it, the
    defaults, and a backup holding its very bytes, the file itself left as it was. A file it
    uses saves and loads back the same. (Nesting too deep and an integer too long raised
    before; a ``slots`` class that is not UTF-8 and a huge ``max_interruptions`` loaded, and
    the engine failed on them; a text that is not UTF-8 could not be saved; an infinite
    ``keep_events_days`` was saved as null.)"""
    path = write(tmp_path_factory.mktemp("cfg"), content)
    loaded = load_settings(path)
    assert path.read_bytes() == content
    if loaded.problem is not None:
        assert loaded.settings == Settings()
        assert str(path) in loaded.problem and "using the defaults" in loaded.problem
        assert "Traceback" not in loaded.problem
        assert loaded.backup is not None and loaded.backup.read_bytes() == content
        return
    for name in loaded.settings.slots:
        name.encode("utf-8")  # SQLite takes it
    saved = path.with_name("saved.json")
    save_settings(saved, loaded.settings)
    again = load_settings(saved)
    assert again.problem is None and again.settings == loaded.settings


@fuzz(150)
@given(content=contents)
def test_reading_the_file_to_change_it_gives_its_object_or_one_error(
    content: bytes, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """``fredica settings set`` reads the file's own keys: a JSON object, or one
    :class:`SettingsError` that names the file."""
    path = write(tmp_path_factory.mktemp("cfg"), content)
    try:
        data = read_settings_data(path)
    except SettingsError as exc:
        assert str(path) in str(exc)
        return
    assert isinstance(data, dict)


def fredica(data_dir: Path, *args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["--data-dir", str(data_dir), *args])
    return code, out.getvalue(), err.getvalue()


@fuzz(15)
@given(data=settings_data())
@example(data={"slots": {"cpu": 0, "io": 1}, "max_workers": 1, "on_restart": "hold"})
@example(data={"slots": {"o\x1b[2J\n": "x"}})  # its problem printed the escape, before
def test_the_app_opens_and_runs_work_with_any_file_it_reads(
    data: dict[str, Any], tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Whatever the file holds, ``fredica settings`` shows the settings or says one error
    line; ``fredica submit`` submits, saying at most one warning line about the file; and an
    engine with the settings (or the defaults, when the file was set aside) runs the run to
    its end and stops. (``keep_awake`` is left off: not what this is about, and it would
    start the platform's inhibitor.)"""
    data_dir = tmp_path_factory.mktemp("data")
    write(data_dir, json.dumps({**data, "keep_awake": False}).encode("utf-8", "surrogatepass"))
    code, _, err = fredica(data_dir, "settings")
    assert code in (0, 1) and "unexpected" not in err and "Traceback" not in err, err
    if code:
        assert err.startswith("fredica: error: ") and err.count("\n") == 1, err
    spec = data_dir / "spec.json"
    spec.write_text(
        json.dumps({"tasks": [{"key": "a", "type": "NOOP"}, {"key": "b", "type": "NOOP"}]})
    )
    code, out, err = fredica(data_dir, "submit", str(spec))
    assert code == 0, err
    assert err == "" or (err.startswith("fredica: warning: ") and err.count("\n") == 1), err
    asyncio.run(_run(data_dir, out.strip()))


async def _run(data_dir: Path, run_id: str) -> None:
    app = Fredica.open(data_dir, thorough=False)
    try:
        if app.settings.slots.get("io") == 0:
            return  # no slot for the diagnostic tasks: nothing runs, as asked
        async with app.engine_session() as engine:
            await asyncio.wait_for(engine.run(until_idle=True), 30)
        assert (await app.store.get_run(run_id)).status is RunStatus.COMPLETED
    finally:
        await app.close()

"""The job catalogue: every row gets an endpoint, a task type, a payload model and an executor,
all derived from the row and agreeing with it; the app's values fill the params the rows name."""

from __future__ import annotations

import contextlib
import json
import sqlite3
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from fredica_app import jobs
from fredica_app.paths import resolve_paths
from fredica_app.probing import ProbeExecutor
from fredica_app.services import Fredica
from fredica_app.settings import Settings, save_settings
from python_endpoints.catalogue import CATALOGUE, Job, load
from python_endpoints.jobs.sample import make_sample
from python_endpoints.params import SleepParams
from python_endpoints.serving.endpoint import LoopEndpoint, ProcessEndpoint
from python_endpoints.serving.jobendpoints import MediaEndpoint
from python_endpoints.serving.registry import ENDPOINTS, endpoint_class
from workers.executor import ExecutionContext
from workers.executors.websocket import EndpointExecutor, EndpointsAddress
from workers.spec import TaskSpec
from workers.tasktypes import SleepSubprocessPayload, builtin_registry

#: A valid value for each required param of the catalogue's params models.
REQUIRED = {
    "input": "/m/in.mkv",
    "output": "/m/out.jpg",  # a suffix some job checks (a picture's); the others take any
    "output_dir": "/m",
    "stem": "in",
    "url": "https://example.org/a.mkv",
    "transcript": "/m/in.transcript.json",
    "name": "small",
    "models_dir": "/m/models",
    "subtitles": "/m/in.srt",
    "lang": "fr",
}
#: Params a model needs one of, none of them required alone (a subtitle file or a track).
ONE_OF = {"BurnSubtitlesParams": {"track": 0}}


def minimal_params(model: type[BaseModel]) -> dict[str, Any]:
    required = {name: REQUIRED[name] for name, f in model.model_fields.items() if f.is_required()}
    return {**required, **ONE_OF.get(model.__name__, {})}


async def nowhere() -> EndpointsAddress | None:
    return None


def test_names_are_unique_and_spelled_once() -> None:
    names = [job.name for job in CATALOGUE]
    assert len(set(names)) == len(names)
    for job in CATALOGUE:
        assert job.task_type == job.name.upper() and job.description, job


@pytest.mark.parametrize("job", CATALOGUE, ids=lambda j: j.name)
def test_each_row_has_an_endpoint_made_from_it(job: Job) -> None:
    endpoint = ENDPOINTS[job.name]
    assert endpoint.name == job.name
    assert endpoint.pausable == job.pausable and endpoint.skip == job.skip
    assert endpoint.params_model is job.params  # type: ignore[attr-defined]
    if job.endpoint is not None:
        assert issubclass(endpoint, load(job.endpoint))  # type: ignore[arg-type]
    if issubclass(endpoint, ProcessEndpoint):
        assert endpoint.suspend_on_pause == job.suspend_on_pause
        assert job.target is not None and endpoint.target is load(job.target)
    else:  # a job of its own in the server's event loop
        assert issubclass(endpoint, LoopEndpoint) and job.target is None
        assert not job.suspend_on_pause
    if issubclass(endpoint, MediaEndpoint):
        assert endpoint.job == job.task_type
    # What can be skipped names one output; "current" also needs the input of its sidecar.
    if job.skip is not None:
        assert "output" in job.params.model_fields
    if job.skip == "current":
        assert "input" in job.params.model_fields
    if job.resumes:
        assert "resume" in job.params.model_fields


@pytest.mark.parametrize("job", CATALOGUE, ids=lambda j: j.name)
def test_each_row_has_a_task_type_and_an_executor(job: Job) -> None:
    task_type = jobs.registry().get(job.task_type)
    assert task_type is not None
    assert (task_type.resource, task_type.description) == (job.resource, job.description)
    # The payload takes the params' defaults as they are, and the queue's keys beside them.
    params = minimal_params(job.params)
    payload = task_type.payload_model.model_validate({**params, "check_skip": True})
    dumped = payload.model_dump(exclude={"schema_version", "check_skip"})
    assert dumped == job.params.model_validate(params).model_dump()
    stored = task_type.validate_payload(params)
    assert stored == {**params, "schema_version": 1}  # defaults are not stored
    (executor,) = [e for e in jobs.executors(nowhere) if e.task_type.name == job.task_type]
    assert executor.task_type is task_type and executor.stall_timeout == job.stall_timeout
    assert executor.resumable and executor.resource == job.resource
    if job.task_type == "PROBE":  # run in the engine's process (fredica_app.probing)
        assert isinstance(executor, ProbeExecutor) and executor.in_process
        return
    assert isinstance(executor, EndpointExecutor) and not executor.in_process
    assert executor.endpoint == job.name and executor.resumes == job.resumes


def test_the_app_registry_is_the_queue_diagnostics_and_the_catalogue() -> None:
    names = {t.name for t in builtin_registry()} | {job.task_type for job in CATALOGUE}
    assert set(jobs.registry().names()) == names
    assert {e.task_type.name for e in jobs.executors(nowhere)} == names
    # The diagnostic sleep, and the check of an endpoint host's shared folders: no task types.
    assert set(ENDPOINTS) == {"sleep", "path_probe"} | {job.name for job in CATALOGUE}


#: What the jobs run with, imported only where used (and by a warm spare ahead of its job).
JOB_LIBRARIES = ("av", "imageio_ffmpeg", "httpx", "pysubs2", "psutil", "yt_dlp", "yake", "numpy")
#: What only a process that runs work needs: the jobs, the executors and their client.
NOT_FOR_SUBMITTING = (
    "python_endpoints.jobs",
    "fredica_app.endpoint_hosts",
    "workers.executors",
    "websockets",
    # The engine's lock and keeping the computer awake: for the commands that run an engine.
    "fredica_app.lock",
    "filelock",
    "fredica_app.desktop.awake",
)


def imported_after(code: str, prefixes: tuple[str, ...]) -> list[str]:
    """The modules whose names start with one of ``prefixes`` that a fresh interpreter has
    imported after running ``code`` (its last line of output, which must print nothing)."""
    code += (
        "\nimport sys\n"
        f"print('modules:', *sorted(m for m in sys.modules if m.startswith({prefixes!r})))"
    )
    found = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    last = found.stdout.splitlines()[-1].split()
    assert last[0] == "modules:", found.stdout + found.stderr
    return last[1:]


def test_importing_the_catalogue_imports_none_of_the_jobs() -> None:
    """The app reads the catalogue at every command's start: it must cost little. The rows
    name the jobs' functions and endpoint classes, so neither their modules nor the
    libraries they run with (PyAV, httpx…) are imported with it — nor the server's machinery
    (an endpoint's child processes), nor the engine's executors by the task types alone."""
    code = "import python_endpoints.catalogue, fredica_app.jobs\nfredica_app.jobs.registry()"
    others = ("python_endpoints.downloads", "python_endpoints.serving", "multiprocessing")
    assert imported_after(code, (*JOB_LIBRARIES, *NOT_FOR_SUBMITTING, *others)) == []


#: SQLAlchemy's PostgreSQL dialect: for a shared queue, not for a command on a SQLite file
#: (the migrations load it, a one-off of a new or upgraded file: the tests migrate first).
POSTGRESQL_DIALECT = "sqlalchemy.dialects.postgresql"
#: SQLAlchemy's ORM: the tables are plain ``sa.Table``-s, written with SQL expressions.
SQLALCHEMY_ORM = "sqlalchemy.orm"


def adding_a_clip(tmp_path: Path) -> tuple[Path, str]:
    """A data directory whose database a first command has made and migrated, and the code
    that ``fredica add``-s a new 1 s clip to it in-process."""
    clip = make_sample(tmp_path / "media" / "clip.mkv", 1.0)
    data = tmp_path / "data"
    subprocess.run(
        [sys.executable, "-m", "fredica_app.cli", "--data-dir", str(data), "runs"],
        capture_output=True,
        check=True,
        timeout=120,
    )
    code = (
        "from fredica_app.cli import main\n"
        f"assert main(['--data-dir', {str(data)!r}, 'add', {str(clip)!r}, "
        "'--template', 'transcode_mp4']) == 0\n"
    )
    return data, code


def test_fredica_add_imports_no_executor_and_no_job(tmp_path: Path) -> None:
    """``fredica add`` submits: the engine's executors, the websocket client, the endpoint
    hosts' router, the engine's lock, the keep-awake backends and the jobs' code are for the
    commands that run work; SQLAlchemy's ORM for none."""
    data, code = adding_a_clip(tmp_path)
    prefixes = (*JOB_LIBRARIES, *NOT_FOR_SUBMITTING, POSTGRESQL_DIALECT, SQLALCHEMY_ORM)
    assert imported_after(code, prefixes) == []
    with contextlib.closing(sqlite3.connect(data / "fredica.db")) as db:
        assert db.execute("SELECT template FROM workflow_run").fetchall() == [("transcode_mp4",)]


def test_a_worker_on_a_sqlite_file_runs_its_work_without_the_postgresql_dialect(
    tmp_path: Path,
) -> None:
    """The queue's JSON columns and partial indexes say what they are on PostgreSQL without
    loading its dialect (workers.models): a worker on a SQLite file claims, runs and
    completes a transcode — JSON payloads and results written and read, the claim through
    the partial indexes — and never imports it, nor SQLAlchemy's ORM."""
    data, code = adding_a_clip(tmp_path)
    code += f"assert main(['--data-dir', {str(data)!r}, 'worker', '--until-idle']) == 0"
    assert imported_after(code, (POSTGRESQL_DIALECT, SQLALCHEMY_ORM)) == []
    with contextlib.closing(sqlite3.connect(data / "fredica.db")) as db:
        done = db.execute("SELECT status, json_extract(result, '$.outputs[0]') FROM task")
        [(status, output)] = done.fetchall()
    assert status == "completed" and Path(output).is_file()


@pytest.mark.parametrize(
    ("reference", "why"),
    [
        ("python_endpoints.params:nothing", "has no attribute 'nothing'"),
        ("no_such_module:f", "No module named 'no_such_module'"),
        ("python_endpoints.params", "has no attribute ''"),  # no ":name"
    ],
)
def test_a_row_naming_what_is_not_there_fails_the_servers_start(reference: str, why: str) -> None:
    """A misspelt reference is found when the server builds its table, by name, not at a
    job's first run: the row, the reference and Python's reason."""
    for field in ("target", "endpoint"):
        job = replace(CATALOGUE[0], **{field: reference})
        with pytest.raises(ImportError) as raised:
            endpoint_class(job)
        message = str(raised.value)
        assert message.startswith(f"probe: {reference} cannot be loaded ("), message
        assert why in message


def test_a_row_naming_what_is_no_endpoint_class_is_refused() -> None:
    job = replace(CATALOGUE[0], endpoint="python_endpoints.params:ProbeParams")
    with pytest.raises(TypeError, match=r"probe: python_endpoints\.params:ProbeParams is not"):
        endpoint_class(job)
    job = replace(CATALOGUE[0], target="python_endpoints.params:MODEL_NAME_PATTERN")
    with pytest.raises(TypeError, match="is not a function"):
        endpoint_class(job)


def test_the_subprocess_sleep_payload_is_the_sleep_endpoints_params() -> None:
    # Defined twice on purpose (the queue imports no endpoint's params): kept equal here.
    queue = SleepSubprocessPayload.model_fields
    endpoint = SleepParams.model_fields
    assert set(queue) - {"schema_version", "check_skip"} == set(endpoint)
    for name, field in endpoint.items():
        assert (queue[name].default, queue[name].annotation) == (field.default, field.annotation)
        assert queue[name].metadata == field.metadata, name
    with pytest.raises(ValueError, match="resume_after needs pause_after"):
        SleepSubprocessPayload(seconds=1, resume_after=1)


def test_the_app_values_fill_what_each_row_names(tmp_path: Path) -> None:
    values = jobs.app_values(Settings(), tmp_path)
    for job in CATALOGUE:
        assert set(job.settings.values()) <= set(values), job.name
        assert set(job.settings) <= set(job.params.model_fields), job.name
        # A setting left alone gives the job its param's own default (stated once).
        for param, key in job.settings.items():
            field = job.params.model_fields[param]
            default = None if field.is_required() else field.default
            if default is not None and values[key] is not None:
                assert values[key] == default, (job.name, param)
    # None (no proxy, no language model): the params' own default stands.
    download = TaskSpec(key="d", type="DOWNLOAD", payload={"url": "https://h/a", "output": "/o"})
    jobs.fill_from_settings(download, values)
    assert download.payload == {"url": "https://h/a", "output": "/o"}
    settings = Settings(proxy="http://ann:s3cret@proxy:3128", mp4_profile="modern", beam_size=2)
    values = jobs.app_values(settings, tmp_path)
    jobs.fill_from_settings(download, values)
    # The proxy may hold a password: never in the stored payload; the executor adds it.
    assert "proxy" not in download.payload
    # What the payload gives already is kept: a template that names a profile keeps it.
    transcode = TaskSpec(key="t", type="TRANSCODE_MP4", payload={"profile": "archive"})
    jobs.fill_from_settings(transcode, values)
    assert transcode.payload == {"profile": "archive"}
    transcribe = TaskSpec(key="s", type="TRANSCRIBE", payload={})
    jobs.fill_from_settings(transcribe, values)
    assert transcribe.payload["beam_size"] == 2
    assert transcribe.payload["models_dir"] == str(tmp_path)
    assert "initial_prompt" not in transcribe.payload  # none set
    noop = TaskSpec(key="n", type="NOOP", payload={})
    jobs.fill_from_settings(noop, values)  # not a catalogue job: nothing to fill
    assert noop.payload == {}


def test_the_endpoints_of_task_types() -> None:
    async def nowhere() -> None:
        return None

    executors = jobs.executors(nowhere)
    types = {"PROBE", "TRANSCODE_MP4", "NOOP", "SLEEP_SUBPROCESS", "UNKNOWN"}
    # PROBE and NOOP run in the engine: no endpoint to start or warm for them.
    assert jobs.endpoints_of(executors, types) == ["sleep", "transcode_mp4"]
    assert jobs.endpoints_of(executors, set()) == []


async def test_the_proxy_reaches_the_job_when_it_runs_never_the_stored_payload(
    tmp_path: Path,
) -> None:
    """A proxy with its password in the settings: the DOWNLOAD the app submits stores none of
    it; the executor's ``init_param_and_run`` carries the proxy as the settings say when the
    attempt starts (a change in between counts); a payload's own proxy wins."""
    data = tmp_path / "data"
    secret = "http://ann:s3cret@127.0.0.1:3128"
    save_settings(resolve_paths(data).settings_file, Settings(proxy=secret))
    app = Fredica.open(data)
    try:
        imported = await app.import_items(["https://example.org/talk.mp4"])
        run = await app.submit_for_material(imported.materials[0], "download_transcode")
        tasks = await app.store.list_tasks(run.run_id)
        (download,) = [t for t in tasks if t.type == "DOWNLOAD"]
        assert "s3cret" not in json.dumps([t.payload for t in tasks])
        (executor,) = [
            e
            for e in jobs.executors(app.endpoints.address, app._job_values)
            if e.task_type.name == "DOWNLOAD"
        ]

        async def sink(**_: object) -> bool:
            return True

        ctx = ExecutionContext(download, download.payload, {}, sink)
        assert executor.params(download, ctx)["proxy"] == secret
        app.settings = app.settings.model_copy(update={"proxy": "http://other:3128"})
        assert executor.params(download, ctx)["proxy"] == "http://other:3128"
        own = replace(download, payload={**download.payload, "proxy": "http://mine:8080"})
        assert executor.params(own, ctx)["proxy"] == "http://mine:8080"
    finally:
        await app.close()


def test_the_guide_lists_every_job_of_the_catalogue() -> None:
    guide = (Path(__file__).resolve().parents[2] / "docs" / "adding-a-job.md").read_text()
    rows = {
        line.split("|")[1].strip().strip("`"): line.split("|")[3].strip()
        for line in guide.split("## The catalogue today")[1].splitlines()
        if line.startswith("| `")
    }
    assert rows == {
        job.name: ("cpu or gpu" if job.name == "transcribe" else job.resource) for job in CATALOGUE
    }

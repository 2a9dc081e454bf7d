"""Use cases shared by the CLI and the GUI: open the application, submit, control, inspect.

Nothing here speaks SQL (the stores do) or Qt (the GUI does).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import urlsplit

from fredica_app import models
from fredica_app.database import open_database
from fredica_app.endpoints import EndpointsProcess
from fredica_app.errors import SpecError, TemplateError
from fredica_app.library.fingerprint import is_media_name
from fredica_app.library.importer import Importer, ImportReport, material_dir, material_stem
from fredica_app.library.store import LibraryStore, MaterialRecord
from fredica_app.lock import DataDirLock
from fredica_app.paths import AppPaths, resolve_paths
from fredica_app.settings import Settings, load_settings
from fredica_app.templates import get_template, with_download_first
from workers.engine import RESOURCE_NAMES, WorkerEngine, default_slots
from workers.events import Event, TaskChanged
from workers.executor import TaskExecutor
from workers.executors.diagnostic import NoopExecutor, SleepExecutor, SleepSubprocessExecutor
from workers.executors.media import MEDIA_EXECUTORS
from workers.executors.speech import SPEECH_EXECUTORS
from workers.records import CreatedRun, RestartLogEntry, RunRecord, TaskRecord
from workers.retention import RetentionPolicy
from workers.spec import TaskSpec, WorkflowSpec, parse_spec, prepare_run
from workers.store import TaskStore
from workers.tasktypes import TaskTypeRegistry, builtin_registry


@dataclass
class Fredica:
    """The application's parts for one data directory."""

    paths: AppPaths
    settings: Settings
    settings_problem: str | None
    store: TaskStore
    registry: TaskTypeRegistry
    library: LibraryStore
    endpoints: EndpointsProcess = field(default_factory=EndpointsProcess)
    _background: set[asyncio.Task[None]] = field(default_factory=set)

    @classmethod
    def open(cls, data_dir: Path | str | None = None, *, thorough: bool = True) -> Fredica:
        """Open the data directory. ``thorough``: check the whole database file's integrity
        (when an engine will run on it); without it, only what is cheap is checked."""
        paths = resolve_paths(data_dir).ensure()
        loaded = load_settings(paths.settings_file)
        engine = open_database(
            paths.database, synchronous=loaded.settings.sqlite_synchronous, thorough=thorough
        )
        library_dir = loaded.settings.library_dir or paths.default_library_dir
        models_dir = loaded.settings.models_dir or paths.default_models_dir
        key_env = loaded.settings.llm_api_key_env
        return cls(
            paths,
            loaded.settings,
            loaded.problem,
            TaskStore(engine),
            builtin_registry(),
            LibraryStore(engine),
            # The server runs only this ffmpeg and lets ANALYZE read only this variable:
            # whoever holds its token cannot choose either.
            EndpointsProcess(
                write_roots=[library_dir, models_dir],
                ffmpeg=loaded.settings.ffmpeg_path,
                api_key_envs=[key_env] if key_env else [],
                log_file=paths.endpoints_log_file,
            ),
        )

    async def close(self) -> None:
        if self._background:
            await asyncio.gather(*self._background, return_exceptions=True)
        await self.endpoints.stop()
        await self.store.close()

    # --- submitting ----------------------------------------------------------------------

    def spec_from_data(self, data: Any) -> WorkflowSpec:
        """A spec from ``{"template": NAME}`` or ``{"tasks": [...]}`` JSON data."""
        if isinstance(data, dict) and "template" in data and "tasks" not in data:
            extra = set(data) - {"template", "material_id"}
            if extra:
                raise SpecError(f"invalid workflow spec: unexpected fields {sorted(extra)}")
            template = get_template(str(data["template"]))
            if template.source != "none":
                material_id = data.get("material_id")
                if not isinstance(material_id, str):
                    raise SpecError(
                        f"template {template.name!r} runs on a material: give "
                        '"material_id", or use `fredica add PATH|URL --template NAME`'
                    )
                return self.spec_for_material(self._material(material_id), template.name)
            return template.expand(material_id=data.get("material_id"))
        return parse_spec(data)

    async def submit(self, data: Any, *, priority: int = 0) -> CreatedRun:
        """Submit a spec (JSON data); ``priority``, when not 0, for every task of it."""
        spec = await asyncio.to_thread(self.spec_from_data, data)
        if priority:
            spec.tasks = [t.model_copy(update={"priority": priority}) for t in spec.tasks]
        return await self.store.create_run(prepare_run(spec, self.registry))

    # --- the media library ------------------------------------------------------------------

    @property
    def library_dir(self) -> Path:
        return self.settings.library_dir or self.paths.default_library_dir

    async def import_items(self, items: list[str]) -> ImportReport:
        """Bring files, folders (recursively) and URLs into the library."""
        importer = Importer(self.library, self.library_dir)
        return await asyncio.to_thread(importer.import_items, items)

    def _material(self, material_id: str) -> MaterialRecord:
        material = self.library.get(material_id)
        if material is None:
            raise SpecError(f"no material with id {material_id!r}")
        return material

    def spec_for_material(self, material: MaterialRecord, template_name: str) -> WorkflowSpec:
        """A template expanded for one material: its file, its output folder (created here,
        under the library directory), and the settings that jobs take (proxy, MP4 profile,
        speech, LLM).
        The ffmpeg is not among them: the endpoints server runs the one it was started with."""
        template = get_template(template_name)
        if not template.needs_source:
            raise TemplateError(
                f"template {template.name!r} takes {template.takes}: it cannot run on "
                f"{material.title!r}"
            )
        if template.source == "url" and not material.is_url:
            raise TemplateError(
                f"template {template.name!r} downloads a URL; {material.source} is a local "
                "file (try transcode_mp4)"
            )
        out_dir = material_dir(self.library_dir, material)
        out_dir.mkdir(parents=True, exist_ok=True)
        values = {
            "input": material.local_path or "",
            "output_dir": str(out_dir),
            "stem": material_stem(material),
            "url": material.source,
        }
        if template.source == "file" and material.is_url and not _downloaded(material):
            # A URL not downloaded yet: download it first, whatever the template does with it.
            template = with_download_first(template, get_template("download_transcode").tasks[0])
        spec = template.expand(material_id=material.id, values=values, idempotent=True)
        extra: list[TaskSpec] = []
        for task in spec.tasks:
            if task.type == "DOWNLOAD" and needs_site_download(material.source):
                task.type = "DOWNLOAD_SITE"
            if self.settings.proxy and task.type in ("DOWNLOAD", "DOWNLOAD_SITE"):
                task.payload["proxy"] = self.settings.proxy
            if task.type == "TRANSCODE_MP4":
                # A template that names a profile keeps it.
                task.payload.setdefault("profile", self.settings.mp4_profile)
            if task.type == "TRANSCRIBE":
                extra += self._speech_settings(task, spec)
            if task.type == "ANALYZE" and self.settings.llm_base_url and self.settings.llm_model:
                task.payload["llm"] = {
                    "base_url": self.settings.llm_base_url,
                    "model": self.settings.llm_model,
                    "api_key_env": self.settings.llm_api_key_env,
                }
        spec.tasks = extra + spec.tasks
        return spec

    @property
    def models_dir(self) -> Path:
        return self.settings.models_dir or self.paths.default_models_dir

    def _speech_settings(self, task: TaskSpec, spec: WorkflowSpec) -> list[TaskSpec]:
        """Fill a TRANSCRIBE task from the settings; its resource class is ``gpu`` when it will
        run on a GPU. A named model that is not installed yet is downloaded first: the tasks
        to add before it."""
        s = self.settings
        task.payload.update(
            model=s.whisper_model,
            models_dir=str(self.models_dir),
            device=s.whisper_device,
            compute_type=s.whisper_compute_type,
            language=s.language,
            vad=s.vad,
            beam_size=s.beam_size,
            allow_fallback=s.allow_cpu_fallback,
        )
        if s.initial_prompt:
            task.payload["initial_prompt"] = s.initial_prompt
        task.resource = "gpu" if uses_gpu(s.whisper_device) else "cpu"
        name = s.whisper_model
        if models.is_model_name(name) and not models.installed(self.models_dir, name):
            if name != models.EMBEDDED:
                key = "download_model"
                task.depends_on.append(key)
                return [
                    TaskSpec(
                        key=key,
                        type="DOWNLOAD_MODEL",
                        payload={
                            "name": name,
                            "models_dir": str(self.models_dir),
                            "base_url": s.model_base_url,
                            **({"proxy": s.proxy} if s.proxy else {}),
                        },
                        max_retries=3,
                        idempotency_key=f"{spec.template}:{spec.material_id}:{key}",
                    )
                ]
        return []

    async def submit_for_material(
        self, material: MaterialRecord, template_name: str, *, priority: int = 0
    ) -> CreatedRun:
        spec = await asyncio.to_thread(self.spec_for_material, material, template_name)
        if priority:
            spec.tasks = [t.model_copy(update={"priority": priority}) for t in spec.tasks]
        return await self.store.create_run(prepare_run(spec, self.registry))

    def _on_event(self, event: Event) -> None:
        """Fill a material when its PROBE completes (the app reacts to the engine's events;
        the queue knows nothing of materials)."""
        if isinstance(event, TaskChanged) and event.kind == "completed":
            job = asyncio.ensure_future(self._after_completion(event.task_id))
            self._background.add(job)
            job.add_done_callback(self._background.discard)

    async def _after_completion(self, task_id: str) -> None:
        task = await self.store.get_task(task_id)
        if task.type == "PROBE" and task.material_id and task.result:
            await asyncio.to_thread(self.library.update_from_probe, task.material_id, task.result)

    # --- running -------------------------------------------------------------------------

    def make_engine(self, *, max_workers: int | None = None) -> WorkerEngine:
        address = self.endpoints.address
        executors: list[TaskExecutor] = [
            NoopExecutor(),
            SleepExecutor(),
            SleepSubprocessExecutor(address),
            *(cls(address) for cls in MEDIA_EXECUTORS),
            *(cls(address) for cls in SPEECH_EXECUTORS),
        ]
        engine = WorkerEngine(
            self.store,
            executors,
            max_workers=max_workers or self.settings.max_workers,
            slots=self.settings.slots,
            registry=self.registry,
            max_interruptions=self.settings.max_interruptions,
            hold_interrupted=self.settings.on_restart == "hold",
            retention=self.retention,
        )
        engine.bus.subscribe(self._on_event)
        return engine

    @property
    def retention(self) -> RetentionPolicy:
        """What the history keeps (the settings' ``keep_runs_days``, ``keep_events_days``)."""
        return RetentionPolicy.from_days(
            self.settings.keep_runs_days, self.settings.keep_events_days
        )

    @property
    def lock(self) -> DataDirLock:
        return DataDirLock(self.paths.engine_lock)

    @contextlib.asynccontextmanager
    async def engine_session(
        self, *, max_workers: int | None = None
    ) -> AsyncIterator[WorkerEngine]:
        """Take the data directory's lock, start an engine (recovery included) and stop it
        gracefully at the end. Raises :class:`DatabaseLocked` when another engine runs."""
        lock = self.lock.acquire()
        try:
            engine = self.make_engine(max_workers=max_workers)
            await engine.start()
            watcher = asyncio.create_task(self._watch_queue_flag(engine))
            try:
                yield engine
            finally:
                watcher.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await watcher
                await engine.stop()
                await self.endpoints.stop()
        finally:
            lock.release()

    # --- pausing the queue across processes -------------------------------------------------

    @property
    def queue_flag(self) -> Path:
        return self.paths.data_dir / "queue.paused"

    def set_queue_paused(self, paused: bool) -> None:
        """``pause-queue``: the engine on this data dir stops claiming (running work goes on)
        within half a second, and stays so across restarts until ``resume-queue``."""
        if paused:
            self.queue_flag.write_text("paused\n")
        else:
            self.queue_flag.unlink(missing_ok=True)

    async def _watch_queue_flag(self, engine: WorkerEngine, interval: float = 0.5) -> None:
        while True:
            paused = self.queue_flag.exists()
            if paused and not engine.queue_paused:
                engine.pause_queue()
            elif not paused and engine.queue_paused:
                engine.resume_queue()
            await asyncio.sleep(interval)

    async def waiting_reasons(self, tasks: list[TaskRecord]) -> dict[str, str]:
        """For ready tasks that wait only for a busy resource class, say so ("waiting for
        GPU"): derived from what runs now and the configured slots, never stored."""
        ready = [
            t
            for t in tasks
            if t.status.value == "pending"
            and t.unmet_deps == 0
            and not t.is_paused
            and (t.next_run_at is None or t.next_run_at <= self.store.now())
        ]
        if not ready:
            return {}
        busy = await self.store.busy_resources()
        slots = {**default_slots(), **self.settings.slots}
        total = sum(busy.values())
        reasons = {}
        for t in ready:
            if busy.get(t.resource, 0) >= slots.get(t.resource, 1):
                reasons[t.id] = f"waiting for {RESOURCE_NAMES.get(t.resource, t.resource)}"
            elif total >= self.settings.max_workers:
                reasons[t.id] = "waiting for a free worker"
        return reasons

    # --- restart log -------------------------------------------------------------------------

    async def restart_log(self) -> list[RestartLogEntry]:
        return await self.store.restart_log()


def uses_gpu(device: str) -> bool:
    """Whether TRANSCRIBE will run on a GPU: ``cuda``, or ``auto`` with a CUDA device."""
    if device == "cuda":
        return True
    if device == "cpu":
        return False
    try:
        import ctranslate2

        return int(ctranslate2.get_cuda_device_count()) > 0
    except Exception:
        return False


def needs_site_download(url: str) -> bool:
    """A URL whose path does not name a media file is a page (a video site): yt-dlp's job,
    when the optional ``sites`` extra is installed; otherwise a plain HTTP download."""
    path = PurePosixPath(urlsplit(url).path)
    return not is_media_name(Path(path.name)) and importlib.util.find_spec("yt_dlp") is not None


def _downloaded(material: MaterialRecord) -> bool:
    return material.local_path is not None and Path(material.local_path).is_file()


def load_spec_file(source: str, stdin_text: str | None = None) -> Any:
    """Read JSON from a file path, or from standard input when ``source`` is ``-``.
    :class:`SpecError` naming the file when it cannot be read or is not JSON."""
    where = "standard input" if source == "-" else source
    try:
        if source == "-":
            return json.loads(stdin_text or "")
        return json.loads(Path(source).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SpecError(f"no such spec file: {source}") from None
    except IsADirectoryError:
        raise SpecError(f"{source} is a folder, not a workflow spec (a JSON file)") from None
    except OSError as exc:
        raise SpecError(f"cannot read the spec file {source}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise SpecError(
            f"{where} is not a workflow spec: not UTF-8 text (to bring a media file into the "
            "library, use `fredica add PATH --template NAME`)"
        ) from None
    except json.JSONDecodeError as exc:
        raise SpecError(
            f"{where} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
        ) from None


# --- the stable JSON shapes of the CLI (docs/cli.md) ---------------------------------------


def task_json(task: TaskRecord, waiting: str | None = None) -> dict[str, Any]:
    return {
        "id": task.id,
        "key": task.key,
        "type": task.type,
        "workflow_run_id": task.workflow_run_id,
        "material_id": task.material_id,
        "status": task.status.value,
        "progress": task.progress,
        "is_paused": task.is_paused,
        "is_pausable": task.is_pausable,
        "status_text": task.status_text or waiting,
        "error": task.error,
        "error_type": task.error_type,
        "retry_count": task.retry_count,
        "max_retries": task.max_retries,
        "attempt": task.attempt,
        "interruptions": task.interruptions,
        "priority": task.priority,
        "resource": task.resource,
        "depends_on": task.depends_on,
        "payload": task.payload,
        "result": task.result,
        "created_at": task.created_at,
        "claimed_at": task.claimed_at,
        "started_at": task.started_at,
        "completed_at": task.completed_at,
        "next_run_at": task.next_run_at,
    }


def restart_entry_json(entry: RestartLogEntry) -> dict[str, Any]:
    return {
        "id": entry.id,
        "session_id": entry.session_id,
        "task_id": entry.task_id,
        "task_type": entry.task_type,
        "workflow_run_id": entry.workflow_run_id,
        "material_id": entry.material_id,
        "status_at_restart": entry.status_at_restart,
        "progress": entry.progress,
        "action": entry.action,
        "disposition": entry.disposition,
        "detail": entry.detail,
        "created_at": entry.created_at,
        "updated_at": entry.updated_at,
    }


def material_json(material: MaterialRecord) -> dict[str, Any]:
    return {
        "id": material.id,
        "source": material.source,
        "title": material.title,
        "local_path": material.local_path,
        "kind": material.kind,
        "size": material.size,
        "duration": material.duration,
        "fingerprint": material.fingerprint,
        "metadata": material.meta,
        "created_at": material.created_at,
    }


def run_json(
    run: RunRecord,
    tasks: list[TaskRecord] | None = None,
    waiting: dict[str, str] | None = None,
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": run.id,
        "template": run.template,
        "material_id": run.material_id,
        "status": run.status.value,
        "total_tasks": run.total_tasks,
        "done_tasks": run.done_tasks,
        "failed_tasks": run.failed_tasks,
        "cancelled_tasks": run.cancelled_tasks,
        "created_at": run.created_at,
        "completed_at": run.completed_at,
    }
    if tasks is not None:
        out["tasks"] = [task_json(t, (waiting or {}).get(t.id)) for t in tasks]
    return out

"""Submitting work: a workflow spec from JSON or a template, media brought into the library, a
template expanded for one material with the settings its jobs take.

:class:`Submission` holds these use cases; :class:`~fredica_app.services.app.Fredica` inherits
them, so callers say ``app.submit(...)``, ``app.import_items(...)``.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import urlsplit

from fredica_app import jobs, models
from fredica_app.errors import FredicaError, NoSubtitlesFor, SpecError, TemplateError
from fredica_app.library.fingerprint import is_media_name
from fredica_app.library.importer import Importer, ImportReport, material_dir, material_stem
from fredica_app.library.records import MaterialRecord
from fredica_app.library.store import LibraryStore
from fredica_app.paths import AppPaths
from fredica_app.settings import Settings
from fredica_app.templates import BUILTIN, get_template, with_download_first
from workers.records import CreatedRun
from workers.spec import TaskSpec, WorkflowSpec, parse_spec, prepare_run
from workers.store import TaskStore
from workers.tasktypes import TaskTypeRegistry


class Submission:
    """The submitting use cases, mixed into the application class (which provides the parts
    declared here)."""

    paths: AppPaths
    settings: Settings
    store: TaskStore
    registry: TaskTypeRegistry
    library: LibraryStore

    def spec_from_data(self, data: Any) -> WorkflowSpec:
        """A spec from ``{"template": NAME}`` or ``{"tasks": [...]}`` JSON data."""
        if isinstance(data, dict) and "template" in data and "tasks" not in data:
            extra = set(data) - {"template", "material_id", "params"}
            if extra:
                raise SpecError(f"invalid workflow spec: unexpected fields {sorted(extra)}")
            template = get_template(str(data["template"]))
            params = data.get("params") or {}
            if not isinstance(params, dict) or not all(isinstance(v, str) for v in params.values()):
                raise SpecError('invalid workflow spec: "params" is an object of strings')
            if template.source != "none":
                material_id = data.get("material_id")
                if not isinstance(material_id, str):
                    raise SpecError(
                        f"template {template.name!r} runs on a material: give "
                        '"material_id", or use `fredica add PATH|URL --template NAME`'
                    )
                return self.spec_for_material(self._material(material_id), template.name, params)
            return template.expand(
                material_id=data.get("material_id"), params=template.bind(params)
            )
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

    def spec_for_material(
        self,
        material: MaterialRecord,
        template_name: str,
        params: Mapping[str, str] | None = None,
    ) -> WorkflowSpec:
        """A template expanded for one material: its file, its output folder (created here,
        under the library directory), the template's ``params`` given (``NAME=VALUE`` as
        typed: checked here, :class:`TemplateError` naming the template's parameters), and
        the settings that jobs take for the rest (proxy, MP4 profile, speech, LLM: each job's
        catalogue row names them, :mod:`fredica_app.jobs` fills them). The ffmpeg is not
        among them: the endpoints server runs the one it was started with."""
        template = get_template(template_name)
        bound = template.bind(params or {})
        if not template.needs_source:
            raise TemplateError(
                f"template {template.name!r} takes {template.takes}: it cannot run on "
                f"{material.title!r}"
            )
        if material.kind == "subtitles" and not template.subtitle_files:
            takers = ", ".join(n for n, t in BUILTIN.items() if t.subtitle_files)
            raise TemplateError(
                f"{material.title!r} is a subtitle file: template {template.name!r} needs a "
                f"media file (the templates for a subtitle file: {takers})"
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
        if template.needs_subtitles(bound):
            values["subtitles"] = str(self.subtitles_for(material))
        if template.source == "file" and material.is_url and not _downloaded(material):
            # A URL not downloaded yet: download it first, whatever the template does with it.
            template = with_download_first(template, get_template("download_transcode").tasks[0])
        spec = template.expand(
            material_id=material.id, values=values, idempotent=True, params=bound
        )
        # What each job takes from the settings is its catalogue row's to say.
        settings_values = jobs.app_values(self.settings, self.models_dir)
        extra: list[TaskSpec] = []
        for task in spec.tasks:
            if task.type == "DOWNLOAD" and needs_site_download(material.source):
                task.type = "DOWNLOAD_SITE"
            jobs.fill_from_settings(task, settings_values)
            if task.type == "TRANSCRIBE":
                extra += self._before_transcribe(task, spec)
        for task in extra:
            jobs.fill_from_settings(task, settings_values)
        spec.tasks = extra + spec.tasks
        return spec

    def subtitles_for(self, material: MaterialRecord) -> Path:
        """The subtitle file that goes with a material: the material itself when it is one;
        for a video, the one beside it (:func:`pick_subtitles`), else the SRT Fredica wrote
        of it in its folder of the library (the subtitles template's).
        :class:`NoSubtitlesFor` when there is none."""
        if material.local_path is None:
            raise NoSubtitlesFor(f"{material.title}: not downloaded yet, no subtitles beside it")
        video = Path(material.local_path)
        if material.kind == "subtitles":
            return video
        preferred = None if self.settings.language == "auto" else self.settings.language
        found = pick_subtitles(video, preferred)
        made = material_dir(self.library_dir, material) / f"{material_stem(material)}.srt"
        if found is None and made.is_file():
            found = made
        if found is None:
            raise NoSubtitlesFor(
                f"{video.name}: no subtitle file beside it (looked for {video.stem}.srt, "
                f"{video.stem}.LANG.srt, .vtt, .ass) and none made by the subtitles template; "
                "add one, or make them first (fredica process FILE --template subtitles)"
            )
        return found

    @property
    def models_dir(self) -> Path:
        return self.settings.models_dir or self.paths.default_models_dir

    def _before_transcribe(self, task: TaskSpec, spec: WorkflowSpec) -> list[TaskSpec]:
        """A TRANSCRIBE task (its params filled from the settings) gets the resource class
        ``gpu`` when it will run on a GPU: this machine's, or an endpoint host's. A named
        model that is not installed yet is downloaded first: the tasks to add before it (their
        params filled by the caller)."""
        device = str(task.payload.get("device", "auto"))
        remote_gpu = device != "cpu" and any(
            "gpu" in host.classes for host in self.settings.endpoint_hosts
        )
        # An endpoint host serving ``gpu`` runs it there, on the host's card.
        task.resource = "gpu" if remote_gpu or uses_gpu(device) else "cpu"
        name = str(task.payload.get("model", self.settings.whisper_model))
        if models.is_model_name(name) and not models.installed(self.models_dir, name):
            if name != models.EMBEDDED:
                key = "download_model"
                task.depends_on.append(key)
                return [
                    TaskSpec(
                        key=key,
                        type="DOWNLOAD_MODEL",
                        payload={"name": name},
                        max_retries=3,
                        idempotency_key=f"{spec.template}:{spec.material_id}:{key}",
                    )
                ]
        return []

    async def submit_for_material(
        self,
        material: MaterialRecord,
        template_name: str,
        *,
        priority: int = 0,
        params: Mapping[str, str] | None = None,
    ) -> CreatedRun:
        (created,) = await self.submit_for_materials(
            [material], template_name, priority=priority, params=params
        )
        if isinstance(created, FredicaError):
            raise created
        return created

    async def submit_for_materials(
        self,
        materials: Sequence[MaterialRecord],
        template_name: str,
        *,
        priority: int = 0,
        params: Mapping[str, str] | None = None,
        passed_over: tuple[type[FredicaError], ...] = (FredicaError,),
    ) -> list[CreatedRun | FredicaError]:
        """A run of the template for each material, all submitted in one transaction (a
        folder's files pay one commit); for each in order, its run, or the error that kept it
        from being submitted (a video without its subtitles, a template that cannot run on
        it), the others going on. An error not among ``passed_over`` is raised instead, and
        nothing is submitted."""
        specs = await asyncio.to_thread(self._specs_for, materials, template_name, params)
        for spec in specs:
            if isinstance(spec, FredicaError) and not isinstance(spec, passed_over):
                raise spec
        prepared = []
        for spec in specs:
            if isinstance(spec, WorkflowSpec):
                if priority:
                    spec.tasks = [t.model_copy(update={"priority": priority}) for t in spec.tasks]
                prepared.append(prepare_run(spec, self.registry))
        created = iter(await self.store.create_runs(prepared))
        return [spec if isinstance(spec, FredicaError) else next(created) for spec in specs]

    def _specs_for(
        self,
        materials: Sequence[MaterialRecord],
        template_name: str,
        params: Mapping[str, str] | None,
    ) -> list[WorkflowSpec | FredicaError]:
        out: list[WorkflowSpec | FredicaError] = []
        for material in materials:
            try:
                out.append(self.spec_for_material(material, template_name, params))
            except FredicaError as exc:
                out.append(exc)
        return out


#: Subtitle files by their extension, in the order one is preferred to another.
SUBTITLE_EXTENSIONS = (".srt", ".ass", ".ssa", ".vtt")


def pick_subtitles(video: Path, language: str | None) -> Path | None:
    """The subtitle file beside ``video`` that goes with it: named after its stem
    (``talk.srt``) or after its stem and a language (``talk.en.srt``), in any case. Of
    several: one in ``language`` first, then one without a language, then the others by
    language; of one language, by extension (:data:`SUBTITLE_EXTENSIONS`'s order)."""
    try:
        names = [p for p in video.parent.iterdir() if p.is_file()]
    except OSError:
        return None
    stem = video.stem.casefold()
    ranked = []
    for path in names:
        suffix = path.suffix.casefold()
        if suffix not in SUBTITLE_EXTENSIONS or path == video:
            continue
        base = path.name[: -len(suffix)]
        if base.casefold() == stem:
            lang = ""
        elif base.casefold().startswith(stem + ".") and "." not in base[len(stem) + 1 :]:
            lang = base[len(stem) + 1 :].casefold()
        else:
            continue
        rank = 0 if language and lang == language.casefold() else (1 if not lang else 2)
        ranked.append((rank, lang, SUBTITLE_EXTENSIONS.index(suffix), path.name, path))
    return min(ranked)[-1] if ranked else None


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
        text = (stdin_text or "") if source == "-" else Path(source).read_text(encoding="utf-8")
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
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise SpecError(
            f"{where} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
        ) from None
    except ValueError:  # the one other error of a JSON reader: an integer too long to convert
        raise SpecError(
            f"{where} is not a workflow spec: it holds a number of more digits than can be read"
        ) from None
    except RecursionError:
        raise SpecError(f"{where} is not a workflow spec: its JSON is nested too deeply") from None

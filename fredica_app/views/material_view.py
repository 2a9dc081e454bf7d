"""What the library's details pane says of one material, from plain records: its facts in a
line, its streams and chapters one to a line, and the files its runs made, newest run of each
template first. Pure: no I/O, no Qt. The words are English unless the caller passes its own
(the window passes translated ones), as in :mod:`.library_view`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

from fredica_app.views.library_view import file_size, media_length
from fredica_app.views.records import task_outputs
from workers.records import RunRecord, TaskRecord

#: The words of a stream's line, in English. ``%1`` in ``channels``: their number.
WORDS: Mapping[str, str] = {
    "video": "video",
    "audio": "audio",
    "subtitle": "subtitles",
    "data": "data",
    "attachment": "attachment",
    "cover": "cover art",
    "text": "text",
    "bitmap": "bitmap",
    "mono": "mono",
    "stereo": "stereo",
    "channels": "%1 channels",
    "silent": "no sound in it",
}


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _rate(fps: float) -> str:
    return f"{fps:.3f}".rstrip("0").rstrip(".") + " fps"


def _channels(count: int, words: Mapping[str, str]) -> str:
    if count == 1:
        return words["mono"]
    if count == 2:
        return words["stereo"]
    return words["channels"].replace("%1", str(count))


def stream_line(stream: Mapping[str, Any], words: Mapping[str, str] = WORDS) -> str:
    """``video · h264 · 1920x1080 · 25 fps``, ``audio · opus · 48 kHz · stereo · eng``,
    ``subtitles · subrip · text · eng · “English”``: what a probe says of one stream."""
    kind = str(stream.get("type") or "data")
    parts = [words.get(kind, kind), str(stream.get("codec") or "?")]
    if kind == "video":
        width, height = stream.get("width"), stream.get("height")
        if width and height:
            parts.append(f"{width}x{height}")
        fps = _number(stream.get("fps"))
        if fps:
            parts.append(_rate(fps))
        if stream.get("attached_pic"):
            parts.append(words["cover"])
    elif kind == "audio":
        rate = _number(stream.get("sample_rate"))
        if rate:
            parts.append(f"{rate / 1000:g} kHz")
        channels = stream.get("channels")
        if isinstance(channels, int) and not isinstance(channels, bool) and channels > 0:
            parts.append(_channels(channels, words))
        if stream.get("empty"):
            parts.append(words["silent"])
    elif kind == "subtitle":
        parts.append(words["text"] if stream.get("text") else words["bitmap"])
    language = stream.get("language")
    if language and language != "und":
        parts.append(str(language))
    title = stream.get("title")
    if title:
        parts.append(f"“{title}”")
    return " · ".join(parts)


def chapter_line(number: int, chapter: Mapping[str, Any]) -> str:
    """``2. 1:30 - 4:05 The middle``: a chapter, numbered from 1, with its title if any."""
    start, end = _number(chapter.get("start")), _number(chapter.get("end"))
    line = f"{number}. {media_length(start)} - {media_length(end)}"
    title = chapter.get("title")
    return f"{line} {title}" if title else line


def facts_line(kind: str, duration: float | None, size: int | None, meta: Mapping[str, Any]) -> str:
    """``video · 1:02:03 · 1.5 GB · matroska,webm``: what is known, in that order (the kind
    as the caller names it)."""
    parts = [kind, media_length(duration), file_size(size), str(meta.get("format") or "")]
    return " · ".join(p for p in parts if p)


@dataclass(frozen=True, slots=True)
class OutputGroup:
    """A template's newest run on a material, and the files it made."""

    template: str
    run_id: str
    #: Its state, as the queue names it (``completed``, ``running``…).
    status: str
    files: tuple[str, ...]

    def folders(self) -> list[str]:
        """The folders its files lie in, once each, in order."""
        return list(dict.fromkeys(str(PurePath(f).parent) for f in self.files))


def output_groups(
    runs: Iterable[RunRecord], tasks: Mapping[str, Sequence[TaskRecord]]
) -> list[OutputGroup]:
    """The newest run of each template among ``runs``, newest first, each with the files its
    tasks made (or would have: a skipped task names them too), once each, in the tasks'
    order. ``tasks``: each run's, by run id (a run not there has made nothing yet)."""
    newest: dict[str, RunRecord] = {}
    for run in runs:
        template = run.template or ""
        kept = newest.get(template)
        if kept is None or run.created_at > kept.created_at:
            newest[template] = run
    groups = []
    for template, run in sorted(newest.items(), key=lambda i: i[1].created_at, reverse=True):
        files = dict.fromkeys(f for t in tasks.get(run.id, ()) for f in task_outputs(t))
        groups.append(OutputGroup(template, run.id, run.status.value, tuple(files)))
    return groups

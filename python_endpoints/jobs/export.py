"""EXPORT_SUBTITLES: TRANSCRIBE's transcript as SRT, WebVTT, plain text and JSON.

Runs in the child: standard library and pysubs2 only — pysubs2 imported where used (and ahead
of time by :func:`warm_up` in a warm spare), so that importing this module costs little. Params
were validated by the server (:class:`python_endpoints.params.ExportSubtitlesParams`) and come
complete, defaults filled. The captions themselves (line
lengths, cue durations, no overlap) are pure functions in
:mod:`python_endpoints.jobs.captions`; this module reads, renders, verifies and commits.

Files (:func:`python_endpoints.jobs.outputs.export_path`): ``<stem>.srt``, ``<stem>.vtt``,
``<stem>.transcript.txt`` (paragraphs where speech pauses) and ``<stem>.segments.json``
(``{"version", "language", "duration", "segments": [{"start", "end", "text", "words"}],
"unheard"}``; ``words``, ``[start, end, word]`` each, when the transcript has them).
Where the transcript says speech could not be made out, the captions and the text say
``[inaudible]``. Each is
written to its temporary name and read back (SRT and WebVTT re-parsed with pysubs2: the same
cues at the same times; the JSON re-loaded; the text compared); only once every one passed are
they renamed into place, so a failed or cancelled export leaves no final file of this run.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from python_endpoints.jobs import captions, outputs, textio
from python_endpoints.serving.child import ChildContext
from python_endpoints.status import said

EXPORT_SUBTITLES = "EXPORT_SUBTITLES"
JSON_VERSION = 1


def warm_up(endpoint: str) -> None:
    """Import pysubs2 ahead, while a spare waits."""
    import pysubs2  # noqa: F401


def _event_text(cue: captions.Cue, fmt: str) -> str:
    text = cue.text
    if fmt == "vtt":
        # WebVTT cue text is markup: these three must be escaped (SRT players show them as is).
        text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    # pysubs2 reads a backslash before n, N or h as a line break or a space: a word joiner
    # (invisible) after every backslash keeps the text as it was said.
    text = text.replace("\\", "\\\u2060")
    return text.replace("\n", r"\N")  # pysubs2's line break


def render_subtitles(
    cues: list[captions.Cue], fmt: str, names: dict[str, str] | None = None
) -> str:
    """SRT or WebVTT text of ``cues`` (written by pysubs2, its override tags left alone). Who
    speaks, when known: SRT's cues say ``SPEAKER 1: `` where the speaker changes; WebVTT's
    each carry a voice tag (``<v Speaker 1>``)."""
    import pysubs2

    subs = pysubs2.SSAFile()
    last: int | None = None
    for cue in cues:
        text = _event_text(cue, fmt)
        if cue.speaker is not None:
            label = captions.speaker_label(cue.speaker, names)
            if fmt == "vtt":
                tag = label.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
                text = f"<v {tag}>{text}"
            elif cue.speaker != last:
                text = f"{_event_text(captions.Cue(0, 0, (label.upper(),)), fmt)}: {text}"
            last = cue.speaker
        subs.append(pysubs2.SSAEvent(start=cue.start, end=cue.end, text=text))
    return subs.to_string(fmt, keep_ssa_tags=True)


def _segment_json(segment: captions.Segment) -> dict[str, Any]:
    out: dict[str, Any] = {
        "start": round(segment.start, 3),
        "end": round(segment.end, 3),
        "text": " ".join(segment.text.split()),
    }
    said_by = [] if segment.speaker is None else [segment.speaker]
    if segment.speaker is not None:
        out["speaker"] = segment.speaker
    if segment.words:
        out["words"] = [
            [round(w.start, 3), round(w.end, 3), w.text.strip(), *said_by]
            for w in segment.words
            if w.text.strip()
        ]
    return out


def render_json(
    transcript: textio.Transcript,
    segments_shown: list[captions.Segment] | None = None,
    names: dict[str, str] | None = None,
) -> str:
    """The JSON document; with speakers, each segment's ``speaker`` and each word's fourth
    value, and ``speakers``: each one's name."""
    shown = segments_shown if segments_shown is not None else transcript.segments
    segments = [_segment_json(s) for s in captions.ordered(shown)]
    document: dict[str, Any] = {
        "version": JSON_VERSION,
        "language": transcript.language,
        "duration": transcript.duration,
        "segments": segments,
        "unheard": [[a, b] for a, b in transcript.unheard],
    }
    who = sorted({s.speaker for s in shown if s.speaker is not None})
    if who:
        document["speakers"] = {str(n): captions.speaker_label(n, names) for n in who}
    return json.dumps(document, ensure_ascii=False, indent=1) + "\n"


def verify_written(
    fmt: str, temp: Path, final: Path, content: str, cues: list[captions.Cue]
) -> None:
    """Read ``temp`` back: what was written, as ``final`` will hold it."""
    written = textio.read_text(temp)
    if fmt in ("srt", "vtt"):
        import pysubs2

        try:
            parsed = pysubs2.SSAFile.from_string(written, format_=fmt)
        except Exception as exc:  # pysubs2 raises several kinds on a damaged file
            raise textio.verify_failed(final, f"pysubs2 cannot read it back ({exc})") from exc
        times = [(e.start, e.end) for e in parsed]
        if len(times) != len(cues):
            raise textio.verify_failed(final, f"{len(times)} cues read back, {len(cues)} written")
        if times != [(c.start, c.end) for c in cues]:
            raise textio.verify_failed(final, "the cues read back are not at the times written")
    elif fmt == "json":
        try:
            loaded = json.loads(written)
        except ValueError as exc:
            raise textio.verify_failed(final, f"it is not valid JSON ({exc})") from exc
        if loaded != json.loads(content):
            raise textio.verify_failed(final, "it does not hold what was written")
    elif written != content:
        raise textio.verify_failed(final, "it does not hold what was written")


def load_turns(path: Path) -> list[tuple[float, float, int]]:
    """DIARIZE's turns in ``path``: ``(start, end, speaker)``. Raises ``INPUT_MISSING`` or
    ``BAD_TRANSCRIPT`` (a file that is not DIARIZE's)."""
    from python_endpoints.errorcodes import ErrorType
    from python_endpoints.serving.child import JobFailed

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return [(float(t["start"]), float(t["end"]), int(t["speaker"])) for t in data["turns"]]
    except FileNotFoundError:
        raise JobFailed(
            f"the speakers file {path.name} does not exist: find the speakers first (DIARIZE)",
            ErrorType.INPUT_MISSING,
        ) from None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise JobFailed(
            f"{path.name} is not a speakers file of DIARIZE ({exc})", ErrorType.BAD_TRANSCRIPT
        ) from None


def export_subtitles_job(params: dict[str, Any], ctx: ChildContext) -> dict[str, Any] | None:
    """EXPORT_SUBTITLES; result ``{"outputs", "cues", "language", "duration"}``."""
    source = Path(params["transcript"])
    output_dir, stem = Path(params["output_dir"]), str(params["stem"])
    formats = list(dict.fromkeys(params["formats"]))
    finals = {fmt: outputs.export_path(output_dir, stem, fmt) for fmt in formats}
    for final in finals.values():
        textio.distinct(source, final)
    ctx.progress(0.0, said("reading_transcript"))
    transcript = textio.load_transcript(source)
    rules = captions.CaptionRules(
        max_line_chars=params["max_line_chars"],
        max_lines=params["max_lines"],
        max_cue_seconds=params["max_cue_seconds"],
        min_cue_seconds=params["min_cue_seconds"],
    )
    names = dict(params["speaker_names"])
    spoken = list(transcript.segments)
    if params["speakers"] is not None:
        spoken = captions.with_speakers(spoken, load_turns(Path(params["speakers"])))
    shown = captions.with_unheard(spoken, transcript.unheard)
    cues = captions.build_cues(shown, rules, transcript.duration)
    if ctx.cancelled:
        return None
    with outputs.writing(output_dir):
        output_dir.mkdir(parents=True, exist_ok=True)
    part = outputs.part_id(params)
    temps = {fmt: outputs.temp_path(final, part) for fmt, final in finals.items()}
    try:
        for done, fmt in enumerate(formats):
            ctx.progress(10.0 + 80.0 * done / len(formats), said("writing", name=finals[fmt].name))
            if fmt in ("srt", "vtt"):
                content = render_subtitles(cues, fmt, names)
            elif fmt == "txt":
                content = captions.plain_text(shown, names=names)
            elif fmt == "md":
                content = captions.markdown(stem, shown, names=names)
            else:
                content = render_json(transcript, spoken if params["speakers"] else None, names)
            textio.write_text(temps[fmt], content)
            verify_written(fmt, temps[fmt], finals[fmt], content, cues)
            if ctx.cancel_event.is_set():
                return None
        # Verified all, then moved all: a failure above leaves no final file behind.
        for fmt in formats:
            with outputs.writing(finals[fmt]):
                outputs.commit(temps[fmt], finals[fmt])
    finally:
        for temp in temps.values():
            outputs.remove_quietly(temp)
    ctx.progress(100.0, said("done"))
    return {
        "outputs": [str(finals[fmt]) for fmt in formats],
        "cues": len(cues),
        "language": transcript.language,
        "duration": transcript.duration,
    }

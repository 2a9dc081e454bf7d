"""What a failed task's error type means to a person, and what they can do about it.

Each :class:`~workers.states.ErrorType` gets a short title and a hint: a sentence or two that
say what happened in plain words and what to do next. The task's own message (``task.error``)
gives the particulars; the hint is what that kind of failure means in general. An error type
this build does not know (written by a newer Fredica) gets :data:`GENERIC_TITLE` and
:data:`GENERIC_HINT`.

The texts are plain English here (this module imports no Qt); the GUI translates them when it
shows them, under :data:`CONTEXT`. Each literal is wrapped in :func:`QT_TRANSLATE_NOOP`, an
identity function whose name and arguments ``pyside6-lupdate`` recognises, so that the
strings are extracted into the translation files with that context.
"""

from __future__ import annotations

from collections.abc import Mapping

from workers.states import ErrorType

#: The translation context of every text here.
CONTEXT = "ErrorHints"


def QT_TRANSLATE_NOOP(context: str, text: str) -> str:
    """Returns ``text`` as it is: marks it for ``lupdate`` under ``context``."""
    return text


#: A short name for each error type, for a heading.
TITLES: Mapping[str, str] = {
    ErrorType.CANCELLED: QT_TRANSLATE_NOOP("ErrorHints", "Cancelled"),
    ErrorType.AWAITING_CREDENTIAL: QT_TRANSLATE_NOOP("ErrorHints", "A credential is missing"),
    ErrorType.PAYLOAD_ERROR: QT_TRANSLATE_NOOP("ErrorHints", "Invalid request"),
    ErrorType.DEPENDENCY_FAILED: QT_TRANSLATE_NOOP("ErrorHints", "An earlier step failed"),
    ErrorType.NO_EXECUTOR: QT_TRANSLATE_NOOP("ErrorHints", "Unknown kind of task"),
    ErrorType.INTERRUPTED: QT_TRANSLATE_NOOP("ErrorHints", "Interrupted too often"),
    ErrorType.ORPHANED: QT_TRANSLATE_NOOP("ErrorHints", "Its run is gone"),
    ErrorType.STALLED: QT_TRANSLATE_NOOP("ErrorHints", "Stopped responding"),
    ErrorType.EXECUTOR_ERROR: QT_TRANSLATE_NOOP("ErrorHints", "The job failed"),
    ErrorType.SUBPROCESS_CRASHED: QT_TRANSLATE_NOOP("ErrorHints", "The job crashed"),
    ErrorType.CONNECTION_LOST: QT_TRANSLATE_NOOP("ErrorHints", "Lost touch with the job server"),
    ErrorType.SERVER_STOPPED: QT_TRANSLATE_NOOP("ErrorHints", "The job server stopped"),
    ErrorType.PROTOCOL_ERROR: QT_TRANSLATE_NOOP("ErrorHints", "Garbled message"),
    ErrorType.NETWORK_ERROR: QT_TRANSLATE_NOOP("ErrorHints", "Network problem"),
    ErrorType.IO_ERROR: QT_TRANSLATE_NOOP("ErrorHints", "File access failed"),
    ErrorType.UNSUPPORTED_MEDIA: QT_TRANSLATE_NOOP("ErrorHints", "Unsupported media"),
    ErrorType.NO_SPACE: QT_TRANSLATE_NOOP("ErrorHints", "Disk full"),
    ErrorType.INPUT_MISSING: QT_TRANSLATE_NOOP("ErrorHints", "Input file missing"),
    ErrorType.NOT_MEDIA: QT_TRANSLATE_NOOP("ErrorHints", "Not a media file"),
    ErrorType.NO_AUDIO: QT_TRANSLATE_NOOP("ErrorHints", "No audio"),
    ErrorType.VERIFY_FAILED: QT_TRANSLATE_NOOP("ErrorHints", "Output check failed"),
    ErrorType.INPUT_DAMAGED: QT_TRANSLATE_NOOP("ErrorHints", "Damaged input"),
    ErrorType.FFMPEG_FAILED: QT_TRANSLATE_NOOP("ErrorHints", "FFmpeg failed"),
    ErrorType.HTTP_ERROR: QT_TRANSLATE_NOOP("ErrorHints", "The server refused"),
    ErrorType.MODEL_MISSING: QT_TRANSLATE_NOOP("ErrorHints", "Speech model not installed"),
    ErrorType.BAD_TRANSCRIPT: QT_TRANSLATE_NOOP("ErrorHints", "Unreadable transcript"),
    ErrorType.LLM_UNREACHABLE: QT_TRANSLATE_NOOP("ErrorHints", "Language model unreachable"),
    ErrorType.LLM_ERROR: QT_TRANSLATE_NOOP("ErrorHints", "Language model error"),
    ErrorType.MODEL_LOAD_FAILED: QT_TRANSLATE_NOOP("ErrorHints", "Speech model would not load"),
    ErrorType.OUT_OF_MEMORY: QT_TRANSLATE_NOOP("ErrorHints", "Out of memory"),
    ErrorType.BAD_RESULT: QT_TRANSLATE_NOOP("ErrorHints", "Unusable result"),
}

#: What happened and what to do, for each error type.
HINTS: Mapping[str, str] = {
    ErrorType.CANCELLED: QT_TRANSLATE_NOOP(
        "ErrorHints",
        "The task was cancelled, so it did not finish. Retry it if you still want its result.",
    ),
    ErrorType.AWAITING_CREDENTIAL: QT_TRANSLATE_NOOP(
        "ErrorHints",
        "The task needs an API key or password that is not set. Set it as the settings "
        "describe, restart Fredica, then retry the task.",
    ),
    ErrorType.PAYLOAD_ERROR: QT_TRANSLATE_NOOP(
        "ErrorHints",
        "The task was asked to do something it cannot: an option is invalid, or a path is "
        "not allowed. Check the message, correct the settings or the input, and submit it "
        "again; retrying it unchanged fails the same way.",
    ),
    ErrorType.DEPENDENCY_FAILED: QT_TRANSLATE_NOOP(
        "ErrorHints",
        "A step this task needs failed, so it never started. Fix and retry the failed step; "
        "this task then runs after it.",
    ),
    ErrorType.NO_EXECUTOR: QT_TRANSLATE_NOOP(
        "ErrorHints",
        "This version of Fredica does not know how to run this kind of task (it may come "
        "from a newer version). Update Fredica, or remove the task.",
    ),
    ErrorType.INTERRUPTED: QT_TRANSLATE_NOOP(
        "ErrorHints",
        "Fredica closed or crashed too many times while this task ran, so it stopped trying. "
        "If something keeps stopping Fredica during this task, fix that first; then retry it.",
    ),
    ErrorType.ORPHANED: QT_TRANSLATE_NOOP(
        "ErrorHints",
        "The run this task belonged to was removed, so the task was stopped. Nothing needs "
        "doing; submit the work again if you still want it.",
    ),
    ErrorType.STALLED: QT_TRANSLATE_NOOP(
        "ErrorHints",
        "The job stopped reporting progress for too long and was stopped. Fredica retries it "
        "on its own; if it keeps stalling, check that the computer is not overloaded and that "
        "the input is readable.",
    ),
    ErrorType.EXECUTOR_ERROR: QT_TRANSLATE_NOOP(
        "ErrorHints",
        "The job hit an unexpected error, or a tool it needs would not start. Fredica retries "
        "it on its own; if it keeps failing, the message and the logs say what went wrong.",
    ),
    ErrorType.SUBPROCESS_CRASHED: QT_TRANSLATE_NOOP(
        "ErrorHints",
        "The program doing the work exited unexpectedly. Fredica retries it on its own; if "
        "it keeps crashing, try another input or check the logs.",
    ),
    ErrorType.CONNECTION_LOST: QT_TRANSLATE_NOOP(
        "ErrorHints",
        "Fredica lost its connection to the local job server while the task ran. It retries "
        "on its own; if this keeps happening, restart Fredica.",
    ),
    ErrorType.SERVER_STOPPED: QT_TRANSLATE_NOOP(
        "ErrorHints",
        "The local job server stopped while the task ran (it was killed or crashed). That is "
        "not the task's fault: Fredica starts a new server and runs the task again, using "
        "none of its retries.",
    ),
    ErrorType.PROTOCOL_ERROR: QT_TRANSLATE_NOOP(
        "ErrorHints",
        "Fredica and its job server misunderstood each other. It retries on its own; if this "
        "keeps happening, reinstall or update Fredica.",
    ),
    ErrorType.NETWORK_ERROR: QT_TRANSLATE_NOOP(
        "ErrorHints",
        "A download or request failed: the connection dropped, timed out, or the server was "
        "busy. Fredica retries on its own; check your internet connection if it keeps failing.",
    ),
    ErrorType.IO_ERROR: QT_TRANSLATE_NOOP(
        "ErrorHints",
        "A file could not be read or written: a folder may have moved, a drive been "
        "disconnected, or permission be missing. Fredica retries on its own; check the folder "
        "named in the message.",
    ),
    ErrorType.UNSUPPORTED_MEDIA: QT_TRANSLATE_NOOP(
        "ErrorHints",
        "The input holds nothing this task can use as asked (an unknown codec, no video "
        "track, a web page instead of a file). Convert the input, or choose another task.",
    ),
    ErrorType.NO_SPACE: QT_TRANSLATE_NOOP(
        "ErrorHints",
        "The disk is full, or would be too full after this task. Free some space, or choose "
        "a library folder on another drive, then retry the task.",
    ),
    ErrorType.INPUT_MISSING: QT_TRANSLATE_NOOP(
        "ErrorHints",
        "An input file is no longer where it was: it was moved, renamed or deleted. Put it "
        "back, or add it to the library again, then retry.",
    ),
    ErrorType.NOT_MEDIA: QT_TRANSLATE_NOOP(
        "ErrorHints",
        "The input is not an audio or video file FFmpeg can read, or it is empty. Check that "
        "you chose the right file.",
    ),
    ErrorType.NO_AUDIO: QT_TRANSLATE_NOOP(
        "ErrorHints",
        "The input has no sound to work on: no audio track, or only silence. Choose a file "
        "with audio.",
    ),
    ErrorType.VERIFY_FAILED: QT_TRANSLATE_NOOP(
        "ErrorHints",
        "A file was written but failed its check afterwards (incomplete or corrupted). "
        "Fredica retries on its own; if it keeps failing, check the disk and the connection.",
    ),
    ErrorType.INPUT_DAMAGED: QT_TRANSLATE_NOOP(
        "ErrorHints",
        "The input file is damaged and cannot be read to the end. Get a fresh copy of the "
        "file, or repair it, then retry.",
    ),
    ErrorType.FFMPEG_FAILED: QT_TRANSLATE_NOOP(
        "ErrorHints",
        "FFmpeg could not process the input, for a reason it did not explain. The message "
        "holds its last words; try converting the file with another tool first.",
    ),
    ErrorType.HTTP_ERROR: QT_TRANSLATE_NOOP(
        "ErrorHints",
        "The server refused the request (not found, forbidden, or the site blocked it). "
        "Check that the address is right and that the file is still available.",
    ),
    ErrorType.MODEL_MISSING: QT_TRANSLATE_NOOP(
        "ErrorHints",
        "The speech model chosen in the settings is not installed. Let Fredica download it "
        "(set a models folder and stay online), or choose tiny.en, which is built in.",
    ),
    ErrorType.BAD_TRANSCRIPT: QT_TRANSLATE_NOOP(
        "ErrorHints",
        "A transcript file could not be read as one. Transcribe the media again to get a "
        "fresh transcript.",
    ),
    ErrorType.LLM_UNREACHABLE: QT_TRANSLATE_NOOP(
        "ErrorHints",
        "The language model's server did not answer. Fredica retries on its own; check that "
        "the server (a local Ollama, say) is running and that its address in the settings is "
        "right.",
    ),
    ErrorType.LLM_ERROR: QT_TRANSLATE_NOOP(
        "ErrorHints",
        "The language model refused the request or gave an answer that could not be read. "
        "Fredica retries on its own; if it keeps failing, try another model in the settings.",
    ),
    ErrorType.MODEL_LOAD_FAILED: QT_TRANSLATE_NOOP(
        "ErrorHints",
        "The speech model is installed but could not be loaded: it may be damaged, or too "
        "large for this computer. Delete it so that it is downloaded again, or choose a "
        "smaller model.",
    ),
    ErrorType.OUT_OF_MEMORY: QT_TRANSLATE_NOOP(
        "ErrorHints",
        "The computer ran out of memory during the task. Fredica retries on its own; close "
        "other programs, run fewer tasks at once, or choose a smaller model.",
    ),
    ErrorType.BAD_RESULT: QT_TRANSLATE_NOOP(
        "ErrorHints",
        "The job finished but what it returned could not be saved. This is a bug in "
        "Fredica: please report it with the message.",
    ),
}

#: The title of an error type this build does not know.
GENERIC_TITLE = QT_TRANSLATE_NOOP("ErrorHints", "Failed")
#: The hint for an error type this build does not know.
GENERIC_HINT = QT_TRANSLATE_NOOP(
    "ErrorHints",
    "The task failed. The message says why; fix what it names and retry the task.",
)


def title(error_type: str | None) -> str:
    """A short name for ``error_type`` (untranslated); :data:`GENERIC_TITLE` when unknown."""
    return TITLES.get(error_type or "", GENERIC_TITLE)


def hint(error_type: str | None) -> str:
    """What ``error_type`` means and what to do (untranslated); :data:`GENERIC_HINT` when
    unknown or None."""
    return HINTS.get(error_type or "", GENERIC_HINT)


def is_known(error_type: str | None) -> bool:
    """Whether this build knows ``error_type``."""
    return error_type in HINTS

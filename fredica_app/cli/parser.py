"""The ``fredica`` command line: every command, its options and its help (docs/cli.md says
what each does). A new command is added here and to ``COMMANDS`` in the package."""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fredica_app.desktop.power import WhenDone

JSON_HELP = "print JSON instead (stable fields: docs/cli.md)"
RUN_STATUSES = ("pending", "running", "completed", "failed", "cancelled")


def add_run_filters(p: argparse.ArgumentParser) -> None:
    """``--status``, ``--template``, ``--material``, ``--since``: which runs (``runs``,
    ``watch``)."""
    p.add_argument(
        "--status",
        action="append",
        choices=RUN_STATUSES,
        help="only runs in this state (repeat for several)",
    )
    p.add_argument(
        "--template", action="append", metavar="NAME", help="only runs of this template (repeat)"
    )
    p.add_argument(
        "--material",
        metavar="TEXT",
        help="only runs of the materials whose title or source holds TEXT (any case), or whose "
        "id starts with it",
    )
    p.add_argument(
        "--since", metavar="DURATION", help="only runs created in the last 30m, 2h, 1d, 1w…"
    )


PRIORITY_HELP = "0 or more; higher runs first (default 0)"


def gui_shorthand(parser: argparse.ArgumentParser, argv: Sequence[str]) -> list[str]:
    """``fredica [--data-dir D] [--db-url U] FILE_OR_URL…`` as ``fredica … gui FILE_OR_URL…``
    (what a file manager's "Open with Fredica" runs): when the first word after the global
    options is not one of ``parser``'s commands but an existing path or an http(s) URL.
    Anything else is left to argparse, which names an unknown command."""
    commands: set[str] = set()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            commands |= set(action.choices)
    args = list(argv)
    i = 0
    while i < len(args) and args[i].startswith(("--data-dir", "--db-url")):
        i += 1 if "=" in args[i] else 2
    if i >= len(args) or args[i] in commands or args[i].startswith("-"):
        return args
    word = args[i]
    if word.lower().startswith(("http://", "https://")) or os.path.exists(word):
        args.insert(i, "gui")
    return args


class _Version(argparse.Action):
    """``--version``: the version is looked up when asked for, not at every command."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(
            option_strings, argparse.SUPPRESS, nargs=0, help="show the version and exit"
        )

    def __call__(self, parser: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> None:
        from fredica_app.version import fredica_version

        print(f"fredica {fredica_version()}")
        parser.exit()


class _TemplatesHelp(argparse.HelpFormatter):
    """Help that names the built-in templates, loaded only when the help is shown (they
    cost a command that does not show it ~0.1 s of imports)."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = super()._get_help_string(action)
        if text is None or "{" not in text:
            return text
        from fredica_app.templates import BUILTIN

        return text.format(
            all_templates=", ".join(BUILTIN),
            media_templates=", ".join(n for n, t in BUILTIN.items() if t.needs_source),
            file_templates=", ".join(n for n, t in BUILTIN.items() if t.source == "file"),
        )


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="fredica", description="Fredica: durable media workflows, headless."
    )
    p.add_argument("--version", action=_Version)
    p.add_argument(
        "--selftest",
        action="store_true",
        help="check that every part of Fredica loads and works here (Qt, the database, the "
        "endpoints and a job process, ffmpeg, the speech model), in a temporary data directory "
        "of its own (--data-dir is not used); exit 0 when all pass",
    )
    p.add_argument(
        "--json",
        dest="selftest_json",
        action="store_true",
        help="with --selftest: print one JSON object instead of the table",
    )
    p.add_argument(
        "--data-dir",
        help="keep the database, settings, cache and logs here (default: the platform's "
        "folders; also $FREDICA_DATA_DIR)",
    )
    p.add_argument(
        "--db-url",
        metavar="URL",
        help="the queue of several hosts, on PostgreSQL: postgresql+psycopg://USER@HOST/DB "
        "(also $FREDICA_DB_URL, or the setting database_url; the password from PGPASSWORD or "
        "a password file; see docs/scale-out.md). Default: the data directory's own database",
    )
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    g = sub.add_parser(
        "gui",
        help="open the window (also what `fredica` alone does, and `fredica FILE_OR_URL…`); "
        "a window already open on the data directory takes the items and comes to the front",
    )
    g.add_argument(
        "items",
        nargs="*",
        metavar="PATH|URL",
        help="media files, folders, http(s) URLs to add to the library",
    )
    g.add_argument(
        "--minimized",
        action="store_true",
        help="start hidden in the tray (minimised where there is none), as a start at login does",
    )

    s = sub.add_parser("submit", help="create a run from a workflow spec; prints the run id")
    s.add_argument(
        "spec", help='SPEC.json, or - for standard input ({"template": …} or {"tasks": […]})'
    )
    s.add_argument("--json", action="store_true", help=JSON_HELP)

    w = sub.add_parser(
        "worker", help="run the engine; prints a line per run it finishes and a summary"
    )
    w.add_argument(
        "--until-idle",
        action="store_true",
        help="exit 0 once nothing is running, claimable or waiting for a retry",
    )
    w.add_argument(
        "--max-workers",
        type=int,
        metavar="N",
        help="tasks running at once (default: the setting max_workers)",
    )
    w.add_argument(
        "--then",
        choices=[a.value for a in WhenDone],
        metavar="ACTION",
        help="with --until-idle, once idle: nothing, notify (a desktop notification), quit, "
        "sleep or shutdown (after a 60 s countdown; Ctrl-C cancels)",
    )
    w.set_defaults(usage=w.format_usage())  # `--then` without `--until-idle` is refused with it

    r = sub.add_parser(
        "runs", help="list runs: status, tasks, progress, material, times, ETA; a paused queue"
    )
    r.add_argument("--json", action="store_true", help=JSON_HELP)
    add_run_filters(r)
    size = r.add_mutually_exclusive_group()
    size.add_argument(
        "--limit",
        type=int,
        metavar="N",
        help="show N runs (default: 50 on a terminal, all in a pipe or JSON); JSON then pages",
    )
    size.add_argument("--all", action="store_true", help="show every run")
    r.add_argument(
        "--cursor", metavar="C", help="the page after the one whose next_cursor this is (JSON)"
    )

    one = sub.add_parser("run", help="one run with its tasks")
    one.add_argument("run_id", metavar="RUN_ID", help="the run's id (see `fredica runs`)")
    one.add_argument("--json", action="store_true", help=JSON_HELP)

    for name, text in [
        ("pause", "hold a task or every task of a run"),
        ("resume", "release a held task or run"),
        ("cancel", "cancel a task (and what depends on it) or a whole run"),
        ("retry", "run a failed or cancelled task (or run) again"),
    ]:
        c = sub.add_parser(name, help=text)
        c.add_argument("id", help="a task id or a run id")
        c.add_argument("--json", action="store_true", help=JSON_HELP)

    sub.add_parser("pause-queue", help="stop claiming new tasks; running ones go on")
    sub.add_parser("resume-queue", help="claim tasks again")

    ho = sub.add_parser(
        "hosts",
        help="the engines on the queue: worker id, host, heartbeat, running tasks, slots, "
        "draining (several hosts on a shared queue: --db-url)",
    )
    ho.add_argument("--all", action="store_true", help="also the engines that stopped")
    ho.add_argument(
        "--endpoints",
        action="store_true",
        help="only the endpoint hosts of the settings, each checked now (reached, token, "
        "shared folders)",
    )
    ho.add_argument("--json", action="store_true", help=JSON_HELP)
    dr = sub.add_parser(
        "drain",
        help="ask an engine to finish its current work and claim no more",
    )
    dr.add_argument("worker", metavar="WORKER", help="a worker id, or a host name for all of its")
    dr.add_argument("--undo", action="store_true", help="let it claim again")

    mg = sub.add_parser(
        "migrate-db",
        help="copy this data directory's library and history to a shared queue on PostgreSQL "
        "(an empty database), verified by counts and checksums; the SQLite file is left as it "
        "is; then use that queue here",
    )
    mg.add_argument("--to", required=True, metavar="URL", help="postgresql+psycopg://USER@HOST/DB")

    rl = sub.add_parser("restart-log", help="what recovery found at start-up, with dispositions")
    rl.add_argument("--json", action="store_true", help=JSON_HELP)
    rl.add_argument("--dismiss", metavar="ENTRY_ID|all", help="mark an entry (or all) dismissed")

    pn = sub.add_parser(
        "prune", help="delete finished runs and timeline events older than the settings keep"
    )
    pn.add_argument(
        "--runs-days",
        type=float,
        metavar="N",
        help="finished runs that finished N days ago or more (default: keep_runs_days; 0: none)",
    )
    pn.add_argument(
        "--events-days",
        type=float,
        metavar="M",
        help="timeline events M days old or more (default: keep_events_days; 0: none)",
    )
    pn.add_argument("--dry-run", action="store_true", help="say what would go; delete nothing")
    pn.add_argument("--json", action="store_true", help=JSON_HELP)

    rm = sub.add_parser(
        "remove",
        help="take a material out of the library (with its finished runs) or a finished run "
        "out of the queue",
    )
    rm.add_argument("id", metavar="MATERIAL|RUN", help="a material id or a run id")
    rm.add_argument(
        "--outputs",
        action="store_true",
        help="a material: delete its output folder under the library too (never its source file)",
    )
    rm.add_argument("--json", action="store_true", help=JSON_HELP)

    doc = sub.add_parser("doctor", help="check the environment and say how to fix what is missing")
    doc.add_argument("--json", action="store_true", help=JSON_HELP)

    ep = sub.add_parser(
        "endpoints",
        help="serve the task endpoints in the foreground (as `python -m python_endpoints`)",
    )
    ep.add_argument(
        "--host", default="127.0.0.1", help="address to bind; any but loopback needs TLS"
    )
    ep.add_argument("--port", type=int, default=0, help="port to bind (default 0: any free one)")
    ep.add_argument("--token-file", type=Path, help="the bearer token (readable by you alone)")
    ep.add_argument("--certfile", type=Path, help="TLS certificate (PEM), with --keyfile")
    ep.add_argument("--keyfile", type=Path, help="TLS private key (PEM), with --certfile")
    ep.add_argument(
        "--allow-write",
        type=Path,
        action="append",
        default=[],
        metavar="DIR",
        help="jobs may write only under DIR (repeatable; default: anywhere)",
    )
    ep.add_argument("--ffmpeg", help="the ffmpeg jobs run (default: the bundled one)")
    ep.add_argument(
        "--allow-key-env",
        action="append",
        default=[],
        metavar="NAME",
        help="an environment variable ANALYZE may read its API key from (repeatable)",
    )
    ep.add_argument(
        "--log-file",
        type=Path,
        help="log the server and its jobs to this file (default: warnings on stderr only)",
    )

    st = sub.add_parser(
        "settings", help="show the settings, or get, set or edit one (needs no database)"
    )
    st.add_argument("--json", action="store_true", help="print every setting as a JSON object")
    st_actions = st.add_subparsers(dest="action", metavar="ACTION")
    st_get = st_actions.add_parser("get", help="print one setting's value")
    st_get.add_argument("key", metavar="KEY")
    st_set = st_actions.add_parser(
        "set", help="set KEY to VALUE (JSON when it parses, else text; null: the default)"
    )
    st_set.add_argument("key", metavar="KEY")
    st_set.add_argument("value", metavar="VALUE")
    st_actions.add_parser(
        "edit", help="edit the file in $VISUAL or $EDITOR; saved only if it is valid"
    )

    t = sub.add_parser(
        "templates", help="list the workflow templates; with NAME, its tasks and parameters"
    )
    t.add_argument("name", nargs="?", metavar="NAME", help="one template: what it takes")
    t.add_argument("--json", action="store_true", help=JSON_HELP)

    sp = sub.add_parser(
        "speakers",
        help="a run's speakers (the transcript template): list them, name them (1=Ana) or "
        "merge two that are one person (3=2); the exports are written again",
    )
    sp.add_argument("run_id", metavar="RUN_ID")
    sp.add_argument("changes", nargs="*", metavar="N=NAME|N=M")
    sp.add_argument("--json", action="store_true", help=JSON_HELP)

    ty = sub.add_parser("types", help="list the task types a workflow spec may name")
    ty.add_argument("--json", action="store_true", help=JSON_HELP)

    a = sub.add_parser(
        "add",
        help="import files, folders or URLs and submit a template for each",
        formatter_class=_TemplatesHelp,
    )
    a.add_argument(
        "items", nargs="+", metavar="PATH|URL", help="media files, folders, http(s) URLs"
    )
    a.add_argument(
        "--template",
        required=True,
        metavar="NAME",
        help="the template to run on each: {media_templates} (see `fredica templates`)",
    )
    _param_argument(a)
    a.add_argument("--priority", type=int, default=0, metavar="N", help=PRIORITY_HELP)
    a.add_argument("--json", action="store_true", help=JSON_HELP)

    pr = sub.add_parser(
        "process",
        help="import, submit and run (or follow) until the run ends, with live progress",
        formatter_class=_TemplatesHelp,
    )
    pr.add_argument(
        "items",
        nargs="*",
        metavar="PATH|URL",
        help="media files, folders, http(s) URLs (none for a template that takes none)",
    )
    pr.add_argument(
        "--template",
        required=True,
        metavar="NAME",
        help="the template to run: {all_templates} (see `fredica templates`)",
    )
    _param_argument(pr)
    pr.add_argument(
        "--sample", action="store_true", help="process a generated sample clip (see `sample`)"
    )
    pr.add_argument("--priority", type=int, default=0, metavar="N", help=PRIORITY_HELP)
    pr.add_argument("--json", action="store_true", help="end by printing the run object")

    sm = sub.add_parser(
        "sample", help="write a ~10 s test clip (video, spoken audio, two subtitle cues) to OUT"
    )
    sm.add_argument("out", type=Path, metavar="OUT")
    sm.add_argument("--seconds", type=float, default=10.0, help="1 to 600 (default 10)")
    sm.add_argument("--force", action="store_true", help="replace OUT if it exists")
    sm.add_argument(
        "--kind",
        choices=["mkv", "mp4", "legacy"],
        default="mkv",
        help="mkv: H.264/Opus/SRT (remuxes to MP4); mp4: H.264/AAC; legacy: MPEG-2/MP2/SRT "
        "(re-encodes)",
    )

    mt = sub.add_parser("materials", help="list the media library")
    mt.add_argument("--json", action="store_true", help=JSON_HELP)

    d = sub.add_parser(
        "demo",
        help="submit the diagnostic workflow and run it to the end (or follow the engine "
        "that runs)",
    )
    d.add_argument("--json", action="store_true", help="end by printing the run object")

    wa = sub.add_parser(
        "watch", help="print the queue's changes as they happen (with RUN_ID: until it ends)"
    )
    wa.add_argument(
        "run_id",
        nargs="?",
        metavar="RUN_ID",
        help="only this run and its tasks: its state now, then its changes until it ends",
    )
    wa.add_argument(
        "--json",
        action="store_true",
        help='one JSON object per line: {"kind": "run"|"task"|"deleted", "seq", "record"}',
    )
    add_run_filters(wa)

    wf = sub.add_parser(
        "watch-folders",
        help="submit each new media file of the watch folders (the settings', or DIR) once it "
        "has settled, and run the engine",
        formatter_class=_TemplatesHelp,
    )
    wf.add_argument(
        "dir",
        nargs="?",
        type=Path,
        metavar="DIR",
        help="watch this folder (default: the setting watch_folders)",
    )
    wf.add_argument(
        "--template",
        metavar="NAME",
        help="with DIR: the template each file is submitted to: {file_templates} (default "
        "transcode_mp4)",
    )
    _param_argument(wf, "with DIR: ")
    wf.add_argument(
        "--recursive",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="with DIR: the files in its subfolders too (default: yes)",
    )
    wf.add_argument(
        "--pattern",
        action="append",
        default=[],
        metavar="GLOB",
        help="with DIR: only media files whose name matches GLOB, in any case (repeatable; "
        "default: every media file)",
    )
    wf.add_argument(
        "--settle",
        type=float,
        metavar="S",
        help="seconds a file's size and modification time must stay the same before it is "
        "taken in (default: the setting watch_settle_seconds, 5)",
    )
    return p


def _param_argument(parser: argparse.ArgumentParser, prefix: str = "") -> None:
    parser.add_argument(
        "--param",
        action="append",
        default=[],
        type=_key_value,
        metavar="KEY=VALUE",
        help=f"{prefix}a parameter of the template, for this submission (repeatable; "
        "`fredica templates NAME` lists them): --param profile=archive",
    )


def _key_value(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"{text!r} is not KEY=VALUE (e.g. profile=archive)")
    return key.strip(), value

"""Controlling work: ``pause``, ``resume``, ``cancel``, ``retry`` a task or a run, and
``pause-queue``, ``resume-queue``. Through the application's front door
(:class:`fredica_app.services.Control`), as the GUI and ``process`` do: this process runs no
engine, so the change is written to the database, where the engine that runs (if one does)
reads it within half a second."""

from __future__ import annotations

import argparse

from fredica_app.cli.output import Handler
from fredica_app.cli.shapes import control_json, print_json
from fredica_app.services import Action, Fredica


def control(action: Action) -> Handler:
    """The command for one action on the task or run ``args.id``."""

    async def handler(app: Fredica, args: argparse.Namespace) -> int:
        result = await app.control.apply(action, args.id)
        if args.json:
            print_json(control_json(result))
        else:
            print(f"{action}: {len(result.changed)} task(s) changed")
        return 0

    return handler


async def cmd_pause_queue(app: Fredica, args: argparse.Namespace) -> int:
    await app.control.pause_queue()
    print("queue paused: no new task will be claimed; running tasks go on")
    return 0


async def cmd_resume_queue(app: Fredica, args: argparse.Namespace) -> int:
    await app.control.resume_queue()
    print("queue resumed")
    return 0


cmd_pause = control("pause")
cmd_resume = control("resume")
cmd_cancel = control("cancel")
cmd_retry = control("retry")

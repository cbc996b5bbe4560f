"""Running the ``winnow`` command as a user does, with its own WINNOW_HOME and none of the AWS or Voyage
variables: ``Winnow`` starts ``python -m winnow_local`` in a subprocess (the entry point, exit codes, stdin,
a folder another process holds); ``InProcessWinnow`` calls the same ``main`` in this process, so a test of
what a command prints pays no interpreter start and no imports. ``LEAVE`` is a short policy document."""

from __future__ import annotations

import argparse
import io
import json
import logging
import os
import subprocess
import sys
import warnings
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from unittest import mock

LEAVE = """# Parental Leave

## Length of leave

New parents at Orchard Robotics receive eighteen weeks of fully paid parental leave, which they can
split into two blocks within a year of the child's arrival. Adoptive and foster parents receive the
same leave, and it starts on the day the child arrives home. Tell the people team eight weeks ahead.

## Returning to work

During the first month back, parents may work half days for full pay. Your role, level and salary are
protected while you are away, and you stay eligible for salary reviews and bonuses during the leave.
"""


@dataclass
class Run:
    code: int
    stdout: str
    stderr: str

    def json_lines(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.stdout.splitlines() if line.strip()]


class Winnow:
    """Runs ``python -m winnow_local`` against one WINNOW_HOME."""

    def __init__(self, home: Path, **env: str) -> None:
        self.home = home
        self.env = {**os.environ, "WINNOW_HOME": str(home), **env}
        for name in ("VOYAGE_API_KEY", "QDRANT_URL", "WINNOW_BUCKET", "WINNOW_LEDGER_TABLE"):
            self.env.pop(name, None)

    def __call__(self, *args: str, **env: str) -> Run:
        done = subprocess.run(
            [sys.executable, "-m", "winnow_local", *args],
            cwd=self.home.parent,
            env={**self.env, **env},
            capture_output=True,
            text=True,
            timeout=240,
            check=False,
        )
        return Run(done.returncode, done.stdout, done.stderr)


class InProcessWinnow(Winnow):
    """The command's ``main(argv)`` in this process, over the same real handlers and stacks as the
    subprocess. While it runs, the environment, the working folder, stdin/stdout/stderr, the warning
    filters and the process-wide container are the command's own; all are put back afterwards, so each
    call starts as fresh as a new process would. The handlers' logger, which a process makes once when it
    first imports them, takes the level the command chose and writes to the command's stderr, as in a
    process of its own. Two process-wide settings stay out: glibc's arena limit (``limit_malloc_arenas``
    would hold for every later test on this worker) and the interpreter's exit. Not for a module whose own
    server or stack serves the process's container while the command runs."""

    def __call__(self, *args: str, **env: str) -> Run:
        from winnow import observability  # the handlers' logger: made here, with this process's settings
        from winnow.factory import set_container
        from winnow_local.cli import main as cli

        stdout, stderr = io.StringIO(), io.StringIO()
        saved_env, saved_cwd = dict(os.environ), os.getcwd()
        handlers_log = logging.getLogger(observability.SERVICE)
        saved_level = handlers_log.level
        saved_streams = [
            (handler, handler.setStream(stderr))
            for handler in handlers_log.handlers
            if isinstance(handler, logging.StreamHandler)
        ]

        def set_log_level(parsed: argparse.Namespace) -> None:
            """The command's choice, read as the logger reads it when a new process imports it."""
            choose_log_level(parsed)
            handlers_log.setLevel(os.environ.get("POWERTOOLS_LOG_LEVEL", "WARNING").upper())

        choose_log_level = cli._set_log_level
        os.environ.clear()
        os.environ.update({**self.env, **env})
        if not observability.IN_LAMBDA:
            observability.outside_lambda_defaults()  # as the command's own process sets them on import
        set_container(None)
        try:
            os.chdir(self.home.parent)
            with (
                warnings.catch_warnings(),
                mock.patch.object(cli, "limit_malloc_arenas", return_value=False),
                mock.patch.object(cli, "_set_log_level", set_log_level),
                mock.patch.object(sys, "stdin", io.StringIO()),
                redirect_stdout(stdout),
                redirect_stderr(stderr),
            ):
                try:
                    code = cli.main(list(args))
                except SystemExit as exit_:  # argparse's usage errors, --help, --version
                    code = exit_code(exit_.code, stderr)
        finally:
            set_container(None)
            os.chdir(saved_cwd)
            os.environ.clear()
            os.environ.update(saved_env)
            handlers_log.setLevel(saved_level)
            for handler, stream in saved_streams:
                handler.setStream(stream)
        return Run(code, stdout.getvalue(), stderr.getvalue())


def exit_code(code: object, stderr: io.StringIO) -> int:
    """The status a process would exit with for ``sys.exit(code)``."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=stderr)
    return 1

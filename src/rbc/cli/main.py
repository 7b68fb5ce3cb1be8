"""Entry point of the ``rbc`` console script.

``main(argv)`` runs one command and returns its exit status: 0 success, 1 a verification
check failed, 2 bad input, with the message on stderr and no traceback. It is the one
top-level handler of user errors:

* :class:`rbc.errors.RbcError` and command-line usage errors: ``error: <message>``;
* operating-system errors (missing directory, is-a-directory, permission denied,
  read-only file system, disk full …): ``error: <path>: <reason>``;
* memory exhaustion: ``error: out of memory …``;
* an interrupt (Ctrl-C): ``interrupted``, exit status 130 (outputs are all-or-nothing, so
  nothing half-written is left);
* a closed standard output (``rbc inspect B | head``): no message, exit status 141 (128 +
  SIGPIPE, what a shell reports for a command ended by the pipe), never 1, which means a
  failed check;
* Python warnings raised while the command runs (numpy overflow, matplotlib, MuJoCo's
  warnings, which never go to its ``MUJOCO_LOG.TXT``) are collected and printed after the
  command's own output or error message, once each, never before it.
"""

from __future__ import annotations

import errno
import os
import sys
import warnings

import typer

from rbc.cli import compile as _compile  # noqa: F401  (registers commands)
from rbc.cli import compose as _compose  # noqa: F401
from rbc.cli import forces as _forces  # noqa: F401
from rbc.cli import inspect as _inspect  # noqa: F401
from rbc.cli import plan as _plan  # noqa: F401
from rbc.cli import repro as _repro  # noqa: F401
from rbc.cli import simulate as _simulate  # noqa: F401
from rbc.cli import solve as _solve  # noqa: F401
from rbc.cli import verify as _verify  # noqa: F401
from rbc.cli import view as _view  # noqa: F401
from rbc.cli.app import app
from rbc.cli.bench import bench_app
from rbc.cli.import_ import import_app
from rbc.cli.policy import app as policy_app
from rbc.cli.walk import app as walk_app
from rbc.errors import RbcError

app.add_typer(bench_app, name="bench")
app.add_typer(import_app, name="import")
app.add_typer(policy_app, name="policy")
app.add_typer(walk_app, name="walk")


#: Exit status of an interrupted command (128 + SIGINT, the shell convention).
INTERRUPTED = 130
#: Exit status of a command whose standard output was closed (128 + SIGPIPE).
BROKEN_PIPE = 141

_OS_REASONS = {errno.ENOSPC: "no space left on device", errno.EROFS: "read-only file system",
               errno.EDQUOT: "disk quota exceeded"}


def os_error_message(err: OSError) -> str:
    """``<path>: <reason>`` of an operating-system error (the path(s) it names, if any)."""
    reason = _OS_REASONS.get(err.errno or -1) or err.strerror or str(err)
    paths = [str(p) for p in (err.filename, err.filename2) if p is not None]
    return ": ".join([" -> ".join(paths), reason] if paths else [reason])


def _is_devnull(fd: int) -> bool:
    """True when file descriptor ``fd`` is the null device (or is closed)."""
    try:
        st, null = os.fstat(fd), os.stat(os.devnull)
    except OSError:
        return True
    return (st.st_dev, st.st_ino) == (null.st_dev, null.st_ino)


def _stdout_closed(was_devnull: bool) -> bool:
    """True when the command ended on a broken pipe (EPIPE on standard output).

    Both libraries that write a command's report catch it and exit 1: click swaps
    ``sys.stdout`` for its flush-pacifying wrapper, rich points file descriptor 1 at the
    null device (``Console.on_broken_pipe``); those are the traces they leave.
    ``was_devnull``: standard output was the null device already when the command started.
    """
    if type(sys.stdout).__name__.lstrip("_") == "PacifyFlushWrapper":
        return True
    return not was_devnull and _is_devnull(1)


def _run(argv: list[str] | None) -> int:
    from rbc.safeio import guard_libraries, reset_size_limits

    reset_size_limits()
    guard_libraries()
    command = typer.main.get_command(app)
    was_devnull = _is_devnull(1)
    try:
        # standalone: typer prints usage errors (status 2) itself and turns an interrupt
        # into status 130; everything else reaches the handlers below
        command.main(args=argv, prog_name="rbc", standalone_mode=True)
    except KeyboardInterrupt:
        typer.echo("interrupted", err=True)
        return INTERRUPTED
    except SystemExit as done:
        code = done.code
        code = code if isinstance(code, int) else (0 if code is None else 1)
        if code == INTERRUPTED:
            typer.echo("interrupted", err=True)
        if code == 1 and _stdout_closed(was_devnull):
            return BROKEN_PIPE
        return code
    except RbcError as err:
        typer.echo(f"error: {err}", err=True)
        return err.exit_code
    except OSError as err:
        typer.echo(f"error: {os_error_message(err)}", err=True)
        return 2
    except MemoryError:
        typer.echo("error: out of memory: the input is too large for this machine (see the "
                   "size limits in docs/cli.md)", err=True)
        return 2
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run the rbc command line on ``argv`` (default ``sys.argv[1:]``); return the exit status."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        code = _run(argv)
    seen: set[str] = set()
    for w in caught:
        text = f"warning: {w.category.__name__}: {w.message}"
        if text not in seen:
            seen.add(text)
            typer.echo(text, err=True)
    return code


def run() -> None:
    """Console-script entry: ``sys.exit(main())``."""
    sys.exit(main())


if __name__ == "__main__":
    run()

"""Entry point of the ``rbc`` console script.

``main(argv)`` runs one command and returns its exit status: 0 success, 1 a verification
check failed, 2 bad input (an :class:`rbc.errors.RbcError` or a command-line usage error),
with the message on stderr and no traceback.
"""

from __future__ import annotations

import sys

import typer

from rbc.cli import compile as _compile  # noqa: F401  (registers commands)
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


def main(argv: list[str] | None = None) -> int:
    """Run the rbc command line on ``argv`` (default ``sys.argv[1:]``); return the exit status."""
    command = typer.main.get_command(app)
    try:
        command.main(args=argv, prog_name="rbc", standalone_mode=True)
    except SystemExit as done:  # click reports usage errors (status 2) and --help this way
        code = done.code
        return code if isinstance(code, int) else (0 if code is None else 1)
    except RbcError as err:
        typer.echo(f"error: {err}", err=True)
        return err.exit_code
    return 0


def run() -> None:
    """Console-script entry: ``sys.exit(main())``."""
    sys.exit(main())


if __name__ == "__main__":
    run()

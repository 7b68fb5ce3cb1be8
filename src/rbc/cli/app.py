"""The typer application every subcommand module registers on, and the CLI's progress bar."""

import typer
from rich.console import Console
from rich.progress import Progress, ProgressColumn

app = typer.Typer(
    name="rbc",
    help="Compile robots with closed kinematic chains; simulate planar bipeds.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def progress_bar(*columns: str | ProgressColumn, hidden: bool = False) -> Progress:
    """A transient rich progress bar on stderr (default columns unless given). It is off
    when stderr is not a terminal — a bar is noise in a log, and its last refresh would
    leave an empty line before an error message — or when ``hidden``."""
    err = Console(stderr=True)
    return Progress(*columns, console=err, transient=True, disable=hidden or not err.is_terminal)

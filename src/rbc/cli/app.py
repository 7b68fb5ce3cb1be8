"""The typer application every subcommand module registers on, and the CLI's progress bar."""

import typer
from rich.console import Console
from rich.progress import Progress, ProgressColumn

from rbc.safeio import SIZE_LIMITS

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


@app.callback()
def _global_options(
    limit: list[str] | None = typer.Option(
        None, "--limit", metavar="KIND=SIZE",
        help="Raise the size limit of one kind of input file for a genuine large input "
        f"(kinds: {', '.join(SIZE_LIMITS)}; SIZE like 64M or 2G; docs/cli.md, 'Untrusted "
        "files and limits'); repeatable."),
) -> None:
    """Compile robots with closed kinematic chains; simulate planar bipeds."""
    from rbc.safeio import parse_size, set_size_limit

    for text in limit or ():
        kind, sep, size = text.partition("=")
        if not sep:
            from rbc.errors import UsageError

            raise UsageError(f"--limit '{text}': expected KIND=SIZE, e.g. record=64M")
        set_size_limit(kind.strip(), parse_size(size))


def number(*, gt: float | None = None, ge: float | None = None, lt: float | None = None,
           le: float | None = None):
    """A typer ``callback=`` validating a numeric option: finite and within the bounds
    (:func:`rbc.safeio.check_number`; typer's own ``min``/``max`` let NaN and inf through).
    The error names the option; exit status 2."""

    def callback(ctx: typer.Context, param: typer.CallbackParam, value):
        from rbc.safeio import check_number

        name = max(param.opts, key=len) if param.opts else param.name
        if isinstance(value, (list, tuple)):
            for v in value:
                check_number(name, v, gt=gt, ge=ge, lt=lt, le=le)
        else:
            check_number(name, value, gt=gt, ge=ge, lt=lt, le=le)
        return value

    return callback


def given_options(ctx: typer.Context, names: tuple[str, ...]) -> list[str]:
    """The options among ``names`` (parameter names) that the user gave on the command
    line or through the environment, as their longest flag — whatever their value, so an
    option given with its default value counts as given (click's parameter sources; no
    default is typed a second time)."""
    out = []
    for p in ctx.command.params:
        if p.name in names:
            source = ctx.get_parameter_source(p.name)
            if source is not None and source.name in ("COMMANDLINE", "ENVIRONMENT"):
                out.append(max(p.opts, key=len))
    return out

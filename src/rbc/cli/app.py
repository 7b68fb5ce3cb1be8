"""The typer application every subcommand module registers on."""

import typer

app = typer.Typer(
    name="rbc",
    help="Compile robots with closed kinematic chains; simulate planar bipeds.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

"""The consoles the report commands print to (one place for the width rule).

Piped output (a file, ``| less``, a test's capture) has no terminal width; rich then assumes
80 columns and squeezes tables until names end in ``…``. Reports are read by people and
grepped by scripts, so a name is never cut: on a terminal the table takes the terminal's
width and folds long cells; piped, the console is :data:`PIPED_WIDTH` columns wide.
"""

from __future__ import annotations

from rich.console import Console

#: columns of a piped report: the widest reaction table (`rbc forces`) fits
PIPED_WIDTH = 240


def report_console(*, stderr: bool = False) -> Console:
    """A console for a command's report: the terminal's width on a terminal, else
    :data:`PIPED_WIDTH`; no syntax highlighting of numbers (the figures are the report);
    plain lines never wrapped (soft wrap: a long list of names stays one line for grep)."""
    probe = Console(stderr=stderr)
    width = None if probe.is_terminal else PIPED_WIDTH
    return Console(stderr=stderr, highlight=False, width=width, soft_wrap=True)

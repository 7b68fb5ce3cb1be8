"""Compiler passes, one per file (DESIGN.md §1); ``PASS_NAMES`` in pipeline order.

The names are listed here (not derived by importing the passes) so that the command line
can show them without importing the numerical stack; a test checks them against
:func:`rbc.compiler.pipeline`.
"""

PASS_NAMES: tuple[str, ...] = ("parse", "graph", "forest", "paths", "modules", "rank", "codegen")

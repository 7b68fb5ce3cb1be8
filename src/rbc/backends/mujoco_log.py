"""MuJoCo's warnings as Python warnings, not a file in the working directory.

MuJoCo's default warning handler prints the warning and appends it to ``MUJOCO_LOG.TXT`` in
the current directory — a file the user never asked for (one was once committed at the
repository root). :func:`route_warnings` installs a handler (``mujoco.set_mju_user_warning``)
that raises a :class:`MujocoWarning` instead: shown once per message on the command line,
collected by pytest, and turned into errors where a caller asks (``warnings.simplefilter``).
The simulation still reads MuJoCo's own counters (``mjData.warning``) where it reports
instabilities.
"""

from __future__ import annotations

import warnings

import mujoco


class MujocoWarning(RuntimeWarning):
    """A warning MuJoCo raised (e.g. "Nan, Inf or huge value in QACC …")."""


def _handler(message: str) -> None:
    warnings.warn(f"MuJoCo: {message.strip()}", MujocoWarning, stacklevel=2)


def route_warnings() -> None:
    """Install the handler (idempotent; process-wide, as MuJoCo's handler is)."""
    if mujoco.get_mju_user_warning() is not _handler:
        mujoco.set_mju_user_warning(_handler)


route_warnings()

__all__ = ["MujocoWarning", "mujoco", "route_warnings"]

"""Atomic output files: every file rbc writes appears complete or not at all.

The content is written to a temporary file in the target directory, given the permissions
a normally created file would have (``0o666`` less the umask — ``mkstemp`` makes 0600), and
renamed over the target (``os.replace``, atomic on POSIX). On any failure the temporary file
is removed and the target is left as it was.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def default_mode(directory: bool = False) -> int:
    """Permissions of a normally created file (0o666) or directory (0o777) less the umask."""
    return (0o777 if directory else 0o666) & ~_umask()


def atomic_write(path: str | Path, write: Callable[[Path], None]) -> Path:
    """Create ``path`` atomically; ``write(tmp)`` fills the temporary file ``tmp``.

    Raises:
        OSError: the directory is missing or not writable (callers turn it into RbcError).
        Whatever ``write`` raises (nothing is left behind).
    """
    target = Path(path)
    directory = target.parent if str(target.parent) else Path(".")
    fd, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=directory)
    os.close(fd)
    tmp = Path(name)
    try:
        write(tmp)
        os.chmod(tmp, default_mode())
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return target


def atomic_write_text(path: str | Path, text: str) -> Path:
    """:func:`atomic_write` of a UTF-8 text file."""
    return atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))

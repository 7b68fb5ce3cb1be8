"""``rbc compile`` stays cheap to start: it imports neither scipy nor numba (each a few
tenths of a second of the Stewart compile's ~1 s, interpreter start included)."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import RECORDS

PROBE = """
import sys
from rbc.cli.main import main
rc = main(["compile", sys.argv[1], "-o", sys.argv[2]])
heavy = sorted({m.split(".")[0] for m in sys.modules} & {"scipy", "numba"})
print(rc, ",".join(heavy) or "-")
"""


def test_compile_imports_neither_scipy_nor_numba(tmp_path):
    done = subprocess.run([sys.executable, "-c", PROBE, str(RECORDS / "stewart.yaml"),
                           str(tmp_path / "s.h5")], capture_output=True, text=True, check=True)
    assert done.stdout.split()[-2:] == ["0", "-"], done.stdout + done.stderr

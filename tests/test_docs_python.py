"""docs/python.md runs: every ``>>>`` example is executed (doctest) from a directory holding
the shipped records, and its printed output compared."""

from __future__ import annotations

import doctest
import shutil

from tests.conftest import RECORDS, REPO

DOC = REPO / "docs" / "python.md"


def test_python_md_examples_run(tmp_path, monkeypatch):
    (tmp_path / "records").mkdir()
    for name in ("stewart", "go2"):
        shutil.copy(RECORDS / f"{name}.yaml", tmp_path / "records")
    monkeypatch.chdir(tmp_path)
    failed, attempted = doctest.testfile(
        str(DOC), module_relative=False, optionflags=doctest.NORMALIZE_WHITESPACE
        | doctest.ELLIPSIS, raise_on_error=False, verbose=False)
    assert attempted >= 30, attempted  # the page's examples were found
    assert failed == 0, f"{failed} of {attempted} examples in docs/python.md failed (above)"

"""Numbers inside compound option values (a --guess list, --kx/--to rows, a --wrench) obey
the same rule as plain numeric options: finite and of magnitude ≤ MAX_OPTION_MAGNITUDE, else
exit 2 naming the option (1e300 in --guess was an SVD traceback; in --kx, --wrench and
simulate's --speed-scale it ran on, or hung)."""

from __future__ import annotations

import pytest

from rbc.cli.main import main
from rbc.compiler import compile_to_file
from rbc.safeio import MAX_OPTION_MAGNITUDE
from tests.conftest import RECORDS

HUGE = f"{10 * MAX_OPTION_MAGNITUDE:g}"


@pytest.fixture(scope="module")
def fourbar(tmp_path_factory):
    h5 = tmp_path_factory.mktemp("compound") / "fourbar.h5"
    compile_to_file(RECORDS / "fourbar.yaml", h5)
    return str(h5)


@pytest.mark.parametrize(("args", "option"), [
    (["solve", "{b}", "--guess", f"A={HUGE}"], "--guess"),
    (["plan", "{b}", "--task", "joint:A", "--duration", "0.02", "--kx", HUGE,
      "--out", "{o}"], "--kx"),
    (["plan", "{b}", "--task", "joint:A", "--duration", "0.02", "--to", HUGE,
      "--out", "{o}"], "--to"),
    (["forces", "{b}", "--wrench", f"coupler@0,0,0=0,0,0,0,-{HUGE},0"], "--wrench"),
    (["simulate", "{b}", "--controller", "task", "--task", "joint:A", "--to", "1.2",
      "--duration", "0.02", "--speed-scale", HUGE, "--out", "{o}"], "--speed-scale"),
])
def test_huge_numbers_in_compound_options_exit_2(fourbar, tmp_path, capsys, args, option):
    code = main([a.format(b=fourbar, o=tmp_path / "out") for a in args])
    err = capsys.readouterr().err
    assert code == 2 and option in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()

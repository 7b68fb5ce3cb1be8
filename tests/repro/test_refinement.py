"""The refinement target's Kangaroo pieces (issue 24 item 4): the double-support sequence
derived from the landing reference, the uncapped gain rule and the pairing of runs."""

from __future__ import annotations

import numpy as np
import pytest
import yaml

from rbc.repro import kangaroo_landing as la
from rbc.repro import refinement as rf


def test_stance_reference_is_the_landing_after_its_settling_shifted_to_zero():
    land = yaml.safe_load(open(la.reference(rf.RELEASE), encoding="utf-8"))
    st = yaml.safe_load(open(rf.stance_reference(), encoding="utf-8"))
    t = np.asarray(land["time"])
    keep = t >= rf.SETTLED
    assert st["time"] == pytest.approx(t[keep] - rf.SETTLED, abs=1e-12)
    assert st["modes"] == [{"time": 0.0, "mode": "double"}]
    for k, v in land["base"].items():
        assert st["base"][k] == list(np.asarray(v)[keep])
    for s, c in land["supports"].items():
        assert st["supports"][s]["z"] == list(np.asarray(c["z"])[keep])
    # the crouch starts at once (the quick span sees motion): the next knot is 12 cm lower
    assert st["base"]["z"][1] == pytest.approx(st["base"]["z"][0] - 0.12, abs=1e-12)


def test_uncapped_gains_are_the_stance_rule_and_the_capped_ones_never_exceed_it():
    free, capped = la.gains(capped=False), la.gains()
    m_l = np.mean([free["inertia_stance"][f"{s}_leg_length"] for s in ("left", "right")])
    w = np.sqrt(la.KP_LINEAR / m_l)
    for name, kp in free["kp"].items():
        m = free["inertia_stance"][name]
        if not name.endswith("leg_length"):
            assert kp == pytest.approx(m * w * w, rel=1e-12)
        assert free["kd"][name] == pytest.approx(2 * m * w, rel=1e-12)
        assert capped["kp"][name] <= kp * (1 + 1e-12)
        assert capped["kd"][name] <= free["kd"][name] * (1 + 1e-12)
    # the caps bind at the ankles (kangaroo_landing docstring)
    assert capped["kp"]["left_ankle_pitch"] < 0.1 * free["kp"]["left_ankle_pitch"]


def test_paired_difference_refuses_runs_on_other_instants():
    a = {"time": [0.0, 0.004, 0.008], "position": [[0, 0, 0], [0, 0, 1e-3], [0, 0, 2e-3]]}
    b = {"time": [0.0, 0.004, 0.008], "position": [[0, 0, 0], [0, 3e-4, 1e-3], [0, 0, 0]]}
    assert rf.paired_difference(a, b) == pytest.approx(2e-3, rel=1e-12)
    with pytest.raises(ValueError, match="control instants"):
        rf.paired_difference(a, {**b, "time": [0.0, 0.002, 0.004]})

"""MuJoCo's warnings reach Python (rbc.backends.mujoco_log), never a MUJOCO_LOG.TXT in the
working directory."""

from __future__ import annotations

import subprocess
import sys


def test_an_unstable_step_warns_and_writes_no_file(tmp_path):
    # a fresh interpreter in an empty directory: rbc's MuJoCo backend module installs the
    # handler; a step at 1e300 rad/s is MuJoCo's "Nan, Inf or huge value" warning
    code = (
        "import warnings\n"
        "import rbc.sim.backends.mujoco\n"
        "from rbc.backends.mujoco_log import MujocoWarning, mujoco\n"
        "m = mujoco.MjModel.from_xml_string('<mujoco><worldbody><body><freejoint/>"
        "<geom size=\"0.1\" mass=\"1\"/></body></worldbody></mujoco>')\n"
        "d = mujoco.MjData(m)\n"
        "d.qvel[:] = 1e300\n"
        "with warnings.catch_warnings(record=True) as w:\n"
        "    warnings.simplefilter('always')\n"
        "    mujoco.mj_step(m, d)\n"
        "assert any(issubclass(x.category, MujocoWarning) and 'unstable' in str(x.message)\n"
        "           for x in w), [str(x.message) for x in w]\n"
    )
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert list(tmp_path.iterdir()) == []  # no MUJOCO_LOG.TXT


def test_route_warnings_is_idempotent():
    from rbc.backends.mujoco_log import _handler, mujoco, route_warnings

    route_warnings()
    route_warnings()
    assert mujoco.get_mju_user_warning() is _handler

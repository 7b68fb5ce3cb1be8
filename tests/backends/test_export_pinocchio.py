"""Pinocchio export: load() + constraintDynamics against rbc's reduced forward dynamics
(δ_a, DESIGN.md §6), URDF readback against build_tree, files, unsupported cuts."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
import yaml

from rbc.backends.pinocchio import (
    PinocchioExportError,
    constraint_dynamics,
    load,
    pinocchio_model,
    write_pinocchio,
)
from rbc.bench.dynamics import sample_states
from rbc.cli.main import main
from rbc.compiler import compile_to_file
from rbc.model.compiled import CompiledModel
from rbc.model.dynamics import (
    DynamicsData,
    DynamicsModel,
    forward_dynamics,
    reduced_terms,
    tree_acceleration,
)
from rbc.verify.export_readback import pinocchio_readback
from tests.conftest import RECORDS

#: δ_a acceptance (issue 4): both sides are float64 with a direct (Cholesky / proximal
#: KKT) solve; measured ~1e-14.
DELTA_A = 1e-9


@pytest.fixture(scope="module")
def bundles(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("export_pin")
    out = {}
    for name in ("stewart", "excavator"):
        compile_to_file(RECORDS / f"{name}.yaml", tmp / f"{name}.h5")
        out[name] = tmp / f"{name}.h5"
    return tmp, out


@pytest.mark.parametrize("name", ["stewart", "excavator"])
def test_constraint_dynamics_matches_reduced(bundles, name):
    _, paths = bundles
    model, constraints = load(paths[name])
    kin = CompiledModel.from_bundle(paths[name])
    assert model.nv == kin.nv_tree
    # one CONTACT_3D per spherical cut, two per revolute cut
    assert len(constraints) == kin.n_chords * (1 if name == "stewart" else 2)
    part = kin.partitions["default"]
    pm = pinocchio_model(kin, part)
    data, cdatas = pm.tree.model.createData(), pm.constraint_datas()
    pin.initConstraintDynamics(pm.tree.model, data, pm.constraints, cdatas)
    dm = DynamicsModel.build(kin)
    dd = DynamicsData.of(dm)
    nt = kin.nv_tree
    for s in sample_states(kin, 3, seed=7):
        t = reduced_terms(dm, dd, part, s.q, 5 * s.u, f=s.f)
        a = tree_acceleration(t, forward_dynamics(dm, t))[:nt]
        assert not np.any(t.tau_full[nt:])  # no efforts on cut coordinates in these records
        ap = constraint_dynamics(pm, data, cdatas, s.q, t.v, t.tau_full[:nt] + t.tree.g)
        delta = np.abs(ap - a).max() / max(1.0, np.abs(a).max())
        assert delta <= DELTA_A, (name, delta)


def test_files_and_urdf_readback(bundles, capsys):
    tmp, paths = bundles
    out = tmp / "stewart_pin"
    code = main(["compile", str(RECORDS / "stewart.yaml"), "-o", str(tmp / "s.h5"),
                 "--pinocchio", str(out)])
    assert code == 0, capsys.readouterr().err
    doc = yaml.safe_load((out / "constraints.yaml").read_text())
    assert [c["cut_joint"] for c in doc["constraints"]] == ["S2", "S3", "S4", "S5", "S6"]
    assert {c["type"] for c in doc["constraints"]} == {"CONTACT_3D"}
    checks = pinocchio_readback(CompiledModel.from_bundle(tmp / "s.h5"), out)
    assert all(c.passed for c in checks), checks
    urdf = pin.buildModelFromUrdf(str(out / "stewart.urdf"))
    tree = pinocchio_model(CompiledModel.from_bundle(tmp / "s.h5")).tree.model
    assert sum(i.mass for i in urdf.inertias) == pytest.approx(
        sum(i.mass for i in tree.inertias), rel=1e-15)


def test_unsupported_cut_is_rejected_without_output(bundles, capsys):
    tmp, _ = bundles
    rec = tmp / "pcut.yaml"
    head = "  - name: P\n    type: prismatic\n"
    rec.write_text((RECORDS / "slider_crank.yaml").read_text().replace(
        head, head + "    cut: prefer\n"))
    out = tmp / "pcut_pin"
    code = main(["compile", str(rec), "-o", str(tmp / "pcut.h5"), "--pinocchio", str(out)])
    assert code == 2 and "prismatic" in capsys.readouterr().err
    assert not out.exists() and not list(tmp.glob(".pcut_pin.*"))
    assert not (tmp / "pcut.h5").exists()  # the outputs of one run are all-or-nothing
    assert main(["compile", str(rec), "-o", str(tmp / "pcut.h5")]) == 0
    kin = CompiledModel.from_bundle(tmp / "pcut.h5")
    with pytest.raises(PinocchioExportError, match="'P' is prismatic"):
        write_pinocchio(kin, kin.partitions["default"], out)

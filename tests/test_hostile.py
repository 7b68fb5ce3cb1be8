"""One concrete hostile input per class of issue #14, end to end through ``rbc``'s main():
every one exits 2 with a message naming the file (and the field), never a traceback, never
touching anything outside the requested place, never changing an input.

Classes: (1) bundles pointing outside themselves; (2) names that would become paths;
(3) outputs over inputs, interrupted writes; (4) resource exhaustion (alias bombs in every
YAML reader, a zip member inflating to 1 GiB, /dev/zero, unbounded step counts);
(5) OS errors and bad numeric options; (6) silently accepted nonsense.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import zipfile
from pathlib import Path

import h5py
import numpy as np
import pytest

from rbc.cli.main import main
from tests.conftest import EXTERNAL, POLICIES, RECORDS
from tests.test_safeio import alias_bomb

PRE_TRAIN = POLICIES / "unitree_rl_gym_deploy" / "deploy" / "pre_train"


def run(capsys, *argv: object) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def tree(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*"))


@pytest.fixture(scope="module")
def fourbar(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("hostile") / "fourbar.h5"
    assert main(["compile", str(RECORDS / "fourbar.yaml"), "-o", str(out)]) == 0
    return out


# ------------------------------------------------------------------ 1. bundles


def _copy(src: Path, dst: Path) -> Path:
    shutil.copy(src, dst)
    return dst


def test_bundle_dataset_stored_in_another_file(tmp_path, capsys, fourbar):
    """External storage pointing at a FIFO: reading one byte of it would block forever."""
    fifo = tmp_path / "elsewhere.bin"
    os.mkfifo(fifo)
    bad = _copy(fourbar, tmp_path / "ext.h5")
    with h5py.File(bad, "a") as h5:
        mass = h5["bodies/mass"][()]
        del h5["bodies/mass"]
        h5.create_dataset("bodies/mass", shape=mass.shape, dtype=mass.dtype,
                          external=[(str(fifo), 0, mass.nbytes)])
    for cmd in ("inspect", "solve"):
        code, _, err = run(capsys, cmd, bad)
        assert code == 2
        assert f"{bad}: /bodies/mass: stored in external file(s) {fifo}" in err
        assert "refused before reading any data" in err


@pytest.mark.parametrize("link", ["external", "soft", "virtual"])
def test_bundle_links_out_of_the_file(tmp_path, capsys, fourbar, link):
    other = tmp_path / "other.h5"
    with h5py.File(other, "w") as h5:
        h5["x"] = np.zeros(3)
    bad = _copy(fourbar, tmp_path / f"{link}.h5")
    with h5py.File(bad, "a") as h5:
        if link == "external":
            h5["graph/extra"] = h5py.ExternalLink(str(other), "/x")
        elif link == "soft":
            h5["graph/extra"] = h5py.SoftLink("/bodies/mass")
        else:
            layout = h5py.VirtualLayout(shape=(3,), dtype="f8")
            layout[:] = h5py.VirtualSource(str(other), "x", shape=(3,))
            h5.create_virtual_dataset("graph/extra", layout)
    code, _, err = run(capsys, "inspect", bad)
    word = {"external": "an external link to", "soft": "a soft link to",
            "virtual": "a virtual dataset"}[link]
    assert code == 2 and f"{bad}: /graph/extra: {word}" in err


def test_tampered_bundle_is_refused_not_rebuilt(tmp_path, capsys, fourbar):
    bad = _copy(fourbar, tmp_path / "t.h5")
    with h5py.File(bad, "a") as h5:
        h5["partitions/default/q_ref"][0] = np.nan
    code, _, err = run(capsys, "solve", bad)
    assert code == 2 and "/meta@content_sha256: the content's SHA-256 differs" in err
    assert "tampered" in err


# ------------------------------------------------------------------ 2. names


def test_record_named_dot_dot_never_escapes(tmp_path, capsys):
    work = tmp_path / "a" / "b"
    work.mkdir(parents=True)
    text = (RECORDS / "fourbar.yaml").read_text().replace("name: fourbar", "name: ../../x")
    assert "name: ../../x" in text
    rec = work / "r.yaml"
    rec.write_text(text)
    before = tree(tmp_path)
    code, _, err = run(capsys, "compile", rec, "-o", work / "r.h5", "--pinocchio", work / "pin")
    assert code == 0, err
    assert sorted((work / "pin").iterdir()) == [work / "pin" / ".rbc-output",
                                                work / "pin" / "constraints.yaml",
                                                work / "pin" / "x.urdf"]
    assert tree(tmp_path) == sorted(before + ["a/b/r.h5", "a/b/pin", "a/b/pin/.rbc-output",
                                              "a/b/pin/constraints.yaml", "a/b/pin/x.urdf"])
    code, _, err = run(capsys, "verify", work / "r.h5", "--pinocchio", work / "pin",
                       "--samples", 4)
    assert code == 0, err


def test_asset_paths_are_data_never_opened(tmp_path, capsys):
    """A mesh named /dev/zero and a texture that is a FIFO: opening either would hang."""
    fifo = tmp_path / "tex.png"
    os.mkfifo(fifo)
    outside = tmp_path / "outside.stl"
    outside.write_bytes(b"solid x\nendsolid x\n")
    model = tmp_path / "m" / "model.xml"
    model.parent.mkdir()
    model.write_text(f"""<mujoco model="m">
  <asset><mesh name="z" file="/dev/zero"/><mesh name="o" file="{outside}"/>
    <texture name="t" type="2d" file="{fifo}"/><material name="mat" texture="t"/></asset>
  <worldbody><body name="b" pos="0 0 1"><joint name="j" type="hinge" axis="0 0 1"/>
    <geom type="mesh" mesh="z"/><geom type="mesh" mesh="o"/>
    <geom type="sphere" size="0.1" material="mat"/></body></worldbody>
</mujoco>""")
    code, _, err = run(capsys, "import", "mjcf", model, "-o", tmp_path / "m.yaml")
    assert code == 0, err
    assert "mesh paths point outside the model's folder" in err
    assert "never opens mesh, texture or include files" in err
    assert str(outside) in (tmp_path / "m.yaml").read_text()  # kept as data


def test_library_logs_never_land_in_the_working_directory(tmp_path, capsys, monkeypatch):
    """MuJoCo's default warning handler appends to ./MUJOCO_LOG.TXT; rbc routes its warnings
    to stderr, after the command's own output."""
    monkeypatch.chdir(tmp_path)
    model = tmp_path / "m.xml"
    model.write_text("""<mujoco model="m"><worldbody><body name="b" pos="0 0 1">
  <joint name="j" type="hinge" axis="0 0 1"/><geom type="sphere" size="0.1" friction="nan 0 0"/>
</body></worldbody></mujoco>""")
    code, out, err = run(capsys, "import", "mjcf", model, "-o", tmp_path / "m.yaml")
    assert code == 0, err
    assert "warning: RuntimeWarning: MuJoCo: XML contains a 'NaN'" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.xml", "m.yaml"]


# ------------------------------------------------------------------ 3. outputs


def test_output_equal_to_an_input_is_refused(tmp_path, capsys, fourbar):
    rec = _copy(RECORDS / "fourbar.yaml", tmp_path / "r.yaml")
    model = _copy(EXTERNAL / "agility_cassie" / "cassie.xml", tmp_path / "cassie.xml")
    bundle = _copy(fourbar, tmp_path / "b.h5")
    keep = {p: digest(p) for p in (rec, model, bundle)}
    cases = [
        (("compile", rec, "-o", rec), "-o"),
        (("compile", rec, "-o", tmp_path / "x.h5", "--mjcf", rec), "--mjcf"),
        (("compile", rec, "-o", tmp_path / "x.h5", "--mjcf", tmp_path / "x.h5"), "-o"),
        (("compile", rec, "-o", tmp_path / "x.h5", "--pinocchio", tmp_path), "--pinocchio"),
        (("import", "mjcf", model, "-o", model), "-o"),
        (("verify", bundle, "--json", bundle, "--samples", 2), "--json"),
        (("simulate", bundle, "--out", tmp_path, "--duration", 0.01), "--out"),
    ]
    for argv, option in cases:
        code, _, err = run(capsys, *argv)
        assert code == 2, (argv, err)
        assert option in err and ("input" in err or "same path" in err), err
    assert {p: digest(p) for p in keep} == keep
    assert not (tmp_path / "x.h5").exists()


def test_interrupt_during_simulate_output_leaves_the_previous_result(tmp_path, capsys,
                                                                     fourbar, monkeypatch):
    out = tmp_path / "run"
    argv = ("simulate", fourbar, "--controller", "passive", "--duration", 0.02, "--out", out)
    code, _, err = run(capsys, *argv)
    assert code == 0, err
    before = {p: digest(out / p) for p in tree(out)}

    import rbc.sim.outputs as outputs

    def interrupted(result, where):  # log.h5 and summary.json are written, then Ctrl-C
        raise KeyboardInterrupt

    monkeypatch.setattr(outputs, "plot", interrupted)
    code, _, err = run(capsys, *argv[:-1], out, "--set", "A=0.3")
    assert code == 130 and "interrupted" in err
    assert {p: digest(out / p) for p in tree(out)} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]  # no temporary left


def test_a_failing_export_leaves_no_bundle_behind(tmp_path, capsys):
    """-o, --mjcf and --pinocchio are staged and renamed into place together."""
    out = tmp_path / "f.h5"
    out.write_text("previous")
    code, _, err = run(capsys, "compile", RECORDS / "fourbar.yaml", "-o", out, "--pinocchio",
                       tmp_path / "pin", "--mjcf", tmp_path / "no" / "f.xml")
    assert code == 2 and "--mjcf" in err and "does not exist" in err
    assert out.read_text() == "previous"
    import rbc.backends.pinocchio as pin

    def broken(*args, **kwargs):
        raise KeyboardInterrupt

    try:
        pin.write_pinocchio_from_bundle, saved = broken, pin.write_pinocchio_from_bundle
        code, _, err = run(capsys, "compile", RECORDS / "fourbar.yaml", "-o", out, "--mjcf",
                           tmp_path / "f.xml", "--pinocchio", tmp_path / "pin")
    finally:
        pin.write_pinocchio_from_bundle = saved
    assert code == 130
    assert out.read_text() == "previous"  # the bundle and the MJCF were staged, then dropped
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.h5"]


def test_outputs_never_replace_devices_or_fifos(tmp_path, capsys, fourbar):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    for argv in (("compile", RECORDS / "fourbar.yaml", "-o", fifo),
                 ("verify", fourbar, "--samples", 2, "--json", fifo),
                 ("view", fourbar, "--save", fifo)):
        code, _, err = run(capsys, *argv)
        assert code == 2 and "is a FIFO" in err, err
    assert os.path.exists(fifo) and not os.path.isfile(fifo)


def test_plan_out_is_a_directory_output(tmp_path, capsys, fourbar):
    bundle = _copy(fourbar, tmp_path / "log.h5")  # plan writes a log.h5 of its own
    keep = digest(bundle)
    argv = ("plan", bundle, "--task", "joint:A", "--to", "1.2", "--duration", 0.05)
    code, _, err = run(capsys, *argv, "--out", tmp_path)
    assert code == 2 and "holds the input BUNDLE" in err
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("mine")
    code, _, err = run(capsys, *argv, "--out", mine)
    assert code == 2 and "not written by rbc" in err
    code, _, err = run(capsys, *argv, "--out", tmp_path / "p")
    assert code == 0, err
    assert sorted(p.name for p in (tmp_path / "p").iterdir()) == [
        ".rbc-output", "log.h5", "plan.png", "reference.csv", "summary.json"]
    assert digest(bundle) == keep


# ------------------------------------------------------------------ 4. resources


def _bomb(tmp_path: Path, name: str) -> Path:
    p = tmp_path / name
    p.write_text(alias_bomb())
    return p


def test_alias_bomb_in_every_yaml_reader(tmp_path, capsys, fourbar):
    """9⁹ leaves: record, loops sidecar, reference motion, deploy config, constraints."""
    expect = "YAML aliases expand the document to 926177116 nodes"
    rec = _bomb(tmp_path, "record.yaml")
    assert run(capsys, "compile", rec, "-o", tmp_path / "x.h5")[0] == 2
    gep = EXTERNAL / "gepetto" / "5bar_linkage"
    side = _bomb(tmp_path, "robot.yaml")
    code, _, err = run(capsys, "import", "urdf", gep / "robot.urdf", "--loops", side, "-o",
                       tmp_path / "x.yaml", "--repair-inertia")
    assert code == 2 and f"{side}" in err and expect in err
    ref = _bomb(tmp_path, "ref.yaml")
    code, _, err = run(capsys, "simulate", fourbar, "--reference", ref)
    assert code == 2 and expect in err
    cfg = _bomb(tmp_path, "g1.yaml")
    code, _, err = run(capsys, "policy", "import", PRE_TRAIN / "g1" / "motion.pt", "--config",
                       cfg, "-o", tmp_path / "g1.json")
    assert code == 2 and expect in err
    pin_dir = tmp_path / "pin"
    assert run(capsys, "compile", RECORDS / "fourbar.yaml", "-o", tmp_path / "f.h5",
               "--pinocchio", pin_dir)[0] == 0
    (pin_dir / "constraints.yaml").write_text(alias_bomb())
    code, _, err = run(capsys, "verify", tmp_path / "f.h5", "--pinocchio", pin_dir,
                       "--samples", 2)
    assert code == 2 and expect in err
    code, _, err = run(capsys, "compile", rec, "-o", tmp_path / "x.h5")
    assert f"{rec}" in err and expect in err
    assert not (tmp_path / "x.h5").exists() and not (tmp_path / "x.yaml").exists()


def test_zip_member_inflating_to_1_gib(tmp_path, capsys):
    pt = tmp_path / "bomb.pt"
    with zipfile.ZipFile(pt, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as z:
        z.writestr("archive/data.pkl", b"\x80\x02}q\x00.")
        with z.open("archive/data/0", "w", force_zip64=True) as f:
            chunk = bytes(64 << 20)
            for _ in range(16):
                f.write(chunk)
    assert pt.stat().st_size < 8 << 20
    code, _, err = run(capsys, "policy", "import", pt, "-o", tmp_path / "x.json")
    assert code == 2 and f"{pt}: member archive/data/0 (inflated) (1 GiB) exceeds the policy " \
        "size limit" in err
    assert not (tmp_path / "x.json").exists()


def test_dev_zero_and_fifos_as_inputs(tmp_path, capsys, fourbar):
    fifo = tmp_path / "in.csv"
    os.mkfifo(fifo)
    cases = [("compile", "/dev/zero", "-o", tmp_path / "x.h5"), ("inspect", "/dev/zero"),
             ("import", "mjcf", "/dev/zero", "-o", tmp_path / "x.yaml"),
             ("import", "urdf", "/dev/zero", "-o", tmp_path / "x.yaml"),
             ("policy", "import", "/dev/zero", "-o", tmp_path / "x.json"),
             ("simulate", fourbar, "--reference", fifo),
             ("compile", fifo, "-o", tmp_path / "x.h5")]
    for argv in cases:
        code, _, err = run(capsys, *argv)
        assert code == 2, argv
        assert "rbc reads regular files only" in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.csv"]


def test_worker_count_is_bounded(capsys):
    code, _, err = run(capsys, "walk", "batch", "--samples", 1, "--strides", 1, "--workers",
                       10**7)
    assert code == 2 and "--workers 10000000: expected 1 to 256" in err


def test_step_count_beyond_memory_is_refused_before_allocating(capsys, fourbar):
    code, _, err = run(capsys, "simulate", fourbar, "--controller", "passive", "--duration",
                       1e6, "--dt", 1e-3)  # 1e9 samples: a log of ~1 TB
    assert code == 2 and "--duration 1e+06 s" in err and "the log would need" in err
    code, _, err = run(capsys, "simulate", fourbar, "--controller", "passive", "--duration",
                       1e9, "--dt", 5e-324)  # (the step count overflows a float)
    assert code == 2 and "more than 1e+10 physics steps" in err


# ------------------------------------------------------------------ 5. errors and options


def test_os_errors_on_outputs_name_the_path(tmp_path, capsys):
    code, _, err = run(capsys, "compile", RECORDS / "fourbar.yaml", "-o",
                       tmp_path / "no" / "such" / "dir" / "x.h5")
    assert code == 2 and "does not exist" in err
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        if os.access(ro, os.W_OK):  # running as root: permissions do not bind
            pytest.skip("the file system lets this user write anywhere")
        code, _, err = run(capsys, "compile", RECORDS / "fourbar.yaml", "-o", ro / "x.h5")
        assert code == 2 and str(ro) in err
    finally:
        ro.chmod(0o755)


@pytest.mark.parametrize("argv", [
    ("simulate", "{b}", "--dt", "nan"), ("simulate", "{b}", "--zeta", "nan"),
    ("simulate", "{b}", "--bandwidth", "-1"), ("simulate", "{b}", "--reference-dt", "0"),
    ("simulate", "{b}", "--inertia-scale", "inf"), ("compile", "{r}", "--length-scale", "inf"),
    ("verify", "{b}", "--seed", "-1"), ("solve", "{b}", "--set", "A=nan"),
    ("solve", "{b}", "--set", "A=0.1", "--set", "A=0.2"),
    ("walk", "run", "--slope", "nan"), ("walk", "run", "--strides", "-3"),
])
def test_bad_numeric_options_name_the_option(capsys, fourbar, argv):
    argv = [a.format(b=fourbar, r=RECORDS / "fourbar.yaml") for a in argv]
    code, _, err = run(capsys, *argv)
    assert code == 2, err
    option = next(a for a in argv[2:] if a.startswith("--"))
    assert option in err


@pytest.mark.parametrize("extra, option", [
    (("--controller", "passive", "--kp", "A=3"), "--kp"),
    (("--controller", "passive", "--zeta", "0.5"), "--zeta"),
    (("--controller", "passive", "--to", "1"), "--to"),
    (("--controller", "passive", "--kx", "5"), "--kx"),
    (("--controller", "passive", "--kx", "2"), "--kx"),  # given, though equal to its default
    (("--speed-scale", "1"), "--speed-scale"),
    (("--backend", "mujoco", "--controller", "passive", "--rtol", "1e-6"), "--rtol"),
])
def test_ignored_options_are_refused(capsys, fourbar, extra, option):
    code, _, err = run(capsys, "simulate", fourbar, "--duration", 0.01, *extra)
    assert code == 2 and err.startswith(f"error: {option}"), err


# ------------------------------------------------------------------ 6. silently accepted


def test_merge_key_hiding_a_field_in_a_record(tmp_path, capsys):
    text = (RECORDS / "fourbar.yaml").read_text()
    rec = tmp_path / "r.yaml"
    rec.write_text(text.replace("bodies:", "base: &m {mass: 1.0}\nbodies:", 1))
    code, _, err = run(capsys, "compile", rec, "-o", tmp_path / "x.h5")
    assert code == 2  # (an unknown top-level key; the merge case follows)
    rec.write_text("x: &m {mass: 1.0}\n" + "rbc: 1\nname: m\nbodies:\n"
                   "  - {<<: *m, name: b, mass: 2.0, fixed: true}\n")
    code, _, err = run(capsys, "compile", rec, "-o", tmp_path / "x.h5")
    assert code == 2 and "given twice through the merge key" in err


def test_absurd_mass_is_refused(tmp_path, capsys):
    text = (RECORDS / "fourbar.yaml").read_text()
    rec = tmp_path / "r.yaml"
    rec.write_text(text.replace("mass: 0.2355", "mass: 1.0e308", 1))
    assert "1.0e308" in rec.read_text()
    code, _, err = run(capsys, "compile", rec, "-o", tmp_path / "x.h5")
    assert code == 2 and "mass" in err and "1e+308" in err


def test_nan_observation_and_output_name_kept(tmp_path, capsys):
    pt = PRE_TRAIN / "h1" / "motion.pt"
    js = tmp_path / "h1.json"
    assert run(capsys, "policy", "import", pt, "-o", js)[0] == 0
    n_obs = json.loads(js.read_text())["n_obs"] if "n_obs" in json.loads(js.read_text()) \
        else 41
    obs = np.zeros((4, n_obs))
    np.savez(tmp_path / "o.npz", observations=obs)
    code, _, err = run(capsys, "policy", "eval", js, "--observations", tmp_path / "o.npz",
                       "-o", tmp_path / "actions.bin")
    assert code == 0, err
    assert (tmp_path / "actions.bin").is_file() and not (tmp_path / "actions.bin.npz").exists()
    obs[2, 5] = np.nan
    np.savez(tmp_path / "o.npz", observations=obs)
    code, _, err = run(capsys, "policy", "eval", js, "--observations", tmp_path / "o.npz",
                       "-o", tmp_path / "a2.npz")
    assert code == 2 and "observations[2, 5]: non-finite value nan" in err
    assert not (tmp_path / "a2.npz").exists()

"""``rbc bench hostile``: the hostile inputs of issue #14, each run as a user would, measured.

Each case builds one hostile file (or command line) in a scratch directory and runs ``rbc``
on it in a fresh interpreter, recording the exit status, the first line of the message, the
wall time and the child's peak resident memory (its ``VmHWM``: what the process really
touched, the interpreter and its imports included). The peer is a valid run (``rbc
inspect`` of the same four-bar bundle): a hostile case that is refused early costs about
the same memory as the peer, one that was not would cost gigabytes. A case passes when
its exit status is the expected one and, for refusals, the message names the file or
option (``expect``).

Cases are grouped by the classes of issue #14: (1) bundles pointing outside themselves or
tampered, (2) names becoming paths, (3) outputs over inputs, (4) resource exhaustion,
(5) operating-system errors and numeric options, (6) silently accepted nonsense.
"""

from __future__ import annotations

import io
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
RECORDS = REPO / "records"
H1_POLICY = RECORDS / "policies" / "unitree_rl_gym_deploy" / "deploy" / "pre_train" / "h1" / \
    "motion.pt"
FIVEBAR_URDF = RECORDS / "external" / "gepetto" / "5bar_linkage" / "robot.urdf"

#: Wall-time cap of one case [s]: a case still running then is killed and fails.
CASE_TIMEOUT = 300.0


def alias_bomb(levels: int = 9, fan: int = 9) -> str:
    """A YAML document whose alias tree expands to fan**levels leaves (9⁹ ≈ 3.9e8)."""
    lines = ["a0: &a0 [" + ", ".join(["x"] * fan) + "]"]
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * fan) + "]")
    lines.append(f"top: [*a{levels - 1}]")
    return "\n".join(lines) + "\n"


def entity_bomb(root: str = "mujoco", levels: int = 9) -> str:
    """An XML document whose internal entities expand to 10**levels copies of a word."""
    ents = ['<!ENTITY e0 "lol">'] + [f'<!ENTITY e{i} "' + f"&e{i - 1};" * 10 + '">'
                                     for i in range(1, levels + 1)]
    return (f'<?xml version="1.0"?>\n<!DOCTYPE {root} [\n' + "\n".join(ents) + "\n]>\n"
            f'<{root} model="&e{levels};"><worldbody/></{root}>\n')


def zip_bomb(path: Path, member: str, inflated: int, head: dict[str, bytes]) -> Path:
    """A zip archive with small members ``head`` and ``member`` inflating to ``inflated``
    zero bytes (~1000:1)."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as z:
        for name, data in head.items():
            z.writestr(name, data)
        with z.open(member, "w", force_zip64=True) as f:
            chunk = bytes(64 << 20)
            for _ in range(inflated // len(chunk)):
                f.write(chunk)
    return path


def _npy_header(shape: tuple[int, ...]) -> bytes:
    import numpy as np

    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": "<f8", "fortran_order": False,
                                               "shape": shape})
    return buf.getvalue()


def _hdf5_edit(src: Path, dst: Path, edit: Callable, restamp: bool = False) -> Path:
    """Copy a bundle and apply ``edit(h5)``; ``restamp`` recomputes the content SHA-256 (an
    attacker who knows the format), so only the value and record checks stand."""
    import h5py

    from rbc.ir.bundle import DIGEST_ATTR, _read_all, content_digest

    shutil.copy(src, dst)
    with h5py.File(dst, "a") as h5:
        edit(h5)
    if restamp:
        with h5py.File(dst, "a") as h5:
            h5["meta"].attrs[DIGEST_ATTR] = content_digest(_read_all(dst, h5))
    return dst


@dataclass(frozen=True)
class Case:
    """One hostile input: ``build(d)`` writes it under ``d`` and returns the rbc argv."""

    name: str
    group: int
    what: str
    build: Callable[[Path, Path], list[str]]
    code: int = 2
    expect: str = ""


# ------------------------------------------------------------------ builders
# each takes (scratch dir d, folder of valid inputs v) and returns the command line


def _external_storage(d: Path, v: Path) -> list[str]:
    fifo = d / "elsewhere.bin"
    os.mkfifo(fifo)

    def edit(h5):
        mass = h5["bodies/mass"][()]
        del h5["bodies/mass"]
        h5.create_dataset("bodies/mass", shape=mass.shape, dtype=mass.dtype,
                          external=[(str(fifo), 0, mass.nbytes)])

    return ["inspect", str(_hdf5_edit(v / "fourbar.h5", d / "b.h5", edit))]


def _link(kind: str) -> Callable[[Path, Path], list[str]]:
    def build(d: Path, v: Path) -> list[str]:
        import h5py
        import numpy as np

        other = d / "other.h5"
        with h5py.File(other, "w") as h5:
            h5["x"] = np.zeros(3)

        def edit(h5):
            if kind == "external":
                h5["graph/extra"] = h5py.ExternalLink(str(other), "/x")
            elif kind == "soft":
                h5["graph/extra"] = h5py.SoftLink("/bodies/mass")
            else:
                layout = h5py.VirtualLayout(shape=(3,), dtype="f8")
                layout[:] = h5py.VirtualSource(str(other), "x", shape=(3,))
                h5.create_virtual_dataset("graph/extra", layout)

        return ["solve", str(_hdf5_edit(v / "fourbar.h5", d / "b.h5", edit))]
    return build


def _fill_bomb(d: Path, v: Path) -> list[str]:
    def edit(h5):  # 8 TB declared, no storage: reading it would allocate all of it
        h5.create_dataset("graph/extra", shape=(10**12,), dtype="f8")

    return ["inspect", str(_hdf5_edit(v / "fourbar.h5", d / "b.h5", edit))]


def _tampered(d: Path, v: Path) -> list[str]:
    def edit(h5):
        h5["partitions/default/q_ref"][0] = float("nan")

    return ["solve", str(_hdf5_edit(v / "fourbar.h5", d / "b.h5", edit))]


def _forged(d: Path, v: Path) -> list[str]:
    def edit(h5):
        h5["graph/parent"][0] = 10**6  # an index far out of range

    return ["simulate", str(_hdf5_edit(v / "fourbar.h5", d / "b.h5", edit, restamp=True)),
            "--duration", "0.01"]


def _forged_mass(d: Path, v: Path) -> list[str]:
    def edit(h5):
        h5["bodies/mass"][1] = -5.0  # the record says 0.2355 kg

    return ["forces", str(_hdf5_edit(v / "fourbar.h5", d / "b.h5", edit, restamp=True))]


def _log_link(d: Path, v: Path) -> list[str]:
    import h5py

    run = d / "run"
    run.mkdir()
    with h5py.File(run / "log.h5", "w") as h5:
        h5["time"] = h5py.ExternalLink("/etc/passwd", "/x")
    return ["view", str(v / "fourbar.h5"), "--log", str(run), "--save", str(d / "v.html")]


def _record_text(v: Path, old: str, new: str) -> str:
    text = (v / "fourbar.yaml").read_text()
    assert old in text
    return text.replace(old, new, 1)


def _dot_dot_name(d: Path, v: Path) -> list[str]:
    (d / "a" / "b").mkdir(parents=True)
    rec = d / "a" / "b" / "r.yaml"
    rec.write_text(_record_text(v, "name: fourbar", "name: ../../x"))
    return ["compile", str(rec), "-o", str(d / "a" / "b" / "r.h5"), "--pinocchio",
            str(d / "a" / "b" / "pin")]


def _asset_paths(d: Path, v: Path) -> list[str]:
    fifo = d / "tex.png"
    os.mkfifo(fifo)
    (d / "m.xml").write_text(f"""<mujoco model="m">
  <asset><mesh name="z" file="/dev/zero"/><texture name="t" type="2d" file="{fifo}"/>
    <material name="mat" texture="t"/></asset>
  <worldbody><body name="b" pos="0 0 1"><joint name="j" type="hinge" axis="0 0 1"/>
    <geom type="mesh" mesh="z"/><geom type="sphere" size="0.1" material="mat"/></body>
  </worldbody></mujoco>""")
    return ["import", "mjcf", str(d / "m.xml"), "-o", str(d / "m.yaml")]


def _output_is_input(d: Path, v: Path) -> list[str]:
    rec = shutil.copy(v / "fourbar.yaml", d / "r.yaml")
    return ["compile", str(rec), "-o", str(rec)]


def _output_is_device(d: Path, v: Path) -> list[str]:
    dev = d / "null"
    try:  # what `-o /dev/null` is, as root, without touching the real one
        os.mknod(dev, 0o600 | stat.S_IFCHR, os.makedev(1, 3))
    except PermissionError:
        os.mkfifo(dev)
    return ["compile", str(v / "fourbar.yaml"), "-o", str(dev)]


def _plan_over_input(d: Path, v: Path) -> list[str]:
    bundle = shutil.copy(v / "fourbar.h5", d / "log.h5")
    return ["plan", str(bundle), "--task", "joint:A", "--to", "1.2", "--duration", "0.05",
            "--out", str(d)]


def _bomb_file(d: Path, name: str) -> Path:
    p = d / name
    p.write_text(alias_bomb())
    return p


def _bomb_record(d: Path, v: Path) -> list[str]:
    return ["compile", str(_bomb_file(d, "r.yaml")), "-o", str(d / "x.h5")]


def _bomb_sidecar(d: Path, v: Path) -> list[str]:
    return ["import", "urdf", str(FIVEBAR_URDF), "--loops", str(_bomb_file(d, "robot.yaml")),
            "-o", str(d / "x.yaml"), "--repair-inertia"]


def _bomb_reference(d: Path, v: Path) -> list[str]:
    return ["simulate", str(v / "fourbar.h5"), "--reference", str(_bomb_file(d, "ref.yaml"))]


def _bomb_config(d: Path, v: Path) -> list[str]:
    return ["policy", "import", str(H1_POLICY), "--config", str(_bomb_file(d, "h1.yaml")),
            "-o", str(d / "x.json")]


def _bomb_constraints(d: Path, v: Path) -> list[str]:
    shutil.copytree(v / "pin", d / "pin")
    (d / "pin" / "constraints.yaml").write_text(alias_bomb())
    return ["verify", str(v / "fourbar.h5"), "--pinocchio", str(d / "pin"), "--samples", "2"]


def _deep_yaml(d: Path, v: Path) -> list[str]:
    (d / "r.yaml").write_text("[" * 200_000 + "]" * 200_000 + "\n")
    return ["compile", str(d / "r.yaml"), "-o", str(d / "x.h5")]


def _deep_json(d: Path, v: Path) -> list[str]:
    (d / "p.json").write_text("[" * 1_000_000 + "]" * 1_000_000)
    return ["policy", "eval", str(d / "p.json"), "--observations", str(v / "obs.npz"), "-o",
            str(d / "a.npz")]


def _entity_bomb(d: Path, v: Path) -> list[str]:
    (d / "m.xml").write_text(entity_bomb())
    return ["import", "mjcf", str(d / "m.xml"), "-o", str(d / "x.yaml")]


def _zip_policy(d: Path, v: Path) -> list[str]:
    pt = zip_bomb(d / "bomb.pt", "archive/data/0", 1 << 30,
                  {"archive/data.pkl": b"\x80\x02}q\x00."})
    return ["policy", "import", str(pt), "-o", str(d / "x.json")]


def _zip_observations(d: Path, v: Path) -> list[str]:
    n = (1 << 30) // 8
    path = d / "obs.npz"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as z:
        with z.open("observations.npy", "w", force_zip64=True) as f:
            f.write(_npy_header((n // 41, 41)))
            chunk = bytes(64 << 20)
            for _ in range(16):
                f.write(chunk)
    return ["policy", "eval", str(v / "policy.json"), "--observations", str(path), "-o",
            str(d / "a.npz")]


def _deep_pickle(d: Path, v: Path) -> list[str]:
    depth = 500_000  # nested lists: EMPTY_LIST × n, then APPEND × (n − 1)
    pkl = b"\x80\x02" + b"]" * depth + b"a" * (depth - 1) + b"."
    with zipfile.ZipFile(d / "deep.pt", "w") as z:
        z.writestr("archive/data.pkl", pkl)
        z.writestr("archive/version", b"3\n")
    return ["policy", "import", str(d / "deep.pt"), "-o", str(d / "x.json")]


def _oversized_record(d: Path, v: Path) -> list[str]:
    with open(d / "big.yaml", "wb") as f:
        f.write(b"# padding\n" * (4 << 20))  # 40 MiB of comments > the 32 MiB record limit
    return ["compile", str(d / "big.yaml"), "-o", str(d / "x.h5")]


def _dev_zero(d: Path, v: Path) -> list[str]:
    return ["compile", "/dev/zero", "-o", str(d / "x.h5")]


def _fifo_reference(d: Path, v: Path) -> list[str]:
    os.mkfifo(d / "ref.csv")
    return ["simulate", str(v / "fourbar.h5"), "--reference", str(d / "ref.csv")]


def _huge_log(d: Path, v: Path) -> list[str]:
    return ["simulate", str(v / "fourbar.h5"), "--controller", "passive", "--duration", "1e6",
            "--dt", "1e-3"]


def _missing_dir(d: Path, v: Path) -> list[str]:
    return ["compile", str(v / "fourbar.yaml"), "-o", str(d / "no" / "such" / "x.h5")]


def _nan_option(d: Path, v: Path) -> list[str]:
    return ["simulate", str(v / "fourbar.h5"), "--zeta", "nan"]


def _huge_workers(d: Path, v: Path) -> list[str]:
    return ["walk", "batch", "--samples", "1", "--workers", "10000000"]


def _merge_key(d: Path, v: Path) -> list[str]:
    (d / "r.yaml").write_text("x: &m {mass: 1.0}\nrbc: 1\nname: m\nbodies:\n"
                              "  - {<<: *m, name: b, mass: 2.0, fixed: true}\n")
    return ["compile", str(d / "r.yaml"), "-o", str(d / "x.h5")]


def _absurd_mass(d: Path, v: Path) -> list[str]:
    (d / "r.yaml").write_text(_record_text(v, "mass: 0.2355", "mass: 1.0e308"))
    return ["compile", str(d / "r.yaml"), "-o", str(d / "x.h5")]


def _nan_observation(d: Path, v: Path) -> list[str]:
    import numpy as np

    obs = np.load(v / "obs.npz")["observations"].copy()
    obs[1, 5] = np.nan
    np.savez(d / "obs.npz", observations=obs)
    return ["policy", "eval", str(v / "policy.json"), "--observations", str(d / "obs.npz"),
            "-o", str(d / "a.npz")]


def _peer(d: Path, v: Path) -> list[str]:
    return ["inspect", str(v / "fourbar.h5")]


CASES: tuple[Case, ...] = (
    Case("peer", 0, "valid run: inspect the four-bar bundle", _peer, 0),
    Case("bundle-external-storage", 1, "dataset stored in a FIFO outside the bundle",
         _external_storage, expect="stored in external file"),
    Case("bundle-external-link", 1, "external link to another HDF5 file", _link("external"),
         expect="an external link to"),
    Case("bundle-soft-link", 1, "soft link inside the bundle", _link("soft"),
         expect="a soft link to"),
    Case("bundle-virtual", 1, "virtual dataset mapping another file", _link("virtual"),
         expect="a virtual dataset"),
    Case("bundle-fill-bomb", 1, "dataset declaring 8 TB with no storage", _fill_bomb,
         expect="more than the file can hold"),
    Case("bundle-tampered", 1, "NaN written into q_ref (SHA-256 no longer matches)",
         _tampered, expect="tampered"),
    Case("bundle-forged-index", 1, "parent index 10^6, SHA-256 recomputed", _forged,
         expect="/graph/parent"),
    Case("bundle-forged-mass", 1, "mass −5 kg, SHA-256 recomputed", _forged_mass,
         expect="/bodies/mass"),
    Case("log-external-link", 1, "view --log of a log linking /etc/passwd", _log_link,
         expect="an external link to"),
    Case("name-dot-dot", 2, "record named ../../x, compile --pinocchio DIR", _dot_dot_name, 0),
    Case("asset-paths", 2, "MJCF mesh /dev/zero, texture a FIFO (never opened)",
         _asset_paths, 0),
    Case("output-is-input", 3, "compile r.yaml -o r.yaml", _output_is_input,
         expect="refusing to overwrite an input"),
    Case("output-is-device", 3, "compile -o a device node (like /dev/null as root)",
         _output_is_device, expect="never replaces a device"),
    Case("plan-out-holds-input", 3, "plan --out the directory holding the bundle",
         _plan_over_input, expect="holds the input BUNDLE"),
    Case("yaml-bomb-record", 4, "alias tree of 9^9 leaves as a record", _bomb_record,
         expect="YAML aliases expand"),
    Case("yaml-bomb-sidecar", 4, "... as a URDF loops sidecar", _bomb_sidecar,
         expect="YAML aliases expand"),
    Case("yaml-bomb-reference", 4, "... as a reference motion", _bomb_reference,
         expect="YAML aliases expand"),
    Case("yaml-bomb-config", 4, "... as a policy deploy config", _bomb_config,
         expect="YAML aliases expand"),
    Case("yaml-bomb-constraints", 4, "... as a Pinocchio constraints.yaml", _bomb_constraints,
         expect="YAML aliases expand"),
    Case("yaml-deep", 4, "YAML nested 200 000 deep", _deep_yaml, expect="nesting"),
    Case("json-deep", 4, "policy JSON nested 10^6 deep", _deep_json, expect="nesting"),
    Case("xml-entity-bomb", 4, "MJCF with entities expanding to 10^9 words", _entity_bomb,
         expect="m.xml"),
    Case("zip-policy-1gib", 4, "TorchScript member inflating to 1 GiB", _zip_policy,
         expect="exceeds the policy size limit"),
    Case("zip-observations-1gib", 4, "npz member inflating to 1 GiB", _zip_observations,
         expect="obs.npz"),
    Case("pickle-deep", 4, "TorchScript pickle of lists nested 500 000 deep", _deep_pickle,
         expect="deep.pt"),
    Case("record-oversized", 4, "40 MiB record (limit 32 MiB)", _oversized_record,
         expect="exceeds the record size limit"),
    Case("dev-zero", 4, "/dev/zero as the record", _dev_zero,
         expect="rbc reads regular files only"),
    Case("fifo-reference", 4, "a FIFO as the reference motion", _fifo_reference,
         expect="rbc reads regular files only"),
    Case("log-beyond-memory", 4, "simulate 10^9 samples (a ~1 TB log)", _huge_log,
         expect="the log would need"),
    Case("missing-directory", 5, "-o into a directory that does not exist", _missing_dir,
         expect="does not exist"),
    Case("nan-option", 5, "simulate --zeta nan", _nan_option, expect="--zeta"),
    Case("workers-10m", 5, "walk batch --workers 10^7", _huge_workers, expect="--workers"),
    Case("merge-key", 6, "YAML merge key hiding a field", _merge_key,
         expect="given twice through the merge key"),
    Case("mass-1e308", 6, "a 1e308 kg body", _absurd_mass, expect="mass"),
    Case("nan-observation", 6, "policy eval on an observation with a NaN", _nan_observation,
         expect="non-finite value nan"),
)


@dataclass
class Outcome:
    """What one case did."""

    case: Case
    code: int
    peak_mib: float
    seconds: float
    message: str
    ok: bool


#: The child: rbc's main(), then its own peak resident memory
#: (:func:`rbc.bench.memory.peak_resident_mib`) written to the file named first.
_CHILD = """
import sys
from rbc.cli.main import main
try:
    code = main(sys.argv[2:])
finally:
    from rbc.bench.memory import peak_resident_mib
    with open(sys.argv[1], "w") as f:
        f.write(repr(peak_resident_mib()))
sys.exit(code)
"""


def _run(argv: list[str], cwd: Path, timeout: float) -> tuple[int, float, float, str]:
    """Run ``rbc argv`` in a fresh interpreter; (status, peak RSS [MiB], wall [s], stderr).

    A run still going after ``timeout`` s is killed (status −9; its peak is NaN: a killed
    child never writes it)."""
    err_path, hwm_path = cwd / ".stderr", cwd / ".hwm"
    with open(err_path, "wb") as err, open(os.devnull, "wb") as out:
        t0 = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-c", _CHILD, str(hwm_path), *argv],
                                cwd=cwd, stdout=out, stderr=err, stdin=subprocess.DEVNULL)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        seconds = time.perf_counter() - t0
    text = err_path.read_text(errors="replace")
    peak = float(hwm_path.read_text()) if hwm_path.exists() else float("nan")
    for p in (err_path, hwm_path):
        p.unlink(missing_ok=True)
    return proc.returncode, peak, seconds, text


def _valid_inputs(v: Path) -> None:
    """The valid inputs the cases start from: a compiled four-bar with its Pinocchio export,
    the record, the H1 policy as JSON and observations for it."""
    import json

    import numpy as np

    shutil.copy(RECORDS / "fourbar.yaml", v / "fourbar.yaml")
    for argv in (["compile", str(v / "fourbar.yaml"), "-o", str(v / "fourbar.h5"),
                  "--pinocchio", str(v / "pin")],
                 ["policy", "import", str(H1_POLICY), "-o", str(v / "policy.json")]):
        done = subprocess.run([sys.executable, "-m", "rbc.cli.main", *argv],
                              capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"rbc {' '.join(argv)} failed: {done.stderr.strip()}")
    n_obs = json.loads((v / "policy.json").read_text()).get("n_obs", 41)
    np.savez(v / "obs.npz", observations=np.zeros((2, n_obs)))


def run_cases(names: list[str] | None = None, timeout: float = CASE_TIMEOUT,
              progress: Callable[[Case], None] | None = None) -> list[Outcome]:
    """Build and run the cases (all, or those named), each in its own scratch directory.

    Returns one :class:`Outcome` per case; ``ok`` when the exit status is the case's and
    the message contains its ``expect`` text (and never a traceback).

    Raises:
        ValueError: an unknown case name.
    """
    chosen = list(CASES) if not names else [c for c in CASES if c.name in names]
    unknown = set(names or ()) - {c.name for c in CASES}
    if unknown:
        raise ValueError(", ".join(sorted(unknown)))
    outcomes = []
    with tempfile.TemporaryDirectory(prefix="rbc-hostile-") as tmp:
        v = Path(tmp) / "valid"
        v.mkdir()
        _valid_inputs(v)
        for case in chosen:
            if progress:
                progress(case)
            d = Path(tmp) / case.name
            d.mkdir()
            argv = case.build(d, v)
            code, peak, seconds, err = _run(argv, d, timeout)
            lines = [line for line in err.splitlines() if line.startswith("error:")]
            message = (lines or err.strip().splitlines() or [""])[0].replace(
                f"{d}/", "").replace(f"{v}/", "valid/")  # (scratch paths shortened)
            ok = code == case.code and "Traceback" not in err and (
                case.code != 2 or case.expect in err)
            outcomes.append(Outcome(case, code, peak, seconds, message, ok))
    return outcomes

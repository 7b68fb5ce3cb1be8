"""The shipped records and reference motions the targets start from, compiled once per
process (the main process and every Dask worker keep their own cache).

Records are read from the source checkout's ``records/`` (the harness runs from a clone:
``make repro``); bundles go to a private temporary directory removed at exit. Task inputs
therefore carry record *names*, never paths or compiled objects: a worker on another
machine compiles the same record itself.
"""

from __future__ import annotations

import atexit
import functools
import shutil
import tempfile
from pathlib import Path

from rbc.errors import RbcError

#: The source checkout (``src/rbc/repro/models.py`` → the repository root).
REPO = Path(__file__).resolve().parents[3]
RECORDS = REPO / "records"
REFERENCES = RECORDS / "references"


def record_path(name: str) -> Path:
    """``records/<name>.yaml`` of the source checkout.

    Raises:
        RbcError: not found (the harness needs a source checkout, not an installed wheel).
    """
    path = RECORDS / f"{name}.yaml"
    if not path.is_file():
        raise RbcError(f"{path}: no such shipped record; the reproduction targets run from a "
                       "source checkout (make repro)")
    return path


@functools.cache
def _scratch() -> Path:
    d = Path(tempfile.mkdtemp(prefix="rbc-repro-"))
    atexit.register(shutil.rmtree, d, True)
    return d


@functools.cache
def bundle(name: str) -> Path:
    """The bundle of ``records/<name>.yaml``, compiled with the default options on first use
    in this process."""
    from rbc.compiler import compile_to_file

    out = _scratch() / f"{name}.h5"
    compile_to_file(record_path(name), out)
    return out


@functools.cache
def modes_bundle(name: str, text: str | None = None,
                 modes: tuple[tuple[str, tuple[str, ...]], ...] = ()) -> Path:
    """A bundle of ``records/<name>.yaml`` — or of the edited record ``text`` — compiled
    with every support mode (``--modes all``) and the named ``modes`` (``--mode``), once
    per process. Edited texts are compiled as ``<name>-<hash>.h5`` in the scratch
    directory."""
    import hashlib

    from rbc.compiler import compile_to_file

    src = record_path(name)
    stem = name
    if text is not None:
        stem = f"{name}-{hashlib.sha256(text.encode()).hexdigest()[:12]}"
        src = _scratch() / f"{stem}.yaml"
        src.write_text(text, encoding="utf-8")
    out = _scratch() / f"{stem}.modes.h5"
    compile_to_file(src, out, modes=modes, all_modes=True)
    return out


def compiled_text(name: str, text: str, **options):
    """The :class:`~rbc.model.compiled.CompiledModel` of a record given as YAML text (an
    edited shipped record), compiled with ``options`` of
    :func:`rbc.compiler.compile_record` (default: none) into this process's scratch
    directory as ``<name>.yaml`` / ``<name>.h5`` (``name``: a plain file stem)."""
    from rbc.compiler import compile_to_file
    from rbc.model.compiled import CompiledModel

    src = _scratch() / f"{name}.yaml"
    src.write_text(text, encoding="utf-8")
    compile_to_file(src, _scratch() / f"{name}.h5", **options)
    return CompiledModel.from_bundle(_scratch() / f"{name}.h5")


@functools.cache
def compiled_modes(name: str):
    """The :class:`~rbc.model.compiled.CompiledModel` of :func:`modes_bundle`."""
    from rbc.model.compiled import CompiledModel

    return CompiledModel.from_bundle(modes_bundle(name))


@functools.cache
def compiled(name: str):
    """The :class:`~rbc.model.compiled.CompiledModel` of ``records/<name>.yaml``."""
    from rbc.model.compiled import CompiledModel

    return CompiledModel.from_bundle(bundle(name))


@functools.cache
def dynamics(name: str):
    """``(kin, part, DynamicsModel, DynamicsData)`` of ``records/<name>.yaml`` (default
    partition); one per process, so tasks of a bag share the Pinocchio models."""
    from rbc.model.dynamics import DynamicsData, DynamicsModel

    kin = compiled(name)
    dm = DynamicsModel.build(kin)
    return kin, kin.partitions["default"], dm, DynamicsData.of(dm)


#: The documented partition request for the imported Cassie (docs/simulate.md, "Cassie"):
#: the stiff leg springs independent, so the reference holds them at rest.
CASSIE_SPRINGS = "independent: [left-shin, left-heel-spring, right-shin, right-heel-spring]\n"


@functools.cache
def cassie_bundle() -> Path:
    """Agility Cassie imported from the vendored MJCF (records/external/agility_cassie),
    with :data:`CASSIE_SPRINGS` appended, compiled (as tests/sim/test_cassie.py does)."""
    from rbc.backends.mjcf_import import import_mjcf
    from rbc.backends.record_writer import write_record
    from rbc.compiler import compile_to_file

    record = _scratch() / "cassie.yaml"
    write_record(import_mjcf(RECORDS / "external" / "agility_cassie" / "cassie.xml"), record)
    record.write_text(record.read_text() + CASSIE_SPRINGS)
    out = _scratch() / "cassie.h5"
    compile_to_file(record, out)
    return out


#: The shipped reference motion of each record that has one (records/references/).
REFERENCE_FILES = {"stewart": "stewart.csv", "excavator": "excavator.yaml",
                   "cassie": "cassie_legs.yaml"}


def reference_file(name: str) -> Path:
    """The reference motion of record ``name`` (records/references/)."""
    return REFERENCES / REFERENCE_FILES[name]


def reference_states(name: str, n: int) -> list:
    """``n`` states along the shipped reference motion of record ``name``: the reference
    lifted onto the closure manifold (:func:`rbc.sim.reference.lift_reference`) at the
    interior times ``t_i = i·T/(n + 1)``, i = 1…n (T: the last knot), with the reference's
    independent speeds u and the port efforts that produce its accelerations on the
    nominal model (the feedforward, :func:`rbc.model.dynamics.actuator_efforts`); no
    external wrench.

    Returns:
        ``[rbc.verify.states.State("A", i, q, u, f, ())]``.
    """
    from rbc.model.dynamics import actuator_efforts, reduced_terms
    from rbc.sim.reference import lift_reference, load_knots, spline_reference
    from rbc.verify.states import State

    kin, part, dm, dd = dynamics(name)
    splined = spline_reference(kin, part, load_knots(reference_file(name)))
    T = splined.duration
    lifted = lift_reference(dm, part, splined, T, T / (n + 1))
    out = []
    for i in range(1, n + 1):
        q, u, udot = lifted.q[i], lifted.u[i], lifted.udot[i]
        f = actuator_efforts(dm, reduced_terms(dm, dd, part, q, u), udot)
        out.append(State("A", i - 1, q.copy(), u.copy(), f, ()))
    return out

"""Shared pieces of the importers (``rbc import mjcf|urdf``): errors, numbers, YAML output.

Both importers build a plain ``dict`` in the layout of a schema-v1 record
(docs/records.md), then call :func:`write_record`, which renders it as YAML with floats in
``repr`` precision, checks it with the record parser and writes it atomically (a temporary
file in the destination directory, then ``os.replace``), so a failed import never leaves a
partial output file.

Conventions: SI units, angles in rad, quaternions ``(w, x, y, z)``, inertia tensors about the
centre of mass in body axes as ``[ixx, iyy, izz, ixy, ixz, iyz]`` (tensor entries, as URDF and
MJCF write them).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pinocchio as pin
import yaml

from rbc.errors import InputError, RbcError, did_you_mean
from rbc.ir import spatial
from rbc.ir.schema import inertia_problem
from rbc.safeio import atomic_write_text, load_yaml, read_bytes, read_text


class ModelImportError(RbcError):
    """An input model (MJCF, URDF or a loops sidecar) cannot be imported.

    Attributes:
        file: the input file.
        where: location in the file, e.g. ``line 57`` or ``mujoco/equality/connect[2]``.
        problem: what is wrong, one sentence.
        choices: the valid choices, listed in the message (optional).
        suggestion: a "did you mean" spelling derived from ``got`` and ``choices``.
    """

    def __init__(self, file: str | Path, where: str, problem: str, *,
                 choices: Sequence[str] | None = None, got: str | None = None,
                 expected: str | None = None) -> None:
        self.file = str(file)
        self.where = where
        self.problem = problem
        self.choices = tuple(choices) if choices is not None else None
        self.suggestion = did_you_mean(got, self.choices) if (got and self.choices) else None
        msg = f"{self.file}: {where}: {problem}" if where else f"{self.file}: {problem}"
        if expected:
            msg += f"; expected {expected}"
        if self.choices:
            shown = self.choices if len(self.choices) <= 12 else (*self.choices[:12], "…")
            msg += "; valid choices: " + ", ".join(shown)
        if self.suggestion:
            msg += f" (did you mean '{self.suggestion}'?)"
        super().__init__(msg)


@dataclass
class ImportResult:
    """What an importer produced.

    Attributes:
        record: the record as a plain dict (schema v1 layout).
        header: comment lines for the top of the YAML file (provenance, what was dropped,
            keyframes).
        warnings: messages for stderr (dropped visual geometry, missing meshes…).
    """

    record: dict
    header: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


# ------------------------------------------------------------------------------ numbers


def floats(values: Sequence[float] | np.ndarray) -> list[float]:
    """Plain Python floats (YAML writes them with ``repr`` precision); ``-0.0`` becomes 0."""
    return [float(v) + 0.0 for v in np.asarray(values, dtype=float).ravel()]


def tensor_from_six(six: Sequence[float]) -> np.ndarray:
    """(3, 3) symmetric tensor from ``[ixx, iyy, izz, ixy, ixz, iyz]`` [kg·m²]."""
    xx, yy, zz, xy, xz, yz = (float(v) for v in six)
    return np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])


def six_from_tensor(tensor: np.ndarray) -> list[float]:
    """``[ixx, iyy, izz, ixy, ixz, iyz]`` of a (3, 3) tensor (symmetrised first)."""
    t = 0.5 * (np.asarray(tensor, dtype=float) + np.asarray(tensor, dtype=float).T)
    return floats([t[0, 0], t[1, 1], t[2, 2], t[0, 1], t[0, 2], t[1, 2]])


def rotate_inertia(rot_body_inertial: np.ndarray, tensor: np.ndarray) -> np.ndarray:
    """Re-express an inertia tensor about the COM from the inertial frame in body axes.

    Args:
        rot_body_inertial: (3, 3) rotation ``R_body_inertial`` (inertial axes in body axes).
        tensor: (3, 3) inertia about the COM in inertial-frame axes [kg·m²].

    Returns:
        (3, 3) ``R I Rᵀ``, the same tensor in body axes.
    """
    r = np.asarray(rot_body_inertial, dtype=float)
    return r @ np.asarray(tensor, dtype=float) @ r.T


def pose_dict(T: pin.SE3) -> dict:
    """Record pose ``{xyz, quat}`` of ``T_a_f`` (identity parts omitted; quat wxyz, w ≥ 0)."""
    from rbc.ir.render import pose_document

    return pose_document(spatial.pose_from_se3(T))


def se3(rotation: np.ndarray | None = None, translation: Sequence[float] | None = None) -> pin.SE3:
    """``pin.SE3`` from an optional (3, 3) rotation and (3,) translation [m]."""
    r = np.eye(3) if rotation is None else np.asarray(rotation, dtype=float)
    p = np.zeros(3) if translation is None else np.asarray(translation, dtype=float)
    return pin.SE3(r.copy(), p.copy())


# ------------------------------------------------------------------------------ output


class _Dumper(yaml.SafeDumper):
    """Safe dumper that keeps dict order and never emits aliases."""

    def ignore_aliases(self, data: object) -> bool:  # noqa: D102
        return True


def _flow_seq(dumper: yaml.SafeDumper, data: list) -> yaml.Node:
    flow = all(not isinstance(v, (dict, list)) for v in data) or all(
        isinstance(v, list) for v in data)
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=flow)


def _flow_map(dumper: yaml.SafeDumper, data: dict) -> yaml.Node:
    flow = len(data) <= 2 and all(not isinstance(v, dict) for v in data.values()) and all(
        k in ("xyz", "quat", "lower", "upper", "type", "ratio", "stiffness", "rest")
        for k in data)
    return dumper.represent_mapping("tag:yaml.org,2002:map", data.items(), flow_style=flow)


_Dumper.add_representer(list, _flow_seq)
_Dumper.add_representer(dict, _flow_map)


def render_record(result: ImportResult) -> str:
    """YAML text of a record: the header as ``#`` comments, then the mapping.

    Floats keep full precision (PyYAML writes ``repr``).
    """
    head = "".join(f"# {line}\n" if line else "#\n" for line in result.header)
    body = yaml.dump(result.record, Dumper=_Dumper, sort_keys=False, width=10_000,
                     allow_unicode=True)
    return head + body


def write_record(result: ImportResult, output: str | Path,
                 source: str | Path | None = None) -> str:
    """Render, check with the record parser, and write atomically.

    Args:
        result: the importer's output.
        output: destination YAML file.
        source: the imported model, named in errors (default: the output).

    Returns:
        The YAML text written.

    Raises:
        ModelImportError: the generated record is rejected by
            :func:`rbc.ir.schema.parse_record_text` (e.g. an absurd magnitude in the input
            model), naming the input and the record field; nothing is written.
    """
    from rbc.errors import RecordError
    from rbc.ir.schema import parse_record_text

    out = Path(output)
    text = render_record(result)
    try:
        parse_record_text(text, str(out))
    except RecordError as err:
        where = f"imported as {err.path}" if err.path else "the imported record"
        raise ModelImportError(source or out, where, err.problem, expected=err.expected,
                               choices=err.choices) from None
    atomic_write_text(out, text)  # (its directory must exist: nothing is created beside it)
    return text


def read_xml(path: str | Path, root_tag: str):
    """Parse an XML file with lxml (line numbers kept) and check its root element.

    Returns:
        The root ``lxml.etree._Element``.

    Raises:
        ModelImportError: missing or unreadable file, malformed XML (with line), or a root
            element other than ``root_tag``.
    """
    from lxml import etree

    p = Path(path)
    try:
        data = read_bytes(p, "model")
    except InputError as err:
        raise ModelImportError(p, "", err.problem, expected=err.expected) from None
    # no entities, no DTD, no network, no XInclude (never processed), libxml2's default
    # depth and size limits (huge_tree off): the file is read as plain elements
    parser = etree.XMLParser(remove_comments=True, resolve_entities=False, load_dtd=False,
                             no_network=True, huge_tree=False)
    try:
        root = etree.fromstring(data, parser)
    except etree.XMLSyntaxError as exc:
        line = exc.position[0] if exc.position else exc.lineno
        raise ModelImportError(p, f"line {line}", f"malformed XML: {exc.msg}") from None
    if root is None:
        raise ModelImportError(p, "", "empty XML document")
    if root.tag != root_tag:
        raise ModelImportError(p, f"line {root.sourceline}",
                               f"root element <{root.tag}> is not <{root_tag}>")
    return root


def numbers(file: str | Path, el, attr: str, n: int | None = None,
            default: Sequence[float] | None = None) -> list[float] | None:
    """Numbers of an XML attribute (whitespace separated), checked for count and finiteness.

    Returns:
        The list, or ``default`` (as a list) when the attribute is absent.

    Raises:
        ModelImportError: not numbers, not finite, or not ``n`` of them (names the line).
    """
    text = el.get(attr)
    if text is None:
        return None if default is None else list(default)
    try:
        vals = [float(t) for t in text.split()]
    except ValueError:
        raise ModelImportError(file, f"line {el.sourceline}",
                               f"<{el.tag}> {attr}='{text}' is not a list of numbers") from None
    if n is not None and len(vals) != n:
        raise ModelImportError(file, f"line {el.sourceline}",
                               f"<{el.tag}> {attr}='{text}' needs {n} numbers, got {len(vals)}")
    if not all(np.isfinite(vals)):
        raise ModelImportError(file, f"line {el.sourceline}",
                               f"<{el.tag}> {attr}='{text}' is not finite")
    return vals


# ------------------------------------------------------------------------------ inertia


def repair_inertia(mass: float, tensor: np.ndarray) -> np.ndarray:
    """The explicit ``--repair-inertia`` rule (off by default; documented in docs/import.md).

    Principal moments below ``floor = max(1e-9·λmax, 1e-12 m²·mass)`` are raised to the
    floor; then, if the largest moment exceeds the sum of the other two, both smaller
    moments are raised by half the excess (plus a relative 1e-9 margin). Principal axes are
    kept.

    Args:
        mass: [kg], ≥ 0.
        tensor: (3, 3) inertia about the COM [kg·m²].

    Returns:
        (3, 3) repaired tensor in the same axes.
    """
    t = 0.5 * (np.asarray(tensor, dtype=float) + np.asarray(tensor, dtype=float).T)
    lam, vec = np.linalg.eigh(t)
    floor = max(1e-9 * float(lam.max()), 1e-12 * mass)
    lam = np.maximum(lam, floor)
    excess = lam[2] - lam[0] - lam[1]
    if excess > 0.0:
        lam[:2] += 0.5 * excess + 1e-9 * lam[2]
    return vec @ np.diag(lam) @ vec.T


def mass_entry(file: str | Path, where: str, body: str, mass: float, com,
               tensor: np.ndarray, repair: bool, warnings: list[str]) -> dict:
    """Record keys ``mass, com, inertia`` for one body, checked before writing.

    Args:
        file, where: for the error message (input file and location of the inertia).
        body: the body name.
        mass: [kg]; com: (3,) [m] in body coordinates; tensor: (3, 3) about the COM, body
            axes [kg·m²].
        repair: apply :func:`repair_inertia` to an invalid tensor (reported in ``warnings``).
        warnings: list receiving a message for every repair.

    Returns:
        ``{}`` for a massless body, else ``{mass, com, inertia}``.

    Raises:
        ModelImportError: invalid mass properties and ``repair`` is False (the message
            names the body and suggests ``--repair-inertia``).
    """
    t = np.asarray(tensor, dtype=float)
    if mass == 0.0 and not t.any():
        return {}
    problem = inertia_problem(mass, t)  # the parser's own rule (rbc.ir.schema)
    if problem is not None:
        if not repair or mass < 0.0:
            raise ModelImportError(file, where, f"body '{body}': {problem}; the input is "
                                   "physically invalid (rerun with --repair-inertia to apply "
                                   "the documented repair)")
        t = repair_inertia(mass, t)
        warnings.append(f"body '{body}': {problem}; repaired (--repair-inertia) to "
                        f"{six_from_tensor(t)}")
    return {"mass": float(mass), "com": floats(com), "inertia": six_from_tensor(t)}


def guess_inside_limits(joint: dict) -> None:
    """Set a 1-coordinate joint's ``initial`` to the middle of its limits when its current
    guess (``initial``, default 0) lies outside them (in place; docs/import.md).

    ``initial`` is only an acquisition guess, so moving it changes no physical fact; the
    compiler rejects a starting configuration that violates the limits.
    """
    lim = joint.get("limits")
    q = joint.get("initial", 0.0)
    if lim is None or isinstance(q, list):
        return
    if not lim["lower"] <= q <= lim["upper"]:
        joint["initial"] = 0.5 * (lim["lower"] + lim["upper"])


# ------------------------------------------------------------------------------ overlays

#: Record sections an overlay appends to.
OVERLAY_APPEND = ("actuators", "couplings", "forces", "supports", "tasks", "independent")
#: Record sections whose entries an overlay patches by name.
OVERLAY_PATCH = ("bodies", "joints")
#: Bound on an overlay file's size [bytes] (an overlay adds a few entries, not a model).
OVERLAY_MAX_BYTES = 1 << 20


def apply_overlay(result: ImportResult, path: str | Path) -> ImportResult:
    """An imported record with a small YAML overlay of physical facts added (docs/import.md).

    The overlay is a mapping with ``rbc_overlay: 1`` and any of: ``actuators``,
    ``couplings``, ``forces``, ``supports``, ``tasks``, ``independent`` (lists appended to the
    imported record's; an ``actuators`` entry named like an imported actuator patches it
    instead), and ``bodies``/``joints`` (lists of ``{name: …, key: value, …}`` patches: each
    key of an entry of that name is set). It is read with :func:`rbc.safeio.load_yaml`;
    the merged record is checked by the record parser when written (:func:`write_record`).

    Raises:
        ModelImportError: unreadable or malformed overlay, an unknown section or key, or a
            patch naming an entry the imported record does not have.
    """
    p = Path(path)
    try:
        text = read_text(p, "sidecar", limit=OVERLAY_MAX_BYTES)
    except InputError as err:
        problem = "overlay file not found" if err.problem == "file not found" else err.problem
        raise ModelImportError(p, "", problem, expected=err.expected) from None
    doc = load_yaml(text, p, error=ModelImportError)
    if not isinstance(doc, dict) or doc.get("rbc_overlay") != 1:
        raise ModelImportError(p, "", "an overlay is a mapping starting with `rbc_overlay: 1`")
    record = {k: (list(v) if isinstance(v, list) else v) for k, v in result.record.items()}
    allowed = ("rbc_overlay", *OVERLAY_APPEND, *OVERLAY_PATCH)
    counts = []
    for key, value in doc.items():
        if key not in allowed:
            raise ModelImportError(p, str(key), f"unknown overlay section '{key}'",
                                   choices=allowed[1:], got=str(key))
        if key == "rbc_overlay":
            continue
        if not isinstance(value, list):
            raise ModelImportError(p, str(key), "expected a list")
        if key == "actuators":  # an imported actuator's name patches it (e.g. a speed limit)
            named = {e.get("name"): e for e in record.get(key, []) if isinstance(e, dict)}
            patches = [e for e in value if isinstance(e, dict) and e.get("name") in named]
            for patch in patches:
                named[patch["name"]].update({k: v for k, v in patch.items() if k != "name"})
            value = [e for e in value if not (isinstance(e, dict) and e.get("name") in named)]
            if patches:
                counts.append(f"{len(patches)} actuators patched")
        if key in OVERLAY_APPEND:
            record[key] = [*record.get(key, []), *value]
            if value or key != "actuators":
                counts.append(f"{len(value)} {key} added")
            continue
        entries = {e.get("name"): e for e in record.get(key, []) if isinstance(e, dict)}
        for i, patch in enumerate(value):
            name = patch.get("name") if isinstance(patch, dict) else None
            if name not in entries:
                raise ModelImportError(p, f"{key}[{i}]", f"no imported {key[:-1]} named "
                                       f"{name!r} to patch", choices=sorted(map(str, entries)),
                                       got=str(name))
            entries[name].update({k: v for k, v in patch.items() if k != "name"})
        counts.append(f"{len(value)} {key} patched")
    header = [*result.header, f"Overlay {p.name}: " + (", ".join(counts) or "nothing") + "."]
    return ImportResult(record, header, list(result.warnings))

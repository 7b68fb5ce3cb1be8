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

import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pinocchio as pin
import yaml

from rbc.errors import RbcError, did_you_mean
from rbc.ir import spatial


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
                 choices: Sequence[str] | None = None, got: str | None = None) -> None:
        self.file = str(file)
        self.where = where
        self.problem = problem
        self.choices = tuple(choices) if choices is not None else None
        self.suggestion = did_you_mean(got, self.choices) if (got and self.choices) else None
        msg = f"{self.file}: {where}: {problem}" if where else f"{self.file}: {problem}"
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
    pose = spatial.pose_from_se3(T)
    out: dict = {}
    if any(v != 0.0 for v in pose.xyz):
        out["xyz"] = floats(pose.xyz)
    if tuple(pose.quat) != (1.0, 0.0, 0.0, 0.0):
        out["quat"] = floats(pose.quat)
    return out


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


def write_record(result: ImportResult, output: str | Path) -> str:
    """Render, check with the record parser, and write atomically.

    Args:
        result: the importer's output.
        output: destination YAML file.

    Returns:
        The YAML text written.

    Raises:
        RecordError: the generated record is rejected by :func:`rbc.passes.parse.parse_record_text`
            (e.g. a non-positive-definite inertia in the input model); nothing is written.
    """
    from rbc.passes.parse import parse_record_text

    out = Path(output)
    text = render_record(result)
    parse_record_text(text, str(out))
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
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
    if not p.is_file():
        raise ModelImportError(p, "", "file not found")
    parser = etree.XMLParser(remove_comments=True, resolve_entities=False)
    try:
        tree = etree.parse(str(p), parser)
    except etree.XMLSyntaxError as exc:
        line = exc.position[0] if exc.position else exc.lineno
        raise ModelImportError(p, f"line {line}", f"malformed XML: {exc.msg}") from None
    root = tree.getroot()
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

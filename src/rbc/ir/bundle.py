"""The HDF5 bundle: in-memory form, atomic writer, untrusting reader (DESIGN.md §7).

The layout is a public contract documented in ``docs/bundle.md``. A :class:`BundleData` is a
flat mapping ``"/group/dataset" -> array or str`` plus attributes per group; the codegen
pass builds it, :func:`write_bundle` writes it atomically (temporary file in the target
directory, then ``os.replace``) with the SHA-256 of its whole content in
``/meta@content_sha256``.

:func:`read_bundle` treats the file as hostile (docs/bundle.md, "Reading untrusted
bundles"):

1. a regular file within the ``bundle`` size limit (:func:`rbc.safeio.check_regular`);
2. **structure before data**: every link is a hard link inside the file (no soft, external
   or user-defined links), no dataset is stored outside the file (external storage,
   virtual datasets), none is filtered or compressed (rbc never writes either, so
   nothing can inflate), every dataset is numeric, boolean or a UTF-8 string and no larger
   than the file itself, within bounded counts and depth — all checked on the metadata
   before a byte of data is read;
3. the schema version;
4. **integrity**: the SHA-256 of the record text equals ``/meta@record_sha256`` and the
   SHA-256 of the whole content equals ``/meta@content_sha256`` (a corrupted or edited
   bundle is refused, never repaired or rebuilt);
5. **values** (:data:`LAYOUT`): every known dataset has its dtype, its shape in terms of the
   bundle's sizes, finite values where NaN has no meaning, and indices inside their range.

The run-time reader (:meth:`rbc.model.compiled.CompiledModel.from_bundle`) then checks the
stored structure against the re-parsed record (edges, trees, paths, coordinates,
partitions and the closure residual at ``q_ref``).
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import h5py
import numpy as np

from rbc.errors import BundleError, InputError
from rbc.safeio import atomic_write, check_regular

BUNDLE_SCHEMA = 2
DIGEST_ATTR = "content_sha256"

#: Structure bounds of a bundle (a compiled 10 000-loop chain has ~80 datasets in 12 groups,
#: at most 3 levels deep; each partition adds a group of 5).
MAX_OBJECTS = 100_000
MAX_DEPTH = 8
MAX_ATTRS = 64
MAX_NDIM = 4


@dataclass
class BundleData:
    """Datasets and attributes of a bundle (before it is written, or as read and checked).

    Attributes:
        datasets: ``"/group/name" -> numpy array | str | list[str]``.
        attrs: ``"/group" -> {attribute: value}`` (``"/"`` for the file root).
        file: the file it was read from ("" before writing).
    """

    datasets: dict[str, object] = field(default_factory=dict)
    attrs: dict[str, dict[str, object]] = field(default_factory=dict)
    file: str = ""

    def put(self, path: str, value: object) -> None:
        """Add dataset ``path`` (strings and string lists become UTF-8 string datasets)."""
        self.datasets[path] = value

    def attr(self, group: str, **values: object) -> None:
        """Set attributes on ``group``."""
        self.attrs.setdefault(group, {}).update(values)

    # ------------------------------------------------------------------ typed access
    def error(self, path: str, problem: str) -> BundleError:
        """A :class:`BundleError` naming the file and the dataset or attribute."""
        return BundleError(f"{self.file}: {path}: {problem} (a corrupted or tampered bundle; "
                           "recompile the record)")

    def has(self, path: str) -> bool:
        return path in self.datasets

    def array(self, path: str) -> np.ndarray:
        """A numeric dataset (raises if missing or a string)."""
        value = self.datasets.get(path)
        if value is None:
            raise self.error(path, "missing dataset")
        if not isinstance(value, np.ndarray):
            raise self.error(path, "a string dataset where numbers are expected")
        return value

    def strings(self, path: str) -> list[str]:
        """A string-list dataset (raises if missing or numeric)."""
        value = self.datasets.get(path)
        if value is None:
            raise self.error(path, "missing dataset")
        if not isinstance(value, list):
            raise self.error(path, "expected a list of strings")
        return value

    def text(self, path: str) -> str:
        """A scalar string dataset."""
        value = self.datasets.get(path)
        if not isinstance(value, str):
            raise self.error(path, "missing text dataset" if value is None else
                             "expected a text (scalar string) dataset")
        return value

    def number(self, group: str, name: str, kind: type = int) -> int | float:
        """Attribute ``group@name`` as an int (or a finite float)."""
        value = self.attrs.get(group, {}).get(name)
        if value is None:
            raise self.error(f"{group}@{name}", "missing attribute")
        if kind is int:
            if isinstance(value, bool) or not isinstance(value, int):
                raise self.error(f"{group}@{name}", f"{value!r} is not an integer")
            return value
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isfinite(
                value):
            raise self.error(f"{group}@{name}", f"{value!r} is not a finite number")
        return float(value)


def _dataset_value(value: object) -> object:
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)) and (not value or isinstance(value[0], str)):
        return np.array(value, dtype=h5py.string_dtype())
    return np.asarray(value)


# ------------------------------------------------------------------ content digest


def _canonical_attr(value: object) -> object:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, np.ndarray):
        return [_canonical_attr(v) for v in value.tolist()]
    if isinstance(value, np.generic):
        return value.item()
    return value


def content_digest(data: BundleData) -> str:
    """SHA-256 of every dataset and attribute except ``/meta@content_sha256`` itself, in a
    canonical form that is the same for the written :class:`BundleData` and the one read
    back (strings as UTF-8, arrays as little-endian bytes with dtype and shape)."""
    h = hashlib.sha256()

    def feed(*parts: bytes) -> None:
        for part in parts:
            h.update(len(part).to_bytes(8, "little"))
            h.update(part)

    for path in sorted(data.datasets):
        value = data.datasets[path]
        if isinstance(value, (list, tuple)) and (not value or isinstance(value[0], str)):
            value = [str(v) for v in value]
        if isinstance(value, str):
            feed(path.encode(), b"text", value.encode("utf-8"))
        elif isinstance(value, list):
            feed(path.encode(), b"strings", str(len(value)).encode(),
                 *(s.encode("utf-8") for s in value))
        else:
            a = np.asarray(value)
            a = np.ascontiguousarray(a, dtype=a.dtype.newbyteorder("<"))
            feed(path.encode(), a.dtype.str.encode(), repr(a.shape).encode(), a.tobytes())
    for group in sorted(data.attrs):
        for name in sorted(data.attrs[group]):
            if group == "/meta" and name == DIGEST_ATTR:
                continue
            feed(group.encode(), name.encode(),
                 repr(_canonical_attr(data.attrs[group][name])).encode())
    return h.hexdigest()


# ------------------------------------------------------------------ writing


def group_name_problem(name: str) -> str | None:
    """Why ``name`` cannot be one component of a bundle path (a partition's or a mode's
    group), or None: HDF5 splits paths at ``/`` and resolves ``.`` (so ``a/b`` would write
    a nested group and ``.`` the parent's own datasets — a bundle that does not read back)."""
    if not name:
        return "is empty"
    if "/" in name:
        return "contains '/'"
    if name in (".", ".."):
        return f"is '{name}'"
    return None


def _check_paths(target: Path, data: BundleData) -> None:
    """Every dataset and attribute path is absolute, with plain components
    (:func:`group_name_problem`) — checked before anything is written, so a name that
    slipped past the option checks can never replace a good bundle with a broken one."""
    for path in (*data.datasets, *(g for g in data.attrs if g != "/")):
        parts = path.split("/")
        problem = "is not absolute" if parts[0] else next(
            (f"has a component that {p}" for p in map(group_name_problem, parts[1:]) if p), None)
        if problem:
            raise BundleError(f"{target}: bundle path {path!r} {problem}; nothing was written "
                              "(a partition, mode or support name must not be empty, contain "
                              "'/' or be '.' or '..')")


def write_bundle(path: str | Path, data: BundleData) -> Path:
    """Write ``data`` to ``path`` atomically, stamped with its content digest; returns the path.

    The file is first written to a temporary file in the same directory and renamed over the
    target only when complete, so a failure never leaves a partial bundle behind.

    Raises:
        BundleError: the target directory does not exist or is not writable.
    """
    target = Path(path)
    directory = target.parent if str(target.parent) else Path(".")
    if not directory.is_dir():
        raise BundleError(f"{target}: output directory {directory} does not exist")
    _check_paths(target, data)
    data.attr("/meta", **{DIGEST_ATTR: content_digest(data)})

    def fill(tmp: Path) -> None:
        with h5py.File(tmp, "w") as h5:
            for name, value in data.datasets.items():
                h5.create_dataset(name, data=_dataset_value(value))
            for group, values in data.attrs.items():
                obj = h5.require_group(group) if group != "/" else h5
                for key, value in values.items():
                    obj.attrs[key] = value

    try:
        atomic_write(target, fill)
    except PermissionError as err:
        raise BundleError(f"{target}: cannot write in {directory}: {err.strerror}") from err
    return target


# ------------------------------------------------------------------ reading: structure


def _refuse(file: Path, where: str, problem: str) -> BundleError:
    return BundleError(f"{file}: {where}: {problem}; refused before reading any data (a "
                       "bundle must be self-contained plain data)")


def _check_attrs(file: Path, obj, where: str) -> None:
    names = list(obj.attrs)
    if len(names) > MAX_ATTRS:
        raise _refuse(file, where, f"{len(names)} attributes (at most {MAX_ATTRS})")
    for name in names:
        aid = obj.attrs.get_id(name)
        dt = aid.dtype
        if h5py.check_string_dtype(dt) is None and dt.kind not in "biuf":
            raise _refuse(file, f"{where}@{name}", f"attribute of unsupported type {dt}")
        if aid.shape and int(np.prod(aid.shape)) > 1024:
            raise _refuse(file, f"{where}@{name}", f"attribute of shape {aid.shape}")


def _check_dataset(file: Path, ds: h5py.Dataset, where: str, limit: int) -> None:
    if ds.is_virtual:
        raise _refuse(file, where, "a virtual dataset (its data lives in other files)")
    if ds.external:
        raise _refuse(file, where, f"stored in external file(s) "
                      f"{', '.join(str(e[0]) for e in ds.external)}")
    plist = ds.id.get_create_plist()
    if plist.get_nfilters():
        raise _refuse(file, where, "a filtered (compressed) dataset; rbc writes none")
    if plist.get_external_count():
        raise _refuse(file, where, "stored in an external file")
    dt = ds.dtype
    if h5py.check_string_dtype(dt) is None and dt.kind not in "biuf":
        raise _refuse(file, where, f"a dataset of unsupported type {dt} (numbers, booleans "
                      "and UTF-8 strings only)")
    if len(ds.shape) > MAX_NDIM:
        raise _refuse(file, where, f"{len(ds.shape)} dimensions (at most {MAX_NDIM})")
    if ds.size * max(dt.itemsize, 1) > limit:
        raise _refuse(file, where, f"declares {ds.size} elements, more than the file can hold")


def _check_structure(file: Path, h5: h5py.File, limit: int) -> None:
    """Walk every link from the root without following any but hard links."""
    seen: set = set()
    stack: list[tuple[h5py.Group, str, int]] = [(h5, "", 0)]
    _check_attrs(file, h5, "/")
    count = 0
    while stack:
        group, prefix, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise _refuse(file, prefix or "/", f"groups nested deeper than {MAX_DEPTH}")
        for name in group:
            where = f"{prefix}/{name}"
            count += 1
            if count > MAX_OBJECTS:
                raise _refuse(file, where, f"more than {MAX_OBJECTS} objects")
            link = group.get(name, getlink=True)
            if isinstance(link, h5py.ExternalLink):
                raise _refuse(file, where, f"an external link to {link.filename}:{link.path}")
            if isinstance(link, h5py.SoftLink):
                raise _refuse(file, where, f"a soft link to {link.path}")
            if not isinstance(link, h5py.HardLink):
                raise _refuse(file, where, "a user-defined link")
            cls = group.get(name, getclass=True)
            obj = group[name]
            if obj.id in seen:
                raise _refuse(file, where, "a second hard link to an object already seen")
            seen.add(obj.id)
            _check_attrs(file, obj, where)
            if cls is h5py.Dataset:
                _check_dataset(file, obj, where, limit)
            elif cls is h5py.Group:
                stack.append((obj, where, depth + 1))
            else:
                raise _refuse(file, where, "a committed datatype or unknown object")


def _read_all(file: Path, h5: h5py.File) -> BundleData:
    """Every dataset and attribute as plain values (after the structure check)."""
    out = BundleData(file=str(file))

    def visit(name: str, obj) -> None:
        path = "/" + name
        if isinstance(obj, h5py.Dataset):
            raw = obj[()]
            if h5py.check_string_dtype(obj.dtype) is not None:
                if obj.shape == ():
                    out.datasets[path] = raw.decode("utf-8", "replace") if isinstance(
                        raw, bytes) else str(raw)
                else:
                    out.datasets[path] = [s.decode("utf-8", "replace") if isinstance(s, bytes)
                                          else str(s) for s in np.asarray(raw).ravel()]
            else:
                out.datasets[path] = np.asarray(raw)
        if len(obj.attrs):
            out.attrs[path] = {k: _canonical_attr(v) for k, v in obj.attrs.items()}

    if len(h5.attrs):
        out.attrs["/"] = {k: _canonical_attr(v) for k, v in h5.attrs.items()}
    h5.visititems(visit)
    return out


# ------------------------------------------------------------------ reading: values

# Layout of the known datasets: path -> (kind, shape, low, high). kind: "i" integers,
# "f" finite floats, "f~" floats where NaN means "not applicable" (±inf allowed for
# limits), "b" booleans, "s" strings (shape: the list length), "t" text. Shapes and bounds
# are numbers or names of the bundle's sizes: B bodies, E edges, C chords, M modules,
# A actuators, T tasks, K couplings, nq, nv; "·" any length.
LAYOUT: dict[str, tuple] = {
    "/record/text": ("t",),
    "/record/normalized": ("t",),
    "/bodies/name": ("s", "B"),
    "/bodies/kind": ("s", "B"),
    "/bodies/mass": ("f", ("B",)),
    "/bodies/com": ("f", ("B", 3)),
    "/bodies/inertia": ("f", ("B", 6)),
    "/graph/edge_name": ("s", "E"),
    "/graph/edge_type": ("s", "E"),
    "/graph/parent": ("i", ("E",), 0, "B"),
    "/graph/child": ("i", ("E",), 0, "B"),
    "/graph/nq": ("i", ("E",), 0, 7),
    "/graph/nv": ("i", ("E",), 0, 6),
    "/graph/keep": ("b", ("E",)),
    "/graph/prefer_cut": ("b", ("E",)),
    "/graph/component": ("i", ("B",), 0, "B"),
    "/graph/parent_frame": ("f", ("E", 7)),
    "/graph/child_frame": ("f", ("E", 7)),
    "/graph/axis": ("f~", ("E", 3)),
    "/graph/axes": ("f~", ("E", 2, 3)),
    "/graph/lead": ("f~", ("E",)),
    "/forest/tree_edges": ("i", ("·",), 0, "E-1"),
    "/forest/chords": ("i", ("C",), 0, "E-1"),
    "/forest/forced_cuts": ("i", ("·",), 0, "E-1"),
    "/forest/declared_cuts": ("i", ("·",), 0, "E-1"),
    "/forest/parent_edge": ("i", ("B+1",), -1, "E-1"),
    "/forest/parent_vertex": ("i", ("B+1",), -1, "B"),
    "/forest/depth": ("i", ("B+1",), 0, "B"),
    "/forest/sign": ("i", ("E",), -1, 1),
    "/chords/edge": ("i", ("C",), 0, "E-1"),
    "/chords/name": ("s", "C"),
    "/chords/b": ("i", ("C",), 0, "B"),
    "/chords/c": ("i", ("C",), 0, "B"),
    "/chords/lca": ("i", ("C",), 0, "B"),
    "/chords/path_ptr": ("p", "C", "/chords/path_edge"),
    "/chords/path_edge": ("i", ("·",), 0, "E-1"),
    "/chords/path_sign": ("i", ("P",), -1, 1),
    "/modules/chords_ptr": ("p", "M", "/modules/chords"),
    "/modules/chords": ("i", ("·",), 0, "C-1"),
    "/modules/couplings_ptr": ("p", "M", "/modules/couplings"),
    "/modules/couplings": ("i", ("·",), 0, "K-1"),
    "/modules/edges_ptr": ("p", "M", "/modules/edges"),
    "/modules/edges": ("i", ("·",), 0, "E-1"),
    "/modules/inputs_ptr": ("p", "M", "/modules/inputs"),
    "/modules/inputs": ("i", ("·",), 0, "E-1"),
    "/modules/rows": ("i", ("M",), 0, None),
    "/modules/variables": ("i", ("M",), 0, None),
    "/coordinates/q_offset": ("i", ("E",), 0, "nq"),
    "/coordinates/v_offset": ("i", ("E",), 0, "nv"),
    "/coordinates/q_name": ("s", "nq"),
    "/coordinates/v_name": ("s", "nv"),
    "/interfaces/actuators/name": ("s", "A"),
    "/interfaces/actuators/edge": ("i", ("A",), -1, "E-1"),  # −1: a tendon port
    "/interfaces/actuators/terms_ptr": ("p", "A", "/interfaces/actuators/terms_edge"),
    "/interfaces/actuators/terms_edge": ("i", ("·",), 0, "E-1"),
    "/interfaces/actuators/terms_coef": ("f", ("Q",)),
    "/interfaces/actuators/kind": ("s", "A"),
    "/interfaces/actuators/port": ("s", "A"),
    "/interfaces/actuators/transmission": ("s", "A"),
    "/interfaces/actuators/reduction": ("f", ("A",)),
    "/interfaces/actuators/rotor_inertia": ("f", ("A",)),
    "/interfaces/actuators/effort_limits": ("f~", ("A", 2)),
    "/interfaces/tasks/name": ("s", "T"),
    "/interfaces/tasks/kind": ("s", "T"),
    "/interfaces/tasks/body": ("i", ("T",), 0, "B-1"),
    "/interfaces/tasks/frame": ("f", ("T", 7)),
    "/interfaces/couplings/name": ("s", "K"),
    "/interfaces/supports/name": ("s", "S"),
    "/interfaces/supports/kind": ("s", "S"),
    "/interfaces/supports/body": ("i", ("S",), 0, "B-1"),
    "/interfaces/supports/frame": ("f", ("S", 7)),
    "/interfaces/supports/friction": ("f", ("S",)),
    "/interfaces/supports/normal": ("f", ("S", 3)),
    "/interfaces/supports/half_extents": ("f", ("S", 2)),
    "/interfaces/supports/radius": ("f", ("S",)),
}
PARTITION_LAYOUT: dict[str, tuple] = {
    "independent": ("i", ("·",), 0, "nv-1"),
    "dependent": ("i", ("·",), 0, "nv-1"),
    "rows": ("i", ("·",), 0, None),
    "q_ref": ("f", ("nq",)),
    "joints": ("s", None),
}
#: a support mode's group: its partition (in the mode model's sizes @nq, @nv) and these
MODE_LAYOUT: dict[str, tuple] = {
    "supports": ("s", "k"),
    "anchors": ("f", ("k", 7)),
}
MODE_INT_ATTRS = ("rank", "tree_rank", "actuation_rank", "nq", "nv", "modules", "largest_block")
#: integer attributes every bundle carries: group -> names
INT_ATTRS = {"/graph": ("n_bodies", "n_joints", "world", "components", "cycle_rank"),
             "/coordinates": ("nq", "nv", "nq_tree", "nv_tree"), "/partitions": ("count",)}


def _sizes(data: BundleData) -> dict[str, int]:
    s = {"B": len(data.strings("/bodies/name")), "E": len(data.strings("/graph/edge_name")),
         "C": data.array("/chords/edge").shape[0] if data.array("/chords/edge").ndim else -1,
         "M": data.array("/modules/rows").shape[0] if data.array("/modules/rows").ndim else -1,
         "A": len(data.strings("/interfaces/actuators/name")),
         "T": len(data.strings("/interfaces/tasks/name")),
         "K": len(data.strings("/interfaces/couplings/name")),
         "S": len(data.strings("/interfaces/supports/name")),
         "P": data.array("/chords/path_edge").shape[0] if data.array(
             "/chords/path_edge").ndim else -1,
         "Q": data.array("/interfaces/actuators/terms_edge").shape[0] if data.array(
             "/interfaces/actuators/terms_edge").ndim else -1}
    for group, names in INT_ATTRS.items():
        for name in names:
            s[f"{group}@{name}"] = int(data.number(group, name))
    s["nq"], s["nv"] = s["/coordinates@nq"], s["/coordinates@nv"]
    return s


def _size(spec: object, sizes: dict[str, int]) -> int | None:
    if spec is None or spec == "·":
        return None
    if isinstance(spec, int):
        return spec
    text = str(spec)
    for op, sign in (("+", 1), ("-", -1)):
        if op in text:
            name, k = text.split(op)
            return sizes[name] + sign * int(k)
    return sizes[text]


def _check_value(data: BundleData, path: str, spec: tuple, sizes: dict[str, int]) -> None:
    kind = spec[0]
    if kind == "t":
        data.text(path)
        return
    if kind == "s":
        n = _size(spec[1], sizes)
        items = data.strings(path)
        if n is not None and len(items) != n:
            raise data.error(path, f"{len(items)} strings, expected {n}")
        return
    a = data.array(path)
    if kind == "p":  # CSR pointer of n groups into the flat dataset spec[2]
        n, flat = _size(spec[1], sizes), data.array(spec[2])
        if a.dtype.kind not in "iu" or a.shape != (n + 1,):
            raise data.error(path, f"{a.dtype} array of shape {a.shape}, expected {n + 1} "
                             "integers")
        if a[0] != 0 or a[-1] != flat.shape[0] or np.any(np.diff(a) < 0):
            raise data.error(path, f"not a pointer array into the {flat.shape[0]} entries of "
                             f"{spec[2]} (0 first, non-decreasing, their count last)")
        return
    shape = tuple(_size(d, sizes) for d in spec[1])
    if a.ndim != len(shape) or any(w is not None and g != w for g, w in zip(a.shape, shape,
                                                                           strict=False)):
        want = "(" + ", ".join("·" if w is None else str(w) for w in shape) + ")"
        raise data.error(path, f"shape {a.shape}, expected {want}")
    if kind == "b":
        if a.dtype.kind != "b":
            raise data.error(path, f"dtype {a.dtype}, expected booleans")
        return
    if kind == "i":
        if a.dtype.kind not in "iu":
            raise data.error(path, f"dtype {a.dtype}, expected integers")
        lo, hi = _size(spec[2], sizes), _size(spec[3], sizes)
        out = np.zeros(a.shape, dtype=bool)
        if lo is not None:
            out |= a < lo
        if hi is not None:
            out |= a > hi
        if out.any():
            where = tuple(int(i) for i in np.argwhere(out)[0])
            raise data.error(path, f"value {int(a[where])} at {list(where)} outside "
                             f"{lo}..{'' if hi is None else hi}")
        return
    if a.dtype.kind not in "iuf":
        raise data.error(path, f"dtype {a.dtype}, expected numbers")
    if kind == "f" and not np.all(np.isfinite(a)):
        raise data.error(path, "non-finite value (NaN or inf)")


def check_values(data: BundleData) -> None:
    """Check every dataset of :data:`LAYOUT` (and each partition group) for presence,
    dtype, shape, finiteness and index ranges.

    Raises:
        BundleError: naming the file and the dataset.
    """
    for path in ("/bodies/name", "/graph/edge_name", "/interfaces/actuators/name",
                 "/interfaces/tasks/name", "/interfaces/couplings/name",
                 "/interfaces/supports/name"):
        data.strings(path)
    sizes = _sizes(data)
    if sizes["/graph@n_bodies"] != sizes["B"] or sizes["/graph@world"] != sizes["B"]:
        raise data.error("/graph@n_bodies", "disagrees with /bodies/name")
    for path, spec in LAYOUT.items():
        _check_value(data, path, spec, sizes)
    parts = groups_under(data, "/partitions")
    if len(parts) != sizes["/partitions@count"]:
        raise data.error("/partitions@count", f"{sizes['/partitions@count']}, but "
                         f"{len(parts)} partition groups")
    for name in parts:
        _check_partition_group(data, f"/partitions/{name}", sizes)
    modes = groups_under(data, "/modes")
    if modes or "/modes" in data.attrs:
        if int(data.number("/modes", "count")) != len(modes):
            raise data.error("/modes@count", f"{data.attrs['/modes'].get('count')!r}, but "
                             f"{len(modes)} mode groups")
        if data.has("/modes/notes"):
            data.strings("/modes/notes")
    for name in modes:
        g = f"/modes/{name}"
        for key in MODE_INT_ATTRS:
            data.number(g, key, int)
        if not isinstance(data.attrs[g].get("root_inputs"), bool):
            raise data.error(f"{g}@root_inputs", "missing or not a boolean")
        local = dict(sizes, nq=int(data.number(g, "nq")), nv=int(data.number(g, "nv")),
                     k=len(data.strings(f"{g}/supports")))
        _check_partition_group(data, g, local)
        for sub, spec in MODE_LAYOUT.items():
            _check_value(data, f"{g}/{sub}", spec, local)


#: A stored pose's quaternion norm may differ from 1 by this much (written from unit
#: quaternions; a few ulps of rounding).
QUAT_TOL = 1e-9


def check_poses(data: BundleData, path: str, x: np.ndarray) -> None:
    """Stored poses ``[x y z qw qx qy qz]`` (7,) or (k, 7) (finite: checked by the layout)
    have unit quaternions.

    Raises:
        BundleError: naming ``path`` and the first quaternion that is not of unit norm.
    """
    q = np.asarray(x, dtype=float).reshape(-1, 7)[:, 3:]
    bad = np.flatnonzero(np.abs(np.linalg.norm(q, axis=1) - 1.0) > QUAT_TOL)
    if bad.size:
        raise data.error(path, f"quaternion {q[bad[0]].tolist()} is not of unit norm")


def check_layout(data: BundleData, group: str, layout: dict[str, tuple],
                 sizes: dict[str, int]) -> None:
    """Check the datasets ``group/<key>`` of a layout written in the notation of
    :data:`LAYOUT` (kind, shape, bounds in terms of ``sizes``) — for groups beyond this
    module's tables, such as a composed bundle's ``/composition``.

    Raises:
        BundleError: naming the file and the dataset.
    """
    for key, spec in layout.items():
        try:
            _check_value(data, f"{group}/{key}", spec, sizes)
        except KeyError as err:  # a size the layout names but the caller could not give
            raise data.error(f"{group}/{key}", f"size {err} unknown") from None


def groups_under(data: BundleData, parent: str) -> list[str]:
    """Names of the groups under ``parent`` (``/partitions``, ``/modes``), in stored order
    (datasets directly under ``parent``, such as ``/modes/notes``, are not groups)."""
    return list(dict.fromkeys(p.split("/")[2] for p in data.datasets
                              if p.startswith(parent + "/") and p.count("/") >= 3))


def _check_partition_group(data: BundleData, group: str, sizes: dict[str, int]) -> None:
    for sub, spec in PARTITION_LAYOUT.items():
        _check_value(data, f"{group}/{sub}", spec, sizes)
    data.number(group, "rank", int)
    length = data.number(group, "length_scale", float)
    if length <= 0:
        raise data.error(f"{group}@length_scale", f"{length!r} is not positive")


@contextmanager
def open_hdf5(path: str | Path, kind: str = "bundle") -> Iterator[h5py.File]:
    """Open any untrusted HDF5 input (a bundle, a simulation log) read-only after the checks
    of steps 1–2 of the module docstring: a regular file within the ``kind`` size limit,
    hard links only, no storage outside the file, no filters, plain types.

    Raises:
        BundleError: naming the file and the object.
    """
    p = Path(path)
    try:
        st = check_regular(p, kind)
    except InputError as err:
        if err.problem == "file not found":
            raise BundleError(f"{p}: no such file") from None
        raise BundleError(str(err)) from None
    try:
        h5 = h5py.File(p, "r")
    except OSError as err:
        raise BundleError(f"{p}: not an HDF5 file ({err})") from err
    with h5:
        # a dataset cannot hold more than its file (fill-value bombs declare huge shapes
        # with no storage); strings are 16-byte heap references
        try:
            _check_structure(p, h5, max(2 * st.st_size, 1 << 20))
        except (OSError, RuntimeError, ValueError, KeyError, TypeError) as err:
            raise BundleError(f"{p}: unreadable HDF5 content ({err})") from None
        yield h5


def read_bundle(path: str | Path) -> BundleData:
    """Read a bundle as untrusted input (module docstring: structure, schema, integrity,
    values) and return its contents.

    Raises:
        BundleError: missing or not a regular file, too large, not HDF5, not an rbc bundle,
            another schema version, links or storage outside the file, a corrupted or
            tampered content, or a dataset of the wrong type, shape or range (the message
            names the file and the object).
    """
    p = Path(path)
    if not p.exists():
        raise BundleError(f"{p}: no such bundle file")
    try:
        with open_hdf5(p, "bundle") as h5:
            data = _read_schema_checked(p, h5)
    except (OSError, RuntimeError, ValueError, KeyError, TypeError) as err:  # h5py/HDF5
        raise BundleError(f"{p}: unreadable HDF5 content ({err})") from None
    return _check_contents(data)


def read_embedded_bundle(raw: bytes, where: str) -> BundleData:
    """Read a bundle embedded as bytes in another file (a member bundle of a composed
    bundle, docs/bundle.md "/composition") with every check of :func:`read_bundle` from
    step 2 on (the bytes were already bounded by the enclosing file); ``where`` names it
    in messages (``FILE:/composition/members/NAME``).

    Raises:
        BundleError: as :func:`read_bundle`.
    """
    p = Path(where)
    try:
        h5 = h5py.File(io.BytesIO(raw), "r")
    except OSError as err:
        raise BundleError(f"{where}: not an HDF5 file ({err})") from None
    try:
        with h5:
            _check_structure(p, h5, max(2 * len(raw), 1 << 20))
            data = _read_schema_checked(p, h5)
    except (OSError, RuntimeError, ValueError, KeyError, TypeError) as err:  # h5py/HDF5
        raise BundleError(f"{where}: unreadable HDF5 content ({err})") from None
    return _check_contents(data)


def _read_schema_checked(p: Path, h5: h5py.File) -> BundleData:
    """Step 3 (schema version), then every value (after the structure check)."""
    meta = h5.get("meta")
    if not isinstance(meta, h5py.Group) or "bundle_schema" not in meta.attrs:
        raise BundleError(f"{p}: not an rbc bundle (no /meta bundle_schema attribute)")
    version = meta.attrs["bundle_schema"]
    if not isinstance(version, (int, np.integer)) or int(version) != BUNDLE_SCHEMA:
        raise BundleError(
            f"{p}: bundle schema {version} is not supported; this rbc reads schema "
            f"{BUNDLE_SCHEMA} — recompile the record with this version of rbc")
    return _read_all(p, h5)


def _check_contents(data: BundleData) -> BundleData:
    """Steps 4–5: integrity (record and content SHA-256), then the value layout."""
    meta = data.attrs.get("/meta", {})
    stored = meta.get(DIGEST_ATTR)
    text = data.text("/record/text")
    if meta.get("record_sha256") != hashlib.sha256(text.encode("utf-8")).hexdigest():
        raise data.error("/record/text", "its SHA-256 differs from /meta@record_sha256")
    if stored != content_digest(data):
        raise data.error("/meta@content_sha256", "the content's SHA-256 differs from the "
                         "stored one")
    check_values(data)
    return data

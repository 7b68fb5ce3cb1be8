"""Read the tensors of a TorchScript archive without PyTorch, and refuse unsafe pickles.

A TorchScript file (``torch.jit.save``) is a zip archive with one top folder ``<p>/``:

* ``<p>/data.pkl`` — a pickle (protocol 2) of the module object graph: each module is a
  ``__torch__.<qualified class>`` object built by NEWOBJ + BUILD from a dict of attributes;
  each tensor is ``torch._utils._rebuild_tensor_v2(storage, offset, size, stride,
  requires_grad, backward_hooks)`` whose ``storage`` is a persistent id
  ``("storage", torch.FloatStorage, key, location, numel)``;
* ``<p>/data/<key>`` — the storages' raw bytes (little-endian, ``<p>/byteorder``);
* ``<p>/code/__torch__/…py`` — the TorchScript source of the methods (read as text only,
  here for constants such as ELU's ``alpha``; never executed);
* ``<p>/constants.pkl``, ``<p>/version`` and debug pickles (not read).

``torch.save`` archives (``<p>/data.pkl`` holding an ``OrderedDict`` state dict) share the
layout and are read the same way. Source: PyTorch ``torch/serialization.py`` and
``torch/csrc/jit/serialization`` (the "TorchScript serialization" notes in the PyTorch
repository, ``torch/csrc/jit/docs/serialization.md``).

Safety: unpickling can call any importable callable (``os.system`` through GLOBAL + REDUCE).
:class:`_RestrictedUnpickler` overrides ``find_class`` — the one place the pickle machine
resolves a global, for GLOBAL, STACK_GLOBAL, INST, OBJ and the EXT opcodes — to return only
objects defined in this module (see :data:`ALLOWED_GLOBALS`); every other global raises
:class:`UnsafePickleError` before anything is called. ``__torch__.*`` classes resolve to
inert record types whose only behaviour is to store the BUILD dict.
"""

from __future__ import annotations

import hashlib
import io
import math
import pickle
import re
import zipfile
import zlib
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rbc.errors import InputError, RbcError
from rbc.safeio import MAX_DEPTH, check_zip, read_bytes

MAX_PICKLE_BYTES = 64 << 20  # data.pkl of a policy is ~1 kB; refuse pathological archives
MAX_STORAGE_BYTES = 1 << 30  # one storage; a policy's largest is ~100 kB


class TorchScriptError(RbcError):
    """A TorchScript archive cannot be read or holds an unsupported network.

    Attributes:
        file: the archive.
        member: the archive member or field concerned ("" for the whole file).
        problem: what is wrong.
    """

    def __init__(self, file: str | Path, member: str, problem: str) -> None:
        self.file = str(file)
        self.member = member
        self.problem = problem
        where = f"{self.file}: {member}" if member else self.file
        super().__init__(f"{where}: {problem}")


class UnsafePickleError(TorchScriptError):
    """The pickle references a global that is not a tensor record (refused, nothing run)."""


# ------------------------------------------------------------------------ safe replacements

_STORAGE_DTYPES = {
    "DoubleStorage": "<f8", "FloatStorage": "<f4", "HalfStorage": "<f2",
    "LongStorage": "<i8", "IntStorage": "<i4", "ShortStorage": "<i2",
    "CharStorage": "i1", "ByteStorage": "u1", "BoolStorage": "?",
}


@dataclass(frozen=True)
class _StorageType:
    """Stands for ``torch.<Name>Storage`` in a persistent id: a dtype, nothing callable."""

    name: str
    dtype: str


@dataclass(frozen=True)
class _Storage:
    """A storage read from ``<p>/data/<key>``: a flat read-only array."""

    key: str
    data: np.ndarray


class TorchModuleRecord:
    """An inert stand-in for a ``__torch__.*`` module object: its attribute dict, nothing else.

    Attributes:
        torch_class: the TorchScript qualified class name (``__torch__.torch.nn…Linear``).
        attrs: the attributes set by the pickle's BUILD (tensors, records, plain values).
    """

    torch_class: str = ""

    def __new__(cls, *args: Any) -> TorchModuleRecord:
        if args:
            raise pickle.UnpicklingError(f"{cls.torch_class}: constructor arguments refused")
        obj = object.__new__(cls)
        obj.attrs = {}
        return obj

    def __init__(self, *args: Any) -> None:  # REDUCE on the class calls cls(*args)
        if args:
            raise pickle.UnpicklingError(f"{self.torch_class}: constructor arguments refused")

    def __setstate__(self, state: Any) -> None:
        if not isinstance(state, dict) or not all(isinstance(k, str) for k in state):
            raise pickle.UnpicklingError(f"{self.torch_class}: state is not an attribute dict")
        self.attrs = dict(state)

    def __repr__(self) -> str:
        return f"<{self.torch_class} {sorted(self.attrs)}>"


_RECORD_TYPES: dict[str, type] = {}
_QUALNAME = re.compile(r"^__torch__(\.[A-Za-z_][A-Za-z0-9_]*)+$")


def _record_type(qualname: str) -> type:
    """The (cached) inert record type for one ``__torch__`` class name."""
    if qualname not in _RECORD_TYPES:
        _RECORD_TYPES[qualname] = type("TorchModuleRecord", (TorchModuleRecord,),
                                       {"torch_class": qualname, "__slots__": ()})
    return _RECORD_TYPES[qualname]


def _rebuild_tensor(storage: Any, offset: Any, size: Any, stride: Any, requires_grad: Any = False,
                    backward_hooks: Any = None, metadata: Any = None) -> np.ndarray:
    """Safe ``torch._utils._rebuild_tensor_v2``: a strided view of a storage, bounds-checked.

    Returns:
        a read-only array of shape ``size`` copied out of the storage.
    """
    if not isinstance(storage, _Storage):
        raise pickle.UnpicklingError("tensor record without a storage")
    ok = isinstance(size, tuple) and isinstance(stride, tuple)
    ints = (offset, *size, *stride) if ok else None
    if ints is None or len(size) != len(stride) or not all(
            isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in ints):
        raise pickle.UnpicklingError("tensor record with invalid offset, size or stride")
    flat = storage.data
    if 0 in size:
        out = np.zeros(size, dtype=flat.dtype)
    else:
        last = offset + sum((n - 1) * s for n, s in zip(size, stride, strict=True))
        if last >= flat.size:
            raise pickle.UnpicklingError(
                f"tensor of size {size} stride {stride} offset {offset} overruns storage "
                f"{storage.key} of {flat.size} elements")
        if math.prod(size) > flat.size:  # overlapping strides would let a tiny storage expand
            raise pickle.UnpicklingError(
                f"tensor of size {size} has more elements than its storage {storage.key} "
                f"({flat.size}); overlapping (expanded) tensors are not supported")
        index = offset + sum(np.arange(n).reshape((-1,) + (1,) * (len(size) - 1 - d)) * s
                             for d, (n, s) in enumerate(zip(size, stride, strict=True)))
        out = flat[np.asarray(index, dtype=np.int64)]
    out = np.array(out, copy=True)
    out.setflags(write=False)
    return out


def _rebuild_parameter(data: Any, requires_grad: Any = False, backward_hooks: Any = None) -> Any:
    """Safe ``torch._utils._rebuild_parameter``: an ``nn.Parameter`` is its tensor."""
    if not isinstance(data, np.ndarray):
        raise pickle.UnpicklingError("parameter record without a tensor")
    return data


def _restore_type_tag(value: Any, type_str: Any) -> Any:
    """Safe ``torch.jit._pickle.restore_type_tag``: the type tag is dropped."""
    return value


def _build_list(items: Any) -> list:
    """Safe ``torch.jit._pickle.build_{tensor,int,double,bool}list``."""
    return list(items)


ALLOWED_GLOBALS: dict[tuple[str, str], Callable[..., Any] | type] = {
    ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor,
    ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
    ("collections", "OrderedDict"): OrderedDict,
    ("torch.jit._pickle", "restore_type_tag"): _restore_type_tag,
    ("torch.jit._pickle", "build_tensorlist"): _build_list,
    ("torch.jit._pickle", "build_intlist"): _build_list,
    ("torch.jit._pickle", "build_doublelist"): _build_list,
    ("torch.jit._pickle", "build_boollist"): _build_list,
}
"""The globals a tensor-record pickle may name, mapped to this module's safe versions.

Besides these: ``torch.<X>Storage`` for the storage types of :data:`_STORAGE_DTYPES` (inert
dtype markers) and ``__torch__.*`` class names (inert :class:`TorchModuleRecord` types)."""


class _RestrictedUnpickler(pickle.Unpickler):
    """Unpickler that resolves only :data:`ALLOWED_GLOBALS` and reads storages from the zip."""

    def __init__(self, data: bytes, archive: zipfile.ZipFile, prefix: str, file: str) -> None:
        super().__init__(io.BytesIO(data))
        self._zip = archive
        self._prefix = prefix
        self._file = file
        self._storages: dict[str, _Storage] = {}

    def find_class(self, module: str, name: str) -> Any:
        safe = ALLOWED_GLOBALS.get((module, name))
        if safe is not None:
            return safe
        if module == "torch" and name in _STORAGE_DTYPES:
            return _StorageType(name, _STORAGE_DTYPES[name])
        qual = f"{module}.{name}"
        if module.startswith("__torch__.") and not name.startswith("_") and _QUALNAME.match(qual):
            return _record_type(qual)
        raise UnsafePickleError(
            self._file, f"{self._prefix}data.pkl",
            f"refusing global '{module}.{name}': only tensor records are accepted "
            f"(torch._utils._rebuild_tensor_v2, torch.<X>Storage, collections.OrderedDict, "
            f"torch.jit._pickle list/type tags, __torch__.* module records); nothing was run")

    def persistent_load(self, pid: Any) -> _Storage:
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"
                and isinstance(pid[1], _StorageType) and isinstance(pid[2], str)
                and re.fullmatch(r"[A-Za-z0-9_]+", pid[2]) and isinstance(pid[4], int)):
            raise UnsafePickleError(self._file, f"{self._prefix}data.pkl",
                                    f"unsupported persistent id {pid!r}")
        _, stype, key, _location, numel = pid
        if key in self._storages:
            return self._storages[key]
        member = f"{self._prefix}data/{key}"
        try:
            info = self._zip.getinfo(member)
        except KeyError:
            raise TorchScriptError(self._file, member,
                                   "storage missing from the archive") from None
        itemsize = np.dtype(stype.dtype).itemsize
        if info.file_size > MAX_STORAGE_BYTES or numel * itemsize > info.file_size:
            raise TorchScriptError(self._file, member,
                                   f"{info.file_size} bytes cannot hold {numel} {stype.name} "
                                   f"elements (limit {MAX_STORAGE_BYTES} bytes)")
        raw = self._zip.read(member)
        data = np.frombuffer(raw, dtype=stype.dtype, count=numel).copy()
        data.setflags(write=False)
        self._storages[key] = _Storage(key, data)
        return self._storages[key]


# ---------------------------------------------------------------------------------- archive


@dataclass(frozen=True)
class TorchArchive:
    """What was read from a TorchScript (or ``torch.save``) archive.

    Attributes:
        file: the archive path.
        sha256: SHA-256 of the archive bytes (hex).
        root: the unpickled object graph (records, dicts, arrays).
        tensors: state-dict names (``memory.weight_ih_l0``, ``actor.0.weight``…) to arrays,
            in the file's dtype (float32 for the Unitree policies).
        classes: module path ("" for the root, ``actor.0``…) to TorchScript class name.
        code: ``code/…py`` member name to its text (never executed).
    """

    file: str
    sha256: str
    root: Any
    tensors: dict[str, np.ndarray]
    classes: dict[str, str]
    code: dict[str, str]


def _flatten(obj: Any, prefix: str, tensors: dict, classes: dict, seen: set) -> None:
    """Collect tensors and module classes under dotted names (lists are not followed: they
    only repeat tensors, e.g. LSTM ``_flat_weights``). Iterative, in document order, and
    refusing nesting deeper than :data:`rbc.safeio.MAX_DEPTH` (a recursion bomb)."""
    stack: list[tuple[Any, str, int]] = [(obj, prefix, 0)]
    while stack:
        node, name, depth = stack.pop()
        if id(node) in seen:
            continue
        if isinstance(node, TorchModuleRecord):
            seen.add(id(node))
            classes[name] = node.torch_class
            items = node.attrs.items()
        elif isinstance(node, dict):
            seen.add(id(node))
            items = node.items()
        else:
            continue
        if depth > MAX_DEPTH:
            raise pickle.UnpicklingError(f"module records nested deeper than {MAX_DEPTH}")
        later = []
        for key, value in items:
            sub = f"{name}.{key}" if name else str(key)
            if isinstance(value, np.ndarray):
                tensors[sub] = value
            else:
                later.append((value, sub, depth + 1))
        stack.extend(reversed(later))


def _read_archive(archive: zipfile.ZipFile, file: str) -> tuple[Any, dict[str, str], str, str]:
    """The unpickled root, the code members, the folder prefix and the data.pkl name."""
    with archive:
        check_zip(archive, file, "policy")
        pkls = [n for n in archive.namelist() if re.fullmatch(r"[^/]+/data\.pkl", n)]
        if len(pkls) != 1:
            raise TorchScriptError(file, "", f"expected one '<folder>/data.pkl', found {pkls}")
        prefix = pkls[0][: -len("data.pkl")]
        order = prefix + "byteorder"
        if order in archive.namelist() and archive.read(order).strip() != b"little":
            raise TorchScriptError(file, order, "only little-endian archives are supported")
        info = archive.getinfo(pkls[0])
        if info.file_size > MAX_PICKLE_BYTES:
            raise TorchScriptError(file, pkls[0], f"{info.file_size} bytes is too large")
        unpickler = _RestrictedUnpickler(archive.read(pkls[0]), archive, prefix, file)
        try:
            root = unpickler.load()
        except TorchScriptError:
            raise
        except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError,
                IndexError, KeyError, OverflowError, zipfile.BadZipFile) as err:
            raise TorchScriptError(file, pkls[0], f"malformed tensor pickle: {err}") from None
        except RecursionError:
            raise TorchScriptError(file, pkls[0], "tensor pickle nested too deeply") from None
        code = {}
        for name in archive.namelist():
            if name.startswith(prefix + "code/") and name.endswith(".py"):
                code[name[len(prefix):]] = archive.read(name).decode("utf-8", "replace")
    return root, code, prefix, pkls[0]


def read_torchscript(path: str | Path) -> TorchArchive:
    """Read the module graph and tensors of a TorchScript archive, without torch.

    Args:
        path: the ``.pt`` file.

    Returns:
        The archive contents.

    Raises:
        TorchScriptError: not a zip, no ``data.pkl``, a missing or short storage, big-endian.
        UnsafePickleError: ``data.pkl`` names a global that is not a tensor record.
    """
    path = Path(path)
    file = str(path)
    try:
        raw = read_bytes(path, "policy")
    except InputError as err:
        raise TorchScriptError(file, "", err.problem + (f"; expected {err.expected}"
                                                        if err.expected else "")) from None
    try:
        archive = zipfile.ZipFile(io.BytesIO(raw))
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, OSError):
        raise TorchScriptError(file, "", "not a zip archive (TorchScript and torch.save "
                               "archives are zips; legacy pickles are not read)") from None
    try:
        root, code, prefix, pkl = _read_archive(archive, file)
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError) as err:
        raise TorchScriptError(file, "", f"corrupt archive: {err}") from None
    tensors: dict[str, np.ndarray] = {}
    classes: dict[str, str] = {}
    try:
        _flatten(root, "", tensors, classes, set())
    except pickle.UnpicklingError as err:
        raise TorchScriptError(file, pkl, f"malformed tensor pickle: {err}") from None
    return TorchArchive(file, hashlib.sha256(raw).hexdigest(), root, tensors, classes, code)


# ------------------------------------------------------------------ archive → PolicyNetwork

_ACTIVATION_CLASSES = {"ELU": "elu", "ReLU": "relu", "Tanh": "tanh", "Identity": "identity"}


def _class_constant(archive: TorchArchive, qualname: str, name: str) -> str | None:
    """A ``Final`` constant of a TorchScript class, read from its source text (not run)."""
    module, cls = qualname.rsplit(".", 1)
    text = archive.code.get("code/" + module.replace(".", "/") + ".py")
    if text is None:
        return None
    block = re.search(rf"^class {re.escape(cls)}\(.*?(?=^class |\Z)", text, re.S | re.M)
    if block is None:
        return None
    m = re.search(rf"^\s+{re.escape(name)}\s*:\s*Final\[\w+\]\s*=\s*(\S+)\s*$",
                  block.group(0), re.M)
    return m.group(1) if m else None


def network_from_archive(archive: TorchArchive, activation: str | None = None):
    """Build the :class:`~rbc.policy.runner.PolicyNetwork` (without contract) of an archive.

    Recognised: at most one single-layer, unidirectional LSTM (``<m>.weight_ih_l0``,
    ``weight_hh_l0``, ``bias_ih_l0``, ``bias_hh_l0``) feeding a ``Sequential`` of ``Linear``
    layers and ``ELU``/``ReLU``/``Tanh`` activations (named ``actor`` in rsl_rl exports).

    Args:
        archive: from :func:`read_torchscript`.
        activation: hidden-layer activation for a plain state dict without module classes
            (TorchScript archives name theirs; this must then be None or agree).

    Raises:
        TorchScriptError: an unsupported architecture (names the tensor or module).
    """
    from rbc.policy.runner import ACTIVATIONS, DenseLayer, LSTMBlock, PolicyNetwork

    file, t = archive.file, archive.tensors
    f64 = {k: np.asarray(v, dtype=np.float64) for k, v in t.items()}
    lstm_prefixes = sorted(k[: -len("weight_ih_l0")] for k in t if k.endswith("weight_ih_l0"))
    if len(lstm_prefixes) > 1:
        raise TorchScriptError(file, ", ".join(lstm_prefixes),
                               "more than one LSTM is not supported")
    lstm = None
    if lstm_prefixes:
        lstm = _lstm_block(file, f64, lstm_prefixes[0], LSTMBlock)

    # the dense chain: Linear layers "<seq>.<k>.weight" with optional activation modules
    linear = re.compile(r"(?:(.*)\.)?(\d+)\.weight")
    seqs = sorted({m.group(1) or "" for k in t if (m := linear.fullmatch(k))
                   and not k.startswith(tuple(lstm_prefixes))})
    if len(seqs) > 1:
        seqs = [s for s in seqs if s == "actor"] or seqs
    if len(seqs) != 1:
        raise TorchScriptError(file, ", ".join(seqs), "expected one Sequential of Linear "
                               "layers ('<name>.<k>.weight'), or one named 'actor'")
    seq = seqs[0]
    dot = f"{seq}." if seq else ""
    indices = {int(m.group(2)) for k in t
               if (m := linear.fullmatch(k)) and (m.group(1) or "") == seq}
    children = {int(k[len(dot):]): v for k, v in archive.classes.items()
                if k.startswith(dot) and k[len(dot):].isdigit()}
    layers: list[list] = []  # [name, weight, bias, activation, alpha]
    for k in sorted(indices | set(children)):
        name = f"{dot}{k}"
        cls = children.get(k, "")
        short = cls.rsplit(".", 1)[-1]
        if k in indices:
            if cls and short != "Linear":
                raise TorchScriptError(file, name, f"module {cls} with a weight is not a Linear")
            if name + ".bias" not in f64:
                raise TorchScriptError(file, name + ".bias",
                                       "bias-free Linear layers are not supported")
            w, b = f64[name + ".weight"], f64[name + ".bias"]
            if w.ndim != 2 or b.ndim != 1:
                raise TorchScriptError(file, name + ".weight", f"shape {w.shape} (bias "
                                       f"{b.shape}) is not a matrix and a vector")
            _finite(file, name, w, b)
            layers.append([name, w, b, "identity", 1.0])
        elif short in _ACTIVATION_CLASSES:
            if not layers or layers[-1][3] != "identity":
                raise TorchScriptError(file, name,
                                       f"activation {short} does not follow a Linear layer")
            layers[-1][3] = _ACTIVATION_CLASSES[short]
            if short == "ELU":
                alpha = _class_constant(archive, cls, "alpha")
                try:
                    layers[-1][4] = float(alpha) if alpha is not None else 1.0
                except ValueError:
                    raise TorchScriptError(file, name, f"unreadable ELU alpha {alpha!r}") from None
                if not np.isfinite(layers[-1][4]):
                    raise TorchScriptError(file, name, f"non-finite ELU alpha {alpha!r}")
        else:
            raise TorchScriptError(file, name, f"unsupported module {cls or '?'}; supported: "
                                   "Linear, " + ", ".join(_ACTIVATION_CLASSES))
    hidden = [layer[3] for layer in layers[:-1]]
    if not children:  # a plain state dict: no module classes to read activations from
        if activation is None:
            raise TorchScriptError(file, seq, "a plain state dict does not name its "
                                   "activations; pass one of " + ", ".join(ACTIVATIONS))
        for layer in layers[:-1]:
            layer[3] = activation
    elif activation is not None and any(a != activation for a in hidden):
        raise TorchScriptError(file, seq,
                               f"the archive's activations {hidden} disagree with {activation!r}")

    width = lstm.hidden_size if lstm is not None else layers[0][1].shape[1]
    for name, w, b, _, _ in layers:
        if w.ndim != 2 or w.shape[1] != width or b.shape != (w.shape[0],):
            raise TorchScriptError(file, name + ".weight", f"shape {w.shape} (bias {b.shape}) "
                                   f"does not take {width} inputs")
        width = w.shape[0]
    dense = tuple(DenseLayer(w, b, act, a) for _, w, b, act, a in layers)
    n_obs = lstm.input_size if lstm is not None else dense[0].weight.shape[1]
    state = {k: float(np.max(np.abs(v))) if v.size else 0.0 for k, v in f64.items()
             if k in ("hidden_state", "cell_state")}
    source = {
        "file": Path(file).name,
        "sha256": archive.sha256,
        "root_class": archive.classes.get("", "state_dict"),
        "tensors": {k: list(v.shape) for k, v in t.items()},
        "stored_state_max_abs": state,  # the exporter's h/c buffers; the runner starts at 0
    }
    return PolicyNetwork(int(n_obs), int(width), lstm, dense, None, source)


def _lstm_block(file: str, f64: dict[str, np.ndarray], p: str, block_type: type):
    """The single-layer LSTM under prefix ``p`` (``memory.`` in rsl_rl exports)."""
    extra = [k for k in f64 if k.startswith(p)
             and re.search(r"(_l[1-9]\d*|_reverse|weight_hr)", k)]
    if extra:
        raise TorchScriptError(file, extra[0], "stacked, bidirectional or projected LSTMs "
                                               "are not supported (one layer only)")
    try:
        block = block_type(f64[p + "weight_ih_l0"], f64[p + "weight_hh_l0"],
                           f64[p + "bias_ih_l0"], f64[p + "bias_hh_l0"])
    except KeyError as err:
        raise TorchScriptError(file, str(err.args[0]), "LSTM tensor missing (a bias-free "
                                                       "LSTM is not supported)") from None
    H4 = 4 * block.weight_hh.shape[1] if block.weight_hh.ndim == 2 else -1
    if (block.weight_ih.ndim != 2 or block.weight_ih.shape[0] != H4
            or block.weight_hh.shape[0] != H4 or block.bias_ih.shape != (H4,)
            or block.bias_hh.shape != (H4,)):
        raise TorchScriptError(file, p + "weight_ih_l0",
                               "LSTM tensor shapes are inconsistent (expected 4H rows)")
    _finite(file, p.rstrip("."), block.weight_ih, block.weight_hh, block.bias_ih,
            block.bias_hh)
    return block


def _finite(file: str, name: str, *arrays: np.ndarray) -> None:
    """Refuse NaN or infinite weights (they would poison every action silently)."""
    if not all(np.all(np.isfinite(a)) for a in arrays):
        raise TorchScriptError(file, name, "non-finite weights (NaN or inf)")

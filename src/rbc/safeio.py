"""Untrusted input and all-or-nothing output: the one place every reader and writer uses.

Every file rbc reads may be hostile, and every file it writes must appear whole or not at
all. The mechanisms (docs/architecture.md, "Untrusted files and outputs"):

* **Regular files only, size-limited** (:func:`read_bytes`, :func:`read_text`,
  :func:`check_regular`): devices, FIFOs, sockets and directories are refused before a byte
  is read; each kind of input has a size limit (:data:`SIZE_LIMITS`) that the user can
  raise for a genuine large file (``rbc --limit KIND=SIZE …``, :func:`set_size_limit`).
* **Budgeted decoders**: :func:`load_yaml` (the one safe YAML loader: plain data only,
  duplicate keys and merge keys that hide a field refused, alias expansion and nesting
  depth bounded on the node graph before any object is built), :func:`load_json`
  (nesting depth bounded) and :func:`check_zip` (member count, size and compression
  ratio bounded before anything is inflated).
* **Outputs**: :func:`atomic_write` / :func:`atomic_write_text` (temporary file in the
  target directory, then rename), :func:`atomic_directory` (a temporary sibling directory
  renamed into place; an existing target is replaced only if rbc wrote it), stale
  temporaries of killed runs removed by the next write to the same target
  (:func:`clean_stale`), the several outputs of one command renamed into place together
  (:func:`staged_outputs`), no device, FIFO or socket ever replaced
  (:func:`check_writable_target`), :func:`check_outputs` (no output may be an input, another output,
  or inside a directory output), :func:`safe_basename` (names from file content never
  become paths).
* **Numbers from the command line**: :func:`check_number` (finite, in range, the option
  named) and :func:`named_values` (``NAME=VALUE`` lists, each name once).

All failures raise :class:`rbc.errors.RbcError` subclasses (exit status 2) naming the file
and, where there is one, the field.
"""

from __future__ import annotations

import ctypes
import gc
import json
import math
import os
import re
import secrets
import shutil
import stat
import zipfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from rbc.errors import InputError, UsageError

KIB, MIB, GIB = 1 << 10, 1 << 20, 1 << 30

# ------------------------------------------------------------------------------ size limits

#: Largest accepted file per kind of input [bytes] (docs/cli.md, "Limits"). Each is far
#: above every shipped or vendored file of its kind (the 10 000-loop benchmark record is
#: 9.5 MB, the largest vendored MJCF 0.2 MB, the largest TorchScript policy 0.8 MB) and far
#: below what would exhaust memory once decoded.
SIZE_LIMITS: dict[str, int] = {
    "record": 32 * MIB,        # physical record (YAML)
    "model": 64 * MIB,         # MJCF / URDF being imported or read back
    "sidecar": 4 * MIB,        # URDF loops sidecar, Pinocchio constraints.yaml
    "reference": 64 * MIB,     # reference motion (CSV / YAML)
    "config": 1 * MIB,         # deployment config (YAML)
    "composition": 1 * MIB,    # composition file (YAML, `rbc compose`)
    "policy": 256 * MIB,       # TorchScript archive, policy JSON
    "observations": 1 * GIB,   # observation arrays (npz)
    "bundle": 2 * GIB,         # compiled bundle (HDF5)
    "log": 2 * GIB,            # simulation log read back (HDF5, `rbc view --log`)
}
_overrides: dict[str, int] = {}

#: Aliases may add at most this many nodes (or as many as the document has, whichever is
#: larger) to a YAML document's expanded tree: anchors for shared inertia blocks are fine,
#: an alias tree of 9⁹ leaves is not.
YAML_ALIAS_BUDGET = 100_000
#: Deepest accepted nesting of a YAML or JSON document (records nest 6 deep).
MAX_DEPTH = 64

#: Zip archives (TorchScript, npz): at most this many members, each inflating to at most
#: the archive kind's size limit, and none inflating by more than this ratio unless it is
#: small (deflate of real weights is ~1.1:1, of an all-zero array ~1000:1).
ZIP_MAX_MEMBERS = 10_000
ZIP_MAX_RATIO = 200.0
ZIP_RATIO_FLOOR = 4 * MIB  # members inflating to less than this are exempt from the ratio


def size_limit(kind: str) -> int:
    """The size limit [bytes] of ``kind`` (a key of :data:`SIZE_LIMITS`), with overrides."""
    return _overrides.get(kind, SIZE_LIMITS[kind])


def set_size_limit(kind: str, nbytes: int) -> None:
    """Override the limit of ``kind`` for this process (``rbc --limit KIND=SIZE``).

    Raises:
        UsageError: unknown kind or a non-positive size.
    """
    if kind not in SIZE_LIMITS:
        raise UsageError(f"--limit {kind}: unknown kind of input; valid choices: "
                         + ", ".join(SIZE_LIMITS))
    if nbytes <= 0:
        raise UsageError(f"--limit {kind}: the size must be positive")
    _overrides[kind] = int(nbytes)


def reset_size_limits() -> None:
    """Drop every override (each command-line run starts from the defaults)."""
    _overrides.clear()


_SIZE = re.compile(r"\s*([0-9]+(?:\.[0-9]*)?)\s*([kmgt]?)(?:i?b)?\s*", re.IGNORECASE)


def parse_size(text: str, option: str = "--limit") -> int:
    """``"64M"``, ``"1.5GiB"``, ``"4096"`` → bytes (binary multiples).

    Raises:
        UsageError: not a size.
    """
    m = _SIZE.fullmatch(text)
    if not m:
        raise UsageError(f"{option} '{text}': expected a size such as 4096, 64M or 2G")
    scale = {"": 1, "k": KIB, "m": MIB, "g": GIB, "t": 1 << 40}[m.group(2).lower()]
    return int(float(m.group(1)) * scale)


def _human(nbytes: int) -> str:
    for unit, size in (("GiB", GIB), ("MiB", MIB), ("KiB", KIB)):
        if nbytes >= size:
            return f"{nbytes / size:.4g} {unit}"
    return f"{nbytes} bytes"


def _too_large(file: str | Path, kind: str, nbytes: int | None, what: str = "",
               cap: int | None = None) -> InputError:
    cap = size_limit(kind) if cap is None else cap
    size = f" ({_human(nbytes)})" if nbytes is not None else ""
    return InputError(file, "", f"{what or 'the file'}{size} exceeds the {kind} size limit of "
                      f"{_human(cap)}", expected=f"a smaller file, or `rbc --limit {kind}=SIZE "
                      "…` if it is genuine")


# ------------------------------------------------------------------------------ reading


def _file_kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def _os_problem(err: OSError) -> str:
    if isinstance(err, FileNotFoundError):
        return "file not found"
    if isinstance(err, PermissionError):
        return "permission denied"
    return f"cannot read: {err.strerror or err}"


def check_regular(path: str | Path, kind: str, *, limit: int | None = None) -> os.stat_result:
    """Check that ``path`` is a regular file within the size limit of ``kind``.

    Symbolic links given by the user are followed (the user named them); what they point
    to must be a regular file.

    Returns:
        The file's ``os.stat`` result.

    Raises:
        InputError: missing, unreadable, not a regular file (device, FIFO, socket,
            directory), or larger than the limit.
    """
    try:
        st = os.stat(path)
    except OSError as err:
        raise InputError(path, "", _os_problem(err)) from None
    if not stat.S_ISREG(st.st_mode):
        raise InputError(path, "", f"is {_file_kind(st.st_mode)}; rbc reads regular files only")
    cap = size_limit(kind) if limit is None else limit
    if st.st_size > cap:
        raise _too_large(path, kind, st.st_size, cap=cap)
    return st


def read_bytes(path: str | Path, kind: str, *, limit: int | None = None) -> bytes:
    """The content of a regular file of at most the size limit of ``kind``.

    The file is opened non-blocking (a FIFO swapped in after the check cannot hang the
    reader), checked again on the open descriptor, and read up to the limit + 1 byte (a
    file growing while read is refused too).

    Raises:
        InputError: as :func:`check_regular`.
    """
    cap = size_limit(kind) if limit is None else limit
    check_regular(path, kind, limit=cap)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags | getattr(os, "O_CLOEXEC", 0))
    except OSError as err:
        raise InputError(path, "", _os_problem(err)) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise InputError(path, "", f"is {_file_kind(st.st_mode)}; rbc reads regular files "
                             "only")
        chunks, total = [], 0
        while total <= cap:
            chunk = os.read(fd, min(cap + 1 - total, 16 * MIB))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    except OSError as err:
        raise InputError(path, "", _os_problem(err)) from None
    finally:
        os.close(fd)
    if total > cap:
        raise _too_large(path, kind, None, "the file (grown while read)", cap)
    return b"".join(chunks)


def read_text(path: str | Path, kind: str, *, limit: int | None = None) -> str:
    """:func:`read_bytes` decoded as UTF-8 (a BOM is dropped).

    Raises:
        InputError: as :func:`read_bytes`, or the bytes are not UTF-8.
    """
    data = read_bytes(path, kind, limit=limit)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise InputError(path, "", f"not UTF-8 text (byte {err.start}: {err.reason})") from None


# ------------------------------------------------------------------------------ YAML

ErrorFactory = Callable[..., Exception]


def _join(path: str, key: object) -> str:
    return f"{path}.{key}" if path else str(key)


class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """``yaml.safe_load`` semantics (SafeConstructor: plain data only), LibYAML-accelerated
    when PyYAML was built with it (pure-Python PyYAML costs ~20 ms per four-bar loop).

    The implicit tag of a scalar is a function of its text and style alone (the safe loader
    has no path resolvers), so :meth:`resolve` remembers it per document: a record repeats
    the same few hundred scalars (``0``, ``revolute``, ``1.0``) tens of thousands of times."""

    def resolve(self, kind, value, implicit):  # noqa: D102 (BaseResolver.resolve)
        if self.yaml_path_resolvers:  # never for the safe loader; kept exact if ever set
            return super().resolve(kind, value, implicit)
        memo = self.__dict__.setdefault("_resolved", {})
        key = (kind, value, implicit)
        tag = memo.get(key)
        if tag is None:
            tag = memo[key] = super().resolve(kind, value, implicit)
        return tag


class _NotPlain(Exception):
    """A node :func:`_construct` leaves to PyYAML's constructor (merge keys, tags beyond
    str/int/float/bool/null/map/seq, unhashable keys)."""


_STR, _INT, _FLOAT = ("tag:yaml.org,2002:str", "tag:yaml.org,2002:int",
                      "tag:yaml.org,2002:float")
_BOOL, _NULL = "tag:yaml.org,2002:bool", "tag:yaml.org,2002:null"
_MAP, _SEQ = "tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"
#: Scalars whose value Python's int() / float() reads exactly as SafeConstructor does
#: (no '_', no base prefix or leading zero — octal in YAML 1.1 —, no sexagesimal, no .inf).
_PLAIN_INT = re.compile(r"[-+]?(?:0|[1-9][0-9]*)\Z")
_PLAIN_FLOAT = re.compile(r"[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?\Z")


def _construct(loader: yaml.BaseLoader, root: yaml.Node) -> Any:
    """The data of a checked node graph, as ``loader.construct_document`` builds it, for
    plain records (a third of its time: no per-node generator and dispatch); raises
    :class:`_NotPlain` for anything else. One object per node (aliases share it)."""
    done: dict[int, Any] = {}
    bools = loader.bool_values

    def build(node: yaml.Node) -> Any:
        key = id(node)
        if key in done:
            return done[key]
        tag = node.tag
        if type(node) is yaml.ScalarNode:
            value = node.value
            if tag == _STR:
                out = value
            elif tag == _INT and _PLAIN_INT.match(value):
                out = int(value)
            elif tag == _FLOAT and _PLAIN_FLOAT.match(value):
                out = float(value)
            elif tag == _BOOL and value.lower() in bools:
                out = bools[value.lower()]
            elif tag == _NULL:
                out = None
            else:
                raise _NotPlain
        elif type(node) is yaml.SequenceNode and tag == _SEQ:
            out = [build(kid) for kid in node.value]
        elif type(node) is yaml.MappingNode and tag == _MAP:
            out = {}
            for k, v in node.value:
                if k.tag == _MERGE_TAG or type(k) is not yaml.ScalarNode:
                    raise _NotPlain  # merges, and collections as keys (unhashable)
                out[build(k)] = build(v)
        else:
            raise _NotPlain
        done[key] = out
        return out

    return build(root)


_MERGE_TAG = "tag:yaml.org,2002:merge"


def _where(link: tuple | None) -> str:
    """The YAML path of a linked ``(key, parent_link)`` chain (built only for messages)."""
    parts: list[str] = []
    while link is not None:
        parts.append(link[0])
        link = link[1]
    out = ""
    for part in reversed(parts):
        out = out + part if part.startswith("[") else _join(out, part)
    return out


def _merged_keys(node: yaml.MappingNode, file: str, error: ErrorFactory, where: tuple | None,
                 memo: dict[int, dict[str, int]]) -> dict[str, int]:
    """Key → line of every key a mapping provides (its own and those it merges); refuses
    duplicates and merge keys (``<<``) whose fields are given again."""
    if id(node) in memo:
        return memo[id(node)]
    own: dict[str, int] = {}
    merged: list[tuple[int, dict[str, int]]] = []
    for k, v in node.value:
        line = k.start_mark.line + 1
        if k.tag == _MERGE_TAG:
            sources = v.value if isinstance(v, yaml.SequenceNode) else [v]
            for src in sources:
                if not isinstance(src, yaml.MappingNode):
                    raise error(file, _where(where), f"merge key '<<' (line {line}) takes a "
                                "mapping or a list of mappings")
                merged.append((line, _merged_keys(src, file, error, where, memo)))
            continue
        name = str(k.value)
        if name in own:
            raise error(file, _where(where), f"duplicate key '{name}' (line {line})",
                        expected="each key once per mapping (names must be unique)")
        own[name] = line
    keys = dict(own)
    for line, provided in merged:
        for name in provided:
            if name in keys:
                raise error(file, _join(_where(where), name), f"key '{name}' is given twice "
                            f"through the merge key '<<' (line {line}); a merge must not hide "
                            "a field", expected="each field once (write it out instead of "
                            "overriding a merged one)")
            keys[name] = line
    memo[id(node)] = keys
    return keys


def _check_graph(root: yaml.Node, file: str, error: ErrorFactory) -> None:
    """Check a composed YAML node graph before anything is constructed.

    Refuses recursive aliases, alias expansion beyond the budget, nesting deeper than
    :data:`MAX_DEPTH`, duplicate mapping keys (``safe_load`` keeps the last silently) and
    merge keys that hide a field. One iterative post-order walk over the distinct
    collection nodes (scalars are counted from their parents): the expanded size and depth
    of a node come from its children's, so a billion-laughs document is measured in time
    linear in its text.
    """
    scalar = yaml.ScalarNode
    size: dict[int, int] = {}
    depth: dict[int, int] = {}
    on_stack: set[int] = set()
    merges: dict[int, dict[str, int]] = {}
    slots = 0  # node references in the composed graph (each distinct parent's children)
    stack: list[tuple[yaml.Node, tuple | None, bool]] = [(root, None, False)]

    def recursive(node: yaml.Node) -> Exception:
        return error(file, "", f"recursive YAML alias (line {node.start_mark.line + 1})",
                     expected="plain data without self-referencing anchors")

    if isinstance(root, scalar):
        return
    while stack:
        node, where, leaving = stack.pop()
        key = id(node)
        if leaving:
            kids = [n for kv in node.value for n in kv] if isinstance(
                node, yaml.MappingNode) else node.value
            total, deepest = 1, 1
            for kid in kids:
                if type(kid) is scalar:
                    total += 1
                else:
                    total += size[id(kid)]
                    deepest = max(deepest, depth[id(kid)] + 1)
            size[key], depth[key] = total, deepest
            slots += 1 + len(kids)
            on_stack.discard(key)
            continue
        if key in size:
            continue
        if key in on_stack:
            raise recursive(node)
        on_stack.add(key)
        stack.append((node, where, True))
        if isinstance(node, yaml.MappingNode):
            if any(k.tag == _MERGE_TAG for k, _ in node.value):
                _merged_keys(node, file, error, where, merges)
            else:  # the common case, without the merge bookkeeping
                names: set[str] = set()
                for k, _ in node.value:
                    name = str(k.value)
                    if name in names:
                        raise error(file, _where(where), f"duplicate key '{name}' (line "
                                    f"{k.start_mark.line + 1})", expected="each key once per "
                                    "mapping (names must be unique)")
                    names.add(name)
            pairs = [(v, (str(k.value), where)) for k, v in node.value if type(v) is not scalar]
            pairs += [(k, where) for k, _ in node.value if type(k) is not scalar]
        else:
            pairs = [(v, (f"[{i}]", where)) for i, v in enumerate(node.value)
                     if type(v) is not scalar]
        for kid, link in pairs:
            if id(kid) in on_stack:
                raise recursive(kid)
            if id(kid) not in size:
                stack.append((kid, link, False))
    expanded = size[id(root)]
    budget = slots + max(YAML_ALIAS_BUDGET, slots)
    if expanded > budget:
        raise error(file, "", f"YAML aliases expand the document to {expanded} nodes, beyond "
                    f"the budget of {budget} for its {slots} written nodes",
                    expected="a document without alias bombs")
    if depth[id(root)] + 1 > MAX_DEPTH:
        raise error(file, "", f"YAML nesting depth {depth[id(root)] + 1} exceeds {MAX_DEPTH}",
                    expected=f"at most {MAX_DEPTH} nested levels")


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a reader allocates millions of acyclic
    objects (nodes, dicts, frozen records): its repeated full collections over the growing
    heap made composing a 10 000-loop record superlinear (5.4 s → 0.9 s at 4000 loops)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _no_aliases(root: yaml.Node, file: str, error: ErrorFactory) -> None:
    """Refuse any node reached twice (an alias), for formats that allow none."""
    seen: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            raise error(file, "", f"YAML aliases are not allowed in this file (line "
                        f"{node.start_mark.line + 1})")
        seen.add(id(node))
        stack.extend(_kids(node))


def _kids(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [n for kv in node.value for n in kv]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def load_yaml(text: str | bytes, file: str | Path, *, error: ErrorFactory = InputError,
              aliases: bool = True) -> Any:
    """Decode one YAML document as plain data (``yaml.safe_load`` semantics), safely.

    The document is composed once into its node graph, which is checked before any object
    is built: recursive aliases, alias expansion beyond :data:`YAML_ALIAS_BUDGET`, nesting
    deeper than :data:`MAX_DEPTH`, duplicate mapping keys and merge keys (``<<``) that hide
    a field are refused; then the graph is constructed with the SafeConstructor (no tags
    beyond plain YAML types).

    Args:
        text: the document.
        file: the file name for messages.
        error: factory ``error(file, path, problem, expected=…)`` of the exception raised
            (default :class:`~rbc.errors.InputError`; the record reader passes RecordError).
        aliases: False refuses every alias (formats that have no use for them).

    Returns:
        The data (None for an empty document).

    Raises:
        ``error``: any of the above, or a YAML syntax error (with line and column).
    """
    file = str(file)
    with gc_paused():
        loader = _Loader(text)
        try:
            node = loader.get_single_node()
            if node is None:
                return None
            if not aliases:
                _no_aliases(node, file, error)
            _check_graph(node, file, error)
            try:
                return _construct(loader, node)
            except _NotPlain:
                return loader.construct_document(node)
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
            kind = "YAML error" if isinstance(exc, yaml.constructor.ConstructorError) else \
                "YAML syntax error"
            raise error(file, "", f"{kind}{where}: {exc.problem or exc}") from None
        except yaml.YAMLError as exc:
            raise error(file, "", f"YAML error: {exc}") from None
        except RecursionError:
            raise error(file, "", "YAML nesting too deep",
                        expected=f"at most {MAX_DEPTH} nested levels") from None
        finally:
            loader.dispose()


# ------------------------------------------------------------------------------ JSON


def _json_depth(data: Any) -> int:
    """Nesting depth of decoded JSON (iterative: no recursion on hostile input)."""
    best, stack = 0, [(data, 1)]
    while stack:
        value, d = stack.pop()
        if isinstance(value, dict):
            value = list(value.values())
        if isinstance(value, list):
            best = max(best, d)
            if d > MAX_DEPTH:
                return d
            stack.extend((v, d + 1) for v in value)
    return best


def load_json(text: str | bytes, file: str | Path, *, error: ErrorFactory = InputError) -> Any:
    """Decode JSON, refusing malformed text, ``NaN``/``Infinity`` literals and nesting
    deeper than :data:`MAX_DEPTH`.

    Raises:
        ``error`` (default :class:`~rbc.errors.InputError`) naming the file.
    """

    def constant(name: str) -> Any:
        raise ValueError(f"non-finite number {name}")

    try:
        with gc_paused():
            data = json.loads(text, parse_constant=constant)
    except RecursionError:
        raise error(file, "", "JSON nesting too deep",
                    expected=f"at most {MAX_DEPTH} nested levels") from None
    except json.JSONDecodeError as err:
        raise error(file, "", f"invalid JSON at line {err.lineno} column {err.colno}: "
                    f"{err.msg}") from None
    except ValueError as err:  # UnicodeDecodeError, non-finite constants
        raise error(file, "", f"invalid JSON: {err}") from None
    if _json_depth(data) > MAX_DEPTH:
        raise error(file, "", f"JSON nesting deeper than {MAX_DEPTH}",
                    expected=f"at most {MAX_DEPTH} nested levels")
    return data


# ------------------------------------------------------------------------------ zip


def check_zip(archive: zipfile.ZipFile, file: str | Path, kind: str) -> None:
    """Refuse a zip archive whose members could exhaust memory when inflated.

    Checked on the central directory before anything is decompressed: at most
    :data:`ZIP_MAX_MEMBERS` members; every member's declared size within the size limit of
    ``kind``, and so their total; and a compression ratio of at most :data:`ZIP_MAX_RATIO`
    for members above :data:`ZIP_RATIO_FLOOR`. (Python's zipfile never inflates a member
    beyond its declared size, so the declared sizes bound memory.)

    Raises:
        InputError: naming the member.
    """
    members = archive.infolist()
    if len(members) > ZIP_MAX_MEMBERS:
        raise InputError(file, "", f"the archive has {len(members)} members, more than "
                         f"{ZIP_MAX_MEMBERS}")
    cap, total = size_limit(kind), 0
    for m in members:
        total += m.file_size
        if m.file_size > cap or total > cap:
            raise _too_large(file, kind, m.file_size, f"member {m.filename} (inflated)")
        if m.file_size > ZIP_RATIO_FLOOR and m.file_size > ZIP_MAX_RATIO * max(m.compress_size,
                                                                                1):
            raise InputError(file, m.filename, f"inflates {m.compress_size} bytes to "
                             f"{m.file_size} (ratio above {ZIP_MAX_RATIO:g}); refused as a zip "
                             "bomb", expected="an archive of real data")


def load_npz(path: str | Path, kind: str) -> dict[str, Any]:
    """The arrays of an ``.npz`` file (no pickles), after :func:`check_zip` on its members.

    Raises:
        InputError: unreadable, not an npz archive, a zip bomb, or an object array.
    """
    import io

    import numpy as np

    data = read_bytes(path, kind)
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            check_zip(archive, path, kind)
        with gc_paused(), np.load(io.BytesIO(data), allow_pickle=False) as npz:
            return {name: npz[name] for name in npz.files}
    except (zipfile.BadZipFile, ValueError, OSError, EOFError) as err:
        raise InputError(path, "", f"not a readable npz archive: {err}") from None


def save_npz(path: str | Path, **arrays: Any) -> Path:
    """Write arrays as an ``.npz`` atomically under exactly ``path`` (``numpy.savez`` given
    a name would append ``.npz``; given an open file it does not)."""
    import numpy as np

    def write(tmp: Path) -> None:
        with open(tmp, "wb") as f:
            np.savez(f, **arrays)

    return atomic_write(path, write)


# ------------------------------------------------------------------------------ output

_TMP = re.compile(r"\.(?P<name>.+)\.rbc-(?P<pid>[0-9]+)-[0-9a-f]+\.(?:tmp|old)")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def default_mode(directory: bool = False) -> int:
    """Permissions of a normally created file (0o666) or directory (0o777) less the umask."""
    return (0o777 if directory else 0o666) & ~_umask()


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _sibling(target: Path, what: str = "tmp") -> Path:
    return target.parent / f".{target.name}.rbc-{os.getpid()}-{secrets.token_hex(4)}.{what}"


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def clean_stale(target: str | Path) -> list[Path]:
    """Remove temporaries of ``target`` left by killed runs (their process is gone).

    Temporaries are siblings named ``.<name>.rbc-<pid>-<hex>.tmp`` (or ``.old``); those of
    live processes (a concurrent run) are kept.

    Returns:
        The removed paths.
    """
    t = Path(target)
    parent = t.parent if str(t.parent) else Path(".")
    removed = []
    try:
        entries = list(parent.iterdir())
    except OSError:
        return removed
    for p in entries:
        m = _TMP.fullmatch(p.name)
        if m and m.group("name") == t.name and not _alive(int(m.group("pid"))):
            _remove(p)
            removed.append(p)
    return removed


def _output_dir(target: Path) -> Path:
    directory = target.parent if str(target.parent) else Path(".")
    if not directory.is_dir():
        raise InputError(target, "", f"output directory {directory} does not exist")
    return directory


def check_writable_target(target: str | Path) -> None:
    """Refuse a file output whose existing target is not a regular file (or a link to one,
    or a dangling link — the link itself is replaced, never followed).

    A directory, device, FIFO or socket is never replaced: renaming a file over
    ``/dev/null`` as root would destroy the device node, and over a FIFO would swap the
    pipe a reader waits on for a file.

    Raises:
        InputError: naming the target and what it is.
    """
    t = Path(target)
    try:
        st = os.stat(t)
    except OSError:
        return  # missing, or a dangling link: a new file
    if stat.S_ISDIR(st.st_mode):
        raise InputError(t, "", "is a directory", expected="a file path for the output")
    if not stat.S_ISREG(st.st_mode):
        raise InputError(t, "", f"is {_file_kind(st.st_mode)}; rbc writes outputs as regular "
                         "files (written beside the target and renamed into place) and never "
                         "replaces a device, FIFO or socket", expected="a file path for the "
                         "output")


def atomic_write(path: str | Path, write: Callable[[Path], None]) -> Path:
    """Create ``path`` atomically; ``write(tmp)`` fills the temporary file ``tmp``.

    The temporary file is a sibling of the target, given the permissions a normally
    created file would have (``0o666`` less the umask) and renamed over the target
    (``os.replace``, atomic on POSIX). On any failure (an interrupt too) the temporary file
    is removed and the target is left as it was; temporaries of killed earlier runs are
    removed first (:func:`clean_stale`).

    Raises:
        InputError: the output directory does not exist, or the target exists and is not a
            regular file (:func:`check_writable_target`).
        OSError: it is not writable (the command line reports the path, exit 2).
        Whatever ``write`` raises (nothing is left behind).
    """
    target = Path(path)
    _output_dir(target)
    check_writable_target(target)
    clean_stale(target)
    tmp = _sibling(target)
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.close(fd)
        write(tmp)
        os.chmod(tmp, default_mode())
        if not _defer(target, tmp, lambda: os.replace(tmp, target)):
            os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return target


class _Stage:
    """The outputs of one :func:`staged_outputs` block: target → (temporary, install)."""

    def __init__(self) -> None:
        self.pending: dict[Path, tuple[Path, Callable[[], None]]] = {}


_stages: list[_Stage] = []


def _defer(target: Path, tmp: Path, install: Callable[[], None]) -> bool:
    """Register a finished temporary with the innermost staging block (False: none)."""
    if not _stages:
        return False
    stage = _stages[-1]
    key = Path(os.path.abspath(target))
    if key in stage.pending:  # written twice in one command: the later one wins
        _remove(stage.pending.pop(key)[0])
    stage.pending[key] = (tmp, install)
    return True


def staged_path(target: str | Path) -> Path:
    """Where the staged content of ``target`` is until its :func:`staged_outputs` block
    completes (``target`` itself outside one, or if it was not written in it) — for a
    command that reads back one of its own outputs (``rbc compile --mjcf`` exports the
    bundle it just wrote)."""
    key = Path(os.path.abspath(target))
    for stage in reversed(_stages):
        if key in stage.pending:
            return stage.pending[key][0]
    return Path(target)


@contextmanager
def staged_outputs() -> Iterator[None]:
    """All-or-nothing across the several outputs of one command (``rbc compile -o … --mjcf
    … --pinocchio …``).

    Inside the block, :func:`atomic_write` and :func:`atomic_directory` leave each finished
    output in its temporary sibling; when the block completes they are all renamed into
    place together, and if it raises (an interrupt too) every temporary is removed and no
    target changes — a failing later export never leaves an earlier output of the same run
    beside the previous ones.
    """
    stage = _Stage()
    _stages.append(stage)
    try:
        yield
    except BaseException:
        for tmp, _ in stage.pending.values():
            _remove(tmp)
        raise
    finally:
        _stages.remove(stage)
    try:
        for key in list(stage.pending):
            stage.pending[key][1]()
            del stage.pending[key]
    finally:
        for tmp, _ in stage.pending.values():
            _remove(tmp)


def atomic_write_text(path: str | Path, text: str) -> Path:
    """:func:`atomic_write` of a UTF-8 text file."""
    return atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


#: Marker file in every directory rbc writes with :func:`atomic_directory`; only a directory
#: holding it (or an empty one) is ever replaced.
OUTPUT_MARKER = ".rbc-output"

_RENAME_EXCHANGE = 2  # linux/fs.h


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths atomically (Linux ``renameat2(RENAME_EXCHANGE)``); False if the
    system cannot."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd = -100
    rc = renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), _RENAME_EXCHANGE)
    return rc == 0


def check_replaceable(target: str | Path, option: str = "--out") -> None:
    """Refuse a directory output whose existing target rbc may not replace.

    Raises:
        UsageError: the target exists and is not a directory, or is a non-empty directory
            rbc did not write (no :data:`OUTPUT_MARKER`).
    """
    t = Path(target)
    if t.is_symlink() or (t.exists() and not t.is_dir()):
        raise UsageError(f"{option} {t}: exists and is not a directory; give a directory path")
    if t.is_dir() and not (t / OUTPUT_MARKER).is_file() and any(t.iterdir()):
        raise UsageError(f"{option} {t}: the directory exists, is not empty and was not "
                         "written by rbc; give a new or empty directory (rbc replaces its "
                         "output directories whole)")


@contextmanager
def atomic_directory(target: str | Path, option: str = "--out") -> Iterator[Path]:
    """Write a directory output all-or-nothing.

    Yields an empty temporary sibling directory to fill; when the block completes it is
    renamed into place (an existing target — an earlier rbc output or an empty directory —
    is swapped out atomically where the system allows and then removed). If the block
    raises (an interrupt too) the temporary directory is removed and the target is left as
    it was, never a mix of two runs. Parent directories are created, except through a
    ``..`` component (``sub/../out`` never creates ``sub``); temporaries of killed earlier
    runs are removed first.

    Raises:
        UsageError: :func:`check_replaceable` refuses the target.
        OSError: the parent cannot be created or written (the command line reports it).
    """
    t = Path(target)
    check_replaceable(t, option)
    parent = t.parent if str(t.parent) else Path(".")
    if ".." in parent.parts and not parent.is_dir():  # never create `sub` for sub/../out
        raise UsageError(f"{option} {t}: the directory {parent} does not exist")
    parent.mkdir(parents=True, exist_ok=True)
    clean_stale(t)
    tmp = _sibling(t)
    tmp.mkdir(mode=0o700)
    try:
        yield tmp
        (tmp / OUTPUT_MARKER).write_text("written by rbc; this directory is replaced whole by "
                                         "the next run writing it\n", encoding="utf-8")
        os.chmod(tmp, default_mode(directory=True))
        if not _defer(t, tmp, lambda: _install_directory(tmp, t, option)):
            _install_directory(tmp, t, option)
    except BaseException:
        _remove(tmp)
        raise


def _install_directory(tmp: Path, t: Path, option: str) -> None:
    """Rename the finished directory ``tmp`` into place at ``t`` (module docstring)."""
    if t.is_dir():
        check_replaceable(t, option)  # still ours (it may have changed meanwhile)
        if _exchange(tmp, t):
            _remove(tmp)  # tmp now holds the previous output
        else:
            old = _sibling(t, "old")
            os.replace(t, old)
            os.replace(tmp, t)
            _remove(old)
    else:
        os.replace(tmp, t)


def _identity(p: Path) -> tuple[Path, tuple[int, int] | None]:
    real = Path(os.path.realpath(p))
    try:
        st = os.stat(p)
        return real, (st.st_dev, st.st_ino)
    except OSError:
        return real, None


def check_outputs(inputs: Mapping[str, str | Path | None],
                  outputs: Mapping[str, str | Path | None],
                  directories: Iterable[str] = ()) -> None:
    """Refuse outputs that would destroy an input or another output of the same command,
    and outputs that cannot be written, before any work is done.

    A file output needs an existing directory and may not be a directory, device, FIFO or
    socket (:func:`check_writable_target`); a directory output must be replaceable
    (:func:`check_replaceable`). Paths are compared after resolving links (and by device
    and inode when they exist, so hard links count). An output may not be an input,
    another output, nor lie inside a directory output; a directory output (options named
    in ``directories``) may not contain an input.

    Args:
        inputs: option or argument name → input path (None entries are skipped).
        outputs: option name → output path (None entries are skipped).
        directories: the names in ``outputs`` that are directory outputs.

    Raises:
        UsageError: naming the option (and the input or other output).
    """
    ins = {k: _identity(Path(v)) for k, v in inputs.items() if v is not None}
    outs = {k: _identity(Path(v)) for k, v in outputs.items() if v is not None}
    dirs = set(directories)

    def same(a, b) -> bool:
        return a[0] == b[0] or (a[1] is not None and a[1] == b[1])

    names = list(outs)
    for i, o in enumerate(names):
        for k, ident in ins.items():
            if same(outs[o], ident):
                raise UsageError(f"{o} {outputs[o]}: is the input {k} {inputs[k]}; refusing to "
                                 "overwrite an input — give another output path")
            if o in dirs and ident[0].is_relative_to(outs[o][0]):
                raise UsageError(f"{o} {outputs[o]}: the directory holds the input {k} "
                                 f"{inputs[k]}, which replacing it would destroy")
        for other in names[i + 1:]:
            if same(outs[o], outs[other]):
                raise UsageError(f"{o} and {other} name the same path {outputs[o]}; give two "
                                 "different outputs")
        for other in names:
            if other != o and other in dirs and outs[o][0].is_relative_to(outs[other][0]) \
                    and not same(outs[o], outs[other]):
                raise UsageError(f"{o} {outputs[o]}: lies inside the directory output "
                                 f"{other} {outputs[other]}, which is replaced whole")
    for name, value in outputs.items():  # then each target must be usable, before any work
        if value is None:
            continue
        target = Path(value)
        if name in directories:
            check_replaceable(target, name)
            continue
        parent = target.parent if str(target.parent) else Path(".")
        if not parent.is_dir():
            raise UsageError(f"{name} {target}: the directory {parent} does not exist")
        try:
            check_writable_target(target)
        except InputError as err:
            raise UsageError(f"{name} {err}") from None


_UNSAFE = re.compile(r"[^A-Za-z0-9._+-]+")


def safe_basename(name: str, default: str = "model") -> str:
    """A file name built from untrusted text (a robot or body name): letters, digits and
    ``._+-`` only (runs of anything else become ``_``), no leading dot, at most 100
    characters; ``default`` if nothing is left. Never contains a path separator."""
    base = _UNSAFE.sub("_", str(name)).lstrip("._")[:100].rstrip("_") or default
    return base


# ------------------------------------------------------------------------------ libraries

_MUJOCO_SEEN: set[str] = set()


def _mujoco_warning(message: str) -> None:
    """MuJoCo's warnings as Python warnings (printed after the command's output by the
    CLI), each kind once; never its default handler, which appends to ``MUJOCO_LOG.TXT`` in
    the current directory — a file outside the place the user named."""
    import warnings

    key = re.sub(r"[0-9.]+", "#", str(message))
    if key not in _MUJOCO_SEEN and len(_MUJOCO_SEEN) < 100:
        _MUJOCO_SEEN.add(key)
        warnings.warn(f"MuJoCo: {str(message).strip()}", RuntimeWarning, stacklevel=1)


def _quiet_mujoco(module: Any) -> None:
    module.set_mju_user_warning(_mujoco_warning)


class _AfterImport:
    """A ``sys.meta_path`` finder that runs ``hook(module)`` once ``name`` is imported."""

    def __init__(self, name: str, hook: Callable[[Any], None]) -> None:
        self.name, self.hook = name, hook

    def find_spec(self, fullname, path, target=None):  # noqa: ANN001 - importlib protocol
        import importlib.util
        import sys

        if fullname != self.name:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None:
            return spec
        loader, hook = spec.loader, self.hook

        class Loader:
            def create_module(self, spec):  # noqa: ANN001
                return loader.create_module(spec)

            def exec_module(self, module):  # noqa: ANN001
                loader.exec_module(module)
                hook(module)

        spec.loader = Loader()
        return spec


def guard_libraries() -> None:
    """Keep third-party libraries from writing files of their own: MuJoCo's warning
    handler is replaced (now, or when MuJoCo is first imported). Called by the command line
    before each command."""
    import sys

    if "mujoco" in sys.modules:
        _quiet_mujoco(sys.modules["mujoco"])
    elif not any(isinstance(f, _AfterImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterImport("mujoco", _quiet_mujoco))


# ------------------------------------------------------------------------------ numbers


#: Largest magnitude of a physical number rbc accepts — in a record, a model file or a
#: numeric option (SI units): no robot comes near it (a 1e12 kg body, a 1e12 m offset), and
#: beyond it the numerics overflow (a 1e308 payload made the closure's SVD fail) or lose all
#: precision against unit terms instead of answering.
MAX_MAGNITUDE = 1e12
MAX_OPTION_MAGNITUDE = MAX_MAGNITUDE


def finite_option(x: float) -> bool:
    """True for a number an option may carry: finite and within ±:data:`MAX_OPTION_MAGNITUDE`
    (the rule of :func:`check_number`, for parsers of compound values)."""
    return math.isfinite(x) and abs(x) <= MAX_OPTION_MAGNITUDE


def check_number(option: str, value: float | None, *, gt: float | None = None,
                 ge: float | None = None, lt: float | None = None, le: float | None = None,
                 integer: bool = False) -> float | None:
    """Validate a numeric option: finite, within ±:data:`MAX_OPTION_MAGNITUDE` and the
    bounds given (None passes through).

    Raises:
        UsageError: naming the option, the value and the valid range.
    """
    if value is None:
        return None
    bounds = [f"> {gt:g}" if gt is not None else "", f"≥ {ge:g}" if ge is not None else "",
              f"< {lt:g}" if lt is not None else "", f"≤ {le:g}" if le is not None else ""]
    want = ("an integer" if integer else "a finite number") + (
        " " + " and ".join(b for b in bounds if b) if any(bounds) else "") + \
        f" (magnitude ≤ {MAX_OPTION_MAGNITUDE:g})"
    try:
        x = float(value)
    except (TypeError, ValueError, OverflowError):
        raise UsageError(f"{option} {value!r}: expected {want}") from None
    ok = finite_option(x) and (gt is None or x > gt) and \
        (ge is None or x >= ge) and (lt is None or x < lt) and (le is None or x <= le)
    if not ok:
        raise UsageError(f"{option} {x:g}: expected {want}")
    return value


def named_values(texts: Iterable[str] | None, option: str,
                 parse: Callable[[str], tuple[str, float]]) -> dict[str, float]:
    """``NAME=VALUE`` options → ``{name: value}``, each name given once, values finite.

    Args:
        texts: the repeated option's values.
        option: its name (for messages).
        parse: ``text → (name, value)`` (raises UsageError on a malformed item).

    Raises:
        UsageError: a malformed item, a non-finite value, or a name given twice.
    """
    out: dict[str, float] = {}
    for text in texts or ():
        name, value = parse(text)
        check_number(f"{option} {name}", value)
        if name in out:
            raise UsageError(f"{option} {name}: given twice ({out[name]:g} and {value:g}); "
                             "give each name once")
        out[name] = value
    return out

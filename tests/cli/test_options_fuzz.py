"""Property-based: every command of the ``rbc`` command line, every option, hostile values.

The commands and their options are read from the command tree itself (typer/click), so a
command or option added later is fuzzed without touching this file. Each example runs one
command in-process on valid inputs (a compiled four-bar, its record, an MJCF and a URDF
model, a TorchScript policy …) with one or two options given hostile values chosen by the
option's type: numbers that are non-finite, zero, negative, huge or not numbers; paths that
are the command's own inputs, a directory holding them, a FIFO, a device, a missing
directory, an alias bomb, a dangling link; text with NaN, repeated names and path tricks.

Invariant (issue #14): exit 0 with the output in the place named, 1 for a failed check, or
2 with a message (``error: …`` or a usage error) — never a traceback or another status,
never a warning before the message, never an input changed, never a file written outside
the paths named on the command line, never a temporary left behind. An example still
running after :data:`TIMEOUT` seconds (a valid but long run) is interrupted as by Ctrl-C:
it must then exit 130 and leave nothing behind either.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import signal
import stat
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import typer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rbc.cli.main import INTERRUPTED, app, main
from tests.conftest import EXTERNAL, POLICIES, RECORDS
from tests.test_safeio import alias_bomb

# bounded for CI: EXAMPLES per command, each cut at TIMEOUT seconds (most hostile values
# are refused while the options are parsed, in milliseconds). Raise both for a deep run:
# RBC_FUZZ_EXAMPLES=200 RBC_FUZZ_TIMEOUT=120 pytest tests/cli/test_options_fuzz.py
EXAMPLES = int(os.environ.get("RBC_FUZZ_EXAMPLES", "12"))
TIMEOUT = float(os.environ.get("RBC_FUZZ_TIMEOUT", "12"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow,
                                       HealthCheck.function_scoped_fixture])

TEMPORARY = re.compile(r"\.rbc-[0-9]+-")  # rbc.safeio's temporaries (not .rbc-output)
LIBRARY_WARNING = re.compile(r"\.py:[0-9]+: \w*Warning|^warning: \w*Warning:")
PRE_TRAIN = POLICIES / "unitree_rl_gym_deploy" / "deploy" / "pre_train"


def leaf_commands(group=None, path: tuple[str, ...] = ()) -> dict[str, object]:
    """``"bench compile"`` → its click command, for every command of the tree."""
    group = typer.main.get_command(app) if group is None else group
    out: dict[str, object] = {}
    for name, cmd in getattr(group, "commands", {}).items():
        if getattr(cmd, "commands", None) is not None:
            out.update(leaf_commands(cmd, (*path, name)))
        else:
            out[" ".join((*path, name))] = cmd
    return out


COMMANDS = leaf_commands()

# A short valid run of each known command ({i}: the inputs folder); commands not listed
# get their positional arguments from ARGUMENTS and run with their defaults (cut at
# TIMEOUT). Values here may be replaced by the fuzzed ones.
SHORT: dict[str, list[str]] = {
    "compile": ["-o", "out.h5"],
    "simulate": ["--controller", "passive", "--duration", "0.01", "--dt", "0.002"],
    "plan": ["--task", "joint:A", "--to", "1.2", "--duration", "0.05", "--out", "plan"],
    "verify": ["--samples", "2"],
    "view": ["--save", "v.html", "--no-open"],
    "repro": ["--list"],
    "bench compile": ["--loops", "10", "--repeats", "1"],
    "bench corrector": ["--steps", "2"],
    "bench dynamics": ["--states", "1"],
    "bench api": ["--states", "1", "--rounds", "1"],
    "bench hostile": ["--list"],
    "bench simulate": ["--reference", "{i}/ref.csv", "--duration", "0.01", "--backends",
                       "reduced"],
    "import mjcf": ["-o", "out.yaml"],
    "import urdf": ["-o", "out.yaml", "--repair-inertia"],
    "policy import": ["-o", "out.json"],
    "policy eval": ["--observations", "{i}/obs.npz", "-o", "out.npz"],
    "walk run": ["--strides", "1"],
    "walk batch": ["--samples", "1", "--strides", "1", "--workers", "1"],
}
# positional arguments by command and name (then by name alone); unknown ones are drawn
# from every input
ARGUMENTS = {("import mjcf", "model"): "{i}/model.xml", ("import urdf", "model"):
             "{i}/robot.urdf", ("policy import", "file"): "{i}/motion.pt",
             ("policy eval", "file"): "{i}/policy.json", "bundle": "{i}/fourbar.h5",
             "record": "{i}/fourbar.yaml"}
INPUTS = ["fourbar.h5", "fourbar.yaml", "model.xml", "robot.urdf", "robot.yaml", "motion.pt",
          "policy.json", "obs.npz", "ref.csv"]

FLOATS = st.one_of(
    st.sampled_from(["nan", "-nan", "inf", "-inf", "0", "-0", "-1", "1e308", "-1e308", "1e-320",
                     "5e-324", "abc", "", "0x10", "1,5", "9" * 400, "1e400", "-1e-9", "1e13"]),
    st.floats(max_value=0.0, allow_infinity=True).map(repr),
    st.floats(min_value=1e200, allow_infinity=True).map(repr),
    st.floats(min_value=0.0, max_value=1e-200, allow_subnormal=True).map(repr))
INTS = st.one_of(st.sampled_from(["-1", "0", "9" * 30, "1e3", "nan", "", "2.5", "-0"]),
                 st.integers(max_value=0).map(str), st.integers(min_value=10**7).map(str))
PATHS = st.sampled_from(
    [f"{{i}}/{name}" for name in INPUTS] + ["{i}", "{i}/fifo", "{i}/device", "{i}/bomb.yaml",
                                            "{i}/garbage.bin", "{i}/empty", "{i}/dangling",
                                            "{i}/link.h5", "missing/dir/x.h5", ".", "out",
                                            "out.h5", "out.json", "sub/../out2.yaml"])
NAMES = ["A", "B", "crank", "rocker", "x", ""]
TEXTS = st.one_of(
    st.sampled_from(["", "nan", "inf", "-1", "0", "1e308", "1,nan", "nan,nan,nan", "=", "==",
                     "A", "A=", "=1", "A=1=2", "../../x", "/etc/passwd", "a" * 5000, "1" * 400,
                     "joint:A", "joint:", ":", "x,y,z", "1e400,0,0", "0:nan", "tcp://", "-"]),
    st.builds(lambda n, v: f"{n}={v}", st.sampled_from(NAMES), FLOATS),
    st.text(st.characters(blacklist_characters="\x00"), max_size=20))  # (argv has no NUL)


def _kind(param) -> str:
    ann = param.type_descriptor.annotation
    text = str(ann)
    if getattr(param, "is_flag", False):
        return "flag"
    for kind, names in (("path", ("Path",)), ("float", ("float",)), ("int", ("int",))):
        if any(n in text for n in names):
            return kind
    return "text"


def _values(kind: str):
    return {"float": FLOATS, "int": INTS, "path": PATHS, "text": TEXTS}[kind]


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() and \
        not path.is_symlink() else path.name


def listing(root: Path) -> dict[str, str]:
    out = {}
    for p in root.rglob("*"):
        mode = os.lstat(p).st_mode
        out[str(p.relative_to(root))] = digest(p) if stat.S_ISREG(mode) else oct(mode)
    return out


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> Path:
    """Every kind of valid input, and hostile files, in one folder no command may change."""
    d = tmp_path_factory.mktemp("inputs")
    assert main(["compile", str(RECORDS / "fourbar.yaml"), "-o", str(d / "fourbar.h5")]) == 0
    shutil.copy(RECORDS / "fourbar.yaml", d)
    gep = EXTERNAL / "gepetto" / "5bar_linkage"
    shutil.copy(gep / "robot.urdf", d)
    shutil.copy(gep / "robot.yaml", d)
    (d / "model.xml").write_text("""<mujoco model="m"><worldbody><body name="b" pos="0 0 1">
  <joint name="j" type="hinge" axis="0 0 1"/><geom type="sphere" size="0.1" mass="1"/>
</body></worldbody><actuator><motor name="m" joint="j"/></actuator></mujoco>""")
    shutil.copy(PRE_TRAIN / "h1" / "motion.pt", d)
    assert main(["policy", "import", str(d / "motion.pt"), "-o", str(d / "policy.json")]) == 0
    import json

    n_obs = json.loads((d / "policy.json").read_text()).get("n_obs", 41)
    np.savez(d / "obs.npz", observations=np.zeros((2, n_obs)))
    (d / "ref.csv").write_text("time,A\n0,1.0\n0.01,1.01\n0.02,1.02\n")
    os.mkfifo(d / "fifo")
    try:  # a character device (like /dev/null) rbc must never replace or read
        os.mknod(d / "device", 0o600 | stat.S_IFCHR, os.makedev(1, 3))
    except (PermissionError, OSError):
        os.mkfifo(d / "device")
    (d / "bomb.yaml").write_text(alias_bomb())
    (d / "garbage.bin").write_bytes(bytes(range(256)) * 8)
    (d / "empty").write_bytes(b"")
    (d / "dangling").symlink_to(d / "no-such-file")
    (d / "link.h5").symlink_to(d / "fourbar.h5")
    return d


class _Timeout(KeyboardInterrupt):
    """Raised by the alarm: the run is interrupted as by Ctrl-C."""


def _alarm(signum, frame):
    """Interrupt the run — but never inside numba's compiler (an interrupt there leaves the
    dispatcher without its compiled object for the rest of the process): retry shortly."""
    f = frame
    while f is not None:
        if f.f_globals.get("__name__", "").startswith(("numba", "llvmlite")):
            signal.setitimer(signal.ITIMER_REAL, 0.2)
            return
        f = f.f_back
    raise _Timeout


def _argv(name: str, cmd, inputs: Path, draw) -> tuple[list[str], list[str]]:
    """The command line of one example, and the options given hostile values."""
    argv = name.split()
    for param in cmd.params:
        if param.param_type_name != "argument":
            continue
        key = ARGUMENTS.get((name, param.name)) or ARGUMENTS.get(param.name)
        if key is None:
            key = draw(st.sampled_from([f"{{i}}/{n}" for n in INPUTS]))
        argv += [key] * (1 if param.nargs == 1 else 0)
    base = [a.format(i=inputs) for a in SHORT.get(name, [])]
    options = [p for p in cmd.params if p.param_type_name == "option" and "--help" not in p.opts]
    chosen = draw(st.lists(st.sampled_from(options), min_size=1, max_size=2, unique_by=id))
    for param in chosen:  # drop the base's value of a fuzzed option
        opts = set(param.opts) | set(param.secondary_opts)
        kept, skip = [], False
        for a in base:
            if skip:
                skip = False
            elif a in opts:
                skip = not getattr(param, "is_flag", False)
            else:
                kept.append(a)
        base = kept
    fuzzed = []
    for param in chosen:
        kind = _kind(param)
        flag = max(param.opts, key=len)
        if kind == "flag":
            argv.append(draw(st.sampled_from(list(param.opts) + list(param.secondary_opts))))
        else:
            repeat = draw(st.integers(1, 2)) if param.multiple else 1
            for _ in range(repeat):
                argv += [flag, draw(_values(kind)).replace("{i}", str(inputs))]
        fuzzed.append(flag)
    return [a.replace("{i}", str(inputs)) for a in argv] + base, fuzzed


def _named(argv: list[str], cwd: Path) -> tuple[list[Path], dict[Path, int]]:
    """Every path the command line names (outputs may appear there or inside), and how
    often each file is named (links resolved)."""
    out, count = [], {}
    for a in argv:
        for part in {a, a.partition("=")[2]}:
            # a value with a lone surrogate cannot name a file (the OS cannot encode it, and
            # os.path.realpath raises UnicodeEncodeError): it is not a path the command names
            if part and not any(0xD800 <= ord(c) <= 0xDFFF for c in part):
                p = Path(os.path.abspath(cwd / part))
                out.append(p)
                real = Path(os.path.realpath(p))
                count[real] = count.get(real, 0) + 1
    return out, count


def _check_inputs(before: dict[str, str], after: dict[str, str], inputs: Path,
                  argv: list[str], positional: list[str], count: dict[Path, int],
                  note: str) -> None:
    """An entry of the inputs folder may change only as an output: a regular file or a
    link, named once on the command line, not as a positional argument (an input)."""
    for name in sorted(set(before) | set(after)):
        if before.get(name) == after.get(name):
            continue
        p = inputs / name
        assert not TEMPORARY.search(name), f"temporary {name} left\n{note}"
        real = Path(os.path.realpath(p))
        was = before.get(name, "new")
        assert was == "new" or not was.startswith("0o") or stat.S_ISLNK(int(was, 8)), \
            f"{name} ({was}) replaced\n{note}"
        assert count.get(real, count.get(p, 0)) == 1, f"{name} changed, named " \
            f"{count.get(real, 0)} times\n{note}"
        assert str(p) not in positional, f"input {name} changed\n{note}"


@pytest.mark.parametrize("name", sorted(COMMANDS))
@FUZZ
@given(data=st.data())
def test_every_option_of_every_command(tmp_path_factory, capsys, inputs, name, data):
    cmd = COMMANDS[name]
    argv, fuzzed = _argv(name, cmd, inputs, data.draw)
    before = listing(inputs)
    work = tmp_path_factory.mktemp("cwd")
    old = os.getcwd()
    previous = signal.signal(signal.SIGALRM, _alarm)
    timed_out = False
    try:
        os.chdir(work)
        signal.setitimer(signal.ITIMER_REAL, TIMEOUT)
        t0 = time.perf_counter()
        try:
            code = main(argv)
        finally:
            timed_out = signal.getitimer(signal.ITIMER_REAL)[0] == 0.0
            signal.setitimer(signal.ITIMER_REAL, 0)
    finally:
        signal.signal(signal.SIGALRM, previous)
        os.chdir(old)
    err = capsys.readouterr().err
    if os.environ.get("RBC_FUZZ_VERBOSE"):
        print(f"{code} {time.perf_counter() - t0:6.2f} s  rbc {' '.join(argv)}",
              file=sys.__stderr__)
    note = f"rbc {' '.join(argv)}\n{err[-3000:]}"
    assert "Traceback" not in err, note
    assert code in (0, 1, 2) or (code == INTERRUPTED and timed_out), note
    if code == 2:  # a message (on an option, one it conflicts with, or an input) …
        lines = err.strip().splitlines()
        first = next((k for k, line in enumerate(lines) if line.startswith(("error:",
                                                                             "Usage:"))), None)
        assert first is not None, note
        # … never preceded by a library's warning (the handler prints those after it)
        assert not any(LIBRARY_WARNING.search(line) for line in lines[:first]), note
    positional = argv[len(name.split()):len(name.split()) + sum(
        1 for p in cmd.params if p.param_type_name == "argument" and p.nargs == 1)]
    named, count = _named(argv, work)
    _check_inputs(before, listing(inputs), inputs, argv, positional, count, note)
    for p in work.rglob("*"):
        assert not TEMPORARY.search(p.name), note  # no temporary left
        assert code in (0, 1), f"{p} left behind by a failed run\n{note}"
        assert any(p == n or p.is_relative_to(n) or (p.is_dir() and n.is_relative_to(p))
                   for n in named), f"{p} not named\n{note}"

"""``rbc policy import`` / ``eval``: torch-free TorchScript reading, refusal of unsafe pickles,
and parity with PyTorch on Unitree's pre-trained policies (records/policies)."""

from __future__ import annotations

import json
import os
import pickle
import struct
import zipfile

import numpy as np
import pytest
import yaml

from rbc.cli.main import main
from rbc.policy.contract import joint_targets, observation
from rbc.policy.runner import load_policy
from rbc.policy.torchscript import UnsafePickleError, read_torchscript
from tests.conftest import POLICIES

ROBOTS = {"g1": (47, 12), "h1": (41, 10), "h1_2": (47, 12)}


def _deploy():
    return POLICIES / "unitree_rl_gym_deploy" / "deploy"


# ------------------------------------------------------------------------ parity (real data)


@pytest.mark.parametrize("robot", sorted(ROBOTS))
def test_parity_with_pytorch_rollout(tmp_path, robot, capsys):
    pt = _deploy() / "pre_train" / robot / "motion.pt"
    ref = POLICIES / "reference" / f"{robot}_rollout.npz"
    js, acts = tmp_path / f"{robot}.json", tmp_path / "actions.npz"
    assert main(["policy", "import", str(pt), "-o", str(js)]) == 0
    assert main(["policy", "eval", str(js), "--observations", str(ref), "-o", str(acts)]) == 0
    got = np.load(acts)["actions"]
    want = np.load(ref)["actions"]
    n_obs, n_act = ROBOTS[robot]
    assert got.shape == want.shape == (200, n_act)
    # PyTorch ran in float32 (~1e-6 on actions up to ~10) and our weights are rounded to six
    # decimals (≤5e-7 each, accumulated over ~100-term dot products and 200 recurrent steps):
    # measured 1.1e-5 to 1.7e-5; the brief's bound is 2e-5
    err = np.max(np.abs(got - want))
    assert err <= 2e-5, f"{robot}: max abs action error {err:.3g}"
    print(f"{robot}: max abs error {err:.3g}")

    net = load_policy(js)
    assert (net.n_obs, net.n_act, net.lstm.hidden_size) == (n_obs, n_act, 64)
    assert [layer.activation for layer in net.layers] == ["elu", "identity"]
    cfg = yaml.safe_load((_deploy() / "deploy_mujoco" / "configs" /
                          f"{robot}.yaml").read_text())
    c = net.contract
    assert c["robot"] == robot and c["n_obs"] == cfg["num_obs"] and c["n_act"] == cfg["num_actions"]
    assert c["default_angles"] == cfg["default_angles"] and c["action_scale"] == 0.25
    assert c["cmd_scale"] == cfg["cmd_scale"] and c["kps"] == cfg["kps"]
    assert c["phase"]["period"] == 0.8 and c["control_dt"] == 0.02
    assert len(c["joint_names"]) == n_act and len(c["motor_index"]) == n_act
    assert c["observation"][-1] == {"name": "phase", "start": n_obs - 2, "size": 2, "scale": 1.0,
                                    "meaning": c["observation"][-1]["meaning"]}
    assert net.source["sha256"] == json.loads(
        (POLICIES / "reference" / "README.json").read_text())[robot]["sha256_pt"]


def test_h1_motor_index_and_explicit_config(tmp_path):
    pt = _deploy() / "pre_train" / "h1" / "motion.pt"
    cfg = _deploy() / "deploy_mujoco" / "configs" / "h1.yaml"
    js = tmp_path / "h1.json"
    assert main(["policy", "import", str(pt), "-o", str(js), "--config", str(cfg)]) == 0
    c = load_policy(js).contract
    assert c["motor_index"] == [7, 3, 4, 5, 10, 8, 0, 1, 2, 11]  # deploy_real/configs/h1.yaml
    assert c["joint_names"][2] == "left_hip_pitch_joint" and c["default_angles"][2] == -0.1


def test_config_of_another_robot_is_refused(tmp_path, capsys):
    pt = _deploy() / "pre_train" / "g1" / "motion.pt"
    cfg = _deploy() / "deploy_mujoco" / "configs" / "h1.yaml"
    assert main(["policy", "import", str(pt), "-o", str(tmp_path / "x.json"),
                 "--config", str(cfg)]) == 2
    err = capsys.readouterr().err
    assert "h1.yaml: num_obs: 41 disagrees with the network" in err and "expected 47" in err
    assert not (tmp_path / "x.json").exists()


def test_no_contract_outside_standard_layout(tmp_path, capsys):
    pt = tmp_path / "motion.pt"
    pt.write_bytes((_deploy() / "pre_train" / "g1" / "motion.pt").read_bytes())
    assert main(["policy", "import", str(pt), "-o", str(tmp_path / "g1.json")]) == 0
    assert "no deploy config found" in capsys.readouterr().err
    assert load_policy(tmp_path / "g1.json").contract is None


# ------------------------------------------------------------- hand-built archives (opcodes)


def _g(module: str, name: str) -> bytes:
    return b"c" + module.encode() + b"\n" + name.encode() + b"\n"


def _s(text: str) -> bytes:
    raw = text.encode()
    return b"X" + struct.pack("<I", len(raw)) + raw


def _i(v: int) -> bytes:
    return b"J" + struct.pack("<i", v)


def _tup(*items: bytes) -> bytes:
    return b"(" + b"".join(items) + b"t"


def _tensor(key: str, numel: int, size, stride, offset: int = 0) -> bytes:
    """``_rebuild_tensor_v2(('storage', FloatStorage, key, 'cpu', numel), …)`` in opcodes."""
    pid = _tup(_s("storage"), _g("torch", "FloatStorage"), _s(key), _s("cpu"), _i(numel))
    return (_g("torch._utils", "_rebuild_tensor_v2")
            + _tup(pid + b"Q", _i(offset), _tup(*map(_i, size)), _tup(*map(_i, stride)),
                   b"\x89", _g("collections", "OrderedDict") + b")R")
            + b"R")


def _archive(path, pkl: bytes, storages: dict[str, np.ndarray]) -> None:
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("archive/data.pkl", pkl)
        z.writestr("archive/byteorder", "little")
        for key, arr in storages.items():
            z.writestr(f"archive/data/{key}", np.asarray(arr, "<f4").tobytes())


def test_plain_state_dict_with_strided_tensor(tmp_path, capsys):
    """A torch.save-style state dict: feed-forward tanh MLP, one weight stored transposed."""
    rng = np.random.default_rng(2)
    W0, b0 = rng.normal(size=(4, 3)).astype("f4"), rng.normal(size=4).astype("f4")
    W1, b1 = rng.normal(size=(2, 4)).astype("f4"), rng.normal(size=2).astype("f4")
    items = (_s("actor.0.weight") + _tensor("0", 12, (4, 3), (1, 4))  # column-major storage
             + _s("actor.0.bias") + _tensor("1", 5, (4,), (1,), offset=1)  # offset into storage
             + _s("actor.2.weight") + _tensor("2", 8, (2, 4), (4, 1))
             + _s("actor.2.bias") + _tensor("3", 2, (2,), (1,)))
    pkl = b"\x80\x02" + _g("collections", "OrderedDict") + b")R(" + items + b"u."
    pt = tmp_path / "mlp.pt"
    _archive(pt, pkl, {"0": W0.T.ravel(), "1": np.r_[np.float32(9), b0], "2": W1.ravel(), "3": b1})

    js = tmp_path / "mlp.json"
    assert main(["policy", "import", str(pt), "-o", str(js)]) == 2
    assert "plain state dict does not name its activations" in capsys.readouterr().err
    assert main(["policy", "import", str(pt), "-o", str(js), "--activation", "tanh"]) == 0
    net = load_policy(js)
    assert net.lstm is None and [x.activation for x in net.layers] == ["tanh", "identity"]
    x = rng.normal(size=(3, 3))
    np.savez(tmp_path / "obs.npz", observations=x)
    assert main(["policy", "eval", str(js), "--observations", str(tmp_path / "obs.npz"),
                 "-o", str(tmp_path / "a.npz")]) == 0
    want = np.tanh(x @ W0.T.astype(float) + b0) @ W1.T.astype(float) + b1
    # weights rounded to six decimals (≤5e-7 each) through tanh and a 4-term sum: ≲1e-5
    np.testing.assert_allclose(np.load(tmp_path / "a.npz")["actions"], want, atol=1e-5)


def test_tensor_overrunning_its_storage_is_refused(tmp_path, capsys):
    pkl = (b"\x80\x02" + _g("collections", "OrderedDict") + b")R("
           + _s("w") + _tensor("0", 4, (3, 3), (3, 1)) + b"u.")
    pt = tmp_path / "bad.pt"
    _archive(pt, pkl, {"0": np.zeros(4)})
    assert main(["policy", "import", str(pt), "-o", str(tmp_path / "x.json")]) == 2
    assert "overruns storage 0 of 4 elements" in capsys.readouterr().err


class _Evil:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_reduce_to_os_system_is_refused_and_not_run(tmp_path, capsys):
    marker = tmp_path / "pwned"
    pkl = pickle.dumps({"actor.0.weight": _Evil(marker)}, protocol=2)
    assert b"system" in pkl  # the payload really names os.system (posix.system)
    pt = tmp_path / "evil.pt"
    _archive(pt, pkl, {})
    out = tmp_path / "evil.json"
    assert main(["policy", "import", str(pt), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "refusing global" in err and "system" in err and "nothing was run" in err
    assert not marker.exists() and not out.exists()
    # and the control: the same pickle does run the command under the stock unpickler
    pickle.loads(pkl)
    assert marker.exists()


@pytest.mark.parametrize("payload", [
    _g("builtins", "eval") + _tup(_s("1+1")) + b"R.",
    _g("__torch__.x", "Y") + b")\x81" + _g("os", "system") + _tup(_s("true")) + b"Rb.",
    b"\x80\x04\x8c\x08builtins\x8c\x04exec\x93" + _tup(_s("pass")) + b"R.",  # STACK_GLOBAL
    _g("torch", "load") + _tup(_s("x")) + b"R.",
    _g("__torch__", "__import__") + b".",  # a bare '__torch__' module is not a record class
])
def test_other_globals_are_refused(tmp_path, payload):
    pt = tmp_path / "p.pt"
    _archive(pt, payload, {})
    with pytest.raises(UnsafePickleError, match="refusing global"):
        read_torchscript(pt)


def test_module_record_refuses_constructor_arguments(tmp_path, capsys):
    pkl = _g("__torch__.m", "Policy") + _tup(_s("rm -rf")) + b"R."
    pt = tmp_path / "p.pt"
    _archive(pt, pkl, {})
    assert main(["policy", "import", str(pt), "-o", str(tmp_path / "x.json")]) == 2
    assert "constructor arguments refused" in capsys.readouterr().err


def test_not_a_zip(tmp_path, capsys):
    pt = tmp_path / "x.pt"
    pt.write_bytes(pickle.dumps({"a": 1}))
    assert main(["policy", "import", str(pt), "-o", str(tmp_path / "x.json")]) == 2
    assert "x.pt: not a zip archive" in capsys.readouterr().err


# -------------------------------------------------------------------------- eval and contract


def test_eval_rejects_wrong_observations(tmp_path, capsys):
    pt = _deploy() / "pre_train" / "h1" / "motion.pt"
    js = tmp_path / "h1.json"
    assert main(["policy", "import", str(pt), "-o", str(js)]) == 0
    np.savez(tmp_path / "o.npz", observations=np.zeros((5, 47)))
    np.savez(tmp_path / "n.npz", obs=np.zeros((5, 41)))
    for name, msg in (("o.npz", "shape (5, 47), expected (T, 41)"),
                      ("n.npz", "no array 'observations' (arrays: obs)")):
        assert main(["policy", "eval", str(js), "--observations", str(tmp_path / name),
                     "-o", str(tmp_path / "a.npz")]) == 2
        assert msg in capsys.readouterr().err


def test_observation_assembly_follows_deploy_script(tmp_path):
    from rbc.policy.contract import contract_from_deploy_config

    c = contract_from_deploy_config(_deploy() / "deploy_mujoco" / "configs" / "g1.yaml")
    rng = np.random.default_rng(0)
    w, g, cmd = rng.normal(size=3), rng.normal(size=3), np.array([0.5, 0.1, -0.2])
    q, qd, a = rng.normal(size=12), rng.normal(size=12), rng.normal(size=12)
    t = 1.13
    o = observation(c, ang_vel=w, gravity=g, command=cmd, q=q, qd=qd, last_action=a, t=t)
    # deploy_mujoco.py, written out
    default = np.array(c["default_angles"])
    phase = t % 0.8 / 0.8
    want = np.r_[w * 0.25, g, cmd * [2.0, 2.0, 0.25], (q - default) * 1.0, qd * 0.05, a,
                 np.sin(2 * np.pi * phase), np.cos(2 * np.pi * phase)]
    assert o.shape == (47,)
    np.testing.assert_array_equal(o, want)  # identical operations: exactly equal
    np.testing.assert_array_equal(joint_targets(c, a), default + 0.25 * a)


def test_contract_missing_field(tmp_path, capsys):
    cfg = yaml.safe_load((_deploy() / "deploy_mujoco" / "configs" / "g1.yaml").read_text())
    del cfg["action_scale"]
    p = tmp_path / "g1.yaml"
    p.write_text(yaml.safe_dump(cfg))
    pt = _deploy() / "pre_train" / "g1" / "motion.pt"
    assert main(["policy", "import", str(pt), "-o", str(tmp_path / "x.json"),
                 "--config", str(p)]) == 2
    assert "g1.yaml: action_scale: missing field" in capsys.readouterr().err


def _record(qualname: str, attrs: bytes) -> bytes:
    """A TorchScript module object: GLOBAL cls, NEWOBJ(), BUILD {attrs}."""
    module, name = qualname.rsplit(".", 1)
    return _g(module, name) + b")\x81}(" + attrs + b"ub"


def _scripted_mlp(tmp_path, act_class: str, code: str | None):
    """A TorchScript-style graph: root record → Sequential(Linear, <act>, Linear)."""
    rng = np.random.default_rng(4)
    W0, b0 = rng.normal(size=(3, 2)).astype("f4"), rng.normal(size=3).astype("f4")
    W1, b1 = rng.normal(size=(1, 3)).astype("f4"), rng.normal(size=1).astype("f4")
    lin = "__torch__.torch.nn.modules.linear.Linear"
    seq = _record("__torch__.torch.nn.modules.container.Sequential",
                  _s("training") + b"\x89"
                  + _s("0") + _record(lin, _s("weight") + _tensor("0", 6, (3, 2), (2, 1))
                                      + _s("bias") + _tensor("1", 3, (3,), (1,)))
                  + _s("1") + _record(act_class, _s("training") + b"\x89")
                  + _s("2") + _record(lin, _s("weight") + _tensor("2", 3, (1, 3), (3, 1))
                                      + _s("bias") + _tensor("3", 1, (1,), (1,))))
    pkl = b"\x80\x02" + _record("__torch__.my.Policy", _s("actor") + seq) + b"."
    pt = tmp_path / "scripted.pt"
    _archive(pt, pkl, {"0": W0.ravel(), "1": b0, "2": W1.ravel(), "3": b1})
    if code is not None:
        with zipfile.ZipFile(pt, "a") as z:
            z.writestr("archive/code/" + act_class.rsplit(".", 1)[0].replace(".", "/") + ".py",
                       code)
    return pt, (W0.astype(float), b0.astype(float), W1.astype(float), b1.astype(float))


def test_scripted_records_and_elu_alpha_from_code(tmp_path):
    code = ("class ELU(Module):\n  __parameters__ = []\n  alpha : Final[float] = 0.5\n"
            "  inplace : Final[bool] = False\n")
    pt, (W0, b0, W1, b1) = _scripted_mlp(
        tmp_path, "__torch__.torch.nn.modules.activation.ELU", code)
    js = tmp_path / "s.json"
    assert main(["policy", "import", str(pt), "-o", str(js)]) == 0
    net = load_policy(js)
    assert [(x.activation, x.alpha) for x in net.layers] == [("elu", 0.5), ("identity", 1.0)]
    assert net.source["root_class"] == "__torch__.my.Policy"
    x = np.array([[-3.0, 0.4], [2.0, -1.0]])
    z = x @ W0.T + b0
    want = np.where(z > 0, z, 0.5 * np.expm1(z)) @ W1.T + b1
    np.savez(tmp_path / "o.npz", observations=x)
    assert main(["policy", "eval", str(js), "--observations", str(tmp_path / "o.npz"),
                 "-o", str(tmp_path / "a.npz")]) == 0
    # six-decimal weights through a 3-term sum and ELU (slope ≤ 1): ≲ 1e-5
    np.testing.assert_allclose(np.load(tmp_path / "a.npz")["actions"], want, atol=1e-5)


def test_unsupported_module_is_named(tmp_path, capsys):
    pt, _ = _scripted_mlp(tmp_path, "__torch__.torch.nn.modules.dropout.Dropout", None)
    assert main(["policy", "import", str(pt), "-o", str(tmp_path / "x.json")]) == 2
    err = capsys.readouterr().err
    assert "actor.1: unsupported module __torch__.torch.nn.modules.dropout.Dropout" in err
    assert "supported: Linear, ELU, ReLU, Tanh, Identity" in err

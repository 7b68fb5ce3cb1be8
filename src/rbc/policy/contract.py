"""The observation/action contract of a Unitree deployment policy, from its deploy configs.

A policy's numbers mean nothing without the contract that built its inputs and reads its
outputs. For unitree_rl_gym's deployment policies (``deploy/deploy_mujoco/deploy_mujoco.py``
and ``deploy/deploy_real/deploy_real.py``, every 0.02 s control step)::

    obs = [ ω_base · ang_vel_scale              (3)   IMU angular velocity, base frame [rad/s]
            g_base                              (3)   gravity direction in the base frame
            cmd ⊙ cmd_scale                     (3)   (v_x [m/s], v_y [m/s], ω_z [rad/s])
            (q − default_angles) · dof_pos_scale (n)  leg joint angles [rad]
            q̇ · dof_vel_scale                   (n)   leg joint rates [rad/s]
            a_prev                              (n)   previous action
            sin 2πφ, cos 2πφ ]                  (2)   phase clock, φ = (t mod period)/period
    q_target = default_angles + action_scale · a      (PD targets, gains kps, kds)

so ``n_obs = 9 + 3 n + 2``. ``period = 0.8 s`` is hard-coded in both deploy scripts (not in
the yaml files). The joint names are the robots' leg joints in the policy's order (the order
of ``default_angles``; the robots' MJCF/URDF joint order), the motor indices come from
``deploy_real/configs/<robot>.yaml`` (``leg_joint2motor_idx``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from rbc.errors import InputError, RecordError
from rbc.safeio import load_yaml, read_text

PHASE_PERIOD = 0.8  # [s] deploy_mujoco.py / deploy_real.py: `period = 0.8`

# The policies' leg joint order (matches each deploy yaml's default_angles pattern).
JOINT_NAMES: dict[str, tuple[str, ...]] = {
    "g1": tuple(f"{s}_{j}_joint" for s in ("left", "right") for j in
                ("hip_pitch", "hip_roll", "hip_yaw", "knee", "ankle_pitch", "ankle_roll")),
    "h1": tuple(f"{s}_{j}_joint" for s in ("left", "right") for j in
                ("hip_yaw", "hip_roll", "hip_pitch", "knee", "ankle")),
    "h1_2": tuple(f"{s}_{j}_joint" for s in ("left", "right") for j in
                  ("hip_yaw", "hip_pitch", "hip_roll", "knee", "ankle_pitch", "ankle_roll")),
}

_REQUIRED = ("num_obs", "num_actions", "default_angles", "ang_vel_scale", "dof_pos_scale",
             "dof_vel_scale", "action_scale", "cmd_scale")


class ContractError(RecordError):
    """A deploy config lacks a contract field or is inconsistent with the network."""


def find_deploy_config(policy_file: str | Path) -> Path | None:
    """The MuJoCo deploy config of a policy in unitree_rl_gym's standard layout, if present.

    ``…/deploy/pre_train/<robot>/<name>.pt`` ↔ ``…/deploy/deploy_mujoco/configs/<robot>.yaml``.
    """
    p = Path(policy_file).resolve()
    if p.parent.parent.name != "pre_train":
        return None
    cfg = p.parent.parent.parent / "deploy_mujoco" / "configs" / f"{p.parent.name}.yaml"
    return cfg if cfg.is_file() else None


def _read_yaml(path: Path) -> dict:
    try:
        text = read_text(path, "config")
    except InputError as err:
        raise ContractError(path, "", err.problem, expected=err.expected) from None
    data = load_yaml(text, path, error=ContractError)
    if not isinstance(data, dict):
        raise ContractError(path, "", "top level is not a mapping")
    return data


def _numbers(path: Path, cfg: dict, key: str, n: int | None) -> list[float]:
    value = cfg.get(key)
    try:
        a = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        a = np.asarray([])
    if a.ndim != 1 or (n is not None and a.size != n) or not np.all(np.isfinite(a)):
        raise ContractError(path, key, f"{value!r} is not a list of "
                                       f"{n if n is not None else ''} numbers".replace("  ", " "))
    return [float(v) for v in a]


def _number(path: Path, cfg: dict, key: str) -> float:
    value = cfg.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ContractError(path, key, f"{value!r} is not a number")
    return float(value)


def contract_from_deploy_config(config: str | Path) -> dict[str, Any]:
    """Build a policy's contract from its deploy yaml (and the sibling real-robot yaml).

    Args:
        config: ``deploy_mujoco/configs/<robot>.yaml`` (or a ``deploy_real`` config).

    Returns:
        The contract dict written into the policy JSON (fields in docs/policy.md §3).

    Raises:
        ContractError: a required field is missing or malformed, or ``num_obs`` does not
            equal ``9 + 3 num_actions + 2`` (the layout above).
    """
    path = Path(config)
    cfg = _read_yaml(path)
    for key in _REQUIRED:
        if key not in cfg:
            raise ContractError(path, key, "missing field (needed by the policy contract)")
    n_obs, n = cfg["num_obs"], cfg["num_actions"]
    for key, v in (("num_obs", n_obs), ("num_actions", n)):
        if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
            raise ContractError(path, key, f"{v!r} is not a positive integer")
    if n_obs != 9 + 3 * n + 2:
        raise ContractError(path, "num_obs", f"{n_obs} does not fit the Unitree layout",
                            expected=f"9 + 3·{n} + 2 = {9 + 3 * n + 2}")
    robot = path.stem
    if "control_dt" in cfg:
        control_dt = _number(path, cfg, "control_dt")
    elif "simulation_dt" in cfg and "control_decimation" in cfg:
        control_dt = _number(path, cfg, "simulation_dt") * _number(path, cfg, "control_decimation")
    else:
        raise ContractError(path, "control_dt", "missing field (or simulation_dt and "
                                                "control_decimation)")
    cmd_scale = _numbers(path, cfg, "cmd_scale", 3)
    ang, pos, vel = (_number(path, cfg, k) for k in ("ang_vel_scale", "dof_pos_scale",
                                                     "dof_vel_scale"))
    segments = [
        ("base_ang_vel", 3, ang, "IMU angular velocity in the base frame [rad/s]"),
        ("projected_gravity", 3, 1.0, "unit gravity direction in the base frame"),
        ("command", 3, cmd_scale, "(v_x [m/s], v_y [m/s], yaw rate [rad/s])"),
        ("joint_pos", n, pos, "q - default_angles [rad]"),
        ("joint_vel", n, vel, "joint rates [rad/s]"),
        ("last_action", n, 1.0, "previous raw action"),
        ("phase", 2, 1.0, "(sin 2πφ, cos 2πφ), φ = (t mod period)/period"),
    ]
    layout, start = [], 0
    for name, size, scale, meaning in segments:
        layout.append({"name": name, "start": start, "size": size, "scale": scale,
                       "meaning": meaning})
        start += size
    contract: dict[str, Any] = {
        "robot": robot,
        "config": path.name,
        "n_obs": n_obs,
        "n_act": n,
        "control_dt": round(control_dt, 12),
        "observation": layout,
        "ang_vel_scale": ang,
        "dof_pos_scale": pos,
        "dof_vel_scale": vel,
        "cmd_scale": cmd_scale,
        "phase": {"period": PHASE_PERIOD, "source": "deploy_mujoco.py: period = 0.8"},
        "default_angles": _numbers(path, cfg, "default_angles", n),
        "action_scale": _number(path, cfg, "action_scale"),
        "action": "q_target = default_angles + action_scale * action",
        "joint_names": list(JOINT_NAMES[robot]) if len(JOINT_NAMES.get(robot, ())) == n else None,
    }
    for key in ("kps", "kds"):
        if key in cfg:
            contract[key] = _numbers(path, cfg, key, n)
    for key in ("cmd_init", "max_cmd"):
        if key in cfg:
            contract[key] = _numbers(path, cfg, key, 3)
    real = path.parent.parent.parent / "deploy_real" / "configs" / path.name
    if path.parent.parent.name == "deploy_mujoco" and real.is_file():
        rcfg = _read_yaml(real)
        if "leg_joint2motor_idx" in rcfg:
            contract["motor_index"] = [int(v) for v in _numbers(real, rcfg,
                                                                "leg_joint2motor_idx", n)]
        for key in ("max_cmd",):
            if key in rcfg and key not in contract:
                contract[key] = _numbers(real, rcfg, key, 3)
        if "imu_type" in rcfg:
            contract["imu_type"] = str(rcfg["imu_type"])
        contract["real_config"] = real.name
    elif "leg_joint2motor_idx" in cfg:
        contract["motor_index"] = [int(v) for v in _numbers(path, cfg, "leg_joint2motor_idx", n)]
    return contract


def observation(contract: dict[str, Any], *, ang_vel: np.ndarray, gravity: np.ndarray,
                command: np.ndarray, q: np.ndarray, qd: np.ndarray, last_action: np.ndarray,
                t: float) -> np.ndarray:
    """Assemble one observation vector as the deploy scripts do (for user adapters).

    Args:
        contract: a contract from :func:`contract_from_deploy_config`.
        ang_vel: (3,) base angular velocity in the base frame [rad/s].
        gravity: (3,) unit gravity direction in the base frame.
        command: (3,) (v_x [m/s], v_y [m/s], yaw rate [rad/s]).
        q: (n,) leg joint angles in the policy's joint order [rad].
        qd: (n,) leg joint rates [rad/s].
        last_action: (n,) the previous action (zeros at the start).
        t: time since the start [s] (the phase clock).

    Returns:
        (n_obs,) observation.
    """
    phi = (t % contract["phase"]["period"]) / contract["phase"]["period"]
    return np.concatenate([
        np.asarray(ang_vel, float) * contract["ang_vel_scale"],
        np.asarray(gravity, float),
        np.asarray(command, float) * np.asarray(contract["cmd_scale"]),
        (np.asarray(q, float) - np.asarray(contract["default_angles"])) * contract["dof_pos_scale"],
        np.asarray(qd, float) * contract["dof_vel_scale"],
        np.asarray(last_action, float),
        [np.sin(2 * np.pi * phi), np.cos(2 * np.pi * phi)],
    ])


def joint_targets(contract: dict[str, Any], action: np.ndarray) -> np.ndarray:
    """PD position targets ``default_angles + action_scale · action`` (n,) [rad]."""
    return np.asarray(contract["default_angles"]) + contract["action_scale"] * np.asarray(action)

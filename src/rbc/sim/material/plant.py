"""The MuJoCo plant on the excavation scene, sampling the particles' tracks.

:class:`MaterialBackend` is :class:`rbc.sim.backends.mujoco.MujocoBackend` with its MJCF
replaced by the scene's (:meth:`rbc.sim.material.scene.Scene.edit`); everything else — the
ports, efforts, loop gaps, energies — is the MuJoCo backend's, so ``rbc.sim.run`` drives it
unchanged: :func:`material_backend` makes the class for one scene and one
:class:`TrackRecorder`, and the caller swaps it into the prepared run
(``dataclasses.replace(prep, backend=...)``). Its measurement's ``q``/``v`` are the robot's
part of MuJoCo's state (the log stays the robot's; the particles are in the recorder). The
kinetic and potential energies are the whole scene's (the particles included), so the
energy ledger's residual also holds the work of the contacts between bucket and material
and the bed's own losses. The MuJoCo backend's state readback (``tree_state``,
``base_state``: support modes, floating bases) reads the whole qpos and is not meant for a
scene with extra bodies; the excavator is fixed-base and never calls it.

**Tracks.** After the measurement of every control step at or past the next sample time
(every ``every`` seconds, from t = 0), the recorder stores each particle's centre (world,
[m]), linear speed ([m/s], MuJoCo's free-joint qvel), whether it is inside the bucket's
volume (centre in the bucket body frame, :meth:`Bucket.inside`) and inside the region
(:meth:`Region.contains`).
"""

from __future__ import annotations

import numpy as np

from rbc.backends.mujoco_log import mujoco
from rbc.sim.backends.mujoco import MujocoBackend
from rbc.sim.material.delivery import Delivery, DeliveryRule, delivery
from rbc.sim.material.scene import Scene


class TrackRecorder:
    """Sampled particle tracks of one run (module docstring).

    Args:
        scene: the scene; every: sample spacing [s].
    """

    def __init__(self, scene: Scene, every: float = 0.01) -> None:
        self.scene, self.every = scene, float(every)
        self.time: list[float] = []
        self.pos: list[np.ndarray] = []
        self.speed: list[np.ndarray] = []
        self.in_bucket: list[np.ndarray] = []
        self.in_region: list[np.ndarray] = []
        self.total_mass = 0.0  # MuJoCo's, of the particle bodies (set by the plant)

    def sample(self, t: float, pos: np.ndarray, speed: np.ndarray, in_bucket: np.ndarray
               ) -> None:
        """Store one sample: time [s], centres (N, 3) [m], speeds (N,) [m/s], in-bucket (N,)."""
        self.time.append(float(t))
        self.pos.append(np.asarray(pos, dtype=float).copy())
        self.speed.append(np.asarray(speed, dtype=float).copy())
        self.in_bucket.append(np.asarray(in_bucket, dtype=bool).copy())
        self.in_region.append(self.scene.region.contains(pos, self.scene.size))

    def due(self, t: float) -> bool:
        """Whether time t [s] is at or past the next sample time."""
        return not self.time or t >= self.time[-1] + self.every - 1e-9

    def arrays(self) -> dict[str, np.ndarray]:
        """``time (T,)``, ``pos (T, N, 3)``, ``speed``, ``in_bucket``, ``in_region (T, N)``."""
        n = self.scene.n_particles
        out = {"time": np.asarray(self.time, dtype=float)}
        for key, shape, dtype in (("pos", (0, n, 3), float), ("speed", (0, n), float),
                                  ("in_bucket", (0, n), bool), ("in_region", (0, n), bool)):
            rows = getattr(self, key)
            out[key] = np.asarray(rows, dtype=dtype) if rows else np.zeros(shape, dtype)
        return out

    def delivery(self, rule: DeliveryRule | None = None) -> Delivery:
        """The delivered-mass metric on the tracks (:mod:`rbc.sim.material.delivery`); the
        default rule: the scene's bed top, a clearance of one particle edge."""
        a = self.arrays()
        rule = rule or default_rule(self.scene)
        return delivery(a["time"], a["pos"][..., 2], a["speed"], a["in_bucket"],
                        a["in_region"], rule, self.scene.particle_mass)


def default_rule(scene: Scene) -> DeliveryRule:
    """The metric's thresholds for a scene: carried once more than one particle edge (at
    least 5 cm) above the bed's top; at rest below 5 cm/s for 0.2 s (docs/excavation.md)."""
    return DeliveryRule(bed_top=scene.bed_top, clearance=max(scene.size, 0.05))


class MaterialBackend(MujocoBackend):
    """MuJoCo on the excavation scene (module docstring); made by :func:`material_backend`."""

    scene: Scene | None = None
    recorder: TrackRecorder | None = None

    def scene_xml(self, exp) -> str:
        """The scene around the export (:meth:`Scene.edit`)."""
        names = {b.name: exp.body_names[i] for i, b in enumerate(self.plant.record.bodies)
                 if i in exp.body_names}
        return self.scene.edit(exp, names)

    def __init__(self, plant, part, q0, v0, dt, **options) -> None:
        super().__init__(plant, part, q0, v0, dt, **options)
        m, scene = self.m, self.scene
        n = scene.n_particles
        bodies = plant.record.body_index()
        self.bucket_id = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY,
                                           self.exp.body_names[bodies[scene.bucket_body]])
        ids = [mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, f"scene.particle{i}")
               for i in range(n)]
        self.particles = np.array(ids, dtype=np.int64)
        joints = [int(m.body_jntadr[b]) for b in ids]
        self.robot_nq = int(m.jnt_qposadr[joints[0]]) if n else m.nq
        self.robot_nv = int(m.jnt_dofadr[joints[0]]) if n else m.nv
        self.lin_dofs = (np.array([m.jnt_dofadr[j] for j in joints], dtype=np.int64)[:, None]
                         + np.arange(3)).reshape(n, 3)
        self.recorder.total_mass = float(m.body_mass[self.particles].sum()) if n else 0.0

    def measure(self):
        """The MuJoCo backend's measurement with the robot's q, v (module docstring);
        samples the tracks when due. Its ``mj_forward`` runs with contacts disabled: no
        measured quantity depends on them, and collision detection among the particles
        would otherwise double the cost of every control step (``mj_step`` recomputes
        everything, contacts included, from the state)."""
        from dataclasses import replace

        opt = self.m.opt
        flags = opt.disableflags
        opt.disableflags = flags | mujoco.mjtDisableBit.mjDSBL_CONTACT
        try:
            meas = super().measure()
        finally:
            opt.disableflags = flags
        d, rec = self.d, self.recorder
        if rec.due(float(d.time)):
            pos = d.xpos[self.particles]
            R = d.xmat[self.bucket_id].reshape(3, 3)
            local = (pos - d.xpos[self.bucket_id]) @ R
            speed = np.linalg.norm(d.qvel[self.lin_dofs], axis=-1)
            rec.sample(float(d.time), pos, speed, self.scene.bucket.inside(local))
        return replace(meas, q=meas.q[: self.robot_nq], v=meas.v[: self.robot_nv])


def material_backend(scene: Scene, recorder: TrackRecorder) -> type[MaterialBackend]:
    """A :class:`MaterialBackend` class bound to one scene and recorder (``rbc.sim.run``
    constructs the plant itself)."""
    return type("MaterialBackend", (MaterialBackend,), {"scene": scene, "recorder": recorder})

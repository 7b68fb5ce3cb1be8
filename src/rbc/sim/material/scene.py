"""The excavation scene: the exported excavator MJCF plus bucket collision boxes, a particle
bed, a receiving bin and a floor, added with lxml to the export's document
(:func:`rbc.backends.mjcf_export.export_mjcf`), never by hand (docs/excavation.md).

**Frames.** World: the record's (z up, the swing axis at the origin, the front along +x at
``slew = 0``), ground at z = 0. Bucket: the record's ``bucket`` body frame — origin at the
bucket pin, x toward the tooth tip (the ``bucket_tip`` task point, 1.5 m along x), y along
the pin. The record puts the bucket's centre of mass at z = +0.2 m, so the shell lies on the
+z side of the pin–tip chord and the mouth is the chord plane z = 0, opening toward −z.

**Bucket boxes** (:class:`Bucket`), sized from the record's bucket body: pin to tooth tip
1.5 m (the task point), outer width 1.25 m (the y edge of the record's inertia box), plates
4 cm thick, the rear plate 0.15 m ahead of the pin, depth 0.6 m below the mouth — a struck
cavity of 1.27 × 1.17 × 0.60 m = 0.89 m³ for the record's "1.0 m³ GP bucket" (a rated
capacity is heaped). Five boxes: ``lip`` (the floor plate that ends at the cutting edge,
x = 1.5 m), ``back`` (opposite the mouth, z = depth), ``rear`` (under the pin) and the two
``side`` plates. They carry no mass (the export's ``inertiafromgeom="false"``): the robot's
dynamics are the record's.

**Particles** (:class:`Bed`): cubes of edge ``size`` and density ``density`` (mass ρ s³,
inertia m s²/6 about every axis, written explicitly), each a free body, on a lattice of
pitch ``size + gap`` filling the bed's footprint in ``layers`` layers resting on the floor,
every cube moved by a uniform draw in ±``jitter`` along x and y from
``numpy.random.default_rng(seed)`` (deterministic). An *exposed face* keeps only the cubes
beyond ``face_x`` (a bed cut to a vertical face toward the machine).

**Receiving region** (:class:`Region`): a bin on the floor — a rectangle of the floor with
four walls of height ``wall`` — reached by slewing; a particle is *in* it when its centre is
inside the walls' inner footprint and below ``wall + size`` above the floor.

**Contacts.** Bits: particles ``contype 1 conaffinity 3``, bucket boxes ``contype 2
conaffinity 0`` (they touch particles only; ``contype 0`` with ``bucket_contact=False``, the
control run), floor and bin walls ``contype 0 conaffinity 1``. The rest of the robot (arm,
boom, linkage, undercarriage) has no collision geometry (the export's geoms are visual).
Friction ``friction`` on every scene geom (MuJoCo takes the larger of a pair), condim 3,
MuJoCo's default ``solref``/``solimp`` for the contacts.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from lxml import etree

from rbc.backends.mjcf_export import MjcfExport, fmt, vec
from rbc.errors import RbcError


class SceneError(RbcError):
    """An inconsistent scene (sizes, regions, a missing body)."""


@dataclass(frozen=True)
class Bucket:
    """The bucket's collision boxes and cavity, bucket body frame [m] (module docstring)."""

    x_rear: float = 0.15
    x_lip: float = 1.5
    depth: float = 0.6
    width: float = 1.25
    plate: float = 0.04
    #: material heaped up to this far out of the mouth (−z) still counts as in the bucket
    heap: float = 0.2

    def plates(self) -> list[tuple[str, np.ndarray, np.ndarray]]:
        """``(name, centre (3,), half sizes (3,))`` of the five boxes, bucket frame [m]."""
        t, d, w, x0, x1 = self.plate, self.depth, self.width, self.x_rear, self.x_lip
        xm, hx = 0.5 * (x0 + x1), 0.5 * (x1 - x0)
        out = [("lip", [x1 - t / 2, 0.0, d / 2], [t / 2, w / 2, d / 2]),
               ("back", [xm, 0.0, d + t / 2], [hx, w / 2, t / 2]),
               ("rear", [x0 + t / 2, 0.0, d / 2], [t / 2, w / 2, d / 2])]
        for side, s in (("side_l", 1.0), ("side_r", -1.0)):
            out.append((side, [xm, s * (w / 2 - t / 2), (d + t) / 2], [hx, t / 2, (d + t) / 2]))
        return [(n, np.array(c, dtype=float), np.array(h, dtype=float)) for n, c, h in out]

    @property
    def cavity(self) -> tuple[np.ndarray, np.ndarray]:
        """``(lower (3,), upper (3,))`` corners of the cavity, bucket frame [m]: inside the
        plates, from ``heap`` out of the mouth to the back plate."""
        t = self.plate
        return (np.array([self.x_rear + t, -(self.width / 2 - t), -self.heap]),
                np.array([self.x_lip - t, self.width / 2 - t, self.depth]))

    @property
    def struck_volume(self) -> float:
        """Volume inside the plates up to the mouth [m³]."""
        t = self.plate
        return (self.x_lip - self.x_rear - 2 * t) * (self.width - 2 * t) * self.depth

    def inside(self, p_local: np.ndarray) -> np.ndarray:
        """(N,) bool: points (N, 3) in the bucket frame inside :attr:`cavity`."""
        lo, hi = self.cavity
        p = np.asarray(p_local, dtype=float).reshape(-1, 3)
        return np.all((p >= lo) & (p <= hi), axis=1)


@dataclass(frozen=True)
class Bed:
    """A bed of cubes on the floor (module docstring). Lengths [m], density [kg/m³]."""

    x: tuple[float, float] = (5.0, 6.8)
    y: tuple[float, float] = (-0.5, 0.5)
    layers: int = 2
    size: float = 0.15
    gap: float = 0.015
    jitter: float = 0.004
    density: float = 1600.0
    #: exposed face: only cubes whose centre lies beyond this x [m] (None: the whole bed)
    face_x: float | None = None

    def __post_init__(self) -> None:
        if not (self.size > 0 and self.gap >= 0 and self.density > 0 and self.layers >= 0
                and 0 <= self.jitter < self.gap / 2 + 1e-12):
            raise SceneError(f"bed: size {self.size:g} and density {self.density:g} must be "
                             f"positive, gap {self.gap:g} ≥ 0, layers {self.layers} ≥ 0 and "
                             f"jitter {self.jitter:g} below half the gap (cubes would overlap)")

    @property
    def particle_mass(self) -> float:
        """Mass of one cube [kg]: ρ s³."""
        return self.density * self.size ** 3

    @property
    def top(self) -> float:
        """Height of the bed's top face above the floor [m] (layers stacked, no gaps)."""
        return self.layers * self.size

    def positions(self, seed: int) -> np.ndarray:
        """(N, 3) cube centres in the world [m]: the lattice, layer by layer, each cube
        jittered in x and y by ``default_rng(seed)`` (module docstring)."""
        pitch = self.size + self.gap
        nx = int(np.floor((self.x[1] - self.x[0] + self.gap) / pitch + 1e-9))
        ny = int(np.floor((self.y[1] - self.y[0] + self.gap) / pitch + 1e-9))
        xs = self.x[0] + self.size / 2 + pitch * np.arange(nx)
        ys = self.y[0] + self.size / 2 + pitch * np.arange(ny)
        if self.face_x is not None:
            xs = xs[xs >= self.face_x]
        # each layer rests on the one below, 0.1 mm apart (they settle at the start)
        zs = self.size / 2 + (self.size + 1e-4) * np.arange(self.layers) + 1e-4
        grid = np.array([(x, y, z) for z in zs for x in xs for y in ys]).reshape(-1, 3)
        rng = np.random.default_rng(seed)
        grid[:, :2] += rng.uniform(-self.jitter, self.jitter, size=(len(grid), 2))
        return grid


@dataclass(frozen=True)
class Region:
    """The receiving bin on the floor (module docstring). Lengths [m]."""

    x: tuple[float, float] = (-1.2, 1.2)
    y: tuple[float, float] = (4.8, 8.0)
    wall: float = 0.4
    thickness: float = 0.05

    def contains(self, p: np.ndarray, size: float) -> np.ndarray:
        """(N,) bool: centres (N, 3) [m] inside the walls and below ``wall + size``."""
        p = np.asarray(p, dtype=float).reshape(-1, 3)
        return ((p[:, 0] > self.x[0]) & (p[:, 0] < self.x[1]) & (p[:, 1] > self.y[0])
                & (p[:, 1] < self.y[1]) & (p[:, 2] < self.wall + size))

    def walls(self) -> list[tuple[str, np.ndarray, np.ndarray]]:
        """``(name, centre (3,), half sizes (3,))`` of the four walls (outside the inner
        footprint), world [m]."""
        (x0, x1), (y0, y1), h, t = self.x, self.y, self.wall, self.thickness
        xm, ym, hx, hy = (x0 + x1) / 2, (y0 + y1) / 2, (x1 - x0) / 2 + t, (y1 - y0) / 2
        return [(n, np.array(c), np.array(s)) for n, c, s in (
            ("near", (xm, y0 - t / 2, h / 2), (hx, t / 2, h / 2)),
            ("far", (xm, y1 + t / 2, h / 2), (hx, t / 2, h / 2)),
            ("left", (x0 - t / 2, ym, h / 2), (t / 2, hy, h / 2)),
            ("right", (x1 + t / 2, ym, h / 2), (t / 2, hy, h / 2)))]


@dataclass(frozen=True)
class Scene:
    """A whole scene: bucket, bed (None: an empty bed), bin, the bucket's contact switch,
    the layout seed and the scene geoms' friction coefficient."""

    bed: Bed | None = field(default_factory=Bed)
    bucket: Bucket = field(default_factory=Bucket)
    region: Region = field(default_factory=Region)
    bucket_contact: bool = True
    seed: int = 20260927
    friction: float = 0.7
    #: the record body that carries the bucket boxes
    bucket_body: str = "bucket"

    def positions(self) -> np.ndarray:
        """(N, 3) initial particle centres [m] (none for an empty bed)."""
        return np.zeros((0, 3)) if self.bed is None else self.bed.positions(self.seed)

    @property
    def n_particles(self) -> int:
        """Number of particles."""
        return len(self.positions())

    @property
    def particle_mass(self) -> float:
        """Mass of one particle [kg] (0 for an empty bed)."""
        return 0.0 if self.bed is None else self.bed.particle_mass

    @property
    def total_mass(self) -> float:
        """Declared mass of the bed [kg]: N ρ s³."""
        return self.n_particles * self.particle_mass

    @property
    def bed_top(self) -> float:
        """Height of the bed's top above the floor [m] (0 for an empty bed)."""
        return 0.0 if self.bed is None else self.bed.top

    @property
    def size(self) -> float:
        """Particle edge [m] (0 for an empty bed)."""
        return 0.0 if self.bed is None else self.bed.size

    def edit(self, exp: MjcfExport, body_names: dict[str, str]) -> str:
        """The scene's MJCF text: a copy of the export's document with the floor, the bin,
        the bucket boxes (on the MuJoCo body ``body_names[bucket_body]``) and the particles
        (free bodies appended last, so the robot's qpos/qvel addresses are unchanged; the
        keyframe ``assembled`` extended by their poses).

        Args:
            exp: the export (not modified).
            body_names: record body name → MuJoCo body name.

        Raises:
            SceneError: the bucket body is not in the export.
        """
        root = etree.fromstring(exp.to_string())
        world = root.find("worldbody")
        mj_bucket = body_names.get(self.bucket_body)
        body = None if mj_bucket is None else world.find(f".//body[@name='{mj_bucket}']")
        if body is None:
            raise SceneError(f"excavation scene: the export has no body '{self.bucket_body}' "
                             f"for the bucket boxes; bodies: {', '.join(body_names)}")
        mu = f"{fmt(self.friction)} 0.005 0.0001"
        bits = ("2", "0") if self.bucket_contact else ("0", "0")
        for name, c, h in self.bucket.plates():
            etree.SubElement(body, "geom", name=f"scene.bucket.{name}", type="box", pos=vec(c),
                             size=vec(h), contype=bits[0], conaffinity=bits[1], condim="3",
                             friction=mu, group="2", rgba="0.85 0.6 0.1 0.5")
        first = world[0] if len(world) else None
        floor = etree.Element("geom", name="scene.floor", type="plane", pos="0 0 0",
                              size="0 0 1", contype="0", conaffinity="1", condim="3",
                              friction=mu, rgba="0.55 0.5 0.45 1")
        if first is None:
            world.append(floor)
        else:
            first.addprevious(floor)
        for name, c, h in self.region.walls():
            etree.SubElement(world, "geom", name=f"scene.bin.{name}", type="box", pos=vec(c),
                             size=vec(h), contype="0", conaffinity="1", condim="3",
                             friction=mu, rgba="0.3 0.45 0.7 1")
        pos = self.positions()
        if len(pos):
            s, m = self.bed.size, self.particle_mass
            inertia = fmt(m * s * s / 6.0)
            for i, p in enumerate(pos):
                b = etree.SubElement(world, "body", name=f"scene.particle{i}", pos=vec(p))
                etree.SubElement(b, "freejoint", name=f"scene.particle{i}.free")
                etree.SubElement(b, "inertial", pos="0 0 0", mass=fmt(m),
                                 diaginertia=f"{inertia} {inertia} {inertia}")
                etree.SubElement(b, "geom", type="box", size=vec([s / 2] * 3), contype="1",
                                 conaffinity="3", condim="3", friction=mu,
                                 rgba="0.45 0.3 0.15 1")
            key = root.find("keyframe/key[@name='assembled']")
            extra = np.column_stack([pos, np.tile([1.0, 0.0, 0.0, 0.0], (len(pos), 1))])
            key.set("qpos", f"{key.get('qpos')} {vec(extra.ravel())}")
        size = root.find("size")
        if size is None:
            size = etree.Element("size")
            root.insert(list(root).index(root.find("worldbody")), size)
        # contacts of a few hundred resting cubes need more than MuJoCo's default arena
        size.set("memory", f"{max(64, 1 + len(pos) // 4)}M")
        return etree.tostring(root, pretty_print=True, encoding="unicode")

// rbc view: draws the scene of rbc.view.scene with three.js (vendored, MIT) — no network.
// The page carries three.js and OrbitControls base64-encoded and loads them as blob
// modules, so the same file works from a local server and straight from disk.

const b64 = (id) => {
  const bin = atob(document.getElementById(id).textContent.trim());
  const bytes = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
  return new TextDecoder().decode(bytes);
};
const moduleUrl = (src) => URL.createObjectURL(new Blob([src], { type: "text/javascript" }));
const threeUrl = moduleUrl(b64("three-src"));
const THREE = await import(threeUrl);
const { OrbitControls } = await import(
  moduleUrl(b64("orbit-src").replaceAll("from 'three'", `from '${threeUrl}'`)));

const S = JSON.parse(document.getElementById("scene-data").textContent);
const COLORS = {
  body: 0x9aa5b1, fixed: 0x5c6670, stick: 0x6b7b8c, tree: 0x2f74c0, cut: 0xe8590c,
  highlight: 0xffc000, support: 0x2b9348, task: 0x9d4edd, background: 0xf4f6f8,
};
const L = S.scale;                 // characteristic length [m]
const R = Math.max(0.004, 0.02 * L); // rod radius of stick figures [m]

// ---------------------------------------------------------------- renderer, camera
const renderer = new THREE.WebGLRenderer({ antialias: true, preserveDrawingBuffer: true });
renderer.setPixelRatio(window.devicePixelRatio);
renderer.setSize(window.innerWidth, window.innerHeight);
document.body.appendChild(renderer.domElement);
const scene = new THREE.Scene();
scene.background = new THREE.Color(COLORS.background);
const camera = new THREE.PerspectiveCamera(40, window.innerWidth / window.innerHeight,
                                           1e-3 * L, 1e3 * L);
camera.up.set(0, 0, 1);            // z up, as the records
const controls = new OrbitControls(camera, renderer.domElement);
scene.add(new THREE.HemisphereLight(0xffffff, 0x8090a0, 2.2));
const sun = new THREE.DirectionalLight(0xffffff, 1.6);
sun.position.set(3, -2, 5);
scene.add(sun);

// ---------------------------------------------------------------- helpers
const mat = (color, extra = {}) => new THREE.MeshStandardMaterial(
  { color, roughness: 0.55, metalness: 0.05, ...extra });
const quat = (q) => new THREE.Quaternion(q[1], q[2], q[3], q[0]); // (w,x,y,z) -> three
function rod(a, b, radius, material, capped = true) {
  const pa = new THREE.Vector3(...a), pb = new THREE.Vector3(...b);
  const len = pa.distanceTo(pb);
  const geo = capped ? new THREE.CapsuleGeometry(radius, len, 4, 12)
                     : new THREE.CylinderGeometry(radius, radius, len, 16);
  const m = new THREE.Mesh(geo, material);
  m.position.copy(pa.clone().add(pb).multiplyScalar(0.5));
  if (len > 0) m.quaternion.setFromUnitVectors(new THREE.Vector3(0, 1, 0),
                                               pb.clone().sub(pa).normalize());
  return m;
}
function axes(size) {
  const g = new THREE.Group();
  [[1, 0, 0, 0xd62828], [0, 1, 0, 0x2b9348], [0, 0, 1, 0x1d4ed8]].forEach(([x, y, z, c]) => {
    g.add(rod([0, 0, 0], [x * size, y * size, z * size], 0.06 * size, mat(c), false));
  });
  return g;
}
function place(obj, entry) {
  obj.position.set(...entry.pos);
  obj.quaternion.copy(quat(entry.quat));
  return obj;
}

// ---------------------------------------------------------------- bodies
const bodyGroups = S.bodies.map((b) => {
  const g = new THREE.Group();
  g.name = b.name;
  const m = mat(b.kind === "fixed" ? COLORS.fixed : COLORS.body);
  for (const s of b.shapes) {
    if (s.type === "box") {
      const [x, y, z] = s.half_extents;
      g.add(place(new THREE.Mesh(new THREE.BoxGeometry(2 * x, 2 * y, 2 * z), m), s));
    } else if (s.type === "sphere") {
      g.add(place(new THREE.Mesh(new THREE.SphereGeometry(s.radius, 24, 16), m), s));
    } else {
      g.add(rod(s.from, s.to, s.radius, m, s.type === "capsule"));
    }
  }
  const sm = mat(b.kind === "fixed" ? COLORS.fixed : COLORS.stick);
  for (const [a, c] of b.sticks) g.add(rod(a, c, R, sm));
  if (!b.shapes.length && b.mass > 0) {
    const com = new THREE.Mesh(new THREE.SphereGeometry(1.8 * R, 16, 12), sm);
    com.position.set(...b.com);
    g.add(com);
  }
  scene.add(g);
  return g;
});

// ---------------------------------------------------------------- joints
const jointMeshes = {};
const JOINT_R = 2.4 * R;
for (const j of S.joints) {
  const m = mat(j.cut ? COLORS.cut : COLORS.tree);
  const g = new THREE.Group();
  g.position.set(...j.pos);
  if (j.type === "spherical" || j.type === "free" || j.axes.length === 0) {
    g.add(new THREE.Mesh(new THREE.SphereGeometry(1.25 * JOINT_R, 20, 14), m));
  } else {
    for (const a of j.axes) {
      const h = 2.5 * JOINT_R;
      const p = [a[0] * h, a[1] * h, a[2] * h];
      const n = [-p[0], -p[1], -p[2]];
      g.add(j.type === "prismatic" ? rod(n, p, 0.7 * JOINT_R, m, false)
                                   : rod(n, p, JOINT_R, m, false));
    }
  }
  g.userData = { material: m, base: m.color.getHex() };
  bodyGroups[j.body] ? bodyGroups[j.body].add(g) : scene.add(g);
  jointMeshes[j.name] = g;
}

// ---------------------------------------------------------------- supports and tasks
const frameGroups = [];
for (const [list, color] of [[S.supports, COLORS.support], [S.tasks, COLORS.task]]) {
  for (const f of list) {
    const g = place(new THREE.Group(), f);
    g.add(axes(0.12 * L));
    if (f.half_extents && f.half_extents.length >= 2) {
      const [hx, hy] = f.half_extents;
      g.add(new THREE.Mesh(new THREE.PlaneGeometry(2 * hx, 2 * hy),
        mat(color, { transparent: true, opacity: 0.45, side: THREE.DoubleSide })));
    } else {
      g.add(new THREE.Mesh(new THREE.SphereGeometry(1.2 * R, 12, 8), mat(color)));
    }
    (bodyGroups[f.body] || scene).add(g);
    frameGroups.push(g);
  }
}

// ---------------------------------------------------------------- frames (playback)
const T = S.frames.time, P = S.frames.pose;
let frame = 0;
function showFrame(i) {
  frame = i;
  P[i].forEach((p, b) => {
    bodyGroups[b].position.set(p[0], p[1], p[2]);
    bodyGroups[b].quaternion.set(p[4], p[5], p[6], p[3]);
  });
  document.getElementById("slider").value = String(i);
  document.getElementById("clock").textContent =
    `t = ${T[i].toFixed(3)} s / ${T[T.length - 1].toFixed(3)} s`;
}

// fit the camera to the first frame
showFrame(0);
const box = new THREE.Box3().setFromObject(scene);
const centre = box.getCenter(new THREE.Vector3());
const radius = Math.max(box.getSize(new THREE.Vector3()).length() / 2, 1e-3);
camera.position.copy(centre.clone().add(new THREE.Vector3(1.6, -2.2, 1.1)
  .normalize().multiplyScalar(radius * 2.8)));
controls.target.copy(centre);
controls.update();
const grid = new THREE.GridHelper(4 * radius, 20, 0xb8c0c8, 0xd8dde2);
grid.rotation.x = Math.PI / 2;     // the xy plane
grid.position.set(centre.x, centre.y, box.min.z);
scene.add(grid);

// ---------------------------------------------------------------- controls panel
const slider = document.getElementById("slider");
slider.max = String(T.length - 1);
slider.addEventListener("input", () => showFrame(Number(slider.value)));
let playing = false, t0 = 0, simStart = 0;
const playBtn = document.getElementById("play");
const speed = document.getElementById("speed");
playBtn.disabled = T.length < 2;
playBtn.addEventListener("click", () => {
  playing = !playing;
  playBtn.textContent = playing ? "pause" : "play";
  if (playing) {
    if (frame === T.length - 1) showFrame(0);
    t0 = performance.now(); simStart = T[frame];
  }
});
speed.addEventListener("change", () => { t0 = performance.now(); simStart = T[frame]; });

const list = document.getElementById("chords");
S.chords.forEach((c) => {
  const li = document.createElement("li");
  li.textContent = `${c.joint}  (${c.path.length} joints)`;
  li.title = `closure path: ${c.path.join(" → ")} → ${c.joint}`;
  li.addEventListener("click", () => {
    const on = !li.classList.contains("on");
    list.querySelectorAll("li").forEach((x) => x.classList.remove("on"));
    Object.values(jointMeshes).forEach((g) => g.userData.material.color.setHex(g.userData.base));
    if (on) {
      li.classList.add("on");
      [...c.path, c.joint].forEach((n) => jointMeshes[n] &&
        jointMeshes[n].userData.material.color.setHex(COLORS.highlight));
    }
  });
  list.appendChild(li);
});
document.getElementById("title").textContent = S.title;
document.getElementById("counts").textContent =
  `${S.bodies.length} bodies · ${S.joints.length} joints · ${S.chords.length} cut · ` +
  `${S.supports.length} supports · ${S.tasks.length} tasks · ${T.length} frames`;
document.getElementById("frames").addEventListener("change", (e) =>
  frameGroups.forEach((g) => { g.visible = e.target.checked; }));

window.addEventListener("resize", () => {
  camera.aspect = window.innerWidth / window.innerHeight;
  camera.updateProjectionMatrix();
  renderer.setSize(window.innerWidth, window.innerHeight);
});

renderer.setAnimationLoop(() => {
  if (playing) {
    const t = simStart + (performance.now() - t0) / 1000 * Number(speed.value);
    let i = frame;
    while (i < T.length - 1 && T[i + 1] <= t) i++;
    showFrame(i);
    if (i === T.length - 1) { playing = false; playBtn.textContent = "play"; }
  }
  controls.update();
  renderer.render(scene, camera);
});
document.body.dataset.ready = "1";   // for tests: the first frame is drawn

"""Compiled run-time kernels (numba) over the bundle's flat arrays (DESIGN.md §13).

The model is data (:mod:`.layout`: four flat arrays laid out once from a compiled model and
a partition, as MuJoCo's ``mjModel``); generic ``@njit(cache=True)`` kernels walk it — no
per-robot code generation. Modules: :mod:`.se3` (SE(3) exp/log, ``J_l⁻¹`` with series),
:mod:`.joints` (joint maps), :mod:`.kinematics` (poses, world columns, closure geometry,
velocity product), :mod:`.lift` (module-blocked ``R_p`` factors, E, solves),
:mod:`.dynamics` (RNEA, CRBA, loads, reduced terms, Cholesky), :mod:`.step` (one call for
forward dynamics, the corrector, an RK stage, a batch of states) and :mod:`.evaluator`
(the Python face). Every kernel is tested against the NumPy/Pinocchio reference path of
:mod:`rbc.model` (``tests/kernels``).
"""

"""The task layer: task charts, the weighted velocity problem and resolved motions (docs/tasks.md).

One concept per module: :mod:`.charts` (task values, errors and Jacobians in a chart),
:mod:`.paths` (desired task motions), :mod:`.preference` (the stroke-limit preference Φ),
:mod:`.bounds` (kinematic bounds A u ≤ b), :mod:`.qp` (the velocity problem and its
closed form), :mod:`.resolve` (the law at one state), :mod:`.request` (a command-line task
request → chart, law, path), :mod:`.plan` (integrating the resolved motion on the closure
manifold). The online controller is :mod:`rbc.sim.task_control`.
"""

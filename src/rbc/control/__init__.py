"""Whole-body control of composed systems on their supports (issue #20, docs/allocation.md):
the tracking law in the active mode's independent coordinates (tracking.py), the sole
contact-wrench cones and unloading ramps (cones.py) and the effort-allocation QP
(allocation.py)."""

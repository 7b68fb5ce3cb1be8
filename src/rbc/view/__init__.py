"""``rbc view``: a 3D view of a compiled mechanism and its motion in a web browser.

:mod:`rbc.view.scene` (the mechanism and its frames as data), :mod:`rbc.view.page` (the
self-contained HTML page with vendored three.js), :mod:`rbc.view.motion` (configurations
from a bundle or a ``rbc simulate`` log) and :mod:`rbc.view.serve` (the local server).
"""

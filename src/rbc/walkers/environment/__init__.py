"""Walker environments, acting on the true plant only: the reality gap of the true plant
(:mod:`.plant`), joint friction, stick-slip ground and impulses (:mod:`.effects`), and the
hybrid simulation that runs them under a sampled controller (:mod:`.plant_sim`). Imports
:mod:`rbc.walkers.hybrid` and :mod:`rbc.walkers.control`. See docs/walkers.md §12, §15."""

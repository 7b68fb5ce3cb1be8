"""Material handling in MuJoCo: the excavator moving a bed of particles (docs/excavation.md).

``scene``     the MJCF scene: the exported excavator plus bucket collision boxes, a particle
              bed, a receiving bin and a floor (lxml edits of the export).
``plant``     the MuJoCo backend on that scene, sampling the particles' tracks.
``delivery``  the delivered-mass metric: a state machine over the particles' tracks.
``mission``   the dig – curl – lift – swing – dump – return reference, closed on the
              manifold.
"""

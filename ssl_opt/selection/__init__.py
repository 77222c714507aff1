"""Choosing a backend from measurements: cost models (:mod:`.cost_model`) stored in
:mod:`.model_store`, measured by :mod:`.measure` on the instances of :mod:`.generators` during
``ssl-opt calibrate`` (:mod:`.calibrate`) and ``ssl-opt bench`` (:mod:`.bench`); the choice
itself is :func:`.select.select`."""

"""Clusters you don't have yet: a topology model, link profiles and a cost model evaluated on the
algorithms' own schedules (``commbench predict``, ``commbench calibrate``); docs/predict.md."""

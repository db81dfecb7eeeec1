"""learn: calibrate a device, derive its decision matrices, train a classifier.

    grid.py       the workloads a calibration runs (simulated and fio), each with a stable id
    dataset.py    the CSV dataset: columns, resumable writing, reading, scores per goal
    curve.py      the distance-to-service-time curve (Xu & Jiang 3.2) and stream tunables
    simcal.py     calibration on a simulator device model
    realcal.py    calibration of a real block device: safety checks, fio, ioaz's own probe
    derive.py     dataset -> decision matrix YAML per goal, with margins and runs
    trainer.py    dataset -> scikit-learn classifier, held-out evaluation by workload
    progress.py   a progress line with ETA on stderr

The model at run time (its features, its file, the verdicts ioazd takes from it) is ioaz.model:
ioazd never imports this package. Nothing here imports scikit-learn at module level: only
trainer.py does, when called.
"""

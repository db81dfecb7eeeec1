"""learn: calibrate a device, derive its decision matrices, train a classifier (issue 7).

    grid.py       the workloads a calibration runs (simulated and fio), each with a stable id
    dataset.py    the CSV dataset: columns, resumable writing, reading, scores per goal
    curve.py      the distance-to-service-time curve (Xu & Jiang 3.2) and stream tunables
    simcal.py     calibration on a simulator device model
    realcal.py    calibration of a real block device: safety checks, fio, ioaz's own probe
    derive.py     dataset -> decision matrix YAML per goal, with margins and runs
    trainer.py    dataset -> scikit-learn classifier, held-out evaluation by workload
    model_io.py   saving and loading a model safely (skops with trusted types + a manifest)
    verdicts.py   ModelVerdicts: the daemon's VerdictProvider backed by a trained model
    progress.py   a progress line with ETA on stderr

Nothing here imports scikit-learn at module level: only trainer.py and model_io's load do, when
called, so the daemon stays light unless a model is configured.
"""

"""A trained model at run time: the features it reads (features.py), its file (file.py) and the
verdicts it gives ioazd (verdicts.py). ioazd reaches models only through here; training and
calibration (ioaz.learn, ioaz.lab) write the files this package reads."""

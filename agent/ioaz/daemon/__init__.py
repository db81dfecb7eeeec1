"""ioazd: config.py (the YAML file), core.py (the window loop and state), main.py (wiring)."""

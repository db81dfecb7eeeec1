"""ioaz: adaptive I/O-scheduler selection for Linux block devices."""

__version__ = "0.1.0"

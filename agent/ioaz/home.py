"""Where ioaz's files beside its code are: the checkout, or the tree `make install` and the .deb
lay out (/usr/lib/ioaz), which has the checkout's shape: agent/ioaz (this package),
decision_matrices/ (schema, policies, thresholds, matrices), bpf/build/ (the probe object) and
bpf/ (the BCC probe's source and headers).

A pip wheel carries the package alone, without them; the programs then say so and stop
(`missing()`), instead of failing later on the first file they cannot find.
"""
from __future__ import annotations

from pathlib import Path

HOME = Path(__file__).resolve().parents[2]
MATRICES = HOME / "decision_matrices"
BPF_SOURCE = HOME / "bpf"
BPF_BUILD = BPF_SOURCE / "build"


def missing(program: str) -> str | None:
    """Why `program` cannot run from here, or None."""
    if (MATRICES / "schema.yaml").is_file():
        return None
    return (f"{program}: ioaz's data files are not beside its code ({MATRICES} is missing): "
            "install ioaz with its Debian package (make deb) or `make install`, or run it from "
            "a checkout (make run); a pip wheel carries the code alone")

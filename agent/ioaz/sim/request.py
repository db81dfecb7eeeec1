"""One block request as the simulator sees it (a bio that may absorb others by merging)."""
from __future__ import annotations

SECTOR = 512  # bytes; every position and size in the simulator is in 512-byte sectors


class Request:
    """A request from submission (bio queued) to completion.

    __slots__ keeps a request small: a one-hour trace never holds more than the requests in
    flight, but the hot loop creates and drops hundreds of thousands of them.
    """

    __slots__ = (
        "complete",
        "deadline",
        "est",
        "id",
        "issue",
        "merged",
        "nsec",
        "pid",
        "sector",
        "seq",
        "stream_size",
        "submit",
        "sync",
        "write",
    )

    def __init__(self, rid: object, pid: int, sector: int, nsec: int, write: bool, sync: bool,
                 submit: float) -> None:
        self.id = rid
        self.pid = pid
        self.sector = sector
        self.nsec = nsec
        self.write = write
        self.sync = sync
        self.submit = submit
        self.issue = -1.0
        self.complete = -1.0
        self.deadline = 0.0
        # bios merged into this one; they complete with it (None: nothing merged, the common case)
        self.merged: list[Request] | None = None
        self.est = 0.0          # scheduler scratch: estimated service time (stream)
        self.stream_size = 0    # stream scheduler: length of the stream this request extends
        self.seq = 0            # arrival number, a stable tie-breaker in sorted queues

    @property
    def end(self) -> int:
        return self.sector + self.nsec

    @property
    def nbytes(self) -> int:
        return self.nsec * SECTOR

    def __repr__(self) -> str:
        d = "W" if self.write else "R"
        return f"Request({self.id!r} p{self.pid} {d} {self.sector}+{self.nsec})"

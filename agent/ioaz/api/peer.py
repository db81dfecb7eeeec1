"""Who is on the other end of the socket (SO_PEERCRED), and may they change things?

Changing is for uid 0 and members of the group `ioaz` (primary or supplementary). The
supplementary groups are read from /proc/PID/status of the peer: SO_PEERCRED carries only
the primary gid, and the group database may be stale for a long-running client.
"""
from __future__ import annotations

import grp
import socket
import struct
from dataclasses import dataclass

GROUP = "ioaz"


@dataclass(frozen=True)
class Peer:
    pid: int
    uid: int
    gid: int

    def __str__(self) -> str:
        return f"uid {self.uid}, pid {self.pid}"


def peer_of(conn: socket.socket) -> Peer:
    raw = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    pid, uid, gid = struct.unpack("3i", raw)
    return Peer(pid, uid, gid)


def group_id(name: str = GROUP) -> int | None:
    try:
        return grp.getgrnam(name).gr_gid
    except KeyError:
        return None


def groups_of(pid: int) -> set[int]:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("Groups:"):
                    return {int(g) for g in line.split()[1:]}
    except (OSError, ValueError):
        pass
    return set()


def may_change(peer: Peer, ioaz_gid: int | None) -> bool:
    if peer.uid == 0:
        return True
    if ioaz_gid is None:
        return False
    return peer.gid == ioaz_gid or ioaz_gid in groups_of(peer.pid)

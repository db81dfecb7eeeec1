"""The server side of the NBD protocol (fixed newstyle handshake, simple replies), as much as
qemu's NBD client needs: option haggling ending in NBD_OPT_GO or NBD_OPT_EXPORT_NAME, then
requests READ, WRITE, FLUSH, TRIM and DISC. The numbers are the protocol's
(the NBD project's doc/proto.md); what serves the requests is the caller's.
"""
from __future__ import annotations

import socket
import struct
from dataclasses import dataclass

NBDMAGIC = b"NBDMAGIC"
IHAVEOPT = 0x49484156454F5054
OPT_REPLY_MAGIC = 0x3E889045565A9
REQUEST_MAGIC = 0x25609513
SIMPLE_REPLY_MAGIC = 0x67446698

FLAG_FIXED_NEWSTYLE, FLAG_NO_ZEROES = 1, 2                       # handshake flags
OPT_EXPORT_NAME, OPT_ABORT, OPT_INFO, OPT_GO = 1, 2, 6, 7        # options
REP_ACK, REP_INFO = 1, 3
REP_ERR_UNSUP = (1 << 31) + 1
INFO_EXPORT, INFO_BLOCK_SIZE = 0, 3
# transmission flags: flush and FUA are sent, and the export says it rotates
TX_HAS_FLAGS, TX_SEND_FLUSH, TX_SEND_FUA, TX_ROTATIONAL, TX_SEND_TRIM = 1, 4, 8, 16, 32
TX_FLAGS = TX_HAS_FLAGS | TX_SEND_FLUSH | TX_SEND_FUA | TX_ROTATIONAL | TX_SEND_TRIM

CMD_READ, CMD_WRITE, CMD_DISC, CMD_FLUSH, CMD_TRIM = 0, 1, 2, 3, 4
EIO, EINVAL, ENOSPC = 5, 22, 28
MAX_LENGTH = 32 << 20          # the largest request the server accepts (advertised)


class ProtocolError(Exception):
    """The client broke the protocol or went away."""


@dataclass
class Request:
    cmd: int
    flags: int
    handle: int
    offset: int
    length: int
    data: bytes = b""


def recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ProtocolError("the client closed the connection")
        buf += chunk
    return bytes(buf)


def handshake(sock: socket.socket, size: int) -> None:
    """Fixed newstyle negotiation up to the transmission phase."""
    sock.sendall(NBDMAGIC + struct.pack(">QH", IHAVEOPT, FLAG_FIXED_NEWSTYLE | FLAG_NO_ZEROES))
    (client_flags,) = struct.unpack(">I", recv_exact(sock, 4))
    while True:
        magic, opt, length = struct.unpack(">QII", recv_exact(sock, 16))
        if magic != IHAVEOPT:
            raise ProtocolError(f"bad option magic {magic:#x}")
        if length:
            recv_exact(sock, length)   # the export's name and info requests: there is one export
        if opt == OPT_EXPORT_NAME:
            tail = b"" if client_flags & FLAG_NO_ZEROES else bytes(124)
            sock.sendall(struct.pack(">QH", size, TX_FLAGS) + tail)
            return
        if opt in (OPT_GO, OPT_INFO):
            _reply(sock, opt, REP_INFO, struct.pack(">HQH", INFO_EXPORT, size, TX_FLAGS))
            _reply(sock, opt, REP_INFO, struct.pack(">HIII", INFO_BLOCK_SIZE, 512, 4096,
                                                     MAX_LENGTH))
            _reply(sock, opt, REP_ACK, b"")
            if opt == OPT_GO:
                return
        elif opt == OPT_ABORT:
            _reply(sock, opt, REP_ACK, b"")
            raise ProtocolError("the client aborted the negotiation")
        else:   # structured replies, meta contexts, TLS...: the simple protocol is enough
            _reply(sock, opt, REP_ERR_UNSUP, b"")


def _reply(sock: socket.socket, opt: int, kind: int, data: bytes) -> None:
    sock.sendall(struct.pack(">QIII", OPT_REPLY_MAGIC, opt, kind, len(data)) + data)


def read_request(sock: socket.socket) -> Request:
    magic, flags, cmd, handle, offset, length = struct.unpack(">IHHQQI", recv_exact(sock, 28))
    if magic != REQUEST_MAGIC:
        raise ProtocolError(f"bad request magic {magic:#x}")
    rq = Request(cmd, flags, handle, offset, length)
    if cmd == CMD_WRITE:
        if length > MAX_LENGTH:
            raise ProtocolError(f"write of {length} bytes over the {MAX_LENGTH} advertised")
        rq.data = recv_exact(sock, length)
    return rq


def reply_header(handle: int, error: int = 0) -> bytes:
    return struct.pack(">IIQ", SIMPLE_REPLY_MAGIC, error, handle)

"""The ioazctl protocol: one JSON object per line each way, and what each command does.

Request:  {"cmd": "pin", "device": "sda", "policy": "deadline", "for_s": 1800}
Response: {"ok": true, "result": ...}  or  {"ok": false, "error": "why", "kind": "..."}

Commands that only look (status, explain, history, ping) are open to anyone who can reach the
socket; the rest change the system and need root or the ioaz group (checked by the server).
Pure functions of a daemon object and a request, so they are tested without a socket.
"""
from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Callable
from typing import Any

log = logging.getLogger("ioaz.api")

MAX_LINE = 64 * 1024          # bytes of one request; nothing legitimate comes near it
READ_COMMANDS = frozenset({"ping", "status", "explain", "history"})
WRITE_COMMANDS = frozenset({"pin", "unpin", "goal", "pause", "resume", "reload"})
COMMANDS = READ_COMMANDS | WRITE_COMMANDS
MAX_PIN_S = 366 * 86400.0

_UNITS = {"d": 86400.0, "h": 3600.0, "m": 60.0, "s": 1.0}
_DURATION = re.compile(r"(\d+(?:\.\d+)?)([dhms])")


class RequestError(ValueError):
    """The request itself is wrong (malformed, unknown command, bad argument)."""


def parse_duration(text: str) -> float:
    """"90s", "30m", "1h30m", "2d", or plain seconds ("45") -> seconds; RequestError if not."""
    t = text.strip().lower()
    try:
        v = float(t)
    except ValueError:
        pos, v = 0, 0.0
        for m in _DURATION.finditer(t):
            if m.start() != pos:
                break
            v += float(m.group(1)) * _UNITS[m.group(2)]
            pos = m.end()
        if pos != len(t) or not t:
            raise RequestError(f"bad duration {text!r}: expected a number of seconds or "
                               "a duration like 90s, 30m, 1h30m, 2d") from None
    if not math.isfinite(v) or v <= 0:
        raise RequestError(f"bad duration {text!r}: must be more than zero")
    if v > MAX_PIN_S:
        raise RequestError(f"bad duration {text!r}: at most 366 days (for longer, pin "
                           "without --for)")
    return v


MAX_DEPTH = 8                 # nesting of a request; the deepest legitimate one is 1


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [k for k, _ in pairs]
    dup = sorted({k for k in keys if keys.count(k) > 1})
    if dup:
        raise RequestError(f"malformed request: key {dup[0]!r} given twice")
    return dict(pairs)


def _refuse_constant(name: str) -> Any:
    raise RequestError(f"malformed request: {name} is not a number JSON allows")


def _depth(text: str) -> int:
    """How deep the brackets nest, outside strings: checked before parsing, so a deep request
    costs a scan, not the parser's recursion."""
    depth = deepest = 0
    in_str = esc = False
    for ch in text:
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    return deepest


def decode(line: bytes) -> dict[str, Any]:
    """One request line -> its object; anything else a RequestError that says what was wrong
    (never an exception of the parser's: the reader's thread and the log stay clean)."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as e:
        raise RequestError(f"malformed request: not UTF-8 (byte {e.start})") from None
    if _depth(text) > MAX_DEPTH:
        raise RequestError(f"malformed request: nested deeper than {MAX_DEPTH}")
    try:
        req = json.loads(text, object_pairs_hook=_no_duplicates,
                         parse_constant=_refuse_constant)
    except RequestError:
        raise
    except (ValueError, RecursionError) as e:   # JSONDecodeError; an int of too many digits
        raise RequestError(f"malformed request: not a JSON object ({e})") from None
    if not isinstance(req, dict):
        raise RequestError("malformed request: expected a JSON object like "
                           '{"cmd": "status"}')
    cmd = req.get("cmd")
    if not isinstance(cmd, str) or cmd not in COMMANDS:
        raise RequestError(f"unknown command {cmd!r} (expected one of "
                           f"{', '.join(sorted(COMMANDS))})")
    return req


def encode(resp: dict[str, Any]) -> bytes:
    # default=str: paths, enums and the like in status dicts print as text, never fail.
    return json.dumps(resp, default=str, separators=(",", ":")).encode() + b"\n"


def ok(result: Any) -> dict[str, Any]:
    return {"ok": True, "result": result}


def error(message: str, kind: str) -> dict[str, Any]:
    return {"ok": False, "error": message, "kind": kind}


def _str(req: dict[str, Any], key: str) -> str:
    v = req.get(key)
    if not isinstance(v, str) or not v:
        raise RequestError(f"{req['cmd']}: missing {key!r} (a string)")
    return v


def _device(req: dict[str, Any]) -> str:
    dev = _str(req, "device")
    return dev.removeprefix("/dev/")


def _pin_duration(req: dict[str, Any]) -> float | None:
    if req.get("for_s") is not None:
        v = req["for_s"]
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise RequestError(f"pin: for_s must be a number of seconds, got {v!r}")
        return parse_duration(repr(float(v)))
    if req.get("for") is not None:
        if not isinstance(req["for"], str):
            raise RequestError(f"pin: for must be a duration like 30m, got {req['for']!r}")
        return parse_duration(req["for"])
    return None


def _limit(req: dict[str, Any]) -> int:
    v = req.get("limit", 50)
    if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= 100000:
        raise RequestError(f"history: limit must be a whole number from 1 to 100000, "
                           f"got {v!r}")
    return v


def _ping(d: Any, req: dict[str, Any]) -> Any:
    return {"pong": True}


HANDLERS: dict[str, Callable[[Any, dict[str, Any]], Any]] = {
    "ping": _ping,
    "status": lambda d, r: d.status(),
    "explain": lambda d, r: d.explain(_device(r)),
    "history": lambda d, r: d.history_list(
        _device(r) if r.get("device") is not None else None, _limit(r)),
    "pin": lambda d, r: d.control_pin(_device(r), _str(r, "policy"), _pin_duration(r)),
    "unpin": lambda d, r: d.control_unpin(_device(r)),
    "goal": lambda d, r: d.control_goal(_device(r), _str(r, "goal")),
    "pause": lambda d, r: d.control_pause(_device(r)),
    "resume": lambda d, r: d.control_resume(_device(r)),
    "reload": lambda d, r: d.control_reload(),
}


def handle(daemon: Any, req: dict[str, Any], may_change: bool, who: str = "") -> dict[str, Any]:
    """Run one decoded request; every failure becomes an error response, never an exception."""
    cmd = req["cmd"]
    if cmd in WRITE_COMMANDS and not may_change:
        return error(f"permission denied: {cmd} changes the system and needs root or the "
                     f"ioaz group{f' ({who})' if who else ''}", "permission")
    try:
        result = HANDLERS[cmd](daemon, req)
    except RequestError as e:
        return error(str(e), "request")
    except ValueError as e:          # ControlError: unknown device, policy, goal, bad reload
        return error(str(e), "refused")
    except Exception as e:           # a bug of ours: the client hears it, the daemon lives on
        log.exception(json.dumps({"event": "api_error", "cmd": cmd}))
        return error(f"internal error: {type(e).__name__}: {e}", "internal")
    if cmd in WRITE_COMMANDS:
        log.info(json.dumps({"event": "api", "cmd": cmd, "by": who}, default=str))
    return ok(result)

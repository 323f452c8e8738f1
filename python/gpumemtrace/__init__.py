"""gpumemtrace from Python: the tool's library and launcher, and its C API.

    gpumemtrace run --torch -- python train.py     # the launcher, installed
                                                     # as a console script
    import gpumemtrace
    gpumemtrace.active()        # True in a process traced by the tool
    gpumemtrace.snapshot()      # the live blocks now, as a dict
    gpumemtrace.check_now()     # every guard zone checked now: error count
    gpumemtrace.report()        # the report written now: error count
    gpumemtrace.live_bytes(0)   # bytes live on device 0

The functions reach the library the process was started with (LD_PRELOAD
by the launcher); they never load a second copy. Outside a traced process
active() is False and the others raise NotTracedError.
"""
import ctypes
import json
import os

__all__ = ["NotTracedError", "active", "check_now", "launcher_path",
           "library_path", "live_bytes", "report", "snapshot"]

_BIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_bin")


class NotTracedError(RuntimeError):
    """The process does not run under gpumemtrace."""


def library_path():
    """The libgpumemtrace.so this package carries."""
    return os.path.join(_BIN, "libgpumemtrace.so")


def launcher_path():
    """The gpumemtrace launcher this package carries."""
    return os.path.join(_BIN, "gpumemtrace")


def _api():
    """The tool's C API in this process, or None."""
    process = ctypes.CDLL(None)  # the process's global symbols
    try:
        functions = {
            "active": process.gmt_active,
            "snapshot": process.gmt_snapshot_json,
            "free": process.gmt_free,
            "report": process.gmt_report,
            "check_now": process.gmt_check_now,
            "live_bytes": process.gmt_live_bytes,
        }
    except AttributeError:
        return None
    functions["active"].restype = ctypes.c_int
    functions["snapshot"].restype = ctypes.c_void_p
    functions["free"].argtypes = [ctypes.c_void_p]
    functions["report"].restype = ctypes.c_uint64
    functions["check_now"].restype = ctypes.c_uint64
    functions["live_bytes"].argtypes = [ctypes.c_int]
    functions["live_bytes"].restype = ctypes.c_size_t
    return functions


def _traced():
    api = _api()
    if api is None or api["active"]() != 1:
        raise NotTracedError(
            "this process does not run under gpumemtrace: start it with "
            "`gpumemtrace run -- python ...` (or LD_PRELOAD=%s)" %
            library_path())
    return api


def active():
    """True when the tool traces this process."""
    api = _api()
    return api is not None and api["active"]() == 1


def snapshot():
    """The tool's picture of memory now (gmt::snapshot()), as a dict."""
    api = _traced()
    pointer = api["snapshot"]()
    if not pointer:
        raise NotTracedError("gpumemtrace gave no snapshot")
    try:
        return json.loads(ctypes.string_at(pointer).decode("utf-8"))
    finally:
        api["free"](pointer)


def check_now():
    """Checks every guard zone now; returns the number of errors so far."""
    return int(_traced()["check_now"]())


def report():
    """Writes the report now (as at exit); returns the number of errors."""
    return int(_traced()["report"]())


def live_bytes(device=0):
    """Bytes live on `device` (-1: pinned host memory, -2: everything)."""
    return int(_traced()["live_bytes"](int(device)))

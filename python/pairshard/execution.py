"""The execution fingerprints of a set built with --databases and --execute
(docs/FORMAT.md, "exec"; docs/REPORT.md, "sql_result_regression"), read
through libpairshard's ps_exec_iter_* (include/pairshard/reader.h)."""

import ctypes
import os

from . import _lib as L
from .loader import _raise


def exec_fingerprints(path):
    """Yields one dict per stored record, in storage order: "id", "before"
    and "after" (each {"status", "rows", "hash"}: status "ok", "empty",
    "error", "timeout", "no_database" or "not_run", rows the rows returned,
    hash the 64-bit hash of them), and "sql_changed" (cleaning changed the
    SQL, so it ran twice). Raises PairshardError (PS_ENOENT for a set built
    without --execute, PS_ECORRUPT for a damaged one)."""
    lib = L.load()
    err = L.ps_error()
    it = ctypes.c_void_p()
    rc = lib.ps_exec_iter_open(os.fsencode(path), ctypes.byref(it), ctypes.byref(err))
    if rc:
        _raise(rc, err)
    try:
        rid = ctypes.POINTER(ctypes.c_char)()
        n = ctypes.c_size_t()
        fp = L.ps_exec_fingerprint()
        while True:
            rc = lib.ps_exec_iter_next(it, ctypes.byref(rid), ctypes.byref(n), ctypes.byref(fp),
                                       ctypes.byref(err))
            if rc == 0:
                return
            if rc < 0:
                _raise(rc, err)
            name = L.EXEC_STATUS_NAMES.get
            yield {
                "id": ctypes.string_at(rid, n.value).decode("utf-8", "replace"),
                "before": {"status": name(fp.status_before, "?"), "rows": fp.rows_before,
                           "hash": fp.hash_before},
                "after": {"status": name(fp.status_after, "?"), "rows": fp.rows_after,
                          "hash": fp.hash_after},
                "sql_changed": bool(fp.flags & L.PS_EXEC_SQL_CHANGED),
            }
    finally:
        lib.ps_exec_iter_close(it)

"""ctypes declarations of libpairshard's reader (include/pairshard/reader.h
and the error model of include/pairshard/common.h), and the loading of the
two libraries: libpairshard-reader (the Loader's: reader and shard store
alone, docs/ARCHITECTURE.md "The two libraries") and libpairshard (the
Preprocessor's, and version()'s).

The structures below mirror the C headers field for field, in order, with
the same fixed-width types; ctypes lays them out with the platform's C
alignment rules, so the offsets match what the C compiler produces
(tests/python/test_loader.py compares them against a program compiled
from the headers). Keep them in step with the headers.
"""

import ctypes
import ctypes.util
import os

# ---- constants (reader.h, common.h) ----------------------------------------

PS_PAD_LONGEST = 0
PS_PAD_BUCKET = 1
PS_DTYPE_INT32 = 0
PS_DTYPE_INT64 = 1
PS_DEVICE_HOST = -1
PS_FROM_ENV = -1
PS_LAYOUT_PAIR = 0
PS_LAYOUT_CAUSAL = 1
PS_LAYOUT_SEQ2SEQ = 2
LAYOUT_NAMES = {PS_LAYOUT_PAIR: "pair", PS_LAYOUT_CAUSAL: "causal", PS_LAYOUT_SEQ2SEQ: "seq2seq"}
PS_READER_STATE_BYTES = 128
PS_ERROR_MESSAGE_MAX = 512

PS_OK = 0
PS_ENOMEM = -1
PS_EIO = -2
PS_EINVAL = -3
PS_ENOENT = -4
PS_EFORMAT = -5
PS_EUTF8 = -6
PS_ERANGE = -7
PS_ECORRUPT = -8
PS_EVERSION = -9
PS_EUSAGE = -10
PS_ERULE = -11
PS_EDECOMPRESS = -12
PS_ELIMIT = -13
PS_EEOF = -14
PS_EEMPTY = -15
PS_ECANCELED = -16

# ---- structures --------------------------------------------------------------


class ps_error(ctypes.Structure):
    _fields_ = [
        ("code", ctypes.c_int),
        ("message", ctypes.c_char * PS_ERROR_MESSAGE_MAX),
    ]


class ps_reader_options(ctypes.Structure):
    # struct_size: the size of this mirror, which options_init passes to
    # ps_reader_options_init_size; the library reads no byte past it and
    # refuses a size it does not know (common.h, "Options structs that grow").
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("batch_size", ctypes.c_uint32),
        ("max_tokens", ctypes.c_uint64),
        ("pad_id", ctypes.c_int32),
        ("pad_mode", ctypes.c_int),
        ("pad_multiple", ctypes.c_uint32),
        ("shuffle", ctypes.c_int),
        ("seed", ctypes.c_uint64),
        ("epoch", ctypes.c_uint64),
        ("shuffle_window", ctypes.c_uint32),
        ("rank", ctypes.c_int),
        ("world_size", ctypes.c_int),
        ("drop_last", ctypes.c_int),
        ("threads", ctypes.c_int),
        ("prefetch", ctypes.c_int),
        ("dtype", ctypes.c_int),
        ("device", ctypes.c_int),
        ("require_device", ctypes.c_int),
        ("mlock", ctypes.c_int),
        ("skip_corrupt", ctypes.c_int),
        ("sort_pool", ctypes.c_uint32),
        ("pack", ctypes.c_uint32),
        ("skip_long", ctypes.c_int),
        ("decoder_start_id", ctypes.c_int32),
        # mixtures: weights by source name, read at open
        ("n_weights", ctypes.c_size_t),
        ("weight_names", ctypes.POINTER(ctypes.c_char_p)),
        ("weights", ctypes.POINTER(ctypes.c_double)),
    ]


class ps_batch(ctypes.Structure):
    _fields_ = [
        ("epoch", ctypes.c_uint64),
        ("step", ctypes.c_uint64),
        ("bucket", ctypes.c_uint32),
        ("B", ctypes.c_uint32),
        ("T", ctypes.c_uint32),
        ("dtype", ctypes.c_int),
        ("input_ids", ctypes.c_void_p),
        ("attention_mask", ctypes.c_void_p),
        ("token_type_ids", ctypes.c_void_p),
        ("labels", ctypes.c_void_p),
        ("lengths", ctypes.c_void_p),
        ("ids", ctypes.POINTER(ctypes.c_char_p)),
        ("real_tokens", ctypes.c_uint64),
        ("device", ctypes.c_int),
        ("d_input_ids", ctypes.c_void_p),
        ("d_attention_mask", ctypes.c_void_p),
        ("d_token_type_ids", ctypes.c_void_p),
        ("d_labels", ctypes.c_void_p),
        ("d_lengths", ctypes.c_void_p),
        ("ready_event", ctypes.c_void_p),
        ("layout", ctypes.c_int),
        ("T_target", ctypes.c_uint32),
        ("n_segments", ctypes.c_uint32),
        ("max_seqlen", ctypes.c_uint32),
        ("class_labels", ctypes.c_void_p),
        ("position_ids", ctypes.c_void_p),
        ("cu_seqlens", ctypes.c_void_p),
        ("seq_lens", ctypes.c_void_p),
        ("prompt_lens", ctypes.c_void_p),
        ("seg_rows", ctypes.c_void_p),
        ("target_lens", ctypes.c_void_p),
        ("decoder_attention_mask", ctypes.c_void_p),
        ("decoder_input_ids", ctypes.c_void_p),
        ("d_class_labels", ctypes.c_void_p),
        ("d_position_ids", ctypes.c_void_p),
        ("d_cu_seqlens", ctypes.c_void_p),
        ("d_seq_lens", ctypes.c_void_p),
        ("d_prompt_lens", ctypes.c_void_p),
        ("d_seg_rows", ctypes.c_void_p),
        ("d_target_lens", ctypes.c_void_p),
        ("d_decoder_attention_mask", ctypes.c_void_p),
        ("d_decoder_input_ids", ctypes.c_void_p),
        ("sources", ctypes.c_void_p),
    ]


class ps_reader_state(ctypes.Structure):
    _fields_ = [("bytes", ctypes.c_ubyte * PS_READER_STATE_BYTES)]


class ps_reader_info(ctypes.Structure):
    _fields_ = [
        ("epoch", ctypes.c_uint64),
        ("rank", ctypes.c_int),
        ("world_size", ctypes.c_int),
        ("batches_per_epoch", ctypes.c_uint64),
        ("records_per_epoch", ctypes.c_uint64),
        ("records_total", ctypes.c_uint64),
        ("records_dropped", ctypes.c_uint64),
        ("n_buckets", ctypes.c_uint32),
        ("n_labels", ctypes.c_uint32),
        ("slots", ctypes.c_uint32),
        ("threads", ctypes.c_int),
        ("device", ctypes.c_int),
        ("pinned", ctypes.c_int),
        ("mlocked", ctypes.c_int),
        ("layout", ctypes.c_int),
        ("pack", ctypes.c_uint32),
        ("records_skipped", ctypes.c_uint64),
        ("rows_per_epoch", ctypes.c_uint64),
        ("n_sources", ctypes.c_uint32),
    ]


class ps_reader_stats(ctypes.Structure):
    _fields_ = [
        ("batches", ctypes.c_uint64),
        ("records", ctypes.c_uint64),
        ("tokens", ctypes.c_uint64),
        ("real_tokens", ctypes.c_uint64),
        ("wait_ns", ctypes.c_uint64),
        ("waits", ctypes.c_uint64),
        ("blocks_decoded", ctypes.c_uint64),
        ("block_bytes", ctypes.c_uint64),
        ("raw_bytes", ctypes.c_uint64),
        ("skipped_batches", ctypes.c_uint64),
        ("skipped_records", ctypes.c_uint64),
        ("h2d_bytes", ctypes.c_uint64),
        ("ready", ctypes.c_uint32),
        ("slots", ctypes.c_uint32),
    ]


# Every structure, by its C name: the layout test walks this.
STRUCTS = {
    "ps_error": ps_error,
    "ps_reader_options": ps_reader_options,
    "ps_batch": ps_batch,
    "ps_reader_state": ps_reader_state,
    "ps_reader_info": ps_reader_info,
    "ps_reader_stats": ps_reader_stats,
}

# ---- checking arguments before they reach ctypes ---------------------------------
#
# ctypes stores a Python int into a C integer by truncating it to the
# field's width: batch_size=2**32+8 would run with 8 and rank=-5 would read
# back as 4294967291. Every integer is checked against the C type it goes
# into (or a narrower range the library documents) first.

_CTYPE_RANGES = {}
for _t in (ctypes.c_int8, ctypes.c_int16, ctypes.c_int32, ctypes.c_int64, ctypes.c_int,
           ctypes.c_long, ctypes.c_longlong):
    _bits = ctypes.sizeof(_t) * 8
    _CTYPE_RANGES[_t] = (-(1 << (_bits - 1)), (1 << (_bits - 1)) - 1)
for _t in (ctypes.c_uint8, ctypes.c_uint16, ctypes.c_uint32, ctypes.c_uint64, ctypes.c_uint,
           ctypes.c_ulong, ctypes.c_ulonglong, ctypes.c_size_t):
    _CTYPE_RANGES[_t] = (0, (1 << (ctypes.sizeof(_t) * 8)) - 1)


def ctype_range(ctype):
    """(lowest, highest) value a C integer type holds."""
    return _CTYPE_RANGES[ctype]


def check_int(name, value, ctype, lo=None, hi=None):
    """`value` as a Python int for an argument of C type `ctype`, within
    [lo, hi] (default: the type's whole range). Integers and objects that
    are integers (numpy.int64: operator.index) are accepted; bool, float
    and str are not (TypeError). Out of range: ValueError naming `name`
    and the range."""
    import operator
    if isinstance(value, bool):
        raise TypeError("%s must be an int, not bool (%r)" % (name, value))
    try:
        v = operator.index(value)
    except TypeError:
        raise TypeError("%s must be an int, not %s (%r)"
                        % (name, type(value).__name__, value)) from None
    tlo, thi = _CTYPE_RANGES[ctype]
    lo = tlo if lo is None else max(lo, tlo)
    hi = thi if hi is None else min(hi, thi)
    if v < lo or v > hi:
        raise ValueError("%s must be in %d .. %d, not %d" % (name, lo, hi, v))
    return v


def check_path(name, value):
    """A filesystem path as bytes for a `const char *`: str, bytes or
    os.PathLike; a NUL byte would cut it short in C (ValueError), anything
    else (None included) is a TypeError."""
    if not isinstance(value, (str, bytes)) and not hasattr(type(value), "__fspath__"):
        raise TypeError("%s must be a str, bytes or os.PathLike path, not %s (%r)"
                        % (name, type(value).__name__, value))
    b = os.fsencode(os.fspath(value))
    if b"\0" in b:
        raise ValueError("%s must not contain a NUL byte: %r" % (name, value))
    if not b:
        raise ValueError("%s is empty" % name)
    return b


def options_init(lib, o):
    """Fills the ps_reader_options `o` with the library's defaults, telling
    the library the size of this binding's mirror of the struct (so an
    older or newer library never writes past it). A library that does not
    know that size refuses it: OSError naming both."""
    rc = lib.ps_reader_options_init_size(ctypes.byref(o), ctypes.sizeof(o))
    if rc != 0:
        raise OSError("%s does not know ps_reader_options of %d bytes: the binding and the "
                      "library are from different versions"
                      % (getattr(lib, "_pairshard_path", "libpairshard"), ctypes.sizeof(o)))
    return o


# ---- finding and loading the library -------------------------------------------

# which: (file name, environment variable, find_library name)
_KINDS = {
    "full": ("libpairshard.so", "PAIRSHARD_LIB", "pairshard"),
    "reader": ("libpairshard-reader.so", "PAIRSHARD_READER_LIB", "pairshard-reader"),
}


def candidates(which="full"):
    """Where a library is looked for, in order. The full library
    (libpairshard): $PAIRSHARD_LIB, the source tree's build/lib (this file
    is python/pairshard/_lib.py), then the system's search path. The reader
    library (libpairshard-reader): $PAIRSHARD_READER_LIB, then the
    libpairshard-reader.so beside $PAIRSHARD_LIB (so that a PAIRSHARD_LIB
    naming another build, a sanitizer build say, gives that build's reader
    too), then the source tree's build/lib and the system's search path.
    A generator: find_library runs ldconfig (some 10 ms), so it is asked
    only when no earlier place holds the library."""
    fname, var, short = _KINDS[which]
    env = os.environ.get(var)
    if env:
        yield env
    full_env = os.environ.get("PAIRSHARD_LIB")
    if which == "reader" and full_env:
        yield os.path.join(os.path.dirname(os.path.abspath(full_env)), fname)
    here = os.path.dirname(os.path.abspath(__file__))
    yield os.path.join(here, "..", "..", "build", "lib", fname)
    sys_name = ctypes.util.find_library(short)
    if sys_name:
        yield sys_name


PS_EXEC_NOT_RUN = 255
PS_EXEC_SQL_CHANGED = 1
EXEC_STATUS_NAMES = {0: "ok", 1: "empty", 2: "error", 3: "timeout", 4: "no_database",
                     PS_EXEC_NOT_RUN: "not_run"}


class ps_exec_fingerprint(ctypes.Structure):
    _fields_ = [
        ("status_before", ctypes.c_uint8),
        ("status_after", ctypes.c_uint8),
        ("flags", ctypes.c_uint16),
        ("reserved", ctypes.c_uint32),
        ("rows_before", ctypes.c_uint64),
        ("hash_before", ctypes.c_uint64),
        ("rows_after", ctypes.c_uint64),
        ("hash_after", ctypes.c_uint64),
    ]


STRUCTS["ps_exec_fingerprint"] = ps_exec_fingerprint  # layout checked by test_loader.py


def _declare(lib):
    c_reader_p = ctypes.c_void_p
    err_p = ctypes.POINTER(ps_error)
    sigs = {
        "ps_reader_options_init_size": (ctypes.c_int, [ctypes.POINTER(ps_reader_options),
                                                       ctypes.c_size_t]),
        "ps_reader_open": (ctypes.c_int, [ctypes.c_char_p, ctypes.POINTER(ps_reader_options),
                                          ctypes.POINTER(ps_reader_state),
                                          ctypes.POINTER(c_reader_p), err_p]),
        "ps_reader_open_sets": (ctypes.c_int, [ctypes.POINTER(ctypes.c_char_p), ctypes.c_size_t,
                                               ctypes.POINTER(ps_reader_options),
                                               ctypes.POINTER(ps_reader_state),
                                               ctypes.POINTER(c_reader_p), err_p]),
        "ps_reader_get_source": (ctypes.c_char_p, [c_reader_p, ctypes.c_uint32]),
        "ps_reader_get_source_records": (ctypes.c_uint64, [c_reader_p, ctypes.c_uint32]),
        "ps_reader_next": (ctypes.c_int, [c_reader_p, ctypes.POINTER(ctypes.POINTER(ps_batch)),
                                          err_p]),
        "ps_batch_release": (None, [c_reader_p, ctypes.POINTER(ps_batch)]),
        "ps_reader_get_state": (ctypes.c_int, [c_reader_p, ctypes.POINTER(ps_reader_state)]),
        "ps_reader_set_epoch": (ctypes.c_int, [c_reader_p, ctypes.c_uint64, err_p]),
        # The getters are told the size of the mirror (pairshard/common.h,
        # "Structs the library fills").
        "ps_reader_get_info_size": (ctypes.c_int, [c_reader_p, ctypes.POINTER(ps_reader_info),
                                                   ctypes.c_size_t]),
        "ps_reader_get_stats_size": (ctypes.c_int, [c_reader_p, ctypes.POINTER(ps_reader_stats),
                                                    ctypes.c_size_t]),
        "ps_reader_get_label": (ctypes.c_char_p, [c_reader_p, ctypes.c_uint32]),
        "ps_reader_get_bucket_bound": (ctypes.c_uint32, [c_reader_p, ctypes.c_uint32]),
        "ps_reader_close": (None, [c_reader_p]),
        "ps_reader_state_check": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_size_t, err_p]),
        "ps_exec_iter_open": (ctypes.c_int, [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p),
                                             err_p]),
        "ps_exec_iter_next": (ctypes.c_int, [ctypes.c_void_p,
                                             ctypes.POINTER(ctypes.POINTER(ctypes.c_char)),
                                             ctypes.POINTER(ctypes.c_size_t),
                                             ctypes.POINTER(ps_exec_fingerprint), err_p]),
        "ps_exec_iter_close": (None, [ctypes.c_void_p]),
        "ps_strerror": (ctypes.c_char_p, [ctypes.c_int]),
        "ps_err_name": (ctypes.c_char_p, [ctypes.c_int]),
        "ps_version_string": (ctypes.c_char_p, []),
    }
    for name, (res, args) in sigs.items():
        f = getattr(lib, name)
        f.restype = res
        f.argtypes = args
    return lib


_loaded = {}  # which -> the library, loaded once


def load(which="full"):
    """The loaded library, "full" (libpairshard, the default) or "reader"
    (libpairshard-reader), each loaded once. Raises OSError naming every
    place tried when none holds a usable library."""
    lib = _loaded.get(which)
    if lib is not None:
        return lib
    tried = []
    for path in candidates(which):
        if os.sep in path and not os.path.exists(path):
            tried.append("%s (not found)" % path)
            continue
        try:
            lib = _declare(ctypes.CDLL(path))
        except (OSError, AttributeError) as e:
            tried.append("%s (%s)" % (path, e))
            continue
        lib._pairshard_path = os.path.realpath(path) if os.sep in path else path
        _loaded[which] = lib
        return lib
    fname, var, _ = _KINDS[which]
    raise OSError("%s not found; set %s to its path or run `make` in the source tree. "
                  "Tried: %s" % (fname, var, "; ".join(tried)))


def load_reader():
    """libpairshard-reader, the Loader's library (load("reader"))."""
    return load("reader")


def load_any():
    """A library already loaded (the reader's, else the full one), or the
    reader library: for what both export (error names and texts), so that a
    Preprocessor's error does not load the reader library, nor a Loader's
    the full one."""
    return _loaded.get("reader") or _loaded.get("full") or load_reader()


def path(which="full"):
    """The file a library was loaded from (after load(which))."""
    lib = _loaded.get(which)
    return lib._pairshard_path if lib is not None else None

"""pairshard.Loader: the reader (include/pairshard/reader.h) as a Python
iterable of numpy arrays or PyTorch tensors, through ctypes.

Zero copies (unless Loader(copy=True), whose arrays are copies the batch
owns and whose slot goes back at once). Every array of a batch is a view of
the reader's slot memory:
np.frombuffer over a ctypes array placed at the C pointer, and
torch.from_numpy on top of that. The slot goes back to the reader
(ps_batch_release) when the last array or tensor viewing it is garbage
collected: each batch has one _Slot holder, which the ctypes arrays (the
arrays' .base) keep alive, and whose finalizer releases the slot. Holders
keep the native reader alive in turn, so Loader.close() with live batches
is safe: the reader is closed when the last of them goes.
"""

import ctypes
import gc
import os
import threading

import numpy as np

from . import _lib as L


class PairshardError(Exception):
    """A libpairshard error: `code` is the negative PS_E* code, `name` its
    symbol ("PS_ENOENT"), `message` the library's text (it names the file,
    record or option)."""

    def __init__(self, code, message):
        self.code = int(code)
        self.message = message
        try:
            self.name = L.load_any().ps_err_name(self.code).decode()
        except OSError:
            self.name = "PS_E%d" % -self.code
        super().__init__(code, message)

    def __str__(self):
        return "%s: %s" % (self.name, self.message)


class SlotsExhaustedError(PairshardError):
    """Every batch slot is held by live arrays/tensors (PS_ELIMIT)."""


class EmptySetError(PairshardError):
    """The shard set holds no records (PS_EEMPTY): a Loader over it would
    yield nothing and a training loop would run zero steps."""


_ERROR_CLASSES = {L.PS_ELIMIT: SlotsExhaustedError, L.PS_EEMPTY: EmptySetError}


def _raise(code, err, what=None):
    msg = err.message.decode("utf-8", "replace") if err is not None else ""
    if not msg:
        msg = L.load_any().ps_strerror(code).decode()
    if what:
        msg = "%s: %s" % (what, msg)
    raise _ERROR_CLASSES.get(code, PairshardError)(code, msg)


class _Reader:
    """Owns one ps_reader. Every call into it is serialised by an RLock
    (re-entrant: a holder's finalizer can run in the middle of our own
    Python code on this thread). close() is deferred while batches are
    alive, since closing frees the slots their arrays view."""

    def __init__(self, lib, paths, opts, state):
        self.lib = lib
        self.lock = threading.RLock()
        self.live = 0
        self.closing = False
        self.ptr = ctypes.c_void_p()
        err = L.ps_error()
        dirs = (ctypes.c_char_p * len(paths))(*paths)
        rc = lib.ps_reader_open_sets(dirs, len(paths), ctypes.byref(opts),
                                     ctypes.byref(state) if state is not None else None,
                                     ctypes.byref(self.ptr), ctypes.byref(err))
        if rc < 0:
            self.ptr = None
            _raise(rc, err)

    def close(self):
        with self.lock:
            self.closing = True
            if self.live == 0 and self.ptr:
                ptr, self.ptr = self.ptr, None
                self.lib.ps_reader_close(ptr)

    def release(self, batch):
        with self.lock:
            if self.ptr:
                self.lib.ps_batch_release(self.ptr, batch)
            self.live -= 1
            if self.live == 0 and self.closing and self.ptr:
                ptr, self.ptr = self.ptr, None
                self.lib.ps_reader_close(ptr)

    def __del__(self):
        # Holders reference the reader, so none is alive here.
        try:
            if self.ptr:
                self.lib.ps_reader_close(self.ptr)
                self.ptr = None
        except Exception:
            pass


class _Slot:
    """One delivered batch's slot, alive while any array viewing it is."""

    __slots__ = ("reader", "batch", "sync", "__weakref__")

    def __init__(self, reader, batch):
        self.reader = reader
        self.batch = batch
        self.sync = None

    def __del__(self):
        try:
            if self.sync is not None:
                self.sync()
            self.reader.release(self.batch)
        except Exception:
            pass


_DTYPES = {"int64": (L.PS_DTYPE_INT64, np.int64, ctypes.c_int64),
           "int32": (L.PS_DTYPE_INT32, np.int32, ctypes.c_int32)}


def _host_view(addr, n, ctype, npdtype, holder, shape):
    """A numpy array over n elements at addr, kept alive by holder."""
    if n == 0:
        buf = (ctype * 1)()  # no slot memory to view; still tie the holder
        buf._pairshard_slot = holder
        return np.frombuffer(buf, dtype=npdtype, count=0).reshape(shape)
    buf = (ctype * n).from_address(addr)
    buf._pairshard_slot = holder
    return np.frombuffer(buf, dtype=npdtype).reshape(shape)


class _CudaView:
    """__cuda_array_interface__ over device memory; torch.as_tensor keeps
    the object (and so the holder) alive for the tensor's lifetime."""

    def __init__(self, addr, shape, typestr, holder):
        self._pairshard_slot = holder
        self.__cuda_array_interface__ = {"shape": shape, "typestr": typestr,
                                         "data": (addr, False), "version": 2, "strides": None}


class _Cuda:
    """The few CUDA runtime calls device batches need, from the libcudart
    the process already has: the one the reader library loaded (dlopen, in
    the same order: $PAIRSHARD_CUDART, else libcudart.so.13, .so.12, .so;
    loading a name already loaded gives that library again), or torch's."""

    _rt = None

    @classmethod
    def runtime(cls):
        if cls._rt is None:
            env = os.environ.get("PAIRSHARD_CUDART")
            names = [env] if env else ["libcudart.so.13", "libcudart.so.12", "libcudart.so"]
            for name in names:
                try:
                    rt = ctypes.CDLL(name)
                    rt.cudaStreamWaitEvent.argtypes = [ctypes.c_void_p, ctypes.c_void_p,
                                                       ctypes.c_uint]
                    rt.cudaStreamWaitEvent.restype = ctypes.c_int
                    cls._rt = rt
                    break
                except (OSError, AttributeError):
                    continue
            else:
                cls._rt = False
        return cls._rt or None


# Integer arguments: the C field each goes into, and the lowest value that
# means something there (None: the C type's own lowest). rank, world_size
# and device take None for "from the environment" / "the host"; -1 is
# their C spelling of that and is not accepted as a number.
_INT_ARGS = {
    "batch_size": (ctypes.c_uint32, 1), "max_tokens": (ctypes.c_uint64, 1),
    "pad_id": (ctypes.c_int32, None), "pad_multiple": (ctypes.c_uint32, 1),
    "seed": (ctypes.c_uint64, None), "epoch": (ctypes.c_uint64, None),
    "shuffle_window": (ctypes.c_uint32, None), "sort_pool": (ctypes.c_uint32, None),
    "rank": (ctypes.c_int, 0), "world_size": (ctypes.c_int, 1), "threads": (ctypes.c_int, 0),
    "prefetch": (ctypes.c_int, 0), "device": (ctypes.c_int, 0),
    "pack": (ctypes.c_uint32, 1), "decoder_start_id": (ctypes.c_int32, 0),
}


_NONE_OK = ("batch_size", "max_tokens", "rank", "world_size", "device", "pack",
            "decoder_start_id")


def _check_ints(**kw):
    """Every integer argument checked against its C field (None only where
    it has a meaning)."""
    out = {}
    for name, v in kw.items():
        ctype, lo = _INT_ARGS[name]
        none_ok = v is None and name in _NONE_OK
        out[name] = None if none_ok else L.check_int(name, v, ctype, lo)
    return out


def _options(lib, weights=None, **kw):
    o = L.ps_reader_options()
    L.options_init(lib, o)
    for k, v in kw.items():
        setattr(o, k, v)
    if weights:
        # The arrays live on the options (the library reads them at open).
        names = (ctypes.c_char_p * len(weights))(*[n.encode("utf-8") for n in weights])
        vals = (ctypes.c_double * len(weights))(*[float(w) for w in weights.values()])
        o._keep = (names, vals)
        o.n_weights = len(weights)
        o.weight_names = ctypes.cast(names, ctypes.POINTER(ctypes.c_char_p))
        o.weights = ctypes.cast(vals, ctypes.POINTER(ctypes.c_double))
    return o


def _check_weights(weights):
    """{source name: weight}: names str, weights finite numbers >= 0."""
    if weights is None:
        return None
    if not isinstance(weights, dict):
        raise TypeError("weights must be a dict of source name -> weight, not %s"
                        % type(weights).__name__)
    out = {}
    for name, w in weights.items():
        if not isinstance(name, str) or not name or "\0" in name:
            raise TypeError("weights: a source name must be a non-empty str, not %r" % (name,))
        if isinstance(w, bool) or not isinstance(w, (int, float)) or not (0 <= w <= 65535):
            raise ValueError("weights[%r] must be a number in 0 .. 65535, not %r" % (name, w))
        out[name] = float(w)
    return out


class Loader:
    """Batches of a pairshard shard set (docs/READER.md; python/README.md
    for this binding's semantics: epochs, resumption, lifetimes)."""

    def __init__(self, path, batch_size=None, max_tokens=None, pad_id=0, pad="longest",
                 pad_multiple=1, shuffle=True, seed=0, epoch=0, rank=None, world_size=None,
                 drop_last=False, threads=2, prefetch=4, dtype="int64", device=None,
                 skip_corrupt=False, as_torch=None, shuffle_window=0, sort_pool=0,
                 copy=False, pack=None, skip_long=False, decoder_start_id=None, weights=None):
        self._lib = L.load_reader()
        if isinstance(path, (list, tuple)):
            # several sets read as one mixture (docs/READER.md, "Mixtures")
            if not path:
                raise ValueError("path: an empty list of sets")
            self._paths = [L.check_path("path[%d]" % i, p) for i, p in enumerate(path)]
        else:
            self._paths = [L.check_path("path", path)]
        self._path = self._paths[0]
        self.path = (os.fsdecode(self._path) if len(self._paths) == 1
                     else [os.fsdecode(p) for p in self._paths])
        self._weights = _check_weights(weights)
        n = _check_ints(batch_size=batch_size, max_tokens=max_tokens, pad_id=pad_id,
                        pad_multiple=pad_multiple, seed=seed, epoch=epoch, rank=rank,
                        world_size=world_size, threads=threads, prefetch=prefetch,
                        device=device, shuffle_window=shuffle_window, sort_pool=sort_pool,
                        pack=pack, decoder_start_id=decoder_start_id)
        if batch_size is not None and max_tokens is not None:
            raise ValueError("give batch_size or max_tokens, not both")
        if pad not in ("longest", "bucket"):
            raise ValueError("pad must be 'longest' or 'bucket', not %r" % (pad,))
        dname = np.dtype(dtype).name
        if dname not in _DTYPES:
            raise ValueError("dtype must be int64 or int32, not %r" % (dtype,))
        self._dtype = _DTYPES[dname]
        self._copy = bool(copy)
        if as_torch is None:
            try:
                import torch  # noqa: F401
                as_torch = True
            except ImportError:
                as_torch = False
        if as_torch:
            import torch
            self._torch = torch
        else:
            self._torch = None
        self._opts = dict(
            batch_size=0 if max_tokens is not None else (
                32 if batch_size is None else n["batch_size"]),
            max_tokens=n["max_tokens"] or 0,
            pad_id=n["pad_id"],
            pad_mode=L.PS_PAD_BUCKET if pad == "bucket" else L.PS_PAD_LONGEST,
            pad_multiple=n["pad_multiple"],
            shuffle=1 if shuffle else 0,
            seed=n["seed"],
            epoch=n["epoch"],
            shuffle_window=n["shuffle_window"],
            sort_pool=n["sort_pool"],
            rank=L.PS_FROM_ENV if rank is None else n["rank"],
            world_size=L.PS_FROM_ENV if world_size is None else n["world_size"],
            drop_last=1 if drop_last else 0,
            threads=n["threads"],
            prefetch=n["prefetch"],
            dtype=self._dtype[0],
            device=L.PS_DEVICE_HOST if device is None else n["device"],
            skip_corrupt=1 if skip_corrupt else 0,
            # Layouts (reader.h): pack=None reads one record per row; the
            # library refuses pack on a set that is not causal and
            # decoder_start_id's absence is its -1.
            pack=0 if pack is None else n["pack"],
            skip_long=1 if skip_long else 0,
            decoder_start_id=-1 if decoder_start_id is None else n["decoder_start_id"],
        )
        self._reader = None
        self._open(None)
        self._labels = None

    # ---- the native reader ----------------------------------------------------

    def _open(self, state):
        new = _Reader(self._lib, self._paths, _options(self._lib, self._weights, **self._opts),
                      state)
        if self._reader is not None:
            self._reader.close()
        self._reader = new
        self._ended = False     # the last next() said: end of this epoch
        self._fresh = True      # nothing yielded since open / resume / set_epoch
        self._gen = getattr(self, "_gen", 0) + 1

    def _live(self):
        if self._reader is None or self._reader.ptr is None or self._reader.closing:
            raise PairshardError(L.PS_EUSAGE, "pairshard.Loader(%r) is closed" % self.path)
        return self._reader

    def _next(self):
        """The next native batch as a dict, or None at the end of the epoch."""
        r = self._live()
        bp = ctypes.POINTER(L.ps_batch)()
        err = L.ps_error()
        for attempt in (0, 1):
            with r.lock:
                rc = self._lib.ps_reader_next(r.ptr, ctypes.byref(bp), ctypes.byref(err))
                if rc == 1:
                    r.live += 1
                    holder = _Slot(r, bp)
                    break
            if rc == 0:
                self._ended = True
                return None
            if rc == L.PS_ELIMIT and attempt == 0:
                # Batches in reference cycles are only freed by the collector.
                gc.collect()
                continue
            if rc == L.PS_ELIMIT:
                slots = self._opts["prefetch"] or 4
                raise SlotsExhaustedError(
                    rc, "all %d batch slots are held by batches still referenced (their "
                    "arrays or tensors view the reader's memory): drop references to earlier "
                    "batches or copy what you keep (.copy() / .clone()), open the Loader "
                    "with copy=True, or with a larger prefetch (now %d)" % (slots, slots))
            _raise(rc, err)
        self._fresh = False
        return self._wrap(bp.contents, holder)

    def _fields(self, b):
        """(name, shape, numpy dtype, ctype) of every array the batch
        carries, per layout (reader.h, ps_batch; python/README.md)."""
        _, npd, ct = self._dtype
        tok = (npd, ct)
        i64, i32 = (np.int64, ctypes.c_int64), (np.int32, ctypes.c_int32)
        B, T, S = b.B, b.T, b.n_segments
        if b.layout == L.PS_LAYOUT_CAUSAL:
            return [("input_ids", (B, T)) + tok, ("attention_mask", (B, T)) + tok,
                    ("labels", (B, T)) + i64, ("position_ids", (B, T)) + tok,
                    ("class_labels", (S,)) + i64, ("lengths", (B,)) + tok,
                    ("cu_seqlens", (S + 1,)) + i32, ("seq_lens", (S,)) + tok,
                    ("prompt_lens", (S,)) + tok, ("seg_rows", (S,)) + tok]
        if b.layout == L.PS_LAYOUT_SEQ2SEQ:
            Tt = b.T_target
            out = [("input_ids", (B, T)) + tok, ("attention_mask", (B, T)) + tok,
                   ("labels", (B, Tt)) + i64, ("decoder_attention_mask", (B, Tt)) + tok]
            if b.decoder_input_ids:
                out.append(("decoder_input_ids", (B, Tt)) + tok)
            return out + [("class_labels", (B,)) + i64, ("lengths", (B,)) + tok,
                          ("target_lens", (B,)) + tok]
        # pair: labels are class ids, int64 whatever the dtype (cross_entropy)
        return [("input_ids", (B, T)) + tok, ("attention_mask", (B, T)) + tok,
                ("token_type_ids", (B, T)) + tok, ("labels", (B,)) + i64,
                ("lengths", (B,)) + tok]

    def _device_arrays(self, b, holder, fields, out):
        """Device tensors over the batch's d_ copies (when it has them and
        torch sees a GPU); False when the batch is to be viewed on the host."""
        torch = self._torch
        if not (b.device >= 0 and torch is not None and torch.cuda.is_available()):
            return False
        rt = _Cuda.runtime()
        if rt is None or not b.ready_event:
            return False
        dev = torch.device("cuda", b.device)
        stream = torch.cuda.current_stream(dev)
        # The trainer's stream waits for the reader's copy.
        rt.cudaStreamWaitEvent(ctypes.c_void_p(stream.cuda_stream),
                               ctypes.c_void_p(b.ready_event), 0)
        # Before the slot is reused, work queued on it must be done.
        holder.sync = stream.synchronize
        for name, shape, npd, ct in fields:
            typestr = {np.int64: "<i8", np.int32: "<i4"}[npd]
            addr = getattr(b, "d_" + name)
            if not addr or 0 in shape:
                # Nothing to view on the device (an empty array, or one the
                # library did not copy): the host's values, copied.
                n = 1
                for d in shape:
                    n *= d
                host = _host_view(getattr(b, name), n, ct, npd, holder, shape)
                t = torch.from_numpy(host.copy()).to(dev)
            else:
                t = torch.as_tensor(_CudaView(addr, shape, typestr, holder), device=dev)
                t = t.clone() if self._copy else t
            out[name] = t
        out.device = b.device
        return True

    def _wrap(self, b, holder):
        fields = self._fields(b)
        out = Batch()
        torch = self._torch
        if not self._device_arrays(b, holder, fields, out):
            for name, shape, npd, ct in fields:
                n = 1
                for d in shape:
                    n *= d
                a = _host_view(getattr(b, name), n, ct, npd, holder, shape)
                if self._copy:
                    a = a.copy()  # owned by the caller: the slot goes back at once
                out[name] = torch.from_numpy(a) if torch is not None else a
            out.device = -1
        n_ids = b.B if b.layout == L.PS_LAYOUT_PAIR else b.n_segments
        out["ids"] = [b.ids[i].decode("utf-8", "surrogateescape") for i in range(n_ids)]
        # each record's source id (Loader.sources names them), copied: small
        src = np.ctypeslib.as_array(ctypes.cast(b.sources, ctypes.POINTER(ctypes.c_int32)),
                                    shape=(n_ids,)).copy() if n_ids else np.zeros(0, np.int32)
        out["sources"] = torch.from_numpy(src) if torch is not None else src
        if b.layout != L.PS_LAYOUT_PAIR:
            out["max_seqlen"] = int(b.max_seqlen)
        out["bucket"] = b.bucket
        out["step"] = b.step
        out["epoch"] = b.epoch
        out["real_tokens"] = b.real_tokens
        out.layout = L.LAYOUT_NAMES.get(b.layout, str(b.layout))
        out.slot_address = 0 if self._copy else b.input_ids
        return out

    # ---- iteration ------------------------------------------------------------------

    def __iter__(self):
        self._live()
        if self._ended:
            # The previous pass ran this epoch to its end: go on to the next.
            self._set_epoch(self.info()["epoch"] + 1)
        self._gen += 1
        return self._iterate(self._gen)

    def _iterate(self, gen):
        while gen == self._gen:
            b = self._next()
            if b is None:
                return
            yield b

    def __len__(self):
        return self.info()["batches_per_epoch"]

    def _set_epoch(self, epoch):
        epoch = L.check_int("epoch", epoch, ctypes.c_uint64)
        r = self._live()
        err = L.ps_error()
        with r.lock:
            rc = self._lib.ps_reader_set_epoch(r.ptr, epoch, ctypes.byref(err))
        if rc < 0:
            _raise(rc, err)
        self._ended = False
        self._fresh = True
        self._gen += 1

    def set_epoch(self, epoch):
        """Starts epoch `epoch` from its first batch (a new shuffle) for the
        next iteration. Does nothing when the loader already stands at that
        epoch and has yielded nothing since it was opened, resumed or set,
        so that load_state_dict() followed by the usual set_epoch(epoch) keeps
        the resumed position."""
        epoch = L.check_int("epoch", epoch, ctypes.c_uint64)
        if self._fresh and not self._ended and epoch == self.info()["epoch"]:
            return
        self._set_epoch(epoch)

    @property
    def epoch(self):
        return self.info()["epoch"]

    # ---- resumption ------------------------------------------------------------------

    def state_dict(self):
        """Where the loader stands: after the last batch it yielded."""
        r = self._live()
        st = L.ps_reader_state()
        with r.lock:
            self._lib.ps_reader_get_state(r.ptr, ctypes.byref(st))
        return {"version": 1, "reader_state": bytes(st.bytes), "epoch_ended": self._ended}

    def load_state_dict(self, d):
        """Reopens the reader where state_dict() was taken (the same set and
        batching options; the state's seed and epoch apply)."""
        if not isinstance(d, dict) or d.get("version") != 1:
            raise PairshardError(L.PS_EVERSION, "pairshard.Loader.load_state_dict: expected "
                                 "a version 1 state dict, got %r" % (
                                     d.get("version") if isinstance(d, dict) else type(d)))
        blob = bytes(d["reader_state"])
        err = L.ps_error()
        buf = ctypes.create_string_buffer(blob, len(blob))
        rc = self._lib.ps_reader_state_check(buf, len(blob), ctypes.byref(err))
        if rc < 0:
            _raise(rc, err, "pairshard.Loader.load_state_dict")
        st = L.ps_reader_state()
        ctypes.memmove(st.bytes, blob, L.PS_READER_STATE_BYTES)
        self._live()
        self._open(st)
        self._ended = bool(d.get("epoch_ended", False))

    # ---- introspection ------------------------------------------------------------

    def info(self):
        r = self._live()
        i = L.ps_reader_info()
        with r.lock:
            self._lib.ps_reader_get_info_size(r.ptr, ctypes.byref(i), ctypes.sizeof(i))
        out = {k: getattr(i, k) for k, _ in L.ps_reader_info._fields_}
        out["layout"] = L.LAYOUT_NAMES.get(i.layout, str(i.layout))
        return out

    def stats(self):
        r = self._live()
        s = L.ps_reader_stats()
        with r.lock:
            self._lib.ps_reader_get_stats_size(r.ptr, ctypes.byref(s), ctypes.sizeof(s))
        return {k: getattr(s, k) for k, _ in L.ps_reader_stats._fields_}

    @property
    def labels(self):
        """Label names; a batch's labels are indices into this (-1: none)."""
        if self._labels is None:
            r = self._live()
            n = self.info()["n_labels"]
            with r.lock:
                self._labels = [self._lib.ps_reader_get_label(r.ptr, k).decode("utf-8", "replace")
                                for k in range(n)]
        return list(self._labels)

    @property
    def sources(self):
        """Source names; a batch's "sources" are indices into this. A set
        without sources is one source named after its directory."""
        r = self._live()
        n = self.info()["n_sources"]
        with r.lock:
            return [self._lib.ps_reader_get_source(r.ptr, k).decode("utf-8", "replace")
                    for k in range(n)]

    def source_records(self):
        """{source name: records in the set} (what a weight multiplies)."""
        r = self._live()
        names = self.sources
        with r.lock:
            return {n: self._lib.ps_reader_get_source_records(r.ptr, k)
                    for k, n in enumerate(names)}

    def bucket_bounds(self):
        r = self._live()
        n = self.info()["n_buckets"]
        with r.lock:
            return [self._lib.ps_reader_get_bucket_bound(r.ptr, k) for k in range(n)]

    # ---- closing ---------------------------------------------------------------------

    def close(self):
        """Closes the loader. Batches still referenced stay valid; the
        native reader (threads and slot memory) is freed when the last of
        them is garbage collected."""
        if self._reader is not None:
            self._reader.close()
            self._gen += 1

    @property
    def closed(self):
        return self._reader is None or self._reader.closing

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __reduce__(self):
        raise TypeError("a pairshard.Loader holds a native reader and its threads and cannot be "
                        "pickled; open one in each process (state_dict() is picklable)")

    def __repr__(self):
        return "pairshard.Loader(%r%s)" % (self.path, ", closed" if self.closed else "")


class Batch(dict):
    """A batch: a dict of arrays/tensors and metadata. `slot_address` is the
    address of the reader's slot its input_ids view (for zero-copy checks;
    0 with Loader(copy=True), whose arrays are copies);
    `device` the CUDA ordinal of its tensors, or -1 on the host;
    `layout` the set's layout ("pair", "causal" or "seq2seq"), which says
    which keys it has (python/README.md, "Layouts")."""

    slot_address = 0
    device = -1
    layout = "pair"

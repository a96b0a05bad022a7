"""pairshard.Preprocessor: a shard set's exact preprocessing at serving time.

The set's own cleaning, rules, template, schemas and tokenizer, recreated by
libpairshard from the set alone (pairshard/preprocess.h): ``encode`` gives,
for a raw question, the ids the model was trained on for such a record,
without re-implementing any of it in Python.
"""

import ctypes
import threading

import numpy as np

from . import _lib as L
from .loader import PairshardError


class RejectedError(ValueError):
    """The set's build would have rejected this record: `reason` is its code
    (pairshard/clean.h: empty_after_cleaning, unknown_database, too_long,
    dropped_by_rule, tokenizer_error, ...), `detail` one sentence, `rule`
    the rule's name."""

    def __init__(self, reason, detail=None, rule=None, index=None):
        self.reason, self.detail, self.rule, self.index = reason, detail, rule, index
        where = "" if index is None else "record %d: " % index
        super().__init__("%srejected %s%s" % (where, reason, ": " + detail if detail else ""))


class ps_preprocess_field(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("value", ctypes.c_char_p)]


class ps_preprocess_input(ctypes.Structure):
    _fields_ = [
        ("record", ctypes.c_char_p), ("record_len", ctypes.c_size_t),
        ("question", ctypes.c_char_p), ("sql", ctypes.c_char_p), ("db_id", ctypes.c_char_p),
        ("fields", ctypes.POINTER(ps_preprocess_field)), ("n_fields", ctypes.c_size_t),
        ("history", ctypes.POINTER(ctypes.c_char_p)), ("n_history", ctypes.c_size_t),
    ]


class ps_preprocess_output(ctypes.Structure):
    _fields_ = [
        ("rejected", ctypes.c_int),
        ("reason", ctypes.c_char_p), ("rule", ctypes.c_char_p), ("detail", ctypes.c_char_p),
        ("question", ctypes.c_void_p), ("question_len", ctypes.c_size_t),
        ("sql", ctypes.c_void_p), ("sql_len", ctypes.c_size_t),
        ("prompt", ctypes.c_void_p), ("prompt_len", ctypes.c_size_t),
        ("completion", ctypes.c_void_p), ("completion_len", ctypes.c_size_t),
        ("input_ids", ctypes.POINTER(ctypes.c_int32)),
        ("token_type_ids", ctypes.POINTER(ctypes.c_uint8)),
        ("attention_mask", ctypes.POINTER(ctypes.c_uint8)),
        ("length", ctypes.c_size_t), ("truncated", ctypes.c_int), ("shortened", ctypes.c_int),
    ]


class ps_preprocess_options(ctypes.Structure):
    # struct_size: the size of this mirror, passed to
    # ps_preprocess_options_init_size (pairshard/common.h, growing structs)
    _fields_ = [("struct_size", ctypes.c_size_t), ("allow_unicode_mismatch", ctypes.c_int),
                ("source", ctypes.c_char_p)]


def _declare(lib):
    if getattr(lib, "_ps_preprocess_declared", False):
        return lib
    err_p = ctypes.POINTER(L.ps_error)
    vp = ctypes.c_void_p
    sigs = {
        "ps_preprocessor_open": (ctypes.c_int, [ctypes.c_char_p, ctypes.POINTER(vp), err_p]),
        "ps_preprocessor_open_source": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_char_p,
                                                       ctypes.POINTER(vp), err_p]),
        "ps_preprocessor_free": (None, [vp]),
        "ps_preprocess_options_init_size": (ctypes.c_int, [ctypes.POINTER(ps_preprocess_options),
                                                           ctypes.c_size_t]),
        "ps_preprocessor_open_opts": (ctypes.c_int, [ctypes.c_char_p,
                                                     ctypes.POINTER(ps_preprocess_options),
                                                     ctypes.POINTER(vp), err_p]),
        "ps_preprocessor_get_warning": (ctypes.c_char_p, [vp]),
        "ps_preprocess_size": (ctypes.c_int, [vp, ctypes.POINTER(ps_preprocess_input),
                                              ctypes.POINTER(ps_preprocess_output),
                                              ctypes.c_size_t, err_p]),
        "ps_preprocessor_clean": (ctypes.c_int, [vp, ctypes.c_char_p, ctypes.c_char_p,
                                                 ctypes.c_size_t, ctypes.POINTER(vp),
                                                 ctypes.POINTER(ctypes.c_size_t),
                                                 ctypes.POINTER(ctypes.c_char_p), err_p]),
        "ps_preprocessor_get_max_length": (ctypes.c_size_t, [vp]),
        "ps_preprocessor_get_pad_id": (ctypes.c_int32, [vp]),
    }
    for name, (res, args) in sigs.items():
        f = getattr(lib, name)
        f.restype = res
        f.argtypes = args
    lib._ps_preprocess_declared = True
    return lib


def _ids(ptr, n):
    """A copy (int64) of n values at ptr: the output is libpairshard's only
    until this thread's next call."""
    return np.ctypeslib.as_array(ptr, (n,)).astype(np.int64) if n else np.zeros(0, np.int64)


def _text(ptr, n):
    return None if not ptr else ctypes.string_at(ptr, n).decode("utf-8")


def _enc(s):
    if s is None:
        return None
    if not isinstance(s, str):
        raise TypeError("expected str, not %s" % type(s).__name__)
    b = s.encode("utf-8")
    if b"\0" in b:
        raise ValueError("a NUL character in %r" % s[:40])
    return b


class Preprocessor:
    """The preprocessing of the shard set at `path` (its manifest and the
    files it embeds, hashes checked). Thread-safe: one Preprocessor may
    serve any number of threads at once (each call releases the GIL and
    works in its thread's own scratch in libpairshard), and gives each what
    serial calls would; close() waits for the calls in progress.

    encode(question, db_id=None, sql=None, **fields) → {"input_ids",
    "token_type_ids", "attention_mask"}: numpy int64/uint8 arrays (torch
    tensors with return_tensors="pt"); a list of questions (or of dicts)
    gives a padded batch, as a HuggingFace tokenizer's __call__ with
    padding=True. Without sql the ids are the prompt's alone (with a
    template) or [CLS] question [SEP].

    A host whose utf8proc or PCRE2 has another Unicode version than the set
    was built with, where the set's tokenizer depends on it, is refused
    (PairshardError, PS_EVERSION): its ids could differ from the stored
    ones. allow_unicode_mismatch=True opens it anyway; `warning` then says
    which library and versions differ (None when nothing did).

    source: of a set built from several sources (a mixture), the one whose
    cleaning, template and schemas to serve with."""

    def __init__(self, path, source=None, allow_unicode_mismatch=False):
        self._lib = _declare(L.load())
        # calls in progress, so that close() never frees what a thread uses
        self._cv = threading.Condition(threading.Lock())
        self._calls = 0
        self._p = ctypes.c_void_p()
        err = L.ps_error()
        opts = ps_preprocess_options()
        rc = self._lib.ps_preprocess_options_init_size(ctypes.byref(opts), ctypes.sizeof(opts))
        if rc:
            raise PairshardError(rc, "ps_preprocess_options: this libpairshard does not know "
                                 "a struct of %d bytes" % ctypes.sizeof(opts))
        opts.allow_unicode_mismatch = 1 if allow_unicode_mismatch else 0
        opts.source = None if source is None else _enc(str(source))
        rc = self._lib.ps_preprocessor_open_opts(_enc(str(path)), ctypes.byref(opts),
                                                 ctypes.byref(self._p), ctypes.byref(err))
        if rc:
            raise PairshardError(rc, err.message.decode("utf-8", "replace"))
        w = self._lib.ps_preprocessor_get_warning(self._p)
        self.warning = w.decode("utf-8", "replace") if w else None
        pad = self._lib.ps_preprocessor_get_pad_id(self._p)
        self.pad_id = pad if pad >= 0 else 0
        self.max_length = self._lib.ps_preprocessor_get_max_length(self._p)

    def close(self):
        """Frees the preprocessor once the calls in progress on other
        threads have returned; calls after it raise ValueError."""
        cv = getattr(self, "_cv", None)
        if cv is None:
            return
        with cv:
            p, self._p = self._p, None
            while self._calls:
                cv.wait()
        if p:
            self._lib.ps_preprocessor_free(p)

    def _enter(self):
        with self._cv:
            if not self._p:
                raise ValueError("the Preprocessor is closed")
            self._calls += 1
            return self._p

    def _leave(self):
        with self._cv:
            self._calls -= 1
            if not self._calls:
                self._cv.notify_all()

    def __del__(self):
        self.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _run(self, take, question=None, db_id=None, sql=None, record=None, fields=None,
             index=None):
        """take(out, n) of one record's output: called before this thread's
        next call, while the output is still this thread's to read."""
        inp = ps_preprocess_input()
        keep = []
        if record is not None:
            rec = record.encode("utf-8") if isinstance(record, str) else bytes(record)
            keep.append(rec)
            inp.record, inp.record_len = rec, len(rec)
        else:
            if question is None:
                raise TypeError("a question (or record=) is needed")
            inp.question, inp.sql, inp.db_id = _enc(question), _enc(sql), _enc(db_id)
            fields = dict(fields or {})
            history = fields.pop("history", None)  # dialogues: earlier utterances, newest first
            if history:
                hist = (ctypes.c_char_p * len(history))(*[_enc(h) for h in history])
                keep.append(hist)
                inp.history, inp.n_history = hist, len(history)
            items = [(_enc(k), _enc(v)) for k, v in fields.items() if v is not None]
            arr = (ps_preprocess_field * max(1, len(items)))(*items)
            keep.append(arr)
            inp.fields, inp.n_fields = arr, len(items)
        out = ps_preprocess_output()
        err = L.ps_error()
        p = self._enter()
        try:
            rc = self._lib.ps_preprocess_size(p, ctypes.byref(inp), ctypes.byref(out),
                                              ctypes.sizeof(out), ctypes.byref(err))
            if rc:
                raise PairshardError(rc, err.message.decode("utf-8", "replace"))
            if out.rejected:
                raise RejectedError(out.reason.decode(), out.detail and out.detail.decode(),
                                    out.rule and out.rule.decode(), index)
            return take(out, out.length)
        finally:
            self._leave()

    def preprocess(self, question=None, db_id=None, sql=None, record=None, **fields):
        """Everything the build would have stored for one record: the
        cleaned question and sql, prompt, completion, ids, truncated and
        shortened flags. Raises RejectedError when the build would have
        rejected it. `record` takes a raw JSON record instead."""
        def take(out, n):
            return {
                "question": _text(out.question, out.question_len),
                "sql": _text(out.sql, out.sql_len),
                "prompt": _text(out.prompt, out.prompt_len),
                "completion": _text(out.completion, out.completion_len),
                "input_ids": _ids(out.input_ids, n),
                "token_type_ids": _ids(out.token_type_ids, n),
                "attention_mask": np.ones(n, dtype=np.int64),
                "truncated": bool(out.truncated), "shortened": bool(out.shortened),
            }
        return self._run(take, question, db_id, sql, record, fields)

    def _one(self, question, db_id, sql, record, fields, index=None):
        return self._run(lambda out, n: (_ids(out.input_ids, n), _ids(out.token_type_ids, n)),
                         question, db_id, sql, record, fields, index)

    def encode(self, question=None, db_id=None, sql=None, record=None, return_tensors=None,
               padding_side="right", **fields):
        """Ids of one record (1-D arrays) or of a list of records (a padded
        B x T batch: a list of questions with db_id, sql and fields as
        lists or single values, or a list of dicts). padding_side="left"
        puts a batch's padding before each row's ids, as a decoder-only
        model's batched generation wants (HF's tokenizer.padding_side)."""
        if padding_side not in ("right", "left"):
            raise ValueError("padding_side must be 'right' or 'left', not %r" % (padding_side,))
        if isinstance(question, (list, tuple)) or isinstance(record, (list, tuple)):
            rows = self._batch_rows(question, db_id, sql, record, fields)
            return self._pad(rows, return_tensors, padding_side == "left")
        ids, types = self._one(question, db_id, sql, record, fields)
        d = {"input_ids": ids, "token_type_ids": types, "attention_mask": np.ones_like(ids)}
        return self._tensors(d, return_tensors)

    def __call__(self, *args, **kwargs):
        return self.encode(*args, **kwargs)

    def _batch_rows(self, questions, db_id, sql, records, fields):
        n = len(questions if questions is not None else records)

        def at(v, i):
            return v[i] if isinstance(v, (list, tuple)) else v

        rows = []
        for i in range(n):
            if records is not None:
                rows.append(self._one(None, None, None, records[i], None, i))
                continue
            q = questions[i]
            if isinstance(q, dict):
                d = dict(q)
                rows.append(self._one(d.pop("question", None), d.pop("db_id", None),
                                      d.pop("sql", None), None, d, i))
            else:  # a history is a list per record: a list of them is per row
                f = {k: (v[i] if k == "history" and v and isinstance(v[0], (list, tuple))
                         else v if k == "history" else at(v, i)) for k, v in fields.items()}
                rows.append(self._one(q, at(db_id, i), at(sql, i), None, f, i))
        return rows

    def _pad(self, rows, return_tensors, left=False):
        T = max((len(r[0]) for r in rows), default=0)
        B = len(rows)
        ids = np.full((B, T), self.pad_id, dtype=np.int64)
        types = np.zeros((B, T), dtype=np.int64)
        mask = np.zeros((B, T), dtype=np.int64)
        for i, (a, t) in enumerate(rows):
            cols = slice(T - len(a), T) if left else slice(0, len(a))
            ids[i, cols] = a
            types[i, cols] = t
            mask[i, cols] = 1
        d = {"input_ids": ids, "token_type_ids": types, "attention_mask": mask}
        return self._tensors(d, return_tensors)

    @staticmethod
    def _tensors(d, return_tensors):
        if return_tensors in (None, "np"):
            return d
        if return_tensors == "pt":
            import torch
            return {k: torch.from_numpy(v) for k, v in d.items()}
        raise ValueError("return_tensors must be None, 'np' or 'pt', not %r" % (return_tensors,))

    def clean(self, text, field="question"):
        """`text` cleaned as the set's build cleaned `field` ("question",
        "sql", or a template field such as "evidence"). Raises RejectedError
        when the build would have rejected a record for it."""
        b = text.encode("utf-8") if isinstance(text, str) else bytes(text)
        out = ctypes.c_void_p()
        n = ctypes.c_size_t()
        reason = ctypes.c_char_p()
        err = L.ps_error()
        p = self._enter()
        try:
            rc = self._lib.ps_preprocessor_clean(p, _enc(field), b, len(b), ctypes.byref(out),
                                                 ctypes.byref(n), ctypes.byref(reason),
                                                 ctypes.byref(err))
            if rc:
                raise PairshardError(rc, err.message.decode("utf-8", "replace"))
            if reason.value:
                raise RejectedError(reason.value.decode())
            return ctypes.string_at(out, n.value).decode("utf-8")
        finally:
            self._leave()

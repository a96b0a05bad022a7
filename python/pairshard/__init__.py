"""pairshard: training batches from pairshard shard sets for Python and
PyTorch (python/README.md). The reader itself is libpairshard's
(docs/READER.md); this package binds it with ctypes, nothing compiled."""

from .execution import exec_fingerprints
from .loader import Batch, EmptySetError, Loader, PairshardError, SlotsExhaustedError
from .preprocess import Preprocessor, RejectedError

__all__ = ["Batch", "EmptySetError", "Loader", "PairshardError", "Preprocessor", "RejectedError",
           "SlotsExhaustedError", "exec_fingerprints", "version"]


def version():
    """libpairshard's version string ("0.2.0")."""
    from . import _lib
    return _lib.load().ps_version_string().decode()

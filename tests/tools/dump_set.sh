# Sourced (after tests/tap.sh) by the TAP scripts that compare a set's
# stored records with another's or with HF's: dump_set DIR OUT writes every
# record of the set at DIR as JSON lines {"id", "input_ids"}, read in
# stored order through the Python binding's Loader, with Debian's python3
# ($PY, which has numpy) on $PS_BUILD's library (a sanitizer build's
# runtimes preloaded).
PRELOAD=$(sanitizer_preload "$PS_BUILD/lib/libpairshard.so")
dump_set() { # DIR OUT
    LD_PRELOAD="$PRELOAD" ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" \
    PAIRSHARD_LIB="$PS_BUILD/lib/libpairshard.so" PYTHONPATH="$PS_ROOT/python" "$PY" - "$1" "$2" <<'PY'
import json, sys
import numpy as np
from pairshard import Loader
with open(sys.argv[2], "w") as out:
    for b in Loader(sys.argv[1], batch_size=64, shuffle=False, as_torch=False, copy=True):
        ids = np.asarray(b["input_ids"])
        for i, rid in enumerate(b["ids"]):
            n = int(b["lengths"][i])
            out.write(json.dumps({"id": rid, "input_ids": [int(x) for x in ids[i, :n]]}) + "\n")
PY
}

#!/usr/bin/python3
"""Crash safety: `pairshard build` killed with SIGKILL at random moments.

Spider train into 4 shards is built once as the reference and timed; then
each trial starts the same build into DIR and kills it after a delay drawn
uniformly over the whole measured build time, or over its last 40% (where
shards are finished and the set is published), seeded by FAULT_SEED. DIR
either did not exist (fresh) or held a previous set (Spider dev). After
the kill DIR must be absent (fresh only), byte-for-byte the previous set
(previous only) or complete: byte-identical to the reference and passing
`inspect --verify`. Staging directories a killed build leaves beside DIR
are allowed, but a rerun must succeed, remove them and give the reference
bytes again (every file compared, manifest.json included).
"""
import os
import random
import shutil
import signal
import subprocess
import time

from faultlib import (TMP, DEV, TRAIN, build_args, diff_trees, finish, fresh_dir, note, run,
                      tap, tree_bytes, verify)

TRIALS = int(os.environ.get("FAULT_CRASH_TRIALS", "30"))  # per scenario
SEED = int(os.environ.get("FAULT_SEED", "20261202"))
rng = random.Random(SEED)

ref_dir = os.path.join(fresh_dir("crash-ref"), "set")
times = []
for i in range(3):
    shutil.rmtree(ref_dir, ignore_errors=True)
    r = run(build_args(ref_dir, [TRAIN], 4))
    times.append(r.secs)
    if r.rc != 0:
        tap(False, "reference build of Spider train (4 shards): " + r.why() + " " + r.err[-300:])
        finish()
duration = sorted(times)[1]
ref = tree_bytes(ref_dir)
tap(verify(ref_dir).rc == 0, "reference build verifies (Spider train, 4 shards, %.3fs median)"
    % duration)
prev_dir = os.path.join(fresh_dir("crash-prev"), "set")
r = run(build_args(prev_dir, [DEV], 4))
prev = tree_bytes(prev_dir)
tap(r.rc == 0 and diff_trees(prev, ref), "previous version (Spider dev) builds and differs")

stats = {"absent": 0, "previous": 0, "complete": 0, "bad": 0}
killed_running = 0
staging_left = 0
reruns_ok = 0
survived = 0
delays = []
for trial in range(2 * TRIALS):
    scenario = "fresh" if trial % 2 == 0 else "previous"
    parent = fresh_dir("crash-%03d" % trial)
    d = os.path.join(parent, "set")
    if scenario == "previous":
        shutil.copytree(prev_dir, d)
    # Half the delays over the whole build, half over its end, where the
    # shards are finished, fsynced and the set is swapped in.
    delay = duration * (rng.uniform(0, 1.05) if trial % 4 < 2 else rng.uniform(0.6, 1.1))
    delays.append(delay / duration)
    p = subprocess.Popen(build_args(d, [TRAIN], 4), stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    time.sleep(delay)
    running = p.poll() is None
    if running:
        p.send_signal(signal.SIGKILL)
        killed_running += 1
    p.wait()
    after = tree_bytes(d)
    beside = sorted(n for n in os.listdir(parent) if n != "set")
    if beside:
        staging_left += 1
    if after is None:
        state = "absent"
        ok = scenario == "fresh"
    elif not diff_trees(after, prev) and scenario == "previous":
        state = "previous"
        ok = True
    elif not diff_trees(after, ref):
        state = "complete"
        ok = verify(d).rc == 0
    else:
        state = "bad"
        ok = False
    stats[state] += 1
    what = "%s DIR, killed at %.0f%% of the build%s: DIR %s" % (
        scenario, 100 * delay / duration, "" if running else " (it had finished)",
        {"absent": "absent", "previous": "is the previous set, unchanged",
         "complete": "complete, verifies", "bad": "PARTIAL OR MIXED"}[state])
    if state == "bad":
        what += " (differs: %s)" % ", ".join(diff_trees(after, ref)[:6])
    # The rerun: must clean up after the killed build and give the same bytes.
    r = run(build_args(d, [TRAIN], 4))
    again = tree_bytes(d)
    left = sorted(n for n in os.listdir(parent) if n != "set")
    rerun_ok = r.rc == 0 and not diff_trees(again, ref) and not left
    reruns_ok += rerun_ok
    if not rerun_ok:
        what += "; rerun: %s, %s, left beside DIR: %s" % (
            r.why(), "differs: " + ",".join(diff_trees(again, ref)[:6]) if again else "no DIR",
            left or "nothing")
    else:
        what += "; rerun byte-identical%s" % (", stale staging removed" if beside else "")
    survived += ok and rerun_ok
    tap(ok and rerun_ok, "crash %d: %s" % (trial + 1, what))
    shutil.rmtree(parent, ignore_errors=True)

n = 2 * TRIALS
spread = sorted(delays)
note("crash: %d kills (%d while the build ran), delays %.0f%%..%.0f%% of %.3fs; DIR afterwards: "
     "%d absent, %d previous, %d complete, %d bad; %d left staging beside DIR, %d/%d reruns "
     "byte-identical" % (n, killed_running, 100 * spread[0], 100 * spread[-1], duration,
                         stats["absent"], stats["previous"], stats["complete"], stats["bad"],
                         staging_left, reruns_ok, n))
tap(killed_running >= n * 2 // 3, "at least 2/3 of the kills hit a running build (%d of %d)"
    % (killed_running, n))
print("# TOTAL crash trials=%d survived=%d" % (n, survived))
finish()

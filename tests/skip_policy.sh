#!/bin/sh
# The skips of a test run, listed with their reasons, and judged against
# the allow-list: sh tests/skip_policy.sh ALLOWLIST <SKIPS
# SKIPS: one line a skip, "NAME<TAB>TAP line" (NAME as the runner names the
# test: cli/slurm, test_shards, hostile). ALLOWLIST (tests/skips-allowed.txt):
# lines "NAME<TAB>ERE<TAB>why this may skip", the ERE matched against the
# TAP line; '#' lines are comments.
# Prints "skips (N):" and one line a skip: its reason (the text after
# "# SKIP"; cmocka's give the test's name) and either the allow-list's why
# or "not on the allow-list". A skip not on the list is what a dependency
# that could not be installed looks like (chromium, torch, scipy, slurm,
# node...): under CI=true each such line says "NOT ALLOWED under CI=true",
# and the runner counts it as a failure (grep -c 'NOT ALLOWED'). Prints
# nothing when there was no skip.
set -u
awk -F '\t' -v ci="${CI:-}" '
NR == FNR {
    if ($0 !~ /^#/ && NF >= 3) { n++; an[n] = $1; ap[n] = $2; aw[n] = $3 }
    next
}
{
    name = $1
    line = substr($0, length(name) + 2)
    reason = line
    sub(/^.*#[ \t]*[Ss][Kk][Ii][Pp][ \t]*/, "", reason)
    hit = 0
    for (i = 1; i <= n; i++)
        if (an[i] == name && line ~ ap[i]) { hit = i; break }
    out[++k] = hit ? sprintf("  %s: %s -- allowed: %s", name, reason, aw[hit]) \
        : ci == "true" ? sprintf("  %s: %s -- NOT ALLOWED under CI=true (not on %s): a failure", name, reason, FILENAME_A) \
        : sprintf("  %s: %s -- not on the allow-list (a failure under CI=true)", name, reason)
}
END {
    if (k) print "skips (" k "):"
    for (i = 1; i <= k; i++) print out[i]
}' FILENAME_A="$1" "$1" -

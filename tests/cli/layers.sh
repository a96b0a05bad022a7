#!/bin/sh
# The folder layering: scripts/include-graph.py derives the include graph
# from the sources, passes on the real tree, refuses an upward include
# planted in a copy, and docs/ARCHITECTURE.md shows the graph it derives.
# scripts/lib-prints.py finds no printing in the library folders, and finds
# one planted in a copy.
. "$PS_ROOT/tests/tap.sh"
GRAPH="$PS_ROOT/scripts/include-graph.py"

python3 "$GRAPH" "$PS_ROOT" >"$TMP/graph" 2>"$TMP/err"
check "the source tree's includes all point down the layers" $?
grep -q '^  store     -> common$' "$TMP/graph"
check "store/ (what a reader links) includes only common/" $?

# The doc's graph block is the text between the two marker lines.
sed -n '/^<!-- include-graph:begin -->$/,/^<!-- include-graph:end -->$/p' \
    "$PS_ROOT/docs/ARCHITECTURE.md" | sed '1,2d;$d' | sed '$d' >"$TMP/doc-graph"
diff "$TMP/graph" "$TMP/doc-graph" >"$TMP/doc-diff"
check "docs/ARCHITECTURE.md shows the generated include graph" $?

# A copy of the library folders with one upward include planted in store/.
copy_tree() {
    rm -rf "$TMP/tree" && mkdir -p "$TMP/tree"
    for d in common schema ingest tokenize validate report store reader pipeline cli include; do
        cp -R "$PS_ROOT/$d" "$TMP/tree/$d"
    done
}
copy_tree
python3 "$GRAPH" "$TMP/tree" >/dev/null 2>&1
check "an unchanged copy passes" $?

printf '#include "pipeline/build.h"\n' >>"$TMP/tree/store/block.c"
python3 "$GRAPH" "$TMP/tree" >/dev/null 2>"$TMP/err"
[ $? -eq 1 ] && grep -q 'store/block.c:[0-9]*: #include "pipeline/build.h": store may not include pipeline' "$TMP/err"
check "an upward include (store -> pipeline) fails, naming file, line and edge" $?

# plant FILE INCLUDE GREP DESC: one include planted in a fresh copy fails
# the check (exit 1), its message matching GREP.
plant() {
    copy_tree
    printf '#include "%s"\n' "$2" >>"$TMP/tree/$1"
    python3 "$GRAPH" "$TMP/tree" >/dev/null 2>"$TMP/err"
    [ $? -eq 1 ] && grep -q "$3" "$TMP/err"
    check "$4" $?
}
plant validate/checks.c report/report.h 'validate may not include report' \
    "validate/ including report/ (one layer up) fails"
plant store/verify.c pairshard/reader.h 'store may not include reader' \
    "reaching a higher layer through its public header fails"
plant reader/plan.h shards/shards.h '"shards/shards.h": not a layer' \
    "an include of a folder that is no layer fails"

# No library or CLI function over 150 lines (scripts/long-functions.py; the
# JSON scanner's state machine is its one listed exception).
python3 "$PS_ROOT/scripts/long-functions.py" "$PS_ROOT" >"$TMP/long" 2>&1
check "no function over 150 lines in the library folders and cli/" $?
[ -s "$TMP/long" ] && sed 's/^/# /' "$TMP/long"
copy_tree
{ cat "$PS_ROOT/store/block.c"; echo "static int planted_long(void)"; echo "{"
  i=0; while [ $i -lt 160 ]; do echo "    (void)0;"; i=$((i + 1)); done
  echo "    return 0;"; echo "}"; } >"$TMP/tree/store/block.c"
python3 "$PS_ROOT/scripts/long-functions.py" "$TMP/tree" >/dev/null 2>"$TMP/err"
[ $? -eq 1 ] && grep -q 'store/block.c:[0-9]*: planted_long: 164 lines (limit 150)' "$TMP/err"
check "a planted 164-line function fails, naming file, line and length" $?

# No dead code: every function the library and cli/ export has a caller
# (scripts/unused-functions.py; the public headers count as one).
python3 "$PS_ROOT/scripts/unused-functions.py" "$PS_ROOT" >"$TMP/unused" 2>&1
check "every non-static function of the library and cli/ has a caller" $? "$TMP/unused"
copy_tree
printf '\nint ps_planted_unused(int x)\n{\n    return x + 1;\n}\n' >>"$TMP/tree/store/block.c"
printf '\nint ps_planted_used(int x)\n{\n    return x;\n}\nint ps_planted_caller(void) { return ps_planted_used(1); }\n' \
    >>"$TMP/tree/reader/state.c"
python3 "$PS_ROOT/scripts/unused-functions.py" "$TMP/tree" >/dev/null 2>"$TMP/err"
[ $? -eq 1 ] && grep -q 'store/block.c:[0-9]*: ps_planted_unused: no caller' "$TMP/err" &&
    ! grep -q 'ps_planted_used:' "$TMP/err"
check "a planted function without a caller fails, naming file and line; one with a caller does not" $? "$TMP/err"

# Library code never prints: the caller renders (the build's progress is a
# callback the CLI draws).
PRINTS="$PS_ROOT/scripts/lib-prints.py"
python3 "$PRINTS" "$PS_ROOT" >"$TMP/prints" 2>&1
check "no printf/fprintf/puts/perror or stderr in the library folders" $?

copy_tree
python3 "$PRINTS" "$TMP/tree" >/dev/null 2>&1
check "an unchanged copy has no printing library code" $?

printf '/* printf("x"); in a comment, "/dev/stderr" in a string */\nstatic const char *s = "puts(";\n' \
    >>"$TMP/tree/reader/state.c"
python3 "$PRINTS" "$TMP/tree" >/dev/null 2>&1
check "comments and strings naming printf, puts and /dev/stderr are not hits" $?

printf 'static void say(int n) { fprintf(stderr, "%%d\\n", n); }\n' >>"$TMP/tree/pipeline/merge.c"
python3 "$PRINTS" "$TMP/tree" >"$TMP/prints" 2>&1
[ $? -eq 1 ] && grep -q '^pipeline/merge.c:[0-9]*: static void say' "$TMP/prints"
check "an fprintf(stderr) planted in pipeline/ fails, naming file and line" $?

copy_tree
printf 'static void say(void) { puts("x"); perror("y"); }\n' >>"$TMP/tree/common/buf.c"
python3 "$PRINTS" "$TMP/tree" >"$TMP/prints" 2>&1
[ $? -eq 1 ] && grep -q '^common/buf.c:' "$TMP/prints"
check "puts/perror planted in common/ fail" $?

done_testing

#!/bin/sh
# Usage errors of every command: each line of the message starts with
# "pairshard <command>:" and says what is wrong (an unknown option, an
# option missing its value, a value given to a flag), exit 2; tokenize on
# input that is not clean's output says to run clean first; JSON files
# that cannot be opened are not reported at a line "-1".
. "$PS_ROOT/tests/tap.sh"

VOCAB="$DATA/vocab/bert-base-uncased.vocab.txt"
# prefixed CMD FILE: every line of FILE starts with "pairshard CMD: "
prefixed() { [ -s "$2" ] && ! grep -v "^pairshard $1: " "$2" >/dev/null; }

# command and an option of it that takes a value
for pair in build:--vocab clean:--output merge:--output validate:--baseline \
    tokenize:--vocab bench-tokenize:--vocab inspect: read:--batch-size bench-read:--epochs; do
    cmd=${pair%%:*} opt=${pair#*:}
    "$PAIRSHARD" "$cmd" --no-such-flag x >/dev/null 2>"$TMP/err"
    [ $? -eq 2 ] && prefixed "$cmd" "$TMP/err" && grep -q "unknown option '--no-such-flag'" "$TMP/err"
    check "$cmd --no-such-flag: exit 2, \"pairshard $cmd: unknown option '--no-such-flag'\"" $?
    "$PAIRSHARD" "$cmd" -Z x >/dev/null 2>"$TMP/err"
    [ $? -eq 2 ] && prefixed "$cmd" "$TMP/err" && grep -q "unknown option '-Z'" "$TMP/err"
    check "$cmd -Z: exit 2, prefixed, naming -Z" $?
    [ -n "$opt" ] || continue
    "$PAIRSHARD" "$cmd" "$opt" >/dev/null 2>"$TMP/err"
    [ $? -eq 2 ] && prefixed "$cmd" "$TMP/err" && grep -q "option '$opt' needs a value" "$TMP/err"
    check "$cmd $opt without its value: exit 2, \"option '$opt' needs a value\"" $?
done
for cmd in build inspect merge validate clean tokenize bench-tokenize read bench-read; do
    "$PAIRSHARD" "$cmd" >/dev/null 2>"$TMP/err"
    [ $? -eq 2 ] && prefixed "$cmd" "$TMP/err"
    check "$cmd without arguments: exit 2, every line \"pairshard $cmd: ...\"" $?
done
"$PAIRSHARD" build --quiet=yes -o "$TMP/x" --vocab "$VOCAB" "$DATA/spider/dev.json" >/dev/null 2>"$TMP/err"
[ $? -eq 2 ] && prefixed build "$TMP/err" && grep -q "option '--quiet' takes no value" "$TMP/err" &&
    [ ! -e "$TMP/x" ]
check "build --quiet=yes: exit 2, \"option '--quiet' takes no value\", nothing built" $?
"$PAIRSHARD" build --bu 8 -o "$TMP/x" --vocab "$VOCAB" "$DATA/spider/dev.json" >/dev/null 2>"$TMP/err"
[ $? -eq 2 ] && prefixed build "$TMP/err" && grep -q "option '--bu' is ambiguous: --buckets --bucket-multiple" "$TMP/err"
check "build --bu: exit 2, the option is ambiguous, naming both" $?
"$PAIRSHARD" version --bogus >/dev/null 2>"$TMP/err"
[ $? -eq 2 ] && prefixed version "$TMP/err"
check "version --bogus: exit 2, prefixed" $?

# README's synopsis of each command names every option of its usage line.
for cmd in build inspect merge validate clean tokenize bench-tokenize read bench-read; do
    syn=$(awk -v c="pairshard $cmd " 'index($0, c) == 1 { on = 1; print; next }
        /^pairshard / || /^```/ { on = 0 } on' "$PS_ROOT/README.md")
    miss=""
    for o in $("$PAIRSHARD" "$cmd" --help 2>&1 | grep '^usage:' | grep -o -- '--[a-z][a-z-]*'); do
        case $syn in *"$o"*) ;; *) miss="$miss $o" ;; esac
    done
    [ -n "$syn" ] && [ -z "$miss" ]
    check "README's synopsis of $cmd names its usage line's options${miss:+ (missing:$miss)}" $?
done

# tokenize reads clean's JSON lines; a raw JSON array (Spider's files) or
# records without clean's fields get told to run clean first.
"$PAIRSHARD" tokenize --vocab "$VOCAB" "$DATA/spider/dev.json" -o "$TMP/tok.jsonl" 2>"$TMP/err"
[ $? -eq 2 ] && prefixed tokenize "$TMP/err" && grep -q "a JSON array" "$TMP/err" &&
    grep -q "run 'pairshard clean .*dev.json -o clean.jsonl' first" "$TMP/err" && [ ! -e "$TMP/tok.jsonl" ]
check "tokenize on Spider's raw JSON array: exit 2, says to run clean first, writes nothing" $?
python3 -c "
import json
for r in json.load(open('$DATA/spider/dev.json'))[:5]: print(json.dumps(r))
" | "$PAIRSHARD" tokenize --vocab "$VOCAB" - >/dev/null 2>"$TMP/err"
[ $? -eq 2 ] && grep -q "field 'id' is missing" "$TMP/err" && grep -q "run 'pairshard clean" "$TMP/err"
check "tokenize on raw Spider JSON lines: names the missing field and says to run clean first" $?
"$PAIRSHARD" clean -q "$DATA/spider/dev.json" -o "$TMP/clean.jsonl" &&
    "$PAIRSHARD" tokenize --vocab "$VOCAB" "$TMP/clean.jsonl" -o "$TMP/tok.jsonl" 2>"$TMP/err" &&
    [ "$(wc -l <"$TMP/tok.jsonl")" -eq 1034 ]
check "... and clean then tokenize gives 1034 lines" $?

# JSON files that cannot be opened: no position "-1" in the message.
mkdir "$TMP/notaset"
"$PAIRSHARD" merge -o "$TMP/m" "$TMP/notaset" 2>"$TMP/err"
[ $? -eq 2 ] && ! grep -q ':-1' "$TMP/err" && grep -q "notaset: no manifest.json" "$TMP/err"
check "merge of a directory without manifest.json: says so, no ':-1'" $?
"$PAIRSHARD" build --config "$TMP/absent.json" -o "$TMP/b" 2>"$TMP/err"
[ $? -eq 2 ] && ! grep -q ':-1' "$TMP/err" && grep -q "absent.json" "$TMP/err"
check "build --config of a missing file: names it, no ':-1'" $?
"$PAIRSHARD" validate --baseline "$TMP/a.json" --current "$TMP/a.json" --config "$TMP/absent.json" 2>"$TMP/err"
[ $? -eq 2 ] && ! grep -q ':-1' "$TMP/err" && grep -q "absent.json" "$TMP/err"
check "validate --config of a missing file: names it, no ':-1'" $?

done_testing

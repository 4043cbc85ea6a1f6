#!/bin/sh
# SPDX-License-Identifier: MIT
# compare-npub.sh: compiles the same models with two npuc binaries (say main's and a
# branch's) and compares every .npub byte for byte (cmp): the check that a compile-time
# change left every artifact as it was. Prints one line per model that differs or fails on
# one side only, then the counts: identical, fail on both, differ, fail on one side only.
# Exits 1 when anything differs or fails on one side only.
#
#   scripts/compare-npub.sh BASE_NPUC NEW_NPUC [MODEL.onnx|DIR ...]
#
# Without models: every .onnx of Debian's libonnx-testdata (default partition) and the
# model.onnx of every folder under tests/models/data and tests/quant/data with `-p cost`
# and with `-p supported`. Given models (a folder: its model.onnx) are compiled with the
# default partition. NPUC_ARGS adds options to both compiles.
set -u
if [ $# -lt 2 ]; then
    sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
fi
base=$1
new=$2
shift 2
for b in "$base" "$new"; do
    [ -x "$b" ] || { echo "compare-npub: '$b' is not an executable npuc" >&2; exit 2; }
done
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/compare-npub.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
same=0 bothfail=0 differ=0 onefail=0

# one model, one partition option ("" = default): both compiles, then cmp
one() {
    m=$1
    p=$2
    rm -f "$tmp/a.npub" "$tmp/b.npub"
    # shellcheck disable=SC2086
    timeout 300 "$base" "$m" -q $p ${NPUC_ARGS:-} -o "$tmp/a.npub" >/dev/null 2>&1
    ra=$?
    # shellcheck disable=SC2086
    timeout 300 "$new" "$m" -q $p ${NPUC_ARGS:-} -o "$tmp/b.npub" >/dev/null 2>&1
    rb=$?
    if [ $ra -ne 0 ] && [ $rb -ne 0 ]; then
        bothfail=$((bothfail + 1))
    elif [ $ra -ne 0 ] || [ $rb -ne 0 ]; then
        onefail=$((onefail + 1))
        echo "ONE SIDE FAILS (base $ra, new $rb): $m $p"
    elif cmp -s "$tmp/a.npub" "$tmp/b.npub"; then
        same=$((same + 1))
    else
        differ=$((differ + 1))
        echo "DIFFER: $m $p"
    fi
}

if [ $# -eq 0 ]; then
    td=/usr/share/libonnx-testdata
    if [ -d "$td" ]; then
        find "$td" -name '*.onnx' | sort >"$tmp/list"
        while read -r m; do one "$m" ""; done <"$tmp/list"
    else
        echo "compare-npub: $td not found (apt-get install libonnx-testdata): skipped" >&2
    fi
    for m in "$root"/tests/models/data/*/model.onnx "$root"/tests/quant/data/*/model.onnx; do
        [ -f "$m" ] || continue
        one "$m" "-p cost"
        one "$m" "-p supported"
    done
else
    for m in "$@"; do
        [ -d "$m" ] && m=$m/model.onnx
        one "$m" ""
    done
fi
echo "identical $same, fail on both $bothfail, differ $differ, fail on one side only $onefail"
[ $differ -eq 0 ] && [ $onefail -eq 0 ]

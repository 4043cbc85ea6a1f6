#!/bin/sh
# SPDX-License-Identifier: MIT
# test-embed-store-text.sh STORE IMAGE_MODEL TEXT_MODEL TOKENIZER LABELS REF_NPY:
# `npu-embed-store query --text` (the text encoder run through the model API)
# against `query --text-embedding` with torch's embedding of the same label
# (REF_NPY row i is torch's text tower output for line i of LABELS, from
# make-text-models.py): the same frames in the same order with the same
# scores (cosine within 2e-3), on the cpu and sim backends; and its usage
# errors.
set -eu
STORE=$1
IMAGE=$2
TEXT=$3
TOK=$4
LABELS=$5
REF=$6
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }

"$STORE" record -q -m "$IMAGE" -b cpu -d "$tmp/db" -s test:smpte -n 6 > /dev/null
"$STORE" record -q -m "$IMAGE" -b cpu -d "$tmp/db" -s test:ball -n 6 > /dev/null

for backend in cpu sim; do
  row=0
  while IFS= read -r label; do
    "$STORE" query -q -b $backend -d "$tmp/db" --text "$label" \
      --text-model "$TEXT" --tokenizer "$TOK" -k 12 > "$tmp/t" ||
      fail "$backend: query --text \"$label\""
    "$STORE" query -q -d "$tmp/db" --text-embedding "$REF" --row $row -k 12 \
      > "$tmp/r" || fail "query --text-embedding row $row"
    [ "$(wc -l < "$tmp/t")" -eq 13 ] || fail "$backend: \"$label\": $(cat "$tmp/t")"
    # rank, source, frame equal; scores within 2e-3 (fp16 on sim)
    paste "$tmp/t" "$tmp/r" | awk -v l="$label" -v b=$backend '
      NR > 1 {
        if ($1 != $6 || $3 != $8 || $4 != $9) { bad = 1 }
        d = $2 - $7; if (d < 0) d = -d; if (d > 2e-3) { bad = 1 }
      }
      END { if (bad) { print b ": \"" l "\": --text and torch disagree"; exit 1 } }' ||
      { paste "$tmp/t" "$tmp/r"; fail "$backend: \"$label\""; }
    row=$((row + 1))
  done < "$LABELS"
  [ $row -ge 2 ] || fail "$LABELS: only $row labels"
  echo "$backend: $row labels, --text ranks and scores match torch's embeddings"
done

# not quiet: says which text model and backend embedded the text
"$STORE" query -b cpu -d "$tmp/db" --text "a red car" --text-model "$TEXT" \
  --tokenizer "$TOK" -k 1 > "$tmp/v"
grep -q 'text "a red car" embedded by .* (backend cpu)' "$tmp/v" || fail "$(cat "$tmp/v")"

# usage errors: exit 2 with the usage line; bad files: exit 1 with the reason
if "$STORE" query -q -d "$tmp/db" --text "car" --tokenizer "$TOK" 2> "$tmp/err"; then
  fail "--text without --text-model accepted"
fi
grep -q "query needs --db and one of" "$tmp/err" || fail "$(cat "$tmp/err")"
if "$STORE" query -q -d "$tmp/db" --text "car" --text-model "$TEXT" \
    --tokenizer "$TOK" --text-embedding "$REF" 2> "$tmp/err"; then
  fail "--text with --text-embedding accepted"
fi
grep -q "query needs --db and one of" "$tmp/err" || fail "$(cat "$tmp/err")"
if "$STORE" query -q -b cpu -d "$tmp/db" --text "$(printf 'caf\351')" \
    --text-model "$TEXT" --tokenizer "$TOK" 2> "$tmp/err"; then
  fail "invalid UTF-8 accepted"
fi
grep -q "not valid UTF-8" "$tmp/err" || fail "$(cat "$tmp/err")"
echo '{"model": 3' > "$tmp/bad.json"
if "$STORE" query -q -b cpu -d "$tmp/db" --text "car" --text-model "$TEXT" \
    --tokenizer "$tmp/bad.json" 2> "$tmp/err"; then
  fail "bad tokenizer accepted"
fi
grep -q "cannot load tokenizer" "$tmp/err" || fail "$(cat "$tmp/err")"
if "$STORE" query -q -b cpu -d "$tmp/db" --text "car" --text-model "$IMAGE" \
    --tokenizer "$TOK" 2> "$tmp/err"; then
  fail "image model as text model accepted"
fi
grep -q "is not token ids" "$tmp/err" || fail "$(cat "$tmp/err")"
echo "ok"

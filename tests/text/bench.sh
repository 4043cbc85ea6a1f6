#!/bin/sh
# SPDX-License-Identifier: MIT
# On-demand tokenizer benchmark (host time, measured): load and encode ~1 MB of
# mixed text (corpus.json lines repeated) with npu-tokenize, and, in the same
# run as the baseline, with @huggingface/transformers when it is installed
# ($NPU_NPM_REF, default /work/npm-ref). Prints seconds and the ratio.
#   tests/text/bench.sh build      (after ninja -C build)
set -eu
build="$1"
src=$(cd "$(dirname "$0")" && pwd)
ref="${NPU_NPM_REF:-/work/npm-ref}"
tool="$build/tools/npu-tokenize/npu-tokenize"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
node -e "
const c = JSON.parse(require('fs').readFileSync('$src/corpus.json', 'utf8'))
  .filter((l) => !/<\|endoftext\||<\/?s>|<\|im_end\|/.test(l)).join('\n');
let s = ''; while (s.length < 1000000) s += c + '\n';
require('fs').writeFileSync('$tmp/text.txt', s);"
now() { date +%s.%N; }
for name in gpt2 llama2; do
    tok="$build/tests/text/$name.json"
    t0=$(now); "$tool" "$tok" --info >/dev/null; t1=$(now)
    n=$("$tool" "$tok" --no-special --stdin <"$tmp/text.txt" | wc -w); t2=$(now)
    ours_load=$(echo "$t1 - $t0" | bc); ours_all=$(echo "$t2 - $t1" | bc)
    line="$name: $(wc -c <"$tmp/text.txt") bytes -> $n tokens; npu-tokenize load ${ours_load}s, load+encode ${ours_all}s"
    if [ -d "$ref/node_modules/@huggingface/transformers" ]; then
        js=$(node --input-type=module -e "
import fs from 'fs';
const { PreTrainedTokenizer } = await import('$ref/node_modules/@huggingface/transformers/dist/transformers.node.mjs');
const t0 = performance.now();
const tok = new PreTrainedTokenizer(JSON.parse(fs.readFileSync('$tok', 'utf8')), {});
const ids = tok.encode(fs.readFileSync('$tmp/text.txt', 'utf8'), { add_special_tokens: false });
console.log(((performance.now() - t0) / 1000).toFixed(3), ids.length);")
        set -- $js
        line="$line; @huggingface/transformers load+encode ${1}s ($2 tokens), ratio $(echo "scale=2; $1 / $ours_all" | bc)x"
    fi
    echo "$line (host time, measured)"
done

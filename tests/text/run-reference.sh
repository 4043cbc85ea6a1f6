#!/bin/sh
# SPDX-License-Identifier: MIT
# Optional test: re-runs the reference tokenizers (make-expected.mjs --check)
# when node and the npm packages are installed outside the repository
# ($NPU_NPM_REF, default /work/npm-ref, holding node_modules), and fails if
# the checked-in expected-*.json are not what they give. Skips (77) otherwise.
dir="$1"
ref="${NPU_NPM_REF:-/work/npm-ref}"
if ! command -v node >/dev/null 2>&1; then
    echo "skip: node is not installed"
    exit 77
fi
for p in @huggingface/transformers gpt-3-encoder llama-tokenizer-js tokenizers; do
    if [ ! -d "$ref/node_modules/$p" ]; then
        echo "skip: $ref/node_modules/$p is missing (npm install --prefix $ref --ignore-scripts $p)"
        exit 77
    fi
done
exec node "$dir/make-expected.mjs" --check "$ref/node_modules" "$dir"

#!/bin/sh
# SPDX-License-Identifier: MIT
# npu-tokenize end to end: encode, streamed decode, --info, and clear failures
# (a missing file, a bad id, invalid UTF-8). Usage: tool-test.sh NPU_TOKENIZE GPT2_JSON LLAMA2_JSON
set -u
tool="$1" gpt2="$2" llama="$3"
fail=0
expect() { # name expected actual
    if [ "$2" != "$3" ]; then
        echo "FAIL $1: got '$3', want '$2'"
        fail=1
    else
        echo "ok   $1"
    fi
}
# ids from @huggingface/transformers 4.3.2 (as expected-gpt2.json / expected-llama2.json)
expect gpt2-encode "15496 11 995 0" "$("$tool" "$gpt2" "Hello, world!")"
expect gpt2-decode "Hello, world! 😀" "$("$tool" "$gpt2" --decode "15496,11,995,0 30325 222")"
expect llama-encode "1 15043 3186" "$("$tool" "$llama" "Hello world")"
expect llama-encode-plain "15043 3186" "$("$tool" "$llama" --no-special "Hello world")"
expect llama-decode "Hello world" "$("$tool" "$llama" --decode --skip-special "1 15043 3186")"
expect llama-stdin "1 15043 3186" "$(printf 'Hello world' | "$tool" "$llama" --stdin)"
expect llama-info "vocab_size 32000 bos 1 eos 2" "$("$tool" "$llama" --info | tr '\n' ' ' | sed 's/ $//')"
# failures: non-zero exit and a message naming the problem
out=$("$tool" /nonexistent.json "x" 2>&1) && fail=1
expect missing-file-message 1 "$(echo "$out" | grep -c 'nonexistent.json: No such file')"
out=$("$tool" "$gpt2" --decode "1,99999999" 2>&1) && fail=1
expect bad-id-message 1 "$(echo "$out" | grep -c 'token id 99999999 is not in the vocabulary')"
out=$("$tool" "$gpt2" "$(printf 'a\377b')" 2>&1) && fail=1
expect bad-utf8-message 1 "$(echo "$out" | grep -c 'not valid UTF-8')"
"$tool" >/dev/null 2>&1 && fail=1
exit $fail

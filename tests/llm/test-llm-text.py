#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# npu-generate's text side: a tiny Qwen2 checkpoint (gen-llm.py) given a
# byte-level BPE tokenizer.json (tests/text/data/qwen2-style.json cut to the
# model's 512 ids). --prompt TEXT must give the ids npu-tokenize gives for that
# text, generate what --prompt-ids with those ids generates, and stream the
# text npu-tokenize --decode makes of the generated ids.
# Needs /usr/bin/python3 with torch (gen-llm.py); skips otherwise.
#
#   test-llm-text.py NPU_GENERATE NPU_TOKENIZE QWEN2_STYLE_TOKENIZER_JSON
import json
import os
import subprocess
import sys
import tempfile

import llmtest

llmtest.need("torch")
llmtest.private_compile_cache()
gl = llmtest.gen_llm()

GEN, TOK, SRC = sys.argv[1:4]
PROMPT = "Once upon a time"
N_NEW = "12"


def cut_tokenizer(src, dst, n_ids, eos):
    """The tokenizer restricted to ids < n_ids: vocab entries below n_ids - k
    (k special tokens moved to the top ids, the first, <|endoftext|>, to the
    model's EOS id), the merges whose parts and result survive."""
    j = json.load(open(src))
    added = j.get("added_tokens", [])
    keep = n_ids - len(added)
    vocab = {t: i for t, i in j["model"]["vocab"].items() if i < keep}
    merges = []
    for m in j["model"]["merges"]:
        a, b = m.split(" ", 1) if isinstance(m, str) else m
        if a in vocab and b in vocab and a + b in vocab:
            merges.append(m)
    j["model"]["vocab"] = vocab
    j["model"]["merges"] = merges
    top = [i for i in range(keep, n_ids) if i != eos]
    for k, t in enumerate(added):
        t["id"] = eos if k == 0 else top[k - 1]
    json.dump(j, open(dst, "w"))


def out(*cmd):
    r = subprocess.run(list(cmd), capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"FAIL {' '.join(cmd)}: exit {r.returncode}\n{r.stderr}")
    return r.stdout


def ids_of(text):
    return [int(x) for x in text.replace(",", " ").split()]


with tempfile.TemporaryDirectory() as tmp:
    cfg, p, _ = gl.make("qwen2", gl.SEEDS["qwen2"])
    folder = os.path.join(tmp, "qwen2")
    gl.save_folder("qwen2", folder, cfg, p)
    cut_tokenizer(SRC, os.path.join(folder, "tokenizer.json"), cfg["vocab_size"],
                  cfg["eos_token_id"])

    prompt_ids = ids_of(out(TOK, folder, PROMPT))
    by_text = out(GEN, folder, "--backend", "cpu", "--prompt", PROMPT, "--max-new-tokens", N_NEW,
                  "--greedy", "--ids")
    by_ids = out(GEN, folder, "--backend", "cpu", "--prompt-ids",
                 llmtest.ids_arg(prompt_ids), "--max-new-tokens", N_NEW, "--greedy", "--ids")
    fails = 0
    if by_text != by_ids or not by_text.startswith("ids: "):
        print(f"FAIL --prompt TEXT gives {by_text!r}, --prompt-ids {prompt_ids} gives {by_ids!r}")
        fails += 1
    else:
        print(f"ok   --prompt TEXT = --prompt-ids {prompt_ids}: {by_text.strip()}")
    new_ids = ids_of(by_text[len("ids: "):])
    streamed = out(GEN, folder, "--backend", "cpu", "--prompt", PROMPT, "--max-new-tokens", N_NEW,
                   "--greedy", "--quiet")
    decoded = out(TOK, folder, "--decode", "--skip-special", llmtest.ids_arg(new_ids))
    if streamed.rstrip("\n") != decoded.rstrip("\n") or not streamed.strip():
        print(f"FAIL streamed text {streamed!r} != npu-tokenize --decode {decoded!r}")
        fails += 1
    else:
        print(f"ok   streamed text = npu-tokenize --decode: {streamed.strip()!r}")
    sys.exit(1 if fails else 0)

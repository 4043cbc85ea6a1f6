#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# npu-generate --prompt TEXT against Hugging Face's tokenizer: the prompt ids npu-generate
# feeds the model (its "prompt ids" line) must be @huggingface/transformers'
# encode(text) with its default add_special_tokens=true, for the tokenizers of
# tests/text/data: LLaMA-2 (<s> through tokenizer.json's TemplateProcessing
# post-processor, as TinyLlama), Llama-3 style (<|begin_of_text|> through a Sequence of
# ByteLevel and TemplateProcessing) add BOS; GPT-2, Qwen2 and SmolLM style (a ByteLevel
# post-processor) add none. Each folder also carries a tokenizer_config.json naming the
# tokens as the hub's do; where it says add_bos_token / add_eos_token (LLaMA-2's true, a
# LLaMA-3 derived folder's false over a BOS template) the reference is Python transformers'
# rule (the template rebuilt from them: no BOS for the false one), which transformers.js's
# encode does not apply (its text-generation pipeline does drop special tokens then). The Llama-3 style folder is given as a hub cache folder
# (models--org--name with refs/main and snapshots/<rev>), which npu-generate follows for
# the weights and must follow for the tokenizer too. The model behind each tokenizer is a
# tiny random LLaMA with the tokenizer's vocabulary (only the prompt is compared).
# Without node and the npm package (NPU_NPM_REF or /work/npm-ref holding node_modules, as
# tests/text/run-reference.sh) the BOS rule alone is checked, then the test skips (77) as
# the comparison did not run; without torch: skip (77).
#
#   test-llm-prompt-bos.py NPU_GENERATE TESTS_TEXT_DATA_DIR
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile

import llmtest

llmtest.need("torch")
import torch  # noqa: E402

llmtest.private_compile_cache()
gl = llmtest.gen_llm()

TEXTS = ["Once upon a time", "Hello world!", " two  spaces and\nnewline", "café 123"]
# name: (file, BOS token the hub's tokenizer adds or None, tokenizer_config.json as the
# hub's (the token fields; tokenizer_class left out: the generic PreTrainedTokenizer
# pipeline of tokenizer.json, which is what encode runs for these)
TOKENIZERS = {
    "llama2": ("llama2.json.gz", "<s>",
               {"add_bos_token": True, "add_eos_token": False, "bos_token": "<s>",
                "eos_token": "</s>", "unk_token": "<unk>"}),
    "llama3-style": ("llama3-style.json", "<|begin_of_text|>",
                     {"bos_token": "<|begin_of_text|>", "eos_token": "<|end_of_text|>"}),
    "gpt2": ("gpt2.json.gz", None,
             {"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>",
              "unk_token": "<|endoftext|>"}),
    "qwen2-style": ("qwen2-style.json", None,
                    {"bos_token": None, "eos_token": "<|endoftext|>",
                     "pad_token": "<|endoftext|>"}),
    "smollm-style": ("smollm-style.json", None,
                     {"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>"}),
    # a LLaMA-3 derived folder whose tokenizer_config.json turns BOS off over a template that
    # adds it: no BOS (Python transformers rebuilds the template from add_bos_token)
    "llama3-nobos": ("llama3-style.json", None,
                     {"add_bos_token": False, "bos_token": "<|begin_of_text|>",
                      "eos_token": "<|end_of_text|>"}),
}
HUB = "llama3-style"

NODE_REF = r"""
const [nm, ...dirs] = process.argv.slice(1);
const fs = require('fs'), path = require('path');
(async () => {
  const { PreTrainedTokenizer } =
      await import(path.join(nm, '@huggingface/transformers/dist/transformers.node.mjs'));
  const texts = JSON.parse(fs.readFileSync(0, 'utf8'));
  const out = {};
  for (const d of dirs) {
    const tj = JSON.parse(fs.readFileSync(path.join(d, 'tokenizer.json'), 'utf8'));
    const tc = JSON.parse(fs.readFileSync(path.join(d, 'tokenizer_config.json'), 'utf8'));
    const tok = new PreTrainedTokenizer(tj, tc);
    // tokenizer_config.json's add_bos_token / add_eos_token: Python transformers rebuilds the
    // template from them (BOS, the text, EOS; a token the file does not name left out);
    // transformers.js's encode keeps tokenizer.json's, so the rule is applied here
    const name = (v) => (v && typeof v === 'object' ? v.content : v);
    const one = (v) => Array.from(tok.encode(name(v), { add_special_tokens: false }));
    const side = 'add_bos_token' in tc || 'add_eos_token' in tc;
    out[d] = texts.map((t) => side
        ? [...(tc.add_bos_token === true && name(tc.bos_token) ? one(tc.bos_token) : []),
           ...Array.from(tok.encode(t, { add_special_tokens: false })),
           ...(tc.add_eos_token === true && name(tc.eos_token) ? one(tc.eos_token) : [])]
        : Array.from(tok.encode(t)));
  }
  console.log(JSON.stringify(out));
})();
"""


def vocab_size(tj):
    ids = list(tj["model"]["vocab"].values()) + [t["id"] for t in tj.get("added_tokens", [])]
    return max(ids) + 1


def make_folder(root, name, data_dir):
    fn, _, tcfg = TOKENIZERS[name]
    src = os.path.join(data_dir, fn)
    text = gzip.open(src, "rt").read() if fn.endswith(".gz") else open(src).read()
    tj = json.loads(text)
    V = vocab_size(tj)
    spec = {"dtype": "F32", "scale": 0.5, "cfg": {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "num_hidden_layers": 1,
        "hidden_size": 16, "num_attention_heads": 2, "num_key_value_heads": 1,
        "intermediate_size": 32, "vocab_size": V, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
        "hidden_act": "silu", "tie_word_embeddings": True, "max_position_embeddings": 256}}
    cfg, p, _ = gl.make(name, 0, spec)
    folder = os.path.join(root, name)
    gl.save_folder("llama", folder, cfg, p, "F32")
    with open(os.path.join(folder, "tokenizer.json"), "w") as f:
        f.write(text)
    with open(os.path.join(folder, "tokenizer_config.json"), "w") as f:
        json.dump(tcfg, f)
    if name != HUB:
        return folder, folder, tj
    # the hub cache layout: models--t--NAME/{refs/main, snapshots/<rev>/...}
    rev = "89abcdef0123456789abcdef0123456789abcdef"
    repo = os.path.join(root, "models--t--" + name)
    os.makedirs(os.path.join(repo, "refs"))
    os.makedirs(os.path.join(repo, "snapshots"))
    shutil.move(folder, os.path.join(repo, "snapshots", rev))
    with open(os.path.join(repo, "refs", "main"), "w") as f:
        f.write(rev + "\n")
    return repo, os.path.join(repo, "snapshots", rev), tj


def npu_prompt_ids(gen, folder, text):
    r = subprocess.run([gen, folder, "--prompt", text, "--max-new-tokens", "1", "--backend",
                        "cpu", "--greedy", "--ids"], capture_output=True, text=True)
    ln = next((x for x in r.stderr.splitlines() if x.startswith("prompt ids")), None)
    if r.returncode or not ln:
        return None, r.stderr
    return [int(x) for x in ln.split(":", 1)[1].split()], r.stderr


def hf_reference(files):
    ref = os.environ.get("NPU_NPM_REF", "/work/npm-ref")
    nm = os.path.join(ref, "node_modules")
    if not shutil.which("node"):
        return None, "node is not installed"
    if not os.path.isdir(os.path.join(nm, "@huggingface", "transformers")):
        return None, f"{nm}/@huggingface/transformers is missing"
    r = subprocess.run(["node", "-e", NODE_REF, nm] + files, input=json.dumps(TEXTS),
                       capture_output=True, text=True)
    if r.returncode:
        return None, f"the node reference failed: {r.stderr[-500:]}"
    return json.loads(r.stdout), None


def main():
    gen, data_dir = sys.argv[1], sys.argv[2]
    torch.set_num_threads(1)
    fails = 0
    with tempfile.TemporaryDirectory(prefix="npu-bos-") as tmp:
        made = {name: make_folder(tmp, name, data_dir) for name in TOKENIZERS}
        ref, why = hf_reference([m[1] for m in made.values()])
        if ref is None:
            print(f"note: no Hugging Face reference ({why}): BOS rule only")
        for name, (folder, files, tj) in made.items():
            bos = TOKENIZERS[name][1]
            tcfg = TOKENIZERS[name][2]
            side = "add_bos_token" in tcfg or "add_eos_token" in tcfg
            bos_id = tj["model"]["vocab"].get(bos) if bos else None
            if bos and bos_id is None:
                bos_id = next(t["id"] for t in tj["added_tokens"] if t["content"] == bos)
            for i, text in enumerate(TEXTS):
                got, err = npu_prompt_ids(gen, folder, text)
                if got is None:
                    print(f"FAIL {name} {text!r}: npu-generate gave no prompt ids\n{err}")
                    fails += 1
                    continue
                # BOS first for the LLaMA ones; no special token anywhere else (the texts
                # have none)
                special = {t["id"] for t in tj.get("added_tokens", []) if t.get("special")}
                bos_ok = (got[0] == bos_id if bos else True) and \
                    not special & set(got[1 if bos else 0:])
                want = ref[files][i] if ref else None
                if not bos_ok or (want is not None and got != want):
                    print(f"FAIL {name} {text!r}: npu-generate {got}, Hugging Face {want} "
                          f"(BOS {bos!r} {bos_id})")
                    fails += 1
                else:
                    print(f"ok   {name} {text!r}: {got}"
                          + ((" = Python transformers' add_bos_token / add_eos_token over "
                              "transformers.js encode" if side else " = transformers.js encode")
                             if want is not None else "")
                          + (f" (BOS {bos} {bos_id} first)" if bos else " (no BOS)"))
    if fails:
        sys.exit(1)
    if ref is None:
        print(f"SKIP: the comparison with Hugging Face's tokenizer did not run ({why}; npm "
              "install --prefix $NPU_NPM_REF --ignore-scripts @huggingface/transformers)")
        sys.exit(77)


if __name__ == "__main__":
    main()

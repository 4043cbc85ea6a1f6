#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# npu-generate's refusals, each with the message that names the problem: an
# unknown architecture, a model_type of another one, an unknown config key,
# corrupt safetensors headers, a dtype we lack, a missing, an unexpected and
# a misshapen tensor, context overflow, a token outside the vocabulary, --prompt TEXT without a
# tokenizer, a sharded checkpoint's index naming the wrong shard, a tied
# Qwen2 whose saved lm_head is not its embedding; and the
# `transformer.`-prefixed GPT-2 names with a saved tied
# lm_head, which must load and give the bare-named checkpoint's ids. Then
# memory: 2,000 generated tokens on cpu must not take more memory than 100
# (the KV cache is allocated up front; peak RSS of the two runs within 2 MiB).
# Needs /usr/bin/python3 with torch (gen-llm.py) and numpy; skips otherwise.
#
# Also examples/generate (EXAMPLE): its first run prints npu-generate's ids, a
# continuation, and after a reset the first run's ids again. And sampling:
# a seed gives the same ids twice, another seed other ids; EOS stops and says
# so.
#
#   test-llm-errors.py NPU_GENERATE [EXAMPLE]
import copy
import json
import os
import struct
import subprocess
import sys
import tempfile

import llmtest

(torch,) = llmtest.need("torch")
llmtest.private_compile_cache()
gl = llmtest.gen_llm()

GEN = sys.argv[1]
fails = 0


def run(folder, *args):
    return subprocess.run([GEN, folder, "--backend", "cpu", *args], capture_output=True,
                          text=True)


def expect_error(what, folder, needle, *args):
    global fails
    a = args or ("--prompt-ids", "1,2,3", "--max-new-tokens", "2", "--ids")
    r = run(folder, *a)
    if r.returncode != 0 and needle in r.stderr and r.stdout == "":
        print(f"ok   {what}: {needle!r}")
    else:
        print(f"FAIL {what}: exit {r.returncode}, want {needle!r} on stderr\n"
              f"  stdout {r.stdout!r}\n  stderr {r.stderr!r}")
        fails += 1


def write_raw(path, header, data=b""):
    h = json.dumps(header).encode() if isinstance(header, dict) else header
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        f.write(data)


def variant(root, name, cfg, params, dtype="F32", edit_cfg=None, tensors=None):
    d = os.path.join(root, name)
    os.makedirs(d)
    c = copy.deepcopy(cfg)
    if edit_cfg:
        edit_cfg(c)
    json.dump(c, open(os.path.join(d, "config.json"), "w"))
    if tensors is not False:
        gl.write_safetensors(os.path.join(d, "model.safetensors"),
                             tensors if tensors is not None else params, dtype)
    return d


def main():
    global fails
    with tempfile.TemporaryDirectory(prefix="npu-llm-err-") as tmp:
        cfg, p, fwd = gl.make("gpt2", gl.SEEDS["gpt2"])
        good = variant(tmp, "good", cfg, p)
        expect_error("unknown architecture",
                     variant(tmp, "arch", cfg, p,
                             edit_cfg=lambda c: c.update(architectures=["MistralForCausalLM"])),
                     "unknown architecture 'MistralForCausalLM'")
        expect_error("unknown config key",
                     variant(tmp, "key", cfg, p, edit_cfg=lambda c: c.update(foo_scaling=2)),
                     "unknown config key 'foo_scaling'")
        # no architectures: the causal LM of model_type, as AutoModelForCausalLM (same ids)
        noarch = variant(tmp, "noarch", cfg, p, edit_cfg=lambda c: c.pop("architectures"))
        a = run(good, "--prompt-ids", "5,77,130", "--max-new-tokens", "8", "--ids")
        b = run(noarch, "--prompt-ids", "5,77,130", "--max-new-tokens", "8", "--ids")
        ok = a.returncode == 0 and a.stdout == b.stdout and a.stdout.startswith("ids: ")
        print(f"{'ok  ' if ok else 'FAIL'} no architectures, model_type gpt2: {b.stdout.strip()!r}"
              f"{chr(10) + b.stderr if not ok else ''}")
        fails += not ok
        expect_error("no architectures, another model_type",
                     variant(tmp, "noarch-mistral", cfg, p, edit_cfg=lambda c: (
                         c.pop("architectures"), c.update(model_type="mistral"))),
                     "no 'architectures', and 'model_type' 'mistral' is not one of gpt2, llama")
        expect_error("neither architectures nor model_type",
                     variant(tmp, "noarch-notype", cfg, p, edit_cfg=lambda c: (
                         c.pop("architectures"), c.pop("model_type"))),
                     "neither 'architectures' nor 'model_type' names the model")
        expect_error("model_type of another architecture",
                     variant(tmp, "mtype", cfg, p, edit_cfg=lambda c: c.update(model_type="llama")),
                     "config key 'model_type' is 'llama', not 'gpt2' as GPT2LMHeadModel needs")
        d = variant(tmp, "hdrlen", cfg, p, tensors=False)
        with open(os.path.join(d, "model.safetensors"), "wb") as f:
            f.write(struct.pack("<Q", 1 << 40) + b"{}")
        expect_error("header length past the file", d, "corrupt safetensors header")
        d = variant(tmp, "hdrjson", cfg, p, tensors=False)
        write_raw(os.path.join(d, "model.safetensors"), b'{"wte.weight": {"dtype": "F32",')
        expect_error("header not JSON", d, "corrupt safetensors header")
        d = variant(tmp, "offsets", cfg, p, tensors=False)
        write_raw(os.path.join(d, "model.safetensors"),
                  {"wte.weight": {"dtype": "F32", "shape": [512, 64], "data_offsets": [0, 64]}},
                  b"\0" * 64)
        expect_error("offsets disagree with the shape", d,
                     "'wte.weight' is 32768 element(s) of F32 (131072 bytes) but its "
                     "data_offsets [0, 64] hold 64 bytes")

        # safetensors as writers other than gen-llm.py lay it out, and hostile headers: a
        # dtype we lack is refused where a tensor is read (GPT-2's old attn.bias mask buffers,
        # U8 / BOOL in checkpoints of older transformers, are never read), overlapping or
        # out-of-range offsets and shapes whose element count would wrap are refused by name
        def entries(params, dt="F32"):
            return {k: (dt, list(v.shape), v.float().contiguous().numpy().tobytes())
                    for k, v in params.items()}

        def write_entries(name, ent, order=None, edit=None):
            d = variant(tmp, name, cfg, p, tensors=False)
            hdr, blobs, off = {}, [], 0
            for n in order or sorted(ent):
                dt, shape, b = ent[n]
                hdr[n] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + len(b)]}
                blobs.append(b)
                off += len(b)
            if edit:
                edit(hdr)
            write_raw(os.path.join(d, "model.safetensors"), hdr, b"".join(blobs))
            return d

        for dt, es, name in (("F64", 8, "wte.weight"), ("I64", 8, "wpe.weight"),
                             ("F8_E4M3", 1, "h.0.mlp.c_fc.weight")):
            ent = entries(p)
            ent[name] = (dt, ent[name][1], b"\0" * (len(ent[name][2]) // 4 * es))
            expect_error(f"a {dt} weight", write_entries("dtype-" + dt, ent),
                         f"tensor '{name}' has dtype {dt}: not supported (F32, F16, BF16)")
        ent = entries(p)
        S = cfg["n_positions"]
        for l in range(cfg["n_layer"]):
            ent[f"h.{l}.attn.bias"] = ("U8" if l else "BOOL", [1, 1, S, S],
                                       torch.tril(torch.ones(S, S)).to(torch.uint8).numpy().tobytes())
        ent["h.0.attn.masked_bias"] = ("F32", [], struct.pack("<f", -1e4))
        ent["h.1.attn.masked_bias"] = ("F32", [0], b"")  # a zero-size tensor
        odd = write_entries("u8-buffers-reversed", ent, order=sorted(ent, reverse=True))
        a = run(good, "--prompt-ids", "5,77,130", "--max-new-tokens", "8", "--ids")
        b = run(odd, "--prompt-ids", "5,77,130", "--max-new-tokens", "8", "--ids")
        ok = a.returncode == 0 and a.stdout == b.stdout and a.stdout.startswith("ids: ")
        print(f"{'ok  ' if ok else 'FAIL'} BOOL / U8 attn.bias buffers, a zero-size tensor, data "
              f"in reverse order: {b.stdout.strip()!r}\n{b.stderr if not ok else ''}")
        fails += not ok
        expect_error("overlapping tensors",
                     write_entries("overlap", entries(p), edit=lambda h: h["ln_f.bias"].update(
                         data_offsets=h["ln_f.weight"]["data_offsets"])),
                     "tensors 'ln_f.bias' and 'ln_f.weight' overlap in the file")
        expect_error("offsets past the data",
                     write_entries("past", entries(p), edit=lambda h: h["ln_f.bias"].update(
                         data_offsets=[1 << 40, (1 << 40) + 256])),
                     "data_offsets [1099511627776, 1099511628032] of 'ln_f.bias' leave the")
        expect_error("an element count that would wrap",
                     write_entries("wrap", entries(p), edit=lambda h: h["ln_f.bias"].update(
                         shape=[1 << 32, 1 << 32, 16])),
                     "corrupt safetensors header: 'ln_f.bias' is too large")
        q = dict(p)
        del q["ln_f.bias"]
        expect_error("missing tensor", variant(tmp, "missing", cfg, p, tensors=q),
                     "tensor 'ln_f.bias' is missing")
        q = dict(p)
        q["h.0.attn.rotary.weight"] = torch.zeros(4)
        expect_error("unexpected tensor", variant(tmp, "extra", cfg, p, tensors=q),
                     "unexpected tensor 'h.0.attn.rotary.weight'")
        expect_error("shape against the config",
                     variant(tmp, "shape", cfg, p, edit_cfg=lambda c: c.update(vocab_size=500)),
                     "tensor 'wte.weight' has shape [512, 64], the config says [500, 64]")
        # a sharded checkpoint whose index maps a tensor to the other shard: refused by name
        qcfg, qp, _ = gl.make("qwen2", gl.SEEDS["qwen2"])
        d = os.path.join(tmp, "wrongshard")
        gl.save_folder("qwen2", d, qcfg, qp)
        ixp = os.path.join(d, "model.safetensors.index.json")
        ix = json.load(open(ixp))
        first = sorted(ix["weight_map"])[0]
        other = sorted(set(ix["weight_map"].values()) - {ix["weight_map"][first]})[0]
        ix["weight_map"][first] = other
        json.dump(ix, open(ixp, "w"))
        expect_error("index names the wrong shard", d,
                     f"tensor '{first}' is listed in the index but not in {other}")
        expect_error("no checkpoint", os.path.join(tmp, "nowhere"), "no config.json")
        d = variant(tmp, "bin-only", cfg, p, tensors=False)
        open(os.path.join(d, "pytorch_model.bin"), "wb").write(b"PK\3\4")
        expect_error("only pytorch_model.bin", d, "neither model.safetensors nor "
                     "model.safetensors.index.json (pytorch_model.bin is not read")
        expect_error("context overflow", good, "context overflow", "--prompt-ids", "1,2,3",
                     "--max-new-tokens", "32", "--max-context", "16")
        expect_error("token outside the vocabulary", good, "outside the vocabulary",
                     "--prompt-ids", "1,9999", "--max-new-tokens", "2")
        expect_error("text prompt without a tokenizer", good,
                     "--prompt needs the model folder's tokenizer.json", "--prompt", "hello")

        # transformer.-prefixed names and a saved copy of the tied head load, same ids
        q = {"transformer." + k: v for k, v in p.items()}
        q["lm_head.weight"] = p["wte.weight"]
        pref = variant(tmp, "prefixed", cfg, p, tensors=q)
        a = run(good, "--prompt-ids", "5,77,130", "--max-new-tokens", "8", "--ids")
        b = run(pref, "--prompt-ids", "5,77,130", "--max-new-tokens", "8", "--ids")
        if a.returncode == 0 and a.stdout == b.stdout and a.stdout.startswith("ids: "):
            print(f"ok   transformer.-prefixed names with a tied lm_head copy: {b.stdout.strip()}")
        else:
            print(f"FAIL prefixed names: {a.stdout!r} vs {b.stdout!r}\n{b.stderr}")
            fails += 1

        # Qwen2 ties its head: a saved lm_head.weight must be a copy of the embedding (as
        # GPT-2's); a copy loads with the same ids, another tensor is refused by name
        qcfg, qp, _ = gl.make("qwen2", gl.SEEDS["qwen2"])
        qgood = variant(tmp, "qwen2-tied", qcfg, qp)
        q = dict(qp)
        q["lm_head.weight"] = qp["model.embed_tokens.weight"].clone()
        qcopy = variant(tmp, "qwen2-tied-copy", qcfg, qp, tensors=q)
        a = run(qgood, "--prompt-ids", "5,77,130", "--max-new-tokens", "8", "--ids")
        b = run(qcopy, "--prompt-ids", "5,77,130", "--max-new-tokens", "8", "--ids")
        ok = a.returncode == 0 and a.stdout == b.stdout and a.stdout.startswith("ids: ")
        print(f"{'ok  ' if ok else 'FAIL'} Qwen2 with a saved copy of its tied head: "
              f"{b.stdout.strip()!r}, without {a.stdout.strip()!r}")
        fails += not ok
        q["lm_head.weight"] = qp["model.embed_tokens.weight"] * 2
        expect_error("Qwen2's saved tied head differs from the embedding",
                     variant(tmp, "qwen2-tied-other", qcfg, qp, tensors=q),
                     "lm_head.weight differs from model.embed_tokens.weight")
        q["lm_head.weight"] = torch.zeros(8, 64)
        expect_error("Qwen2's saved tied head misshapen",
                     variant(tmp, "qwen2-tied-shape", qcfg, qp, tensors=q),
                     "tensor 'lm_head.weight' has shape [8, 64], the config says [512, 64]")

        # the extra keys of SmolLM2's config.json (its nanotron export) load: same ids
        lcfg, lp, _ = gl.make("llama", gl.SEEDS["llama"])
        plain = variant(tmp, "llama-plain", lcfg, lp, dtype="BF16")
        smol = variant(tmp, "llama-smollm2-keys", lcfg, lp, dtype="BF16",
                       edit_cfg=lambda c: c.update(is_llama_config=True, rope_interleaved=False,
                                                   mlp_bias=False, pad_token_id=None))
        a = run(plain, "--prompt-ids", "5,77,130", "--max-new-tokens", "8", "--ids")
        b = run(smol, "--prompt-ids", "5,77,130", "--max-new-tokens", "8", "--ids")
        ok = a.returncode == 0 and a.stdout == b.stdout and a.stdout.startswith("ids: ")
        print(f"{'ok  ' if ok else 'FAIL'} SmolLM2's config keys (is_llama_config, "
              f"rope_interleaved false): {b.stdout.strip()!r}\n{b.stderr if not ok else ''}")
        fails += not ok

        # an understood flag we do not implement is refused by its own name
        for key in ("attention_bias", "mlp_bias", "rope_interleaved"):
            expect_error(f"{key} true", variant(tmp, "llama-" + key, lcfg, lp, dtype="BF16",
                                                edit_cfg=lambda c, k=key: c.update({k: True})),
                         f"config key '{key}' is true: not supported for LlamaForCausalLM")
        expect_error("use_sliding_window true",
                     variant(tmp, "qwen2-sliding", qcfg, qp,
                             edit_cfg=lambda c: c.update(use_sliding_window=True)),
                     "config key 'use_sliding_window' is true: not supported for Qwen2ForCausalLM")

        # sampling: reproducible per seed, different across seeds
        samp = ["--prompt-ids", "5,77,130", "--max-new-tokens", "16", "--ids",
                "--temperature", "1.5", "--top-k", "50", "--top-p", "0.95"]
        s1 = run(good, *samp, "--seed", "1")
        s1b = run(good, *samp, "--seed", "1")
        s2 = run(good, *samp, "--seed", "2")
        ok = s1.returncode == 0 and s1.stdout == s1b.stdout and s1.stdout != s2.stdout
        print(f"{'ok  ' if ok else 'FAIL'} sampling: seed 1 {s1.stdout.strip()!r} twice, "
              f"seed 2 {s2.stdout.strip()!r}")
        fails += not ok
        # a NaN logit (token 3's row of the tied head) is never sampled and leaves the others'
        # draw alone (before: every probability NaN, the draw always the last token); greedy
        # passes it over too (the first maximum, a NaN never greater)
        nanp = dict(p)
        nanp["wte.weight"] = p["wte.weight"].clone()
        nanp["wte.weight"][3] = float("nan")
        nanm = variant(tmp, "nan-logit", cfg, nanp)
        last = cfg["vocab_size"] - 1
        outs = [run(nanm, "--prompt-ids", "5,77,130", "--max-new-tokens", "12", "--ids",
                    "--temperature", "1", "--seed", str(sd)) for sd in (1, 2)]
        outs.append(run(nanm, "--prompt-ids", "5,77,130", "--max-new-tokens", "12", "--ids"))
        new = [[int(t) for t in o.stdout.split()[1:]] if o.returncode == 0 and
               o.stdout.startswith("ids: ") else [] for o in outs]
        ok = (all(len(n) == 12 and 3 not in n for n in new) and
              any(t != last for n in new[:2] for t in n))
        print(f"{'ok  ' if ok else 'FAIL'} a NaN logit never drawn: sampled {new[0]} / {new[1]}, "
              f"greedy {new[2]} (token 3 NaN, the last token {last})")
        fails += not ok
        r = run(good, "--prompt-ids", "1", "--greedy", "--temperature", "1")
        ok = r.returncode == 2 and "exclude each other" in r.stderr
        print(f"{'ok  ' if ok else 'FAIL'} --greedy with sampling options refused")
        fails += not ok

        # counts must be whole numbers (2.5 tokens was cut to 2), and --seed is exact over
        # 64 bits (it went through a double: 2^53 and 2^53 + 1 were one seed)
        for opt, val, msg in (("--max-new-tokens", "2.5", "a whole number in 0..16777216"),
                              ("--top-k", "1.5", "a whole number in 0..1073741824"),
                              ("--max-context", "1e9", "a whole number in 1..1048576"),
                              ("--seed", "-1", "a whole number in 0..18446744073709551615"),
                              ("--seed", "18446744073709551616", "a whole number in 0..")):
            r = run(good, "--prompt-ids", "1,2", "--ids", opt, val)
            ok = r.returncode == 2 and msg in r.stderr and r.stdout == ""
            print(f"{'ok  ' if ok else 'FAIL'} {opt} {val} refused: {r.stderr.strip()!r}")
            fails += not ok
        sd = [run(good, "--prompt-ids", "5,77,130", "--max-new-tokens", "16", "--ids",
                  "--seed", str(v)).stdout for v in (2**53, 2**53 + 1, 2**64 - 1)]
        ok = all(x.startswith("ids: ") for x in sd) and sd[0] != sd[1]
        print(f"{'ok  ' if ok else 'FAIL'} --seed 2^53 and 2^53 + 1 differ, 2^64 - 1 taken: {sd}")
        fails += not ok

        # --cores: the layer split plans from the simulator's record; elsewhere refused by name
        r = run(good, "--prompt-ids", "1,2", "--backend", "cpu", "--cores", "3")
        ok = r.returncode != 0 and "needs the sim backend" in r.stderr
        print(f"{'ok  ' if ok else 'FAIL'} --cores 3 on cpu refused")
        fails += not ok
        r = run(good, "--prompt-ids", "1,2", "--backend", "sim", "--cores", "4")
        ok = r.returncode == 2
        print(f"{'ok  ' if ok else 'FAIL'} --cores 4 refused")
        fails += not ok

        # EOS: a greedy id whose first appearance is the 3rd or later
        a = run(good, "--prompt-ids", llmtest.ids_arg(gl.PROMPT), "--max-new-tokens", "8",
                "--ids")
        ids8 = a.stdout.split()[1:]
        at = next(i for i in range(2, 8) if ids8[i] not in ids8[:i])
        eos = variant(tmp, "eos", cfg, p, edit_cfg=lambda c: c.update(eos_token_id=int(ids8[at])))
        r = run(eos, "--prompt-ids", llmtest.ids_arg(gl.PROMPT), "--max-new-tokens", "8",
                "--ids")
        first = at + 1
        ok = r.returncode == 0 and r.stdout.split()[1:] == ids8[:first] and \
            "stopped: end of sequence" in r.stderr
        print(f"{'ok  ' if ok else 'FAIL'} EOS {ids8[at]} stops after {first} token(s): "
              f"{r.stdout.strip()!r}")
        fails += not ok

        if len(sys.argv) > 2:
            r = subprocess.run([sys.argv[2], "-b", "cpu", good, llmtest.ids_arg(gl.PROMPT)],
                               capture_output=True, text=True)
            a = run(good, "--prompt-ids", llmtest.ids_arg(gl.PROMPT), "--max-new-tokens",
                    "20", "--ids")
            lines = dict(ln.split(":", 1) for ln in r.stdout.splitlines() if ":" in ln)
            got = lines.get("first", "").split() + lines.get("more", "").split()
            # the continuation is the greedy sequence's tokens 17..20
            ok = r.returncode == 0 and got == a.stdout.split()[1:] and \
                lines.get("again") == lines.get("first")
            print(f"{'ok  ' if ok else 'FAIL'} examples/generate: first, more, again after reset")
            if not ok:
                print(r.stdout, r.stderr)
            fails += not ok

        # memory flat over 2,000 tokens (LLaMA checkpoint, context 2,048)
        cfg, p, _ = gl.make("llama", gl.SEEDS["llama"])
        ll = variant(tmp, "llama", cfg, p, dtype="BF16",
                     edit_cfg=lambda c: c.pop("eos_token_id"))  # no early stop
        peaks, counts = [], []
        for n in (100, 2000):
            rc, cnt, peak, _ = llmtest.peak_rss([GEN, ll, "--backend", "cpu", "--prompt-ids",
                                                 "1,2,3", "--max-new-tokens", str(n),
                                                 "--max-context", "2048", "--ids"], os.environ)
            counts.append(cnt if rc == 0 else -1)
            peaks.append(peak)
        ok = counts == [100, 2000] and peaks[1] - peaks[0] < 2048
        print(f"{'ok  ' if ok else 'FAIL'} memory: {counts} tokens, peak RSS {peaks[0]} KiB "
              f"after 100 tokens, {peaks[1]} KiB after 2,000 (context 2,048)")
        fails += not ok
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()

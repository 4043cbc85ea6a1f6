#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# gen-llm-seeds.py: writes the seed inputs of fuzz-llm (tests/fuzz/fuzz-llm.c
# explains the format: "@@@"-separated records, each naming a file of a
# checkpoint folder) into tests/fuzz/corpus-llm: tiny valid GPT-2, LLaMA and
# Qwen2 checkpoints (hidden 4, one layer, vocab 8) as one file, sharded, in a
# hub cache, F32/F16/BF16, and a few broken ones. Plain python3 (no numpy).
# Usage: python3 tests/fuzz/gen-llm-seeds.py [OUTDIR]
import json
import os
import struct
import sys

SEP = b"@@@"
D, F, V, P, H = 4, 8, 8, 4, 2


def gpt2():
    cfg = {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "n_layer": 1,
           "n_embd": D, "n_head": H, "vocab_size": V, "n_positions": P, "eos_token_id": 7}
    t = {"wte.weight": [V, D], "wpe.weight": [P, D], "ln_f.weight": [D], "ln_f.bias": [D]}
    for k, s in {"ln_1.weight": [D], "ln_1.bias": [D], "attn.c_attn.weight": [D, 3 * D],
                 "attn.c_attn.bias": [3 * D], "attn.c_proj.weight": [D, D],
                 "attn.c_proj.bias": [D], "ln_2.weight": [D], "ln_2.bias": [D],
                 "mlp.c_fc.weight": [D, 4 * D], "mlp.c_fc.bias": [4 * D],
                 "mlp.c_proj.weight": [4 * D, D], "mlp.c_proj.bias": [D]}.items():
        t["h.0." + k] = s
    return cfg, t


def llama(qwen=False):
    kv = 1
    hd = D // H
    cfg = {"architectures": ["Qwen2ForCausalLM" if qwen else "LlamaForCausalLM"],
           "model_type": "qwen2" if qwen else "llama", "num_hidden_layers": 1,
           "hidden_size": D, "num_attention_heads": H, "num_key_value_heads": kv,
           "intermediate_size": F, "vocab_size": V, "max_position_embeddings": P,
           "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "hidden_act": "silu",
           "tie_word_embeddings": qwen, "eos_token_id": [6, 7]}
    t = {"model.embed_tokens.weight": [V, D], "model.norm.weight": [D]}
    if not qwen:
        t["lm_head.weight"] = [V, D]
    L = "model.layers.0."
    t.update({L + "input_layernorm.weight": [D], L + "post_attention_layernorm.weight": [D],
              L + "self_attn.q_proj.weight": [H * hd, D],
              L + "self_attn.k_proj.weight": [kv * hd, D],
              L + "self_attn.v_proj.weight": [kv * hd, D],
              L + "self_attn.o_proj.weight": [D, H * hd],
              L + "mlp.gate_proj.weight": [F, D], L + "mlp.up_proj.weight": [F, D],
              L + "mlp.down_proj.weight": [D, F]})
    if qwen:
        t.update({L + "self_attn.q_proj.bias": [H * hd], L + "self_attn.k_proj.bias": [kv * hd],
                  L + "self_attn.v_proj.bias": [kv * hd]})
    return cfg, t


def tensor_bytes(shape, dt, seed):
    n = 1
    for s in shape:
        n *= s
    vals = [((seed * 7 + i * 13) % 17 - 8) / 8.0 for i in range(n)]
    if dt == "F32":
        return struct.pack("<%df" % n, *vals)
    if dt == "F16":
        return struct.pack("<%de" % n, *vals)
    return b"".join(struct.pack("<f", v)[2:] for v in vals)  # BF16: the high half


def safetensors(tensors, dt, auto=True):
    """the record body: JSON header, NUL, data (auto) or the full file"""
    hdr, data = {"__metadata__": {"format": "pt"}}, b""
    for i, (name, shape) in enumerate(sorted(tensors.items())):
        b = tensor_bytes(shape, dt, i)
        hdr[name] = {"dtype": dt, "shape": shape, "data_offsets": [len(data), len(data) + len(b)]}
        data += b
    h = json.dumps(hdr, separators=(",", ":")).encode()
    if auto:
        return h + b"\0" + data
    return struct.pack("<Q", len(h)) + h + data


def pack(opts, recs):
    return SEP.join([opts] + [sel + body for sel, body in recs])


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "corpus-llm")
    os.makedirs(out, exist_ok=True)
    seeds = {}
    for name, (cfg, t) in {"gpt2": gpt2(), "llama": llama(), "qwen2": llama(True)}.items():
        c = json.dumps(cfg).encode()
        for dt in ("F32", "F16", "BF16"):
            seeds["%s-%s" % (name, dt.lower())] = pack(b"", [(b"c", c), (b"S", safetensors(t, dt))])
        seeds[name + "-raw"] = pack(b"", [(b"c", c), (b"s", safetensors(t, "F32", False))])
        names = sorted(t)
        half = len(names) // 2
        a = {n: t[n] for n in names[:half]}
        b = {n: t[n] for n in names[half:]}
        wm = {n: "model-00001-of-00002.safetensors" for n in a}
        wm.update({n: "model-00002-of-00002.safetensors" for n in b})
        ix = json.dumps({"metadata": {"total_size": 0}, "weight_map": wm}).encode()
        seeds[name + "-sharded"] = pack(b"", [(b"c", c), (b"i", ix), (b"A", safetensors(a, "F32")),
                                              (b"B", safetensors(b, "F32"))])
        seeds[name + "-hub"] = pack(b"Habc123", [(b"c", c), (b"S", safetensors(t, "F16")),
                                                  (b"g", b'{"eos_token_id": [6, 7]}')])
    cfg, t = gpt2()
    c = json.dumps(cfg).encode()
    st = safetensors(t, "F32")
    seeds["bad-hub-ref"] = pack(b"H../..", [(b"c", c), (b"S", st)])
    seeds["hub-ref-dotdot"] = pack(b"H..", [(b"c", c), (b"S", st)])
    seeds["link-config"] = pack(b"", [(b"f", b"other.json\n" + c), (b"l", b"config.json\nother.json"),
                                      (b"S", st)])
    seeds["fifo-safetensors"] = pack(b"", [(b"c", c), (b"p", b"model.safetensors")])
    seeds["fifo-config"] = pack(b"", [(b"p", b"config.json"), (b"S", st)])
    seeds["dir-safetensors"] = pack(b"", [(b"c", c), (b"d", b"model.safetensors")])
    seeds["shard-dotdot"] = pack(b"", [(b"c", c), (b"i", b'{"weight_map": {"wte.weight": ".."}}')])
    seeds["header-len-huge"] = pack(b"", [(b"c", c), (b"s", b"\xff" * 8 + b"{}")])
    seeds["offsets-outside"] = pack(b"", [(b"c", c), (b"S", b'{"wte.weight":{"dtype":"F32",'
                                                     b'"shape":[8,4],"data_offsets":[0,128]}}\0')])
    for k, v in seeds.items():
        with open(os.path.join(out, k), "wb") as f:
            f.write(v)
    print("%d seeds in %s" % (len(seeds), out))


if __name__ == "__main__":
    main()

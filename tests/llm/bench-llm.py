#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# On-demand benchmark of npu-generate (not part of the test suite): a
# checkpoint of a real model's shape with random weights (written once into
# CACHE, default /tmp/npu-llm-bench), then one run on the simulator with a
# 128-token prompt: prefill of 128 tokens and decode steps at 128 tokens of
# context (the step program's static context is 136), modeled (timing model
# v1, or $NPU_TIMING's) next to the decode's bandwidth floor (fp16 weight
# bytes the NPU reads per token / DRAM bandwidth of one core and of all
# cores, from the timing model's table: v2 streams weights at 12 GB/s x 0.92
# per core and 28 GB/s for the chip, v1 at 10 and 25 GB/s), and the host's own
# work per token. The compiled programs go to CACHE/npub (npu-generate's compile
# cache: a second run of the same shape compiles nothing; GPT-2 small's two
# programs take 0.8 GB there).
# Needs /usr/bin/python3 with torch.
#
#   bench-llm.py NPU_GENERATE [gpt2-small|tinyllama|tinyllama-2l|qwen2-0.5b] [--partition cost|supported]
#                [--cache DIR] [--steps N] [--prompt-len N] [--cores N] [--host-kv-cache]
#                [--weights fp16|w8a8|both] [--convert-logits]
#
# --host-kv-cache: the decode step converts its KV-cache inputs from the host in every
# step (npu-generate --host-kv-cache) instead of keeping them resident in device memory
# where the NPU reads them: the baseline of the resident cache.
# --convert-logits: npu-generate --convert-logits (each step's logits converted to fp32 and the
# argmax taken there; by default greedy decoding reads it over the logits as the NPU wrote them, nothing
# converted, branch gpt2argmax): the baseline of that.
# --cores N: each step's NPU jobs split over N cores (npu-generate --cores, the
# runtime's layer split); the floors are printed for 1, 2 and 3 cores.
# --weights w8a8: npu-generate --weights w8a8 (int8 projections, int8 activations; its floor
# counts one byte per weight); both: fp16 then w8a8 in this run, and their ratio.
# Decode and prefill are printed twice: the NPU's modeled time alone (the figure compared with
# the bandwidth floor, which is the NPU's), and with the program's CPU steps and conversions
# in series, priced by the partition's CPU cost model (RK3588 CPU model v1, one thread as
# --cpu-threads 1 here; npu-generate's "modeled in series"): a board's step waits for them.
# Each run also prints where the last decode step's modeled time goes (llm-breakdown.py,
# from npu-generate's NPU_LLM_BREAKDOWN file: submit overhead, weight streaming, LM head,
# the rest).
import argparse
import json
import os
import re
import subprocess
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import importlib.util  # noqa: E402

spec = importlib.util.spec_from_file_location("gen_llm", os.path.join(HERE, "gen-llm.py"))
gl = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gl)
spec = importlib.util.spec_from_file_location("llm_breakdown",
                                              os.path.join(HERE, "llm-breakdown.py"))
bk = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bk)

SHAPES = {
    "gpt2-small": {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "n_layer": 12,
                   "n_embd": 768, "n_head": 12, "vocab_size": 50257, "n_positions": 1024,
                   "n_ctx": 1024, "activation_function": "gelu_new",
                   "layer_norm_epsilon": 1e-5, "eos_token_id": 50256},
    "tinyllama": {"architectures": ["LlamaForCausalLM"], "model_type": "llama",
                  "num_hidden_layers": 22, "hidden_size": 2048, "num_attention_heads": 32,
                  "num_key_value_heads": 4, "intermediate_size": 5632, "vocab_size": 32000,
                  "max_position_embeddings": 2048, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
                  "hidden_act": "silu", "tie_word_embeddings": False, "eos_token_id": 2},
}
# Qwen2-0.5B's config.json (the hub's Qwen/Qwen2-0.5B): 14 query heads over 2 KV heads (7 per KV
# head), q/k/v biases, a tied head of 151,936 rows; the bench runs at its own max context
SHAPES["qwen2-0.5b"] = {
    "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "num_hidden_layers": 24,
    "hidden_size": 896, "num_attention_heads": 14, "num_key_value_heads": 2,
    "intermediate_size": 4864, "vocab_size": 151936, "max_position_embeddings": 32768,
    "rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "hidden_act": "silu",
    "tie_word_embeddings": True, "use_sliding_window": False, "sliding_window": 32768,
    "max_window_layers": 21, "bos_token_id": 151643, "eos_token_id": 151643}
# TinyLlama's widths with 2 of its 22 layers: a step's per-layer cost in a minute of simulation
# (profiling; decode ms/token = LM head + 2 layers)
SHAPES["tinyllama-2l"] = dict(SHAPES["tinyllama"], num_hidden_layers=2)


def checkpoint(cache, shape):
    d = os.path.join(cache, shape)
    if os.path.exists(os.path.join(d, "model.safetensors")):
        return d
    os.makedirs(d, exist_ok=True)
    cfg = SHAPES[shape]
    g = torch.Generator().manual_seed(0)
    if shape.startswith("gpt2"):
        p = gl.gpt2_params(cfg, g, 0.02)
    else:
        p = gl.llama_params(cfg, g, 0.02, cfg["model_type"] == "qwen2")
    json.dump(cfg, open(os.path.join(d, "config.json"), "w"), indent=2)
    gl.write_safetensors(os.path.join(d, "model.safetensors"), p, "F16")
    return d


def npu_weight_bytes(cfg, per=2):
    """bytes the NPU reads per decode token (per weight: fp16 2, int8 1): every matmul
    weight and the LM head (the embedding gather stays on the host)."""
    if "n_embd" in cfg:
        D, L, V = cfg["n_embd"], cfg["n_layer"], cfg["vocab_size"]
        return per * (L * (3 * D * D + D * D + 8 * D * D) + D * V)
    D, L, V = cfg["hidden_size"], cfg["num_hidden_layers"], cfg["vocab_size"]
    hd = D // cfg["num_attention_heads"]
    kv = cfg["num_key_value_heads"] * hd
    F = cfg["intermediate_size"]
    return per * (L * (D * D + 2 * D * kv + D * D + 3 * D * F) + D * V)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("npu_generate")
    ap.add_argument("shape", nargs="?", default="gpt2-small", choices=sorted(SHAPES))
    ap.add_argument("--partition", default="cost", choices=["cost", "supported"])
    ap.add_argument("--cache", default="/tmp/npu-llm-bench")
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--prompt-len", type=int, default=128,
                    help="1: no prefill program (memory: TinyLlama's shape)")
    ap.add_argument("--cores", type=int, default=1)
    ap.add_argument("--weights", default="fp16", choices=["fp16", "w8a8", "both"])
    ap.add_argument("--host-kv-cache", action="store_true")
    ap.add_argument("--convert-logits", action="store_true")
    a = ap.parse_args()
    t0 = time.time()
    d = checkpoint(a.cache, a.shape)
    print(f"checkpoint {d} ({time.time() - t0:.1f} s)")
    env = dict(os.environ, NPU_PARTITION=a.partition)
    prompt = ",".join(str((i * 37 + 11) % 1000) for i in range(a.prompt_len))
    # the decode step's cost is set by its static context (it reads every cache slot)
    cmd = [a.npu_generate, d, "--backend", "sim", "--prompt-ids", prompt, "--max-new-tokens",
           str(a.steps + 1), "--max-context", str(128 + a.steps + 1), "--ids",
           "--cores", str(a.cores), "--cache-dir", os.path.join(a.cache, "npub"),
           "--cpu-threads", "1"] + (["--host-kv-cache"] if a.host_kv_cache else []) + \
        (["--convert-logits"] if a.convert_logits else [])
    res = {}
    for wt in (["fp16", "w8a8"] if a.weights == "both" else [a.weights]):
        res[wt] = run_one(a, d, env, cmd + ["--weights", wt], wt)
    if len(res) == 2 and all(res.values()):
        print(f"\nw8a8 / fp16 decode, modeled: {res['w8a8']:.2f} / {res['fp16']:.2f} ms/token = "
              f"{res['w8a8'] / res['fp16']:.2f}x ({a.cores} core(s))")


def run_one(a, d, env, cmd, wt):
    t0 = time.time()
    # the last decode step's NPU tasks, for the per-token breakdown (llm-breakdown.py)
    bd = os.path.join(a.cache, f"breakdown-{a.shape}-{wt}-{a.cores}c.csv")
    if os.path.exists(bd):
        os.remove(bd)
    env = dict(env, NPU_LLM_BREAKDOWN=bd)
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.time() - t0
    print(r.stderr.strip())
    if r.returncode:
        sys.exit(1)
    # the greedy ids (npu-generate --ids, its one stdout line): a change that should keep
    # them is checked against another build's run
    print(r.stdout.strip())
    m = re.search(r"([\d.]+) ms/token modeled (?:NPU )?\((timing model v\d)\)", r.stderr)
    # the decode step's CPU steps and conversions, priced by the partition's CPU cost model
    # (npu-generate: "+ X ms/token modeled CPU steps (RK3588 CPU model v1; ..) = Y ms/token
    # modeled in series"): on a board they run between the NPU jobs, on each step's path
    mc = re.search(r"\+ ([\d.]+) ms/token modeled CPU steps \(([^;)]+)[;)][^=]*= ([\d.]+) "
                   r"ms/token modeled in series", r.stderr)
    pm = re.search(r"prefill [\d.]+ ms host, ([\d.]+) ms modeled", r.stderr)
    pc = re.search(r"prefill [\d.]+ ms host, [\d.]+ ms modeled NPU \([^)]*\) \+ ([\d.]+) ms "
                   r"modeled CPU steps \(([^)]+)\) = ([\d.]+) ms modeled in series", r.stderr)
    cfg = SHAPES[a.shape]
    wb = npu_weight_bytes(cfg, 1 if wt == "w8a8" else 2)
    # weight-streaming bandwidth of the timing model's table (docs/timing-model-v2.md):
    # v2 one core 12 GB/s x dma_eff_weight 0.92, the chip 28 GB/s; v1 10 and 25 GB/s
    label = m.group(2) if m else ""
    core_bw, chip_bw = (10.0e9, 25.0e9) if label.endswith("v1") else (12.0e9 * 0.92, 28.0e9)
    floors = {n: wb / min(n * core_bw, chip_bw) * 1e3 for n in (1, 2, 3)}
    kv = "host KV cache" if a.host_kv_cache else "resident KV cache"
    print(f"\n{a.shape}, {wt}, partition {a.partition}, {a.cores} core(s), {kv}, run {wall:.0f} s:")
    dec = None
    if m:
        dec = float(m.group(1))
        fl = ", ".join(f"{floors[n]:.2f} ms ({n} core{'s' if n > 1 else ''}, "
                       f"{min(n * core_bw, chip_bw) / 1e9:.2f} GB/s)" for n in (1, 2, 3))
        print(f"  decode at 128 context: {dec:.2f} ms/token modeled NPU ({label}), {a.cores} "
              f"core(s); bandwidth floor {fl} for {wb / 1e6:.0f} MB of "
              f"{'int8' if wt == 'w8a8' else 'fp16'} weights; "
              f"{dec / floors[a.cores]:.2f}x the {a.cores}-core floor (the NPU-only figure "
              f"against the floor: the floor is the NPU's)")
        if mc:
            ser = float(mc.group(3))
            # the CPU attention priced over the slots each step read (npu-generate's "over N
            # slots read a step"; older builds priced the compiled slots)
            rd = re.search(r"the CPU attention over ([\d.]+) slots read a step", r.stderr)
            slots = (f"the CPU attention over the {float(rd.group(1)):.1f} slots it read a step"
                     if rd and float(rd.group(1)) > 0 else "at the step's compiled cache slots")
            print(f"  decode at 128 context with its CPU steps in series: {dec:.2f} ms NPU "
                  f"({label}) + {float(mc.group(1)):.2f} ms CPU steps ({mc.group(2)}, "
                  f"--cpu-threads 1, {slots}) = {ser:.2f} ms/token "
                  f"modeled ({label} + {mc.group(2)}); {ser / floors[a.cores]:.2f}x the "
                  f"{a.cores}-core floor")
    if pm and a.prompt_len > 1:
        label = m.group(2) if m else ""
        print(f"  prefill of {a.prompt_len} tokens: {float(pm.group(1)):.2f} ms modeled NPU "
              f"({label})" + (f" + {float(pc.group(1)):.2f} ms CPU steps ({pc.group(2)}, "
                              f"--cpu-threads 1) = {float(pc.group(3)):.2f} ms modeled in series"
                              if pc else ""))
    hm = re.search(r"host work besides the NPU ([\d.]+) ms/token", r.stderr)
    if hm:
        print(f"  host work per decode token besides the NPU (this host, measured wall time): "
              f"{float(hm.group(1)):.2f} ms")
    cm = re.search(r"host CPU time of the loop's thread ([\d.]+) ms/token", r.stderr)
    if cm:
        print(f"  host CPU time per decode token of the loop's thread (CPU steps on it: "
              f"--cpu-threads 1; this host, measured): {float(cm.group(1)):.2f} ms")
    if os.path.exists(bd):
        bk.report(bd, f"{a.shape}, {wt}, {a.cores} core(s), the last decode step")
    return dec


if __name__ == "__main__":
    main()

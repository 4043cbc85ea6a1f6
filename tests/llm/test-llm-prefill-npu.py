#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# The LLaMA prefill's RoPE and grouped-query attention on the NPU by cost, and its K / V rows
# written into the decode session's device cache (branch llamapre). A LLaMA checkpoint with
# random weights, small but of TinyLlama's head size (1 layer, hidden 512, 8 query heads over
# 2 key/value heads of 64), a prompt of 64 tokens, the default (cost) partition with the
# board's CPU model: the prefill program must take no angle inputs (cos / sin are constants
# of the program, so RoPE's Muls multiply by a constant the DPU broadcasts over the heads),
# run neither its attention nor a MatMul (RoPE's rotate_half) as a CPU step, and route both
# k / v outputs into the decode session's state as the NPU's fp16 bytes (0 converted, 2
# copied on the device). The greedy ids on the simulator must equal the CPU backend's (the
# decode steps read the cache the prefill wrote on the device). On main 7e462ed the prefill
# ran RoPE and the attention on the CPU (the angles were inputs its Muls broadcast over the
# heads, which the DPU does not do for two activations) and converted both outputs: 1 CPU
# attention, 2 converted (3.30 ms modeled in series against 2.16 here). Its RMSNorms: at most
# layer 0's input norm (after the CPU Gather) and the last token's final norm as CPU steps,
# the post-attention norm on the NPU (branch prefnorm's lowering, checked by branch reviewln).
import os
import re
import subprocess
import sys
import tempfile

import llmtest

llmtest.need("numpy", "torch")  # gen-llm.py

PROMPT = ",".join(str((i * 37 + 11) % 500) for i in range(64))


def main():
    gen = sys.argv[1]
    fails = 0

    def check(ok, what, detail=""):
        nonlocal fails
        fails += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {what}")
        if not ok and detail:
            print(detail)

    with tempfile.TemporaryDirectory(prefix="npu-llm-prefill-npu-") as tmp:
        gl = llmtest.gen_llm()
        spec = dict(gl.MODELS["llama"], scale=0.05)
        spec["cfg"] = dict(spec["cfg"], num_hidden_layers=1, hidden_size=512,
                           num_attention_heads=8, num_key_value_heads=2, intermediate_size=512)
        cfg, p, _ = gl.make("llama", gl.SEEDS["llama"], spec)
        folder = os.path.join(tmp, "llama-hd64")
        gl.save_folder("llama", folder, cfg, p)
        env = dict(os.environ, NPU_DEBUG="debug")
        env.pop("NPU_PARTITION", None)
        env.pop("NPU_HW_PROFILE", None)
        env.pop("NPU_LLM_PREFILL_KV_HOST", None)
        base = [gen, folder, "--prompt-ids", PROMPT, "--max-new-tokens", "6", "--max-context",
                "80", "--cpu-threads", "1", "--no-cache", "--ids"]
        r = subprocess.run(base + ["--backend", "sim"], env=env, capture_output=True, text=True)
        c = subprocess.run(base + ["--backend", "cpu"], env=env, capture_output=True, text=True)
        lines = r.stderr.splitlines()
        # the decode step is compiled at load and reports first; what follows its summary up
        # to the prefill's figure is the prefill's compile and its priced CPU steps
        start = next((i for i, ln in enumerate(lines) if ln.startswith("decode program:")), None)
        end = next((i for i, ln in enumerate(lines) if ln.startswith("prompt tokens:")), None)
        if r.returncode or c.returncode or start is None or end is None or end < start:
            check(False, "npu-generate ran the prefill on sim and cpu",
                  "\n".join(lines[-40:]) + c.stderr[-2000:])
            sys.exit(1)
        pre = lines[start + 1:end]
        steps = [ln for ln in pre if "modeled CPU step:" in ln]
        angles = [ln for ln in steps if re.search(r"conversion (cos|sin)\.to_npu", ln)]
        attn = [ln for ln in steps if "npu.Attention" in ln]
        mm = [ln for ln in steps if "modeled CPU step: MatMul" in ln]
        check(bool(steps) and not angles and not attn and not mm,
              f"prefill of 64 tokens, cost partition: {len(angles)} angle conversions, "
              f"{len(attn)} CPU attention(s), {len(mm)} CPU MatMul(s) (RoPE's rotate_half) "
              f"among its {len(steps)} priced CPU steps (want 0, 0, 0)",
              "\n".join(angles + attn + mm))
        # its RMSNorms on the NPU by cost (branch prefnorm; checked since branch reviewln):
        # only layer 0's input norm (its input is the CPU Gather's) and the final norm of the
        # last token's one row stay CPU steps, not the post-attention norm over [64, 512]
        norms = [ln for ln in steps if "modeled CPU step: RMSNormalization" in ln]
        check(len(norms) <= 2,
              f"prefill of 64 tokens, cost partition: {len(norms)} RMSNormalization CPU step(s) "
              f"(want at most 2 of the 3: layer 0's input norm after the CPU Gather, the last "
              f"token's final norm)", "\n".join(norms))
        kv = re.search(r"prefill k/v outputs: (\d+) converted, (\d+) copied on the device",
                       r.stderr)
        check(kv is not None and kv[1] == "0" and kv[2] == "2",
              f"prefill k/v outputs: {kv[1] if kv else '?'} converted, "
              f"{kv[2] if kv else '?'} copied on the device (want 0, 2)",
              "\n".join(lines[end:end + 2]))
        check(r.stdout.startswith("ids: ") and r.stdout == c.stdout,
              f"greedy ids on sim {r.stdout.strip()!r} equal the cpu backend's "
              f"{c.stdout.strip()!r}")
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()

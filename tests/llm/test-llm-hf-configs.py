#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# Checkpoints as people have them (issue 12): the config.json / generation_config.json of
# Llama-3.2-1B(-Instruct), Qwen2.5-0.5B(-Instruct), SmolLM2-135M, TinyLlama-1.1B-Chat,
# gpt2, distilgpt2, Llama-2-7b, DeepSeek-R1-Distill-Qwen-1.5B and SmolLM2-360M-Instruct
# (transformers.js_config) as the hub ships them, sizes shrunk (hfconfigs.py), plus variants with
# llama3 and linear RoPE scaling whose bands a short test reaches and a head_dim other than
# hidden / heads. On BACKEND each must load and give the 32 greedy ids of gen-llm.py's
# PyTorch fp32 reference (which follows Hugging Face's RoPE scaling); for the scaled
# variants the ids of plain RoPE must differ (so the test sees the scaling). Then EOS:
# config.json's eos_token_id list and generation_config.json's (which replaces it, as in
# Hugging Face's generate()) stop generation at the right id, and say which file it came
# from. On cpu also the refusals: RoPE scalings we do not do (dynamic, yarn, longrope, su,
# ...) by name, unknown rope_scaling keys, missing llama3 parameters, bad eos lists.
# transformers v5's form (rope_parameters holding rope_type, rope_theta and the parameters;
# dtype): Llama-3.2-1B, Qwen2.5-0.5B and the scaled variants as v5 saves them give the same
# reference ids; its unsupported types and keys are refused by name, and a file whose
# rope_parameters and rope_scaling / rope_theta disagree is refused naming both.
# Configs written as full dumps (hfconfigs.FULL_DUMPS: GPT-2, TinyLlama and Qwen2.5 with every
# key of transformers' PretrainedConfig at its default, and older tools' keys and generate()
# defaults that are not the defaults) give the plain config's greedy ids; on cpu one key of
# them away from its default where that changes the model (pruned_heads, is_encoder_decoder,
# add_cross_attention, tie_encoder_decoder, cross_attention_hidden_size, quantization_config)
# is refused naming key, value and reason.
# Needs /usr/bin/python3 with torch (skips otherwise).
#
#   test-llm-hf-configs.py NPU_GENERATE BACKEND [--search]
#
# --search: print the first usable seed of every model (hfconfigs.SEEDS) and exit.
import copy
import json
import os
import subprocess
import sys
import tempfile

import llmtest

llmtest.need("numpy", "torch")
import hfconfigs  # noqa: E402 (after the skip: it needs nothing, gen-llm.py needs torch)

llmtest.private_compile_cache()
gl = llmtest.gen_llm()
MIN_MARGIN = 0.025  # top-1 margin in logit standard deviations, as gen-llm.py's seeds


def eos_ids(spec):
    e = spec.get("gen", {}).get("eos_token_id", spec["cfg"]["eos_token_id"])
    return e if isinstance(e, list) else [e]


_references = {}


def reference(name, spec, seed):
    """The greedy ids, smallest margin, and whether they are usable (vary, no EOS of the
    vocabulary, clear margins; scaled RoPE variants: plain RoPE's ids differ). Computed once
    a model and seed (callers copy cfg before changing it)."""
    if (name, seed) not in _references:
        _references[name, seed] = _reference(name, spec, seed)
    return _references[name, seed]


def _reference(name, spec, seed):
    cfg, p, fwd = gl.make(name, seed, spec)
    ids, margin, _, _ = gl.greedy(cfg, p, fwd)
    ok = len(set(ids)) >= 10 and margin >= MIN_MARGIN and not set(eos_ids(spec)) & set(ids)
    plain = None
    rp = cfg.get("rope_parameters") or {}
    if ok and name in hfconfigs.VARIANTS and (cfg.get("rope_scaling") or
                                               rp.get("rope_type", "default") != "default"):
        c2 = copy.deepcopy(cfg)
        c2["rope_scaling"] = None
        if rp:
            c2["rope_parameters"] = {"rope_type": "default",
                                     "rope_theta": rp.get("rope_theta", 10000.0)}
        plain = gl.greedy(c2, p, fwd)[0]
        ok = plain != ids
    return cfg, p, ids, margin, ok, plain


def save(folder, name, spec, cfg, p, gen="spec"):
    kind = cfg["model_type"]
    gl.save_folder(kind if kind in ("gpt2", "qwen2") else "llama", folder, cfg, p,
                   spec["dtype"])
    g = spec.get("gen") if gen == "spec" else gen
    if g is not None:
        with open(os.path.join(folder, "generation_config.json"), "w") as f:
            json.dump(g, f, indent=2)


def run(gen, folder, backend, n=32):
    env = llmtest.backend_env(backend)
    return subprocess.run([gen, folder, "--prompt-ids", llmtest.ids_arg(gl.PROMPT),
                           "--max-new-tokens", str(n), "--backend", backend, "--greedy",
                           "--ids"], env=env, capture_output=True, text=True)


def got_ids(r):
    return [int(x) for x in r.stdout.split()[1:]] if r.stdout.startswith("ids:") else None


def line(r, start):
    return next((ln for ln in r.stderr.splitlines() if ln.startswith(start)), "")


def check_models(gen, backend, tmp):
    fails = 0
    for name, spec in hfconfigs.specs().items():
        cfg, p, ids, margin, ok, plain = reference(name, spec, hfconfigs.SEEDS[name])
        if not ok:
            print(f"FAIL {name}: seed {hfconfigs.SEEDS[name]} no longer gives a usable "
                  f"reference (margin {margin:.3f}; rerun with --search)")
            fails += 1
            continue
        folder = os.path.join(tmp, name)
        save(folder, name, spec, cfg, p)
        r = run(gen, folder, backend)
        got = got_ids(r)
        want_eos = "end of sequence: " + " ".join(map(str, eos_ids(spec))) + \
            (" (generation_config.json)" if "eos_token_id" in spec.get("gen", {})
             else " (config.json)")
        if r.returncode or got != ids:
            print(f"FAIL {name} {backend}: greedy ids differ from the reference\n  want {ids}\n"
                  f"  got  {got}\n{r.stderr}")
            fails += 1
        elif line(r, "end of sequence:") != want_eos:
            print(f"FAIL {name} {backend}: {line(r, 'end of sequence:')!r}, want {want_eos!r}")
            fails += 1
        else:
            extra = f"; plain RoPE would give {sum(a != b for a, b in zip(plain, ids))} " \
                "other ids" if plain else ""
            print(f"ok   {name} {backend}: 32 greedy ids = reference (margin >= {margin:.3f} "
                  f"std{extra}); {want_eos}")
    return fails


def check_eos(gen, backend, tmp):
    """Stops at an EOS id of the list (config.json's; generation_config.json's replacing it)."""
    fails = 0
    name = "llama-3.2-1b-instruct"
    spec = hfconfigs.REAL[name]
    cfg, p, ids, _, ok, _ = reference(name, spec, hfconfigs.SEEDS[name])
    if not ok:
        return 1
    k = next(i for i in range(8, len(ids)) if ids[i] not in ids[:i])  # first new id >= 8
    y, never = ids[k], next(t for t in range(cfg["vocab_size"]) if t not in ids)
    cases = [
        # (what, config.json eos, generation_config.json (None: no file), stop index, source)
        ("config.json list", [128001, y, 128009], None, k, "config.json"),
        ("generation_config.json list replaces config.json's", never,
         {"eos_token_id": [128001, y]}, k, "generation_config.json"),
        ("config.json's id not an EOS when generation_config.json names others", y,
         {"eos_token_id": [128001, never]}, None, "generation_config.json"),
        ("generation_config.json without eos_token_id: config.json's", [never, y],
         {"do_sample": True, "temperature": 0.6}, k, "config.json"),
    ]
    for i, (what, ce, gcfg, stop, src) in enumerate(cases):
        c = copy.deepcopy(cfg)
        c["eos_token_id"] = ce
        folder = os.path.join(tmp, f"eos{i}")
        save(folder, name, spec, c, p, gen=gcfg)
        r = run(gen, folder, backend)
        want = ids[:stop + 1] if stop is not None else ids
        st = line(r, "stopped:")
        want_st = (f"stopped: end of sequence (token {y}, {src}'s eos_token_id) after "
                   f"{stop + 1} new token(s)" if stop is not None
                   else "stopped: limit of 32 new token(s) reached")
        if r.returncode or got_ids(r) != want or st != want_st:
            print(f"FAIL eos {what}: got {got_ids(r)} / {st!r}\n  want {want} / {want_st!r}\n"
                  f"{r.stderr}")
            fails += 1
        else:
            print(f"ok   eos {what}: {st}")
    return fails


def check_refusals(gen, tmp):
    fails = 0
    spec = hfconfigs.REAL["llama-3.2-1b"]
    cfg, p, _, _, _, _ = reference("llama-3.2-1b", spec, hfconfigs.SEEDS["llama-3.2-1b"])
    l3 = dict(hfconfigs.LLAMA32_ROPE)
    cases = [(f"rope_type {t}", {"rope_scaling": {"rope_type": t, "factor": 2.0}},
              f"rope_scaling type '{t}' is not supported")
             for t in ("dynamic", "ntk", "yarn", "longrope")]
    cases += [
        ("old key type 'su' (Phi-3)", {"rope_scaling": {"type": "su", "long_factor": [1.0],
                                                        "short_factor": [1.0]}},
         "rope_scaling type 'su' is not supported"),
        ("unknown llama3 key", {"rope_scaling": dict(l3, attention_factor=1.0)},
         "rope_scaling key 'attention_factor'"),
        ("llama3 without original_max_position_embeddings",
         {"rope_scaling": {k: v for k, v in l3.items()
                           if k != "original_max_position_embeddings"}},
         "needs 'original_max_position_embeddings'"),
        ("llama3 high_freq_factor <= low_freq_factor",
         {"rope_scaling": dict(l3, high_freq_factor=1.0)}, "needs high_freq_factor (1) >"),
        ("linear without factor", {"rope_scaling": {"rope_type": "linear"}},
         "rope_scaling 'linear' needs 'factor'"),
        ("no rope_type", {"rope_scaling": {"factor": 2.0}}, "has no 'rope_type'"),
        ("eos list of strings", {"eos_token_id": ["</s>"]}, "'eos_token_id' must be"),
        ("eos list of 9", {"eos_token_id": list(range(9))}, "lists 9 ids: at most 8"),
        ("odd head_dim", {"head_dim": 7}, "inconsistent heads"),
    ]
    # transformers v5's form (Llama-3.2-1B as v5 saves it, then changed)
    v5 = hfconfigs.REAL_V5["llama-3.2-1b-v5"]["cfg"]
    rp = v5["rope_parameters"]
    cases += [(f"v5 rope_type {t}", {"rope_parameters": {"rope_type": t, "factor": 2.0,
                                                         "rope_theta": 500000.0}},
               f"rope_parameters type '{t}' is not supported")
              for t in ("dynamic", "yarn", "longrope")]
    cases += [
        ("v5 partial_rotary_factor", {"rope_parameters": dict(rp, partial_rotary_factor=0.5)},
         "rope_parameters key 'partial_rotary_factor' is not one of rope_type 'llama3'"),
        ("v5 llama3 high_freq_factor <= low_freq_factor",
         {"rope_parameters": dict(rp, high_freq_factor=1.0)},
         "rope_parameters 'llama3' needs high_freq_factor (1) >"),
        ("v5 rope_theta not positive", {"rope_parameters": dict(rp, rope_theta=-1.0)},
         "rope_parameters 'rope_theta' must be a positive number"),
        ("v5 rope_parameters not an object", {"rope_parameters": 500000.0},
         "config key 'rope_parameters' must be null or an object"),
        ("v5 per-layer-type rope_parameters", {"rope_parameters": {"full_attention": rp}},
         "rope_parameters gives a RoPE per layer type ('full_attention'): not supported"),
        ("v5 + rope_scaling: disagree",
         {"rope_scaling": dict(l3, factor=8.0)},
         "config keys 'rope_scaling' (llama3, factor 8, low_freq_factor 1, high_freq_factor 4, "
         "original_max_position_embeddings 8192) and 'rope_parameters' (llama3, factor 32"),
        ("v5 llama3 without original context: max_position_embeddings's, not "
         "rope_scaling's", {"rope_scaling": l3, "rope_parameters": {
             k: v for k, v in rp.items() if k != "original_max_position_embeddings"}},
         "original_max_position_embeddings 131072) disagree"),
        ("v5 default + rope_scaling llama3",
         {"rope_scaling": l3, "rope_parameters": {"rope_type": "default"}},
         "and 'rope_parameters' (default) disagree"),
        ("v5 + rope_theta: disagree", {"rope_theta": 10000.0},
         "config keys 'rope_theta' (10000) and 'rope_parameters' rope_theta (500000) disagree"),
    ]
    for i, (what, change, msg) in enumerate(cases):
        c = copy.deepcopy(v5 if what.startswith("v5") else cfg)
        c.update(change)
        folder = os.path.join(tmp, f"bad{i}")
        save(folder, "llama-3.2-1b", spec, c, p, gen=None)
        r = run(gen, folder, "cpu", 1)
        if r.returncode == 0 or msg not in r.stderr or "Sanitizer" in r.stderr:
            print(f"FAIL refusal {what}: exit {r.returncode}, want {msg!r} in\n{r.stderr}")
            fails += 1
        else:
            print(f"ok   refusal {what}: " + next(ln for ln in r.stderr.splitlines() if msg in ln))
    return fails


def check_full_dumps(gen, backend, tmp):
    """Configs written as full dumps (every key of transformers' PretrainedConfig, at its
    default; hfconfigs.FULL_DUMPS): the greedy ids of the plain config and the same weights."""
    fails = 0
    for name, spec in hfconfigs.FULL_DUMPS.items():
        base = spec["base"]
        _, p, ids, _, ok, _ = reference(base, hfconfigs.REAL[base], hfconfigs.SEEDS[base])
        if not ok:
            print(f"FAIL {name}: {base}'s seed no longer gives a usable reference")
            fails += 1
            continue
        missing = set(hfconfigs.PRETRAINED_CONFIG_DEFAULTS) - set(spec["cfg"]) - {
            "_attn_implementation_autoset"}
        folder = os.path.join(tmp, name)
        save(folder, name, spec, spec["cfg"], p)
        r = run(gen, folder, backend)
        if missing or r.returncode or got_ids(r) != ids:
            print(f"FAIL {name} {backend}: greedy ids differ from {base}'s (missing keys "
                  f"{sorted(missing)})\n  want {ids}\n  got  {got_ids(r)}\n{r.stderr}")
            fails += 1
        else:
            print(f"ok   {name} {backend}: {len(spec['cfg'])} keys, 32 greedy ids = {base}'s")
    return fails


def check_full_dump_refusals(gen, tmp):
    """One key of a full dump away from its default where that changes the model: refused by
    name, value and reason; a wrong type; a key no transformers config has still unknown."""
    fails = 0
    gptq = {"bits": 4, "desc_act": False, "group_size": 128, "quant_method": "gptq",
            "sym": True}
    cases = [
        ("tinyllama-full", {"pruned_heads": {"0": [1, 2]}},
         "config key 'pruned_heads' is not empty ({\"0\": [1, 2]}): pruned attention heads are "
         "not supported"),
        ("tinyllama-full", {"is_encoder_decoder": True},
         "config key 'is_encoder_decoder' is true: encoder-decoder models are not supported"),
        ("tinyllama-full", {"add_cross_attention": True},
         "config key 'add_cross_attention' is true: cross attention (a decoder reading an "
         "encoder's output) is not supported"),
        ("gpt2-full", {"add_cross_attention": True},
         "config key 'add_cross_attention' is true: cross attention"),
        ("qwen2.5-full", {"tie_encoder_decoder": True},
         "config key 'tie_encoder_decoder' is true: it ties an encoder-decoder model's halves"),
        ("qwen2.5-full", {"cross_attention_hidden_size": 896},
         "config key 'cross_attention_hidden_size' is 896, not null: cross attention"),
        ("qwen2.5-full", {"quantization_config": gptq},
         "config key 'quantization_config' is present (quant_method 'gptq'): pre-quantised "
         "checkpoints are not supported"),
        ("tinyllama-full", {"quantization_config": {"load_in_4bit": True}},
         "config key 'quantization_config' is {\"load_in_4bit\": true}, not null"),
        # a long value is cut short, saying so
        ("gpt2-full", {"pruned_heads": {str(i): list(range(12)) for i in range(6)}},
         ("config key 'pruned_heads' is not empty ({\"0\": [0, 1, 2,",
          "...): pruned attention heads are not supported")),
        ("tinyllama-full", {"is_encoder_decoder": "false"},
         "config key 'is_encoder_decoder' must be true or false, not \"false\""),
        ("gpt2-full", {"pruned_heads": []}, "config key 'pruned_heads' must be an object, not []"),
        ("gpt2-full", {"scale_attn_by_inverse_layer_idx": True},
         "config key 'scale_attn_by_inverse_layer_idx' is true: not supported for "
         "GPT2LMHeadModel"),
        ("gpt2-full", {"scale_attn_weights": False},
         "config key 'scale_attn_weights' is false: not supported for GPT2LMHeadModel"),
        # transformers v5's per-layer overrides: not a PretrainedConfig key we know
        ("tinyllama-full", {"per_layer_config": {"0": {"intermediate_size": 128}}},
         "unknown config key 'per_layer_config' for LlamaForCausalLM"),
    ]
    for i, (name, change, msg) in enumerate(cases):
        spec = hfconfigs.FULL_DUMPS[name]
        base = spec["base"]
        _, p, _, _, _, _ = reference(base, hfconfigs.REAL[base], hfconfigs.SEEDS[base])
        c = copy.deepcopy(spec["cfg"])
        c.update(change)
        folder = os.path.join(tmp, f"fullbad{i}")
        save(folder, name, spec, c, p, gen=None)
        r = run(gen, folder, "cpu", 1)
        msgs = msg if isinstance(msg, tuple) else (msg,)
        line_ = next((ln for ln in r.stderr.splitlines() if all(m in ln for m in msgs)), None)
        if r.returncode == 0 or line_ is None or "Sanitizer" in r.stderr:
            print(f"FAIL full-dump refusal {name} {change}: exit {r.returncode}, want {msgs!r} "
                  f"in\n{r.stderr}")
            fails += 1
        else:
            print(f"ok   full-dump refusal {name}: {line_}")
    return fails


def search():
    for name, spec in hfconfigs.specs().items():
        seed = next(s for s in range(200) if reference(name, spec, s)[4])
        print(f'    "{name}": {seed},')


def main():
    if "--search" in sys.argv:
        return search()
    gen, backend = sys.argv[1], sys.argv[2]
    import torch
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory(prefix="npu-hfcfg-") as tmp:
        fails = check_models(gen, backend, tmp)
        fails += check_eos(gen, backend, tmp)
        fails += check_full_dumps(gen, backend, tmp)
        if backend == "cpu":
            fails += check_refusals(gen, tmp)
            fails += check_full_dump_refusals(gen, tmp)
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()

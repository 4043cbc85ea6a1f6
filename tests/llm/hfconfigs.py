# SPDX-License-Identifier: MIT
# The config.json (and generation_config.json) files of the small language models people run
# on an RK3588 board, as the Hugging Face hub ships them, for test-llm-hf-configs.py: every
# key as shipped except the size fields (hidden_size / n_embd, num_hidden_layers / n_layer,
# vocab_size, intermediate_size, and head_dim where it is given), which are shrunk so the
# test checkpoints stay tiny (2 layers, 512 tokens, 8-wide heads; the head counts as
# shipped). Token ids (bos / eos) are as shipped, so mostly outside the 512 tokens: such an
# EOS is never made. Sources: the hub's config.json / generation_config.json of each
# repository named below (huggingface.co/<repo>/blob/main/...), as of transformers 4.45.
# Plus variants of them that exercise what the real files only carry at sizes a test cannot
# afford: RoPE scaling whose bands are hit within 40 positions, a head_dim other than
# hidden / heads, and EOS lists that the reference's greedy ids reach. And Llama-3.2-1B,
# Qwen2.5-0.5B and the scaled variants as transformers v5 saves them (rope_parameters, dtype).
# Not a test itself: imported by test-llm-hf-configs.py (needs torch through gen-llm.py).
import copy

# ---- as shipped (size fields shrunk) ------------------------------------------------------

LLAMA32_ROPE = {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                "original_max_position_embeddings": 8192, "rope_type": "llama3"}

REAL = {
    # meta-llama/Llama-3.2-1B: 2048 wide, 16 layers, 8192 MLP, 128256 tokens, head_dim 64
    "llama-3.2-1b": dict(dtype="BF16", scale=0.03, cfg={
        "architectures": ["LlamaForCausalLM"], "attention_bias": False,
        "attention_dropout": 0.0, "bos_token_id": 128000, "eos_token_id": 128001,
        "head_dim": 8, "hidden_act": "silu", "hidden_size": 256, "initializer_range": 0.02,
        "intermediate_size": 384, "max_position_embeddings": 131072, "mlp_bias": False,
        "model_type": "llama", "num_attention_heads": 32, "num_hidden_layers": 2,
        "num_key_value_heads": 8, "pretraining_tp": 1, "rms_norm_eps": 1e-05,
        "rope_scaling": LLAMA32_ROPE, "rope_theta": 500000.0, "tie_word_embeddings": True,
        "torch_dtype": "bfloat16", "transformers_version": "4.45.0.dev0", "use_cache": True,
        "vocab_size": 512}),
    # meta-llama/Llama-3.2-1B-Instruct: the same, three EOS ids (<|end_of_text|>,
    # <|eom_id|>, <|eot_id|>) and a generation_config.json with them
    "llama-3.2-1b-instruct": dict(dtype="BF16", scale=0.03, cfg={
        "architectures": ["LlamaForCausalLM"], "attention_bias": False,
        "attention_dropout": 0.0, "bos_token_id": 128000,
        "eos_token_id": [128001, 128008, 128009], "head_dim": 8, "hidden_act": "silu",
        "hidden_size": 256, "initializer_range": 0.02, "intermediate_size": 384,
        "max_position_embeddings": 131072, "mlp_bias": False, "model_type": "llama",
        "num_attention_heads": 32, "num_hidden_layers": 2, "num_key_value_heads": 8,
        "pretraining_tp": 1, "rms_norm_eps": 1e-05, "rope_scaling": LLAMA32_ROPE,
        "rope_theta": 500000.0, "tie_word_embeddings": True, "torch_dtype": "bfloat16",
        "transformers_version": "4.45.0.dev0", "use_cache": True, "vocab_size": 512},
        gen={"bos_token_id": 128000, "do_sample": True,
             "eos_token_id": [128001, 128008, 128009], "temperature": 0.6, "top_p": 0.9,
             "transformers_version": "4.45.0.dev0"}),
    # Qwen/Qwen2.5-0.5B: 896 wide, 24 layers, 4864 MLP, 151936 tokens (no head_dim key)
    "qwen2.5-0.5b": dict(dtype="BF16", scale=0.03, cfg={
        "architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0,
        "bos_token_id": 151643, "eos_token_id": 151643, "hidden_act": "silu",
        "hidden_size": 112, "initializer_range": 0.02, "intermediate_size": 256,
        "max_position_embeddings": 32768, "max_window_layers": 24, "model_type": "qwen2",
        "num_attention_heads": 14, "num_hidden_layers": 2, "num_key_value_heads": 2,
        "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "sliding_window": 32768,
        "tie_word_embeddings": True, "torch_dtype": "bfloat16",
        "transformers_version": "4.40.1", "use_cache": True, "use_sliding_window": False,
        "vocab_size": 512},
        gen={"bos_token_id": 151643, "do_sample": False, "eos_token_id": 151643,
             "max_new_tokens": 2048, "transformers_version": "4.37.0"}),
    # Qwen/Qwen2.5-0.5B-Instruct: EOS <|im_end|> in config.json, generation_config.json adds
    # <|endoftext|>
    "qwen2.5-0.5b-instruct": dict(dtype="BF16", scale=0.03, cfg={
        "architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0,
        "bos_token_id": 151643, "eos_token_id": 151645, "hidden_act": "silu",
        "hidden_size": 112, "initializer_range": 0.02, "intermediate_size": 256,
        "max_position_embeddings": 32768, "max_window_layers": 21, "model_type": "qwen2",
        "num_attention_heads": 14, "num_hidden_layers": 2, "num_key_value_heads": 2,
        "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "sliding_window": 32768,
        "tie_word_embeddings": True, "torch_dtype": "bfloat16",
        "transformers_version": "4.43.1", "use_cache": True, "use_sliding_window": False,
        "vocab_size": 512},
        gen={"bos_token_id": 151643, "pad_token_id": 151643, "do_sample": True,
             "eos_token_id": [151645, 151643], "repetition_penalty": 1.1, "temperature": 0.7,
             "top_p": 0.8, "top_k": 20, "transformers_version": "4.37.0"}),
    # HuggingFaceTB/SmolLM2-135M: 576 wide, 30 layers, 1536 MLP, 49152 tokens
    "smollm2-135m": dict(dtype="BF16", scale=0.03, cfg={
        "architectures": ["LlamaForCausalLM"], "attention_bias": False,
        "attention_dropout": 0.0, "bos_token_id": 0, "eos_token_id": 0, "hidden_act": "silu",
        "hidden_size": 72, "initializer_range": 0.041666666666666664,
        "intermediate_size": 192, "is_llama_config": True, "max_position_embeddings": 8192,
        "model_type": "llama", "num_attention_heads": 9, "num_hidden_layers": 2,
        "num_key_value_heads": 3, "pretraining_tp": 1, "rms_norm_eps": 1e-05,
        "rope_interleaved": False, "rope_scaling": None, "rope_theta": 100000,
        "tie_word_embeddings": True, "torch_dtype": "bfloat16",
        "transformers_version": "4.40.1", "use_cache": True, "vocab_size": 512},
        gen={"_from_model_config": True, "bos_token_id": 0, "eos_token_id": 0,
             "transformers_version": "4.40.1"}),
    # TinyLlama/TinyLlama-1.1B-Chat-v1.0: 2048 wide, 22 layers, 5632 MLP, 32000 tokens; EOS 2
    # is inside the shrunk vocabulary (the seed's greedy ids avoid it)
    "tinyllama-1.1b-chat": dict(dtype="BF16", scale=1.0, cfg={
        "architectures": ["LlamaForCausalLM"], "attention_bias": False, "bos_token_id": 1,
        "eos_token_id": 2, "hidden_act": "silu", "hidden_size": 256,
        "initializer_range": 0.02, "intermediate_size": 352,
        "max_position_embeddings": 2048, "model_type": "llama", "num_attention_heads": 32,
        "num_hidden_layers": 2, "num_key_value_heads": 4, "pretraining_tp": 1,
        "rms_norm_eps": 1e-05, "rope_scaling": None, "rope_theta": 10000.0,
        "tie_word_embeddings": False, "torch_dtype": "bfloat16",
        "transformers_version": "4.35.0", "use_cache": True, "vocab_size": 512},
        gen={"bos_token_id": 1, "eos_token_id": 2, "max_length": 2048, "pad_token_id": 0,
             "transformers_version": "4.35.0"}),
    # openai-community/gpt2: 768 wide, 12 layers, 50257 tokens (no torch_dtype key)
    "gpt2": dict(dtype="F32", scale=0.03, cfg={
        "activation_function": "gelu_new", "architectures": ["GPT2LMHeadModel"],
        "attn_pdrop": 0.1, "bos_token_id": 50256, "embd_pdrop": 0.1, "eos_token_id": 50256,
        "initializer_range": 0.02, "layer_norm_epsilon": 1e-05, "model_type": "gpt2",
        "n_ctx": 1024, "n_embd": 96, "n_head": 12, "n_layer": 2, "n_positions": 1024,
        "resid_pdrop": 0.1, "summary_activation": None, "summary_first_dropout": 0.1,
        "summary_proj_to_labels": True, "summary_type": "cls_index", "summary_use_proj": True,
        "task_specific_params": {"text-generation": {"do_sample": True, "max_length": 50}},
        "vocab_size": 512},
        gen={"_from_model_config": True, "bos_token_id": 50256, "eos_token_id": 50256,
             "transformers_version": "4.26.0.dev0"}),
    # distilbert/distilgpt2: 768 wide, 6 layers, 50257 tokens, a one-label head's leftovers
    "distilgpt2": dict(dtype="F32", scale=0.03, cfg={
        "_num_labels": 1, "activation_function": "gelu_new",
        "architectures": ["GPT2LMHeadModel"], "attn_pdrop": 0.1, "bos_token_id": 50256,
        "embd_pdrop": 0.1, "eos_token_id": 50256, "id2label": {"0": "LABEL_0"},
        "initializer_range": 0.02, "label2id": {"LABEL_0": 0}, "layer_norm_epsilon": 1e-05,
        "model_type": "gpt2", "n_ctx": 1024, "n_embd": 96, "n_head": 12, "n_layer": 2,
        "n_positions": 1024, "resid_pdrop": 0.1, "summary_activation": None,
        "summary_first_dropout": 0.1, "summary_proj_to_labels": True,
        "summary_type": "cls_index", "summary_use_proj": True,
        "task_specific_params": {"text-generation": {"do_sample": True, "max_length": 50}},
        "vocab_size": 512}),
    # meta-llama/Llama-2-7b-hf: 4096 wide, 32 layers, 11008 MLP, 32000 tokens; no rope_theta
    # key (10^4), float16, _name_or_path, untied, no GQA
    "llama-2-7b": dict(dtype="F16", scale=1.0, cfg={
        "_name_or_path": "meta-llama/Llama-2-7b-hf", "architectures": ["LlamaForCausalLM"],
        "bos_token_id": 1, "eos_token_id": 2, "hidden_act": "silu", "hidden_size": 128,
        "initializer_range": 0.02, "intermediate_size": 344,
        "max_position_embeddings": 4096, "model_type": "llama", "num_attention_heads": 16,
        "num_hidden_layers": 2, "num_key_value_heads": 16, "pretraining_tp": 1,
        "rms_norm_eps": 1e-05, "rope_scaling": None, "tie_word_embeddings": False,
        "torch_dtype": "float16", "transformers_version": "4.31.0.dev0", "use_cache": True,
        "vocab_size": 512},
        gen={"bos_token_id": 1, "do_sample": True, "eos_token_id": 2, "max_length": 4096,
             "pad_token_id": 0, "temperature": 0.6, "top_p": 0.9,
             "transformers_version": "4.31.0.dev0"}),
    # deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B (a Qwen2 people run on RK3588 boards): 1536
    # wide, 28 layers, 8960 MLP, 151936 tokens; untied head, use_mrope false, a sliding
    # window it does not use
    "r1-distill-qwen-1.5b": dict(dtype="BF16", scale=1.0, cfg={
        "architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0,
        "bos_token_id": 151643, "eos_token_id": 151643, "hidden_act": "silu",
        "hidden_size": 96, "initializer_range": 0.02, "intermediate_size": 224,
        "max_position_embeddings": 131072, "max_window_layers": 21, "model_type": "qwen2",
        "num_attention_heads": 12, "num_hidden_layers": 2, "num_key_value_heads": 2,
        "rms_norm_eps": 1e-06, "rope_theta": 10000, "sliding_window": 4096,
        "tie_word_embeddings": False, "torch_dtype": "bfloat16",
        "transformers_version": "4.44.0", "use_cache": True, "use_mrope": False,
        "use_sliding_window": False, "vocab_size": 512},
        gen={"_from_model_config": True, "bos_token_id": 151646, "eos_token_id": 151643,
             "do_sample": True, "temperature": 0.6, "top_p": 0.95,
             "transformers_version": "4.39.3"}),
    # HuggingFaceTB/SmolLM2-360M-Instruct: 960 wide, 32 layers, 2560 MLP, 49152 tokens; the
    # repository also ships an ONNX export, and its config.json carries transformers.js's
    # run-time hints ("transformers.js_config") beside pad_token_id
    "smollm2-360m-instruct": dict(dtype="BF16", scale=0.03, cfg={
        "architectures": ["LlamaForCausalLM"], "attention_bias": False,
        "attention_dropout": 0.0, "bos_token_id": 1, "eos_token_id": 2, "hidden_act": "silu",
        "hidden_size": 120, "initializer_range": 0.02, "intermediate_size": 256,
        "is_llama_config": True, "max_position_embeddings": 8192, "model_type": "llama",
        "num_attention_heads": 15, "num_hidden_layers": 2, "num_key_value_heads": 5,
        "pad_token_id": 2, "pretraining_tp": 1, "rms_norm_eps": 1e-05,
        "rope_interleaved": False, "rope_scaling": None, "rope_theta": 100000,
        "tie_word_embeddings": True, "torch_dtype": "bfloat16",
        "transformers.js_config": {"kv_cache_dtype": {"q4f16": "float16", "fp16": "float16"}},
        "transformers_version": "4.42.3", "use_cache": True, "vocab_size": 512},
        gen={"bos_token_id": 1, "eos_token_id": 2, "pad_token_id": 2,
             "transformers_version": "4.42.3"}),
}


# ---- as transformers v5 saves them ---------------------------------------------------------
# transformers v5's save_pretrained writes RoPE as one object "rope_parameters" (rope_type,
# rope_theta and the scheme's parameters; no top-level rope_theta / rope_scaling) and "dtype"
# for "torch_dtype"; LlamaConfig / Qwen2Config also write pad_token_id null, Qwen2Config
# layer_types (one "full_attention" a layer) and sliding_window null when use_sliding_window
# is false. Key sets as printed by transformers 5.0.0 (Qwen2Config) and 5.7.0 (LlamaConfig,
# Llama-3.2-3B) when loading such checkpoints; the same sizes as above.

def _v5(base, version="5.0.0", **extra):
    cfg = copy.deepcopy(REAL[base]["cfg"])
    rp = dict(cfg.pop("rope_scaling", None) or {"rope_type": "default"})
    rp["rope_theta"] = cfg.pop("rope_theta")
    cfg["rope_parameters"] = dict(sorted(rp.items()))
    cfg["dtype"] = cfg.pop("torch_dtype")
    cfg["pad_token_id"] = None
    cfg["transformers_version"] = version
    cfg.update(extra)
    spec = copy.deepcopy(REAL[base])
    spec["cfg"] = dict(sorted(cfg.items()))
    return spec


REAL_V5 = {
    # meta-llama/Llama-3.2-1B: rope_parameters {factor 32, high 4, low 1, original 8192,
    # rope_theta 500000, llama3}
    "llama-3.2-1b-v5": _v5("llama-3.2-1b", "5.7.0"),
    # Qwen/Qwen2.5-0.5B: rope_parameters {rope_theta 10^6, default}
    "qwen2.5-0.5b-v5": _v5("qwen2.5-0.5b", layer_types=["full_attention"] * 2,
                           sliding_window=None),
}
# openai-community/gpt2 as transformers 4.57.3 prints it (dtype already renamed, the GPT2Config
# defaults written out; no RoPE)
REAL_V5["gpt2-dtype"] = copy.deepcopy(REAL["gpt2"])
REAL_V5["gpt2-dtype"]["cfg"] = dict(sorted(dict(
    REAL["gpt2"]["cfg"], dtype="float32", n_inner=None, reorder_and_upcast_attn=False,
    scale_attn_by_inverse_layer_idx=False, scale_attn_weights=True,
    transformers_version="4.57.3", use_cache=True).items()))


# ---- variants ------------------------------------------------------------------------------

def _variant(base, **changes):
    spec = copy.deepcopy(REAL[base])
    for k, v in changes.items():
        if k == "gen":
            spec["gen"] = v
        else:
            spec["cfg"][k] = v
    return spec


VARIANTS = {
    # Llama-3.2's llama3 RoPE scaling with bands a 40-token test reaches: head_dim 16 and
    # theta 10^4 give wavelengths 6.3, 20, 63, ... tokens; against an original context of
    # 32 (low 1, high 4) the first is kept, the second blended, the rest divided by 8
    "llama3-rope": _variant("llama-3.2-1b", num_attention_heads=4, num_key_value_heads=2,
                            hidden_size=64, head_dim=16, rope_theta=10000.0,
                            rope_scaling={"factor": 8.0, "high_freq_factor": 4.0,
                                          "low_freq_factor": 1.0,
                                          "original_max_position_embeddings": 32,
                                          "rope_type": "llama3"}),
    # linear scaling under the old key "type" (Llama-2 long-context fine-tunes)
    "linear-rope": _variant("tinyllama-1.1b-chat", num_attention_heads=4,
                            num_key_value_heads=2, hidden_size=64,
                            rope_scaling={"type": "linear", "factor": 4.0}),
    # an explicit head_dim other than hidden / heads: q, k, v, o 4 x 32 = 128 wide on a 64
    # wide model
    "head-dim-32": _variant("tinyllama-1.1b-chat", num_attention_heads=4,
                            num_key_value_heads=2, hidden_size=64, head_dim=32),
    # ... and a hidden size the heads do not divide (60 wide, 4 heads of 16)
    "head-dim-16-of-60": _variant("tinyllama-1.1b-chat", num_attention_heads=4,
                                  num_key_value_heads=2, hidden_size=60, head_dim=16),
}


def _as_v5(spec):
    """SPEC with rope_theta + rope_scaling moved into v5's rope_parameters, dtype renamed."""
    cfg = spec["cfg"]
    rp = dict(cfg.pop("rope_scaling") or {"rope_type": "default"})
    rp["rope_type"] = rp.pop("type", rp.get("rope_type"))
    rp["rope_theta"] = cfg.pop("rope_theta")
    cfg["rope_parameters"] = rp
    cfg["dtype"] = cfg.pop("torch_dtype")
    return spec


VARIANTS.update({
    # the scaled variants above in v5's form (plain RoPE's ids must differ here too)
    "llama3-rope-v5": _as_v5(copy.deepcopy(VARIANTS["llama3-rope"])),
    "linear-rope-v5": _as_v5(copy.deepcopy(VARIANTS["linear-rope"])),
    # a file with both forms saying the same (a v4 config with rope_parameters added by hand)
    "llama3-rope-both": copy.deepcopy(VARIANTS["llama3-rope"]),
    # rope_parameters with rope_theta alone (v5 takes rope_type "default" then)
    "qwen2.5-v5-theta-only": copy.deepcopy(REAL_V5["qwen2.5-0.5b-v5"]),
})
VARIANTS["qwen2.5-v5-theta-only"]["cfg"]["rope_parameters"] = {"rope_theta": 1000000.0}
VARIANTS["llama3-rope-both"]["cfg"]["rope_parameters"] = dict(
    VARIANTS["llama3-rope"]["cfg"]["rope_scaling"], rope_theta=10000)

# ---- as full dumps ---------------------------------------------------------------------------
# A config.json written by config.to_dict() (conversion scripts, json.dump of a loaded model's
# config, older transformers, the text config nested in a vision-language model's) carries every
# attribute of transformers' PretrainedConfig, not only those that differ from the defaults as
# save_pretrained writes. PRETRAINED_CONFIG_DEFAULTS is what PretrainedConfig().to_dict() gives
# in transformers 4.48 (configuration_utils.py: PretrainedConfig.__init__'s defaults and
# _get_generation_defaults(); to_dict drops _commit_hash and _attn_implementation_internal and
# adds model_type and transformers_version; id2label / label2id are num_labels 2's, with JSON's
# string keys; _attn_implementation_autoset is new in 4.48). The full dumps below are a REAL
# config with these, the model class's own defaults it leaves out, and the bookkeeping a loaded
# model's config has; same weights (same seed), so the same greedy ids as the plain config.
# The refusals of test-llm-hf-configs.py change one key of them from its default.

PRETRAINED_CONFIG_DEFAULTS = {
    "return_dict": True, "output_hidden_states": False, "output_attentions": False,
    "torchscript": False, "torch_dtype": None, "use_bfloat16": False, "tf_legacy_loss": False,
    "pruned_heads": {}, "tie_word_embeddings": True, "chunk_size_feed_forward": 0,
    "is_encoder_decoder": False, "is_decoder": False, "cross_attention_hidden_size": None,
    "add_cross_attention": False, "tie_encoder_decoder": False,
    # generate()'s defaults
    "max_length": 20, "min_length": 0, "do_sample": False, "early_stopping": False,
    "num_beams": 1, "num_beam_groups": 1, "diversity_penalty": 0.0, "temperature": 1.0,
    "top_k": 50, "top_p": 1.0, "typical_p": 1.0, "repetition_penalty": 1.0,
    "length_penalty": 1.0, "no_repeat_ngram_size": 0, "encoder_no_repeat_ngram_size": 0,
    "bad_words_ids": None, "num_return_sequences": 1, "output_scores": False,
    "return_dict_in_generate": False, "forced_bos_token_id": None, "forced_eos_token_id": None,
    "remove_invalid_values": False, "exponential_decay_length_penalty": None,
    "suppress_tokens": None, "begin_suppress_tokens": None,
    # fine-tuning task, tokenizer
    "architectures": None, "finetuning_task": None, "id2label": {"0": "LABEL_0", "1": "LABEL_1"},
    "label2id": {"LABEL_0": 0, "LABEL_1": 1}, "tokenizer_class": None, "prefix": None,
    "bos_token_id": None, "pad_token_id": None, "eos_token_id": None, "sep_token_id": None,
    "decoder_start_token_id": None, "task_specific_params": None, "problem_type": None,
    # bookkeeping
    "_name_or_path": "", "_attn_implementation_autoset": False,
    "transformers_version": "4.48.0",
}


def _full_dump(base, class_defaults, **bookkeeping):
    spec = copy.deepcopy(REAL[base])
    cfg = dict(PRETRAINED_CONFIG_DEFAULTS)
    cfg.update(class_defaults)
    cfg.update(spec["cfg"])
    cfg.update(bookkeeping)
    spec["cfg"] = dict(sorted(cfg.items()))  # to_json_string's sort_keys
    spec["base"] = base
    return spec


FULL_DUMPS = {
    # GPT2Config(**gpt2's config.json).to_dict(): the generic keys exactly as
    # PretrainedConfig().to_dict() (no torch_dtype in the hub file: null), GPT2Config's defaults
    "gpt2-full": _full_dump("gpt2", {
        "n_inner": None, "scale_attn_weights": True, "scale_attn_by_inverse_layer_idx": False,
        "reorder_and_upcast_attn": False, "use_cache": True}),
    # a loaded TinyLlama's model.config.to_dict() in 4.48: _name_or_path the repository,
    # _attn_implementation_autoset set by the model, LlamaConfig's defaults and head_dim
    "tinyllama-full": _full_dump("tinyllama-1.1b-chat", {
        "attention_dropout": 0.0, "mlp_bias": False, "head_dim": 8},
        _name_or_path="TinyLlama/TinyLlama-1.1B-Chat-v1.0", _attn_implementation_autoset=True),
    # Qwen2.5-0.5B's as transformers 4.43 dumped it (before _attn_implementation_autoset), with
    # the attn_implementation key a vision-language model's nested text config carries
    "qwen2.5-full": _full_dump("qwen2.5-0.5b", {"rope_scaling": None},
                               _name_or_path="Qwen/Qwen2.5-0.5B", transformers_version="4.43.1",
                               attn_implementation="flash_attention_2"),
}
del FULL_DUMPS["qwen2.5-full"]["cfg"]["_attn_implementation_autoset"]
# the same keys as older tools wrote them, and generate() defaults that are not the defaults
# (npu-generate's options replace them, as generation_config.json's): transformers 2.x / 3.x's
# output_past, num_labels and xla_device, 4.34-4.35's _flash_attn_2_enabled, a json.dump of
# vars(config)'s _commit_hash and _attn_implementation_internal; the greedy ids are unchanged
FULL_DUMPS["tinyllama-full-legacy"] = copy.deepcopy(FULL_DUMPS["tinyllama-full"])
FULL_DUMPS["tinyllama-full-legacy"]["cfg"].update({
    "output_past": True, "num_labels": 2, "xla_device": None, "_flash_attn_2_enabled": True,
    "_commit_hash": "0123456789abcdef0123456789abcdef01234567",
    "_attn_implementation_internal": "sdpa", "_attn_implementation": "sdpa",
    "do_sample": True, "temperature": 0.7, "top_k": 20, "top_p": 0.8, "num_beams": 4,
    "repetition_penalty": 1.3, "no_repeat_ngram_size": 3, "max_length": 4096,
    "bad_words_ids": [[5]], "suppress_tokens": [7], "forced_eos_token_id": 2,
    "output_hidden_states": True, "output_attentions": True, "return_dict": False,
    "torchscript": True, "chunk_size_feed_forward": 16, "is_decoder": True,
    "quantization_config": None})

# the seeds whose greedy ids vary, never reach an EOS in the vocabulary and keep each step's
# top-1 margin clear (gen-llm.py's criterion); test-llm-hf-configs.py --search finds them
SEEDS = {
    "llama-3.2-1b": 12,
    "llama-3.2-1b-instruct": 12,
    "qwen2.5-0.5b": 4,
    "qwen2.5-0.5b-instruct": 4,
    "smollm2-135m": 1,
    "tinyllama-1.1b-chat": 5,
    "gpt2": 10,
    "distilgpt2": 10,
    "llama3-rope": 6,
    "linear-rope": 3,
    "head-dim-32": 0,
    "head-dim-16-of-60": 1,
    "llama-3.2-1b-v5": 12,
    "qwen2.5-0.5b-v5": 4,
    "llama3-rope-v5": 6,
    "linear-rope-v5": 3,
    "llama3-rope-both": 6,
    "qwen2.5-v5-theta-only": 4,
    "gpt2-dtype": 10,
    "llama-2-7b": 1,
    "r1-distill-qwen-1.5b": 6,
    "smollm2-360m-instruct": 0,
}


def specs():
    """name -> spec (dtype, scale, cfg, gen) of every model of the test."""
    out = dict(REAL)
    out.update(REAL_V5)
    out.update(VARIANTS)
    return out

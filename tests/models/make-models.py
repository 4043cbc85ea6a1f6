#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Test models for OpenNPU, exported by PyTorch's own ONNX exporter.

The graphs are what torch.onnx.export (torch 1.13) really emits for modules
written the way Hugging Face writes them: shape subgraphs (Shape, Gather,
Concat, Reshape), Constant nodes, Casts, Where masks, Range position ids,
decomposed tanh-GELU, Gemm vs MatMul+Add, fused or kept BatchNormalization,
external data. Every model directory holds:

    model.onnx                 (and model.onnx.data for external data)
    in.<input name>.npy        fixed seeded inputs
    out.<output file>.npy      torch's outputs for those inputs (eval mode); the
                               file is named as npu-run names output files
    meta.txt                   dims to pass to npu-run (--dims), one line
    batchN/                    (siglip_tiny, gpt2_tiny) the same for batch N

Usage:
    make-models.py [--out DIR] [MODEL ...]      default: the checked-in set
    make-models.py --out DIR siglip_b16         SigLIP-B/16 dims, ~350 MB (benchmarks)

Models (docs/models.md has the full description):
    siglip_tiny     SigLIP-style ViT: 32 px, patch 8, width 64, 2 layers, 4 heads,
                    MLP 128, attention-pooling head; dynamic batch; opset 17
                    (LayerNormalization kept as one op)
    siglip_b16      the same module at SigLIP-B/16 dims (224 px, patch 16, 12 layers,
                    width 768, 12 heads, MLP 3072); opset 17; built on demand only
    gpt2_tiny       GPT-2-style decoder: vocab 512, 16 tokens, width 64, 2 layers,
                    4 heads, MLP 256, tied LM head, HF causal mask and additive
                    attention_mask; dynamic batch; opset 14
                    (LayerNorm decomposed into ReduceMean/Sub/Pow/Sqrt/Div)
    linear_gelu     Linear(16, 32) + exact (erf) GELU; opset 13
    cnn_small       conv-bn-relu-maxpool, conv-relu-bn-avgpool, flatten, Linear (Gemm)
    external_data   small MLP whose weights live in model.onnx.data
    dynamic_batch   small conv + MLP with a symbolic 'batch' dim
    odd_names       y = 2x, x + 1, -x under output names that are not file names
                    ("out/scores:0", "out_scores_0", ".hidden"); out.*.npy use
                    the file names npu-run is documented to write
"""
import argparse
import math
import os
import sys

import numpy as np
import onnx
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
SEED = 20240501


# ---------------------------------------------------------------- SigLIP ----

class SiglipCfg:
    def __init__(self, image=32, patch=8, channels=3, width=64, layers=2, heads=4, mlp=128,
                 eps=1e-6):
        self.image, self.patch, self.channels = image, patch, channels
        self.width, self.layers, self.heads, self.mlp, self.eps = width, layers, heads, mlp, eps


class SiglipMLP(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.fc1 = nn.Linear(c.width, c.mlp)
        self.fc2 = nn.Linear(c.mlp, c.width)

    def forward(self, x):
        # HF's "gelu_pytorch_tanh"
        return self.fc2(F.gelu(self.fc1(x), approximate="tanh"))


class SiglipAttention(nn.Module):
    """Written as HF SiglipAttention: q/k/v Linear, view + transpose heads,
    matmul, scale, softmax in fp32, matmul, transpose back, out proj."""

    def __init__(self, c):
        super().__init__()
        self.embed_dim, self.num_heads = c.width, c.heads
        self.head_dim = c.width // c.heads
        self.scale = self.head_dim ** -0.5
        self.q_proj = nn.Linear(c.width, c.width)
        self.k_proj = nn.Linear(c.width, c.width)
        self.v_proj = nn.Linear(c.width, c.width)
        self.out_proj = nn.Linear(c.width, c.width)

    def forward(self, hidden_states):
        batch_size, q_len, _ = hidden_states.size()
        q = self.q_proj(hidden_states)
        k = self.k_proj(hidden_states)
        v = self.v_proj(hidden_states)
        q = q.view(batch_size, q_len, self.num_heads, self.head_dim).transpose(1, 2)
        k = k.view(batch_size, q_len, self.num_heads, self.head_dim).transpose(1, 2)
        v = v.view(batch_size, q_len, self.num_heads, self.head_dim).transpose(1, 2)
        attn_weights = torch.matmul(q, k.transpose(2, 3)) * self.scale
        attn_weights = F.softmax(attn_weights, dim=-1, dtype=torch.float32).to(q.dtype)
        attn_output = torch.matmul(attn_weights, v)
        attn_output = attn_output.transpose(1, 2).contiguous()
        attn_output = attn_output.reshape(batch_size, q_len, self.embed_dim)
        return self.out_proj(attn_output)


class SiglipEncoderLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.layer_norm1 = nn.LayerNorm(c.width, eps=c.eps)
        self.self_attn = SiglipAttention(c)
        self.layer_norm2 = nn.LayerNorm(c.width, eps=c.eps)
        self.mlp = SiglipMLP(c)

    def forward(self, x):
        x = x + self.self_attn(self.layer_norm1(x))
        return x + self.mlp(self.layer_norm2(x))


class SiglipPoolingHead(nn.Module):
    """SigLIP's MultiheadAttentionPoolingHead: a learned probe attends over the
    tokens through torch.nn.MultiheadAttention, then LayerNorm + MLP residual."""

    def __init__(self, c):
        super().__init__()
        self.probe = nn.Parameter(torch.randn(1, 1, c.width))
        self.attention = nn.MultiheadAttention(c.width, c.heads, batch_first=True)
        self.layernorm = nn.LayerNorm(c.width, eps=c.eps)
        self.mlp = SiglipMLP(c)

    def forward(self, hidden_state):
        batch_size = hidden_state.shape[0]
        probe = self.probe.repeat(batch_size, 1, 1)
        hidden_state = self.attention(probe, hidden_state, hidden_state)[0]
        residual = hidden_state
        hidden_state = self.layernorm(hidden_state)
        hidden_state = residual + self.mlp(hidden_state)
        return hidden_state[:, 0]


class SiglipVision(nn.Module):
    def __init__(self, c):
        super().__init__()
        # HF writes padding="valid"; torch 1.13's exporter cannot export the
        # string form (aten::_convolution_mode), and 0 is the same convolution.
        self.patch_embedding = nn.Conv2d(c.channels, c.width, kernel_size=c.patch,
                                         stride=c.patch, padding=0)
        self.num_positions = (c.image // c.patch) ** 2
        self.position_embedding = nn.Embedding(self.num_positions, c.width)
        self.register_buffer("position_ids",
                             torch.arange(self.num_positions).expand((1, -1)), persistent=False)
        self.layers = nn.ModuleList([SiglipEncoderLayer(c) for _ in range(c.layers)])
        self.post_layernorm = nn.LayerNorm(c.width, eps=c.eps)
        self.head = SiglipPoolingHead(c)

    def forward(self, pixel_values):
        patch_embeds = self.patch_embedding(pixel_values)
        x = patch_embeds.flatten(2).transpose(1, 2)
        x = x + self.position_embedding(self.position_ids)
        for layer in self.layers:
            x = layer(x)
        last_hidden_state = self.post_layernorm(x)
        pooled = self.head(last_hidden_state)
        return last_hidden_state, pooled


def randomise(module):
    """Seeded random weights that keep activations O(1), so that every op does
    visible work: weights ~ N(0, 1/fan_in), embeddings and the probe ~ N(0, 1),
    LayerNorm gains ~ 1 + N(0, 0.1^2), biases ~ N(0, 0.05^2)."""
    g = torch.Generator().manual_seed(SEED)

    def rn(shape, s):
        return s * torch.randn(shape, generator=g)

    with torch.no_grad():
        for m in module.modules():
            if isinstance(m, nn.LayerNorm):
                m.weight.copy_(1.0 + rn(m.weight.shape, 0.1))
                m.bias.copy_(rn(m.bias.shape, 0.05))
            elif isinstance(m, nn.Embedding):
                m.weight.copy_(rn(m.weight.shape, 1.0))
            elif isinstance(m, (nn.Linear, nn.Conv2d)):
                fan_in = m.weight[0].numel()
                m.weight.copy_(rn(m.weight.shape, 1.0 / math.sqrt(fan_in)))
                if m.bias is not None:
                    m.bias.copy_(rn(m.bias.shape, 0.05))
            elif isinstance(m, Conv1D):
                m.weight.copy_(rn(m.weight.shape, 1.0 / math.sqrt(m.weight.shape[0])))
                m.bias.copy_(rn(m.bias.shape, 0.05))
            elif isinstance(m, nn.MultiheadAttention):
                m.in_proj_weight.copy_(rn(m.in_proj_weight.shape,
                                          1.0 / math.sqrt(m.embed_dim)))
                m.in_proj_bias.copy_(rn(m.in_proj_bias.shape, 0.05))
            elif isinstance(m, SiglipPoolingHead):
                m.probe.copy_(rn(m.probe.shape, 1.0))


# ----------------------------------------------------------------- GPT-2 ----

class GPT2Cfg:
    def __init__(self, vocab=512, positions=32, seq=16, width=64, layers=2, heads=4, eps=1e-5):
        self.vocab, self.positions, self.seq = vocab, positions, seq
        self.width, self.layers, self.heads, self.eps = width, layers, heads, eps
        self.inner = 4 * width


class Conv1D(nn.Module):
    """HF GPT-2's transposed Linear: addmm(bias, x.view(-1, nx), weight)."""

    def __init__(self, nf, nx):
        super().__init__()
        self.nf = nf
        self.weight = nn.Parameter(torch.empty(nx, nf))
        self.bias = nn.Parameter(torch.zeros(nf))

    def forward(self, x):
        size_out = x.size()[:-1] + (self.nf,)
        x = torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight)
        return x.view(size_out)


def gelu_new(x):
    # HF's NewGELUActivation ("gelu_new"), as GPT-2 uses it.
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) *
                                       (x + 0.044715 * torch.pow(x, 3.0))))


class GPT2Attention(nn.Module):
    def __init__(self, c):
        super().__init__()
        n = c.positions
        self.register_buffer("bias", torch.tril(torch.ones((n, n), dtype=torch.bool))
                             .view(1, 1, n, n), persistent=False)
        self.embed_dim, self.num_heads = c.width, c.heads
        self.head_dim = c.width // c.heads
        self.split_size = c.width
        self.c_attn = Conv1D(3 * c.width, c.width)
        self.c_proj = Conv1D(c.width, c.width)

    def _split_heads(self, t):
        t = t.view(t.size()[:-1] + (self.num_heads, self.head_dim))
        return t.permute(0, 2, 1, 3)

    def _merge_heads(self, t):
        t = t.permute(0, 2, 1, 3).contiguous()
        return t.view(t.size()[:-2] + (self.num_heads * self.head_dim,))

    def _attn(self, query, key, value, attention_mask):
        attn_weights = torch.matmul(query, key.transpose(-1, -2))
        attn_weights = attn_weights / torch.full([], value.size(-1) ** 0.5,
                                                 dtype=attn_weights.dtype)
        query_length, key_length = query.size(-2), key.size(-2)
        causal_mask = self.bias[:, :, key_length - query_length:key_length, :key_length]
        mask_value = torch.finfo(attn_weights.dtype).min
        mask_value = torch.full([], mask_value, dtype=attn_weights.dtype)
        attn_weights = torch.where(causal_mask, attn_weights.to(attn_weights.dtype), mask_value)
        attn_weights = attn_weights + attention_mask
        attn_weights = F.softmax(attn_weights, dim=-1)
        attn_weights = attn_weights.type(value.dtype)
        return torch.matmul(attn_weights, value)

    def forward(self, hidden_states, attention_mask):
        query, key, value = self.c_attn(hidden_states).split(self.split_size, dim=2)
        query, key, value = self._split_heads(query), self._split_heads(key), \
            self._split_heads(value)
        a = self._attn(query, key, value, attention_mask)
        return self.c_proj(self._merge_heads(a))


class GPT2MLP(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c_fc = Conv1D(c.inner, c.width)
        self.c_proj = Conv1D(c.width, c.inner)

    def forward(self, x):
        return self.c_proj(gelu_new(self.c_fc(x)))


class GPT2Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.ln_1 = nn.LayerNorm(c.width, eps=c.eps)
        self.attn = GPT2Attention(c)
        self.ln_2 = nn.LayerNorm(c.width, eps=c.eps)
        self.mlp = GPT2MLP(c)

    def forward(self, x, attention_mask):
        x = x + self.attn(self.ln_1(x), attention_mask)
        return x + self.mlp(self.ln_2(x))


class GPT2LM(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.wte = nn.Embedding(c.vocab, c.width)
        self.wpe = nn.Embedding(c.positions, c.width)
        self.h = nn.ModuleList([GPT2Block(c) for _ in range(c.layers)])
        self.ln_f = nn.LayerNorm(c.width, eps=c.eps)
        self.lm_head = nn.Linear(c.width, c.vocab, bias=False)

    def tie(self):
        self.lm_head.weight = self.wte.weight

    def forward(self, input_ids, attention_mask):
        input_shape = input_ids.size()
        input_ids = input_ids.view(-1, input_shape[-1])
        position_ids = torch.arange(0, input_shape[-1], dtype=torch.long)
        position_ids = position_ids.unsqueeze(0).view(-1, input_shape[-1])
        # HF GPT2Model: [batch, 1, 1, seq] additive mask of finfo.min where 0.
        batch_size = input_ids.shape[0]
        attention_mask = attention_mask.view(batch_size, -1)
        attention_mask = attention_mask[:, None, None, :]
        attention_mask = attention_mask.to(dtype=torch.float32)
        attention_mask = (1.0 - attention_mask) * torch.finfo(torch.float32).min
        x = self.wte(input_ids) + self.wpe(position_ids)
        for block in self.h:
            x = block(x, attention_mask)
        x = self.ln_f(x)
        return self.lm_head(x)


# ----------------------------------------------------------- small ones ----

class LinearGelu(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 32)

    def forward(self, x):
        return F.gelu(self.fc(x))


class SmallCNN(nn.Module):
    """conv-bn-relu (the exporter folds this BN into the conv), then
    conv-relu-bn (this BN stays a BatchNormalization node), pools, Gemm."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(16)
        self.fc = nn.Linear(16 * 4 * 4, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        x = F.avg_pool2d(self.bn2(F.relu(self.conv2(x))), 2)
        return self.fc(torch.flatten(x, 1))


class SmallMLP(nn.Module):
    def __init__(self, n_in=32, hidden=64, n_out=8):
        super().__init__()
        self.fc1 = nn.Linear(n_in, hidden)
        self.fc2 = nn.Linear(hidden, n_out)

    def forward(self, x):
        return torch.softmax(self.fc2(torch.tanh(self.fc1(x))), dim=-1)


class OddNames(nn.Module):
    """Three outputs whose names are not file names: npu-run's renaming."""

    def forward(self, x):
        return x * 2.0, x + 1.0, -x


class DynBatch(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3)
        self.fc = nn.Linear(4 * 6 * 6, 5)

    def forward(self, x):
        x = torch.sigmoid(self.conv(x))
        return self.fc(x.reshape(x.shape[0], -1))


# ------------------------------------------------------------ exporting ----

def set_bn_stats(module):
    """Non-trivial running statistics so that BatchNormalization does work."""
    g = torch.Generator().manual_seed(SEED + 1)
    for m in module.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.copy_(0.1 * torch.randn(m.running_mean.shape, generator=g))
            m.running_var.copy_(0.5 + torch.rand(m.running_var.shape, generator=g))


def npu_run_file_name(names, k):
    """The file npu-run writes output k to (npu-run --help, OUTPUT FILES),
    written independently here so that the test checks the tool."""
    def one(i):
        n = "".join(c if (c.isascii() and (c.isalnum() or c in "._-")) else "_"
                    for c in names[i])[:200]
        if not n:
            return "output%d" % i
        return "_" + n[1:] if n[0] == "." else n
    base = one(k)
    return base + "-%d" % k if base in [one(j) for j in range(k)] else base


def export(name, module, inputs, input_names, output_names, outdir, opset, dynamic_axes=None,
           dims="", external=False):
    d = os.path.join(outdir, name)
    os.makedirs(d, exist_ok=True)
    module.eval()
    path = os.path.join(d, "model.onnx")
    with torch.no_grad():
        torch.onnx.export(module, tuple(inputs), path, input_names=input_names,
                          output_names=output_names, opset_version=opset,
                          dynamic_axes=dynamic_axes or {}, do_constant_folding=True)
        outs = module(*inputs)
    if not isinstance(outs, (tuple, list)):
        outs = (outs,)
    if external:
        m = onnx.load(path)
        for f in os.listdir(d):
            if f.startswith("model.onnx"):
                os.remove(os.path.join(d, f))
        # What HF/optimum do for big models: one side file, every tensor in it.
        onnx.save_model(m, path, save_as_external_data=True, all_tensors_to_one_file=True,
                        location="model.onnx.data", size_threshold=0)
    elif os.path.getsize(path) > 1.5e9:
        pass  # torch writes external data itself past 2 GB; nothing to do
    onnx.checker.check_model(path)
    for n, t in zip(input_names, inputs):
        np.save(os.path.join(d, "in.%s.npy" % n), t.numpy())
    for k, t in enumerate(outs):
        np.save(os.path.join(d, "out.%s.npy" % npu_run_file_name(output_names, k)),
                t.detach().numpy())
    with open(os.path.join(d, "meta.txt"), "w") as f:
        f.write(dims + "\n")
    ops = sorted({n.op_type for n in onnx.load(path, load_external_data=False).graph.node})
    print("%s: %s (%d bytes), ops: %s" % (name, path, os.path.getsize(path), " ".join(ops)))


def extra_data_set(outdir, name, module, inputs, input_names, output_names, subdir, dims):
    """A second set of inputs and torch outputs for the same model, in
    <model>/<subdir>/, run with --dims (another batch size: exercises the
    shape subgraphs the exporter left in the graph)."""
    d = os.path.join(outdir, name, subdir)
    os.makedirs(d, exist_ok=True)
    module.eval()
    with torch.no_grad():
        outs = module(*inputs)
    if not isinstance(outs, (tuple, list)):
        outs = (outs,)
    for n, t in zip(input_names, inputs):
        np.save(os.path.join(d, "in.%s.npy" % n), t.numpy())
    for k, t in enumerate(outs):
        np.save(os.path.join(d, "out.%s.npy" % npu_run_file_name(output_names, k)),
                t.detach().numpy())
    with open(os.path.join(d, "meta.txt"), "w") as f:
        f.write(dims + "\n")


def make_siglip(outdir, name, cfg):
    torch.manual_seed(SEED)
    m = SiglipVision(cfg)
    randomise(m)
    g = torch.Generator().manual_seed(SEED + 2)
    x = torch.randn(1, cfg.channels, cfg.image, cfg.image, generator=g)
    export(name, m, [x], ["pixel_values"], ["last_hidden_state", "pooler_output"], outdir,
           opset=17, dynamic_axes={"pixel_values": {0: "batch"},
                                   "last_hidden_state": {0: "batch"},
                                   "pooler_output": {0: "batch"}})
    if name == "siglip_tiny":
        x2 = torch.randn(2, cfg.channels, cfg.image, cfg.image, generator=g)
        extra_data_set(outdir, name, m, [x2], ["pixel_values"],
                       ["last_hidden_state", "pooler_output"], "batch2", "batch=2")


def make_gpt2(outdir):
    torch.manual_seed(SEED)
    c = GPT2Cfg()
    m = GPT2LM(c)
    randomise(m)
    m.tie()
    g = torch.Generator().manual_seed(SEED + 3)
    ids = torch.randint(0, c.vocab, (1, c.seq), generator=g, dtype=torch.int64)
    mask = torch.ones(1, c.seq, dtype=torch.int64)
    mask[0, -3:] = 0  # right padding: every row keeps at least one key
    # Batch is symbolic, as in HF/optimum exports: the shape arithmetic of
    # view()/size() then stays in the graph as Shape/Gather/Concat subgraphs.
    export("gpt2_tiny", m, [ids, mask], ["input_ids", "attention_mask"], ["logits"], outdir,
           opset=14, dynamic_axes={"input_ids": {0: "batch"}, "attention_mask": {0: "batch"},
                                   "logits": {0: "batch"}})
    ids3 = torch.randint(0, c.vocab, (3, c.seq), generator=g, dtype=torch.int64)
    mask3 = torch.ones(3, c.seq, dtype=torch.int64)
    mask3[1, -5:] = 0
    mask3[2, -1:] = 0
    extra_data_set(outdir, "gpt2_tiny", m, [ids3, mask3], ["input_ids", "attention_mask"],
                   ["logits"], "batch3", "batch=3")


def make_small(outdir, which):
    torch.manual_seed(SEED)
    g = torch.Generator().manual_seed(SEED + 4)
    if which == "linear_gelu":
        m = LinearGelu()
        randomise(m)
        export(which, m, [torch.randn(2, 16, generator=g)], ["x"], ["y"], outdir, opset=13)
    elif which == "cnn_small":
        m = SmallCNN()
        randomise(m)
        set_bn_stats(m)
        export(which, m, [torch.randn(1, 3, 16, 16, generator=g)], ["image"], ["logits"], outdir,
               opset=13)
    elif which == "external_data":
        m = SmallMLP()
        randomise(m)
        export(which, m, [torch.randn(4, 32, generator=g)], ["features"], ["probs"], outdir,
               opset=13, external=True)
    elif which == "odd_names":
        export(which, OddNames(), [torch.randn(2, 3, generator=g)], ["x"],
               ["out/scores:0", "out_scores_0", ".hidden"], outdir, opset=13)
    elif which == "dynamic_batch":
        m = DynBatch()
        randomise(m)
        export(which, m, [torch.randn(3, 1, 8, 8, generator=g)], ["x"], ["y"], outdir, opset=13,
               dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}}, dims="batch=3")
    else:
        raise SystemExit("unknown model " + which)


DEFAULT = ["siglip_tiny", "gpt2_tiny", "linear_gelu", "cnn_small", "external_data",
           "dynamic_batch", "odd_names"]


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(HERE, "data"))
    ap.add_argument("models", nargs="*", default=DEFAULT)
    a = ap.parse_args()
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    for name in a.models:
        if name == "siglip_tiny":
            make_siglip(a.out, name, SiglipCfg())
        elif name == "siglip_b16":
            make_siglip(a.out, name, SiglipCfg(image=224, patch=16, width=768, layers=12,
                                               heads=12, mlp=3072))
        elif name == "gpt2_tiny":
            make_gpt2(a.out)
        else:
            make_small(a.out, name)


if __name__ == "__main__":
    sys.exit(main())

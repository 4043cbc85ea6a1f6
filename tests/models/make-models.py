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
    make-models.py --out DIR mobilenet_v1 ...   the timing model's calibration networks
                                                (BENCH: docs/models.md, docs/performance.md)

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


# ------------------------------------------------------------------ BERT ----

class BertCfg:
    def __init__(self, vocab=128, positions=32, types=2, width=64, layers=2, heads=4, inner=128,
                 eps=1e-12):
        self.vocab, self.positions, self.types = vocab, positions, types
        self.width, self.layers, self.heads, self.inner, self.eps = width, layers, heads, inner, eps


class BertEmbeddings(nn.Module):
    """HF BertEmbeddings: word + token_type + absolute position embeddings
    (position_ids a buffer sliced to the sequence), LayerNorm."""

    def __init__(self, c):
        super().__init__()
        self.word_embeddings = nn.Embedding(c.vocab, c.width)
        self.position_embeddings = nn.Embedding(c.positions, c.width)
        self.token_type_embeddings = nn.Embedding(c.types, c.width)
        self.LayerNorm = nn.LayerNorm(c.width, eps=c.eps)
        self.register_buffer("position_ids", torch.arange(c.positions).expand((1, -1)),
                             persistent=False)

    def forward(self, input_ids, token_type_ids):
        seq_length = input_ids.size()[1]
        position_ids = self.position_ids[:, 0:seq_length]
        embeddings = self.word_embeddings(input_ids) + self.token_type_embeddings(token_type_ids)
        embeddings = embeddings + self.position_embeddings(position_ids)
        return self.LayerNorm(embeddings)


class BertSelfAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.num_attention_heads = c.heads
        self.attention_head_size = c.width // c.heads
        self.all_head_size = c.width
        self.query = nn.Linear(c.width, c.width)
        self.key = nn.Linear(c.width, c.width)
        self.value = nn.Linear(c.width, c.width)

    def transpose_for_scores(self, x):
        new_x_shape = x.size()[:-1] + (self.num_attention_heads, self.attention_head_size)
        x = x.view(new_x_shape)
        return x.permute(0, 2, 1, 3)

    def forward(self, hidden_states, attention_mask):
        query_layer = self.transpose_for_scores(self.query(hidden_states))
        key_layer = self.transpose_for_scores(self.key(hidden_states))
        value_layer = self.transpose_for_scores(self.value(hidden_states))
        attention_scores = torch.matmul(query_layer, key_layer.transpose(-1, -2))
        attention_scores = attention_scores / math.sqrt(self.attention_head_size)
        attention_scores = attention_scores + attention_mask
        attention_probs = F.softmax(attention_scores, dim=-1)
        context_layer = torch.matmul(attention_probs, value_layer)
        context_layer = context_layer.permute(0, 2, 1, 3).contiguous()
        new_context_layer_shape = context_layer.size()[:-2] + (self.all_head_size,)
        return context_layer.view(new_context_layer_shape)


class BertLayer(nn.Module):
    """Post-LN: LayerNorm(x + dense(attn)), LayerNorm(h + dense(gelu(dense(h))))."""

    def __init__(self, c):
        super().__init__()
        self.attention = BertSelfAttention(c)
        self.attn_out = nn.Linear(c.width, c.width)
        self.attn_ln = nn.LayerNorm(c.width, eps=c.eps)
        self.intermediate = nn.Linear(c.width, c.inner)
        self.output = nn.Linear(c.inner, c.width)
        self.out_ln = nn.LayerNorm(c.width, eps=c.eps)

    def forward(self, x, attention_mask):
        h = self.attn_ln(self.attn_out(self.attention(x, attention_mask)) + x)
        return self.out_ln(self.output(F.gelu(self.intermediate(h))) + h)


class BertModel(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embeddings = BertEmbeddings(c)
        self.layer = nn.ModuleList([BertLayer(c) for _ in range(c.layers)])
        self.pooler = nn.Linear(c.width, c.width)

    def forward(self, input_ids, attention_mask, token_type_ids):
        # HF get_extended_attention_mask
        dtype = torch.float32
        extended = attention_mask[:, None, None, :]
        extended = extended.to(dtype=dtype)
        extended = (1.0 - extended) * torch.finfo(dtype).min
        x = self.embeddings(input_ids, token_type_ids)
        for layer in self.layer:
            x = layer(x, extended)
        pooled = torch.tanh(self.pooler(x[:, 0]))
        return x, pooled


class RobertaEmbeddings(nn.Module):
    """HF RobertaEmbeddings: position ids from the padding mask by CumSum
    (create_position_ids_from_input_ids), padding_idx 1, one token type."""

    def __init__(self, c, padding_idx=1):
        super().__init__()
        self.padding_idx = padding_idx
        self.word_embeddings = nn.Embedding(c.vocab, c.width, padding_idx=padding_idx)
        self.position_embeddings = nn.Embedding(c.positions + padding_idx + 1, c.width,
                                                padding_idx=padding_idx)
        self.token_type_embeddings = nn.Embedding(1, c.width)
        self.LayerNorm = nn.LayerNorm(c.width, eps=c.eps)

    def forward(self, input_ids):
        mask = input_ids.ne(self.padding_idx).int()
        incremental_indices = torch.cumsum(mask, dim=1).type_as(mask) * mask
        position_ids = incremental_indices.long() + self.padding_idx
        token_type_ids = torch.zeros(input_ids.size(), dtype=torch.long)
        e = self.word_embeddings(input_ids) + self.token_type_embeddings(token_type_ids)
        return self.LayerNorm(e + self.position_embeddings(position_ids))


class RobertaModel(nn.Module):
    """BERT's layers under RoBERTa's embeddings; the mask made with
    torch.where on a bool, opset 17 (LayerNormalization kept)."""

    def __init__(self, c):
        super().__init__()
        self.embeddings = RobertaEmbeddings(c)
        self.layer = nn.ModuleList([BertLayer(c) for _ in range(c.layers)])

    def forward(self, input_ids, attention_mask):
        m = attention_mask[:, None, None, :].bool()
        extended = torch.where(m, torch.tensor(0.0), torch.tensor(torch.finfo(torch.float32).min))
        x = self.embeddings(input_ids)
        for layer in self.layer:
            x = layer(x, extended)
        return x


# ------------------------------------------------------------- audio ----

class AudioEncoderTiny(nn.Module):
    """Whisper/wav2vec-style front end: Conv1d + GELU, strided Conv1d + GELU,
    permute to [batch, frames, width], sinusoidal positions (a buffer),
    torch.nn.MultiheadAttention in its default sequence-first layout, LayerNorm,
    mean over frames."""

    def __init__(self, mels=16, width=32, frames=24, heads=4):
        super().__init__()
        self.conv1 = nn.Conv1d(mels, width, 3, padding=1)
        self.conv2 = nn.Conv1d(width, width, 3, stride=2, padding=1)
        pos = torch.arange(frames // 2)[:, None] / (10000 ** (torch.arange(0, width, 2) / width))
        self.register_buffer("positional_embedding",
                             torch.cat([torch.sin(pos), torch.cos(pos)], dim=1))
        self.attn = nn.MultiheadAttention(width, heads)
        self.ln = nn.LayerNorm(width)
        self.pool = nn.AvgPool1d(2)

    def forward(self, mel):
        x = F.gelu(self.conv1(mel))
        x = F.gelu(self.conv2(x))
        x = x.permute(0, 2, 1)
        x = x + self.positional_embedding[: x.shape[1]]
        t = x.transpose(0, 1)                          # [frames, batch, width]
        t = t + self.attn(t, t, t, need_weights=False)[0]
        x = self.ln(t.transpose(0, 1))
        pooled = self.pool(x.transpose(1, 2)).max(dim=-1).values
        return x, pooled


# ------------------------------------------------------------- CLIP text ----

class ClipTextCfg:
    def __init__(self, vocab=128, positions=32, width=64, layers=2, heads=4, mlp=128, eps=1e-5):
        self.vocab, self.positions, self.width = vocab, positions, width
        self.layers, self.heads, self.mlp, self.eps = layers, heads, mlp, eps


class ClipAttention(nn.Module):
    """HF CLIPAttention: q scaled before the product, (bsz*heads, seq, hd)
    views, bmm, causal and padding masks added on a 4-d view."""

    def __init__(self, c):
        super().__init__()
        self.embed_dim, self.num_heads = c.width, c.heads
        self.head_dim = c.width // c.heads
        self.scale = self.head_dim ** -0.5
        self.k_proj = nn.Linear(c.width, c.width)
        self.v_proj = nn.Linear(c.width, c.width)
        self.q_proj = nn.Linear(c.width, c.width)
        self.out_proj = nn.Linear(c.width, c.width)

    def _shape(self, tensor, seq_len, bsz):
        return tensor.view(bsz, seq_len, self.num_heads, self.head_dim).transpose(1, 2) \
            .contiguous()

    def forward(self, hidden_states, attention_mask, causal_attention_mask):
        bsz, tgt_len, embed_dim = hidden_states.size()
        query_states = self.q_proj(hidden_states) * self.scale
        key_states = self._shape(self.k_proj(hidden_states), -1, bsz)
        value_states = self._shape(self.v_proj(hidden_states), -1, bsz)
        proj_shape = (bsz * self.num_heads, -1, self.head_dim)
        query_states = self._shape(query_states, tgt_len, bsz).view(*proj_shape)
        key_states = key_states.view(*proj_shape)
        value_states = value_states.view(*proj_shape)
        src_len = key_states.size(1)
        attn_weights = torch.bmm(query_states, key_states.transpose(1, 2))
        attn_weights = attn_weights.view(bsz, self.num_heads, tgt_len, src_len) + \
            causal_attention_mask
        attn_weights = attn_weights.view(bsz * self.num_heads, tgt_len, src_len)
        attn_weights = attn_weights.view(bsz, self.num_heads, tgt_len, src_len) + attention_mask
        attn_weights = attn_weights.view(bsz * self.num_heads, tgt_len, src_len)
        attn_weights = F.softmax(attn_weights, dim=-1)
        attn_output = torch.bmm(attn_weights, value_states)
        attn_output = attn_output.view(bsz, self.num_heads, tgt_len, self.head_dim)
        attn_output = attn_output.transpose(1, 2)
        attn_output = attn_output.reshape(bsz, tgt_len, embed_dim)
        return self.out_proj(attn_output)


class ClipMLP(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.fc1 = nn.Linear(c.width, c.mlp)
        self.fc2 = nn.Linear(c.mlp, c.width)

    def forward(self, x):
        x = self.fc1(x)
        x = x * torch.sigmoid(1.702 * x)  # HF "quick_gelu"
        return self.fc2(x)


class ClipEncoderLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.self_attn = ClipAttention(c)
        self.layer_norm1 = nn.LayerNorm(c.width, eps=c.eps)
        self.mlp = ClipMLP(c)
        self.layer_norm2 = nn.LayerNorm(c.width, eps=c.eps)

    def forward(self, x, attention_mask, causal_attention_mask):
        x = x + self.self_attn(self.layer_norm1(x), attention_mask, causal_attention_mask)
        return x + self.mlp(self.layer_norm2(x))


class ClipText(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.token_embedding = nn.Embedding(c.vocab, c.width)
        self.position_embedding = nn.Embedding(c.positions, c.width)
        self.register_buffer("position_ids", torch.arange(c.positions).expand((1, -1)))
        self.layers = nn.ModuleList([ClipEncoderLayer(c) for _ in range(c.layers)])
        self.final_layer_norm = nn.LayerNorm(c.width, eps=c.eps)

    @staticmethod
    def _build_causal_attention_mask(bsz, seq_len, dtype):
        # HF CLIPTextTransformer: torch.empty + fill_(finfo.min) + triu_(1)
        mask = torch.empty(bsz, seq_len, seq_len, dtype=dtype)
        mask.fill_(torch.tensor(torch.finfo(dtype).min))
        mask.triu_(1)
        return mask.unsqueeze(1)

    @staticmethod
    def _expand_mask(mask, dtype, tgt_len):
        # HF _expand_mask: [bsz, seq] -> [bsz, 1, tgt, seq], masked_fill(bool, finfo.min)
        bsz, src_len = mask.size()
        expanded = mask[:, None, None, :].expand(bsz, 1, tgt_len, src_len).to(dtype)
        inverted = 1.0 - expanded
        return inverted.masked_fill(inverted.to(torch.bool), torch.finfo(dtype).min)

    def forward(self, input_ids, attention_mask):
        input_shape = input_ids.size()
        input_ids = input_ids.view(-1, input_shape[-1])
        seq_length = input_ids.shape[-1]
        position_ids = self.position_ids[:, :seq_length]
        x = self.token_embedding(input_ids) + self.position_embedding(position_ids)
        bsz, seq_len = input_shape
        causal = self._build_causal_attention_mask(bsz, seq_len, x.dtype)
        mask = self._expand_mask(attention_mask, x.dtype, seq_len)
        for layer in self.layers:
            x = layer(x, mask, causal)
        last_hidden_state = self.final_layer_norm(x)
        # the EOS token (the highest id) is each sequence's summary
        pooled = last_hidden_state[
            torch.arange(last_hidden_state.shape[0]),
            input_ids.to(dtype=torch.int).argmax(dim=-1)]
        return last_hidden_state, pooled


# ------------------------------------------------------------ MobileNet ----

def conv_bn(cin, cout, k, stride=1, groups=1, act=None):
    layers = [nn.Conv2d(cin, cout, k, stride, (k - 1) // 2, groups=groups, bias=False),
              nn.BatchNorm2d(cout)]
    if act is not None:
        layers.append(act())
    return nn.Sequential(*layers)


class InvertedResidualV2(nn.Module):
    """torchvision MobileNetV2's block: 1x1 expand + ReLU6, 3x3 depthwise +
    ReLU6, 1x1 project (linear), residual Add when shapes allow."""

    def __init__(self, cin, cout, stride, expand):
        super().__init__()
        hidden = cin * expand
        self.use_res = stride == 1 and cin == cout
        self.conv = nn.Sequential(conv_bn(cin, hidden, 1, act=nn.ReLU6),
                                  conv_bn(hidden, hidden, 3, stride, groups=hidden, act=nn.ReLU6),
                                  conv_bn(hidden, cout, 1))

    def forward(self, x):
        return x + self.conv(x) if self.use_res else self.conv(x)


class SqueezeExcitation(nn.Module):
    """torchvision's SE: adaptive avg pool, 1x1 fc + ReLU, 1x1 fc + Hardsigmoid, scale."""

    def __init__(self, c, squeeze):
        super().__init__()
        self.fc1 = nn.Conv2d(c, squeeze, 1)
        self.fc2 = nn.Conv2d(squeeze, c, 1)

    def forward(self, x):
        s = F.adaptive_avg_pool2d(x, 1)
        s = F.hardsigmoid(self.fc2(F.relu(self.fc1(s))))
        return s * x


class InvertedResidualV3(nn.Module):
    """MobileNetV3's block: expand + Hardswish, 5x5 depthwise + Hardswish, SE, project."""

    def __init__(self, cin, hidden, cout, k, stride):
        super().__init__()
        self.use_res = stride == 1 and cin == cout
        self.block = nn.Sequential(conv_bn(cin, hidden, 1, act=nn.Hardswish),
                                   conv_bn(hidden, hidden, k, stride, groups=hidden,
                                           act=nn.Hardswish),
                                   SqueezeExcitation(hidden, hidden // 4),
                                   conv_bn(hidden, cout, 1))

    def forward(self, x):
        y = self.block(x)
        return x + y if self.use_res else y


class MobileNetTiny(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.features = nn.Sequential(
            conv_bn(3, 16, 3, 2, act=nn.Hardswish),
            InvertedResidualV2(16, 16, 1, 2),
            InvertedResidualV2(16, 24, 2, 3),
            InvertedResidualV3(24, 48, 24, 5, 1),
            InvertedResidualV3(24, 64, 32, 3, 2),
            conv_bn(32, 96, 1, act=nn.Hardswish))
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(nn.Linear(96, 64), nn.Hardswish(), nn.Dropout(0.2),
                                        nn.Linear(64, classes))

    def forward(self, x):
        x = self.avgpool(self.features(x))
        return self.classifier(torch.flatten(x, 1))


# ------------------------------------------------------------------ UNet ----

class UNetTiny(nn.Module):
    """A small UNet/decoder: MaxPool and strided-conv downsampling,
    ConvTranspose, nearest Upsample by scale, bilinear Resize by scale
    (align_corners False) and to a size (align_corners True), nearest Resize
    to a size read from another tensor's shape, Concat skips, constant and
    reflect Pad, GroupNorm + SiLU, pixel_shuffle (DepthToSpace); height and
    width symbolic."""

    def __init__(self):
        super().__init__()
        self.enc1 = nn.Conv2d(3, 8, 3, padding=1)
        self.enc2 = nn.Conv2d(8, 16, 3, padding=1)
        self.down = nn.Conv2d(16, 16, 3, stride=2, padding=1)
        self.up1 = nn.ConvTranspose2d(16, 16, 2, stride=2)
        self.dec1 = nn.Conv2d(32, 16, 3, padding=1)
        self.dec2 = nn.Conv2d(24, 8, 3, padding=1)
        self.up3 = nn.ConvTranspose2d(8, 4, 3, stride=2, padding=1, output_padding=1)
        self.head = nn.Conv2d(8, 2, 1)
        self.norm = nn.GroupNorm(4, 16)  # diffusers' ResnetBlock2D: GroupNorm + SiLU
        self.sub = nn.Conv2d(8, 8, 3, padding=1)  # ESPCN-style sub-pixel upsampling

    def forward(self, x):
        e1 = F.relu(self.enc1(x))                               # 8 x H x W
        e2 = F.relu(self.enc2(F.max_pool2d(e1, 2)))             # 16 x H/2 x W/2
        b = F.relu(self.down(e2))                               # 16 x H/4 x W/4
        d1 = torch.cat([self.up1(b), e2], dim=1)                # 32 x H/2 x W/2
        d1 = F.silu(self.norm(self.dec1(d1)))
        # torchvision FPN: upsample to the skip's size, read from its shape
        d2 = F.interpolate(d1, size=e1.shape[-2:], mode="nearest")  # 16 x H x W
        d2 = F.relu(self.dec2(torch.cat([d2, e1], dim=1)))      # 8 x H x W
        u = self.up3(d2)                                        # 4 x 32 x 32
        v = F.interpolate(d2, scale_factor=2, mode="bilinear", align_corners=False)
        v = F.pad(v[:, :4], (1, 0, 0, 1))[:, :, :-1, 1:]        # 4 x 2H x 2W
        s = F.pixel_shuffle(self.sub(d2), 2)                    # 2 x 2H x 2W (DepthToSpace)
        y = self.head(torch.cat([u, v], dim=1)) + s             # 2 x 2H x 2W
        side = F.interpolate(F.pad(d2, (1, 1, 2, 0), mode="reflect"), size=(20, 22),
                             mode="bilinear", align_corners=True)
        return y, side


# ----------------------------------------------------------------- LLaMA ----

class LlamaCfg:
    def __init__(self, vocab=128, width=64, layers=2, heads=4, kv_heads=2, inner=96,
                 positions=64, eps=1e-6, theta=10000.0):
        self.vocab, self.width, self.layers, self.heads = vocab, width, layers, heads
        self.kv_heads, self.inner, self.positions, self.eps, self.theta = \
            kv_heads, inner, positions, eps, theta


class LlamaRMSNorm(nn.Module):
    def __init__(self, width, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(width))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        variance = hidden_states.to(torch.float32).pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


class LlamaRotaryEmbedding(nn.Module):
    """HF's cos/sin cache (buffers) sliced to the sequence length."""

    def __init__(self, dim, positions, base):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2).float() / dim))
        t = torch.arange(positions, dtype=inv_freq.dtype)
        freqs = torch.einsum("i,j->ij", t, inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("cos_cached", emb.cos()[None, None, :, :], persistent=False)
        self.register_buffer("sin_cached", emb.sin()[None, None, :, :], persistent=False)

    def forward(self, seq_len):
        return self.cos_cached[:, :, :seq_len], self.sin_cached[:, :, :seq_len]


class LlamaAttention(nn.Module):
    """HF LlamaAttention: rotary q/k (position_ids gather of the cos/sin
    cache), grouped-query attention (repeat_kv: expand + reshape), additive
    causal mask, softmax in fp32."""

    def __init__(self, c):
        super().__init__()
        self.num_heads, self.head_dim = c.heads, c.width // c.heads
        self.num_key_value_heads = c.kv_heads
        self.num_key_value_groups = c.heads // c.kv_heads
        self.q_proj = nn.Linear(c.width, c.heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(c.width, c.kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(c.width, c.kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(c.heads * self.head_dim, c.width, bias=False)
        self.rotary_emb = LlamaRotaryEmbedding(self.head_dim, c.positions, c.theta)

    @staticmethod
    def repeat_kv(hidden_states, n_rep):
        batch, num_key_value_heads, slen, head_dim = hidden_states.shape
        hidden_states = hidden_states[:, :, None, :, :].expand(batch, num_key_value_heads,
                                                               n_rep, slen, head_dim)
        return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)

    def forward(self, hidden_states, attention_mask, position_ids):
        bsz, q_len, _ = hidden_states.size()
        q = self.q_proj(hidden_states).view(bsz, q_len, self.num_heads, self.head_dim)
        k = self.k_proj(hidden_states).view(bsz, q_len, self.num_key_value_heads, self.head_dim)
        v = self.v_proj(hidden_states).view(bsz, q_len, self.num_key_value_heads, self.head_dim)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        cos, sin = self.rotary_emb(q_len)
        cos = cos.squeeze(1).squeeze(0)[position_ids].unsqueeze(1)
        sin = sin.squeeze(1).squeeze(0)[position_ids].unsqueeze(1)
        q = (q * cos) + (rotate_half(q) * sin)
        k = (k * cos) + (rotate_half(k) * sin)
        k = self.repeat_kv(k, self.num_key_value_groups)
        v = self.repeat_kv(v, self.num_key_value_groups)
        attn_weights = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.head_dim)
        attn_weights = attn_weights + attention_mask
        attn_weights = F.softmax(attn_weights, dim=-1, dtype=torch.float32).to(q.dtype)
        attn_output = torch.matmul(attn_weights, v)
        attn_output = attn_output.transpose(1, 2).contiguous().reshape(bsz, q_len, -1)
        return self.o_proj(attn_output)


class LlamaMLP(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.gate_proj = nn.Linear(c.width, c.inner, bias=False)
        self.up_proj = nn.Linear(c.width, c.inner, bias=False)
        self.down_proj = nn.Linear(c.inner, c.width, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class LlamaDecoderLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.self_attn = LlamaAttention(c)
        self.mlp = LlamaMLP(c)
        self.input_layernorm = LlamaRMSNorm(c.width, c.eps)
        self.post_attention_layernorm = LlamaRMSNorm(c.width, c.eps)

    def forward(self, x, attention_mask, position_ids):
        x = x + self.self_attn(self.input_layernorm(x), attention_mask, position_ids)
        return x + self.mlp(self.post_attention_layernorm(x))


class LlamaForCausalLM(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embed_tokens = nn.Embedding(c.vocab, c.width)
        self.layers = nn.ModuleList([LlamaDecoderLayer(c) for _ in range(c.layers)])
        self.norm = LlamaRMSNorm(c.width, c.eps)
        self.lm_head = nn.Linear(c.width, c.vocab, bias=False)

    def forward(self, input_ids, attention_mask):
        bsz, seq_length = input_ids.shape
        position_ids = torch.arange(0, seq_length, dtype=torch.long).unsqueeze(0) \
            .view(-1, seq_length)
        # HF _prepare_4d_causal_attention_mask: full(min) masked_fill by a
        # compared arange, then the padding mask added and re-filled
        dtype = torch.float32
        min_v = torch.finfo(dtype).min
        mask = torch.full((seq_length, seq_length), min_v)
        mask_cond = torch.arange(mask.size(-1))
        mask.masked_fill_(mask_cond < (mask_cond + 1).view(mask.size(-1), 1), 0)
        causal = mask[None, None, :, :].expand(bsz, 1, seq_length, seq_length)
        expanded = attention_mask[:, None, None, :].expand(bsz, 1, seq_length, seq_length) \
            .to(dtype)
        inverted = 1.0 - expanded
        inverted = inverted.masked_fill(inverted.to(torch.bool), min_v)
        causal = causal.masked_fill(inverted.bool(), min_v)
        x = self.embed_tokens(input_ids)
        for layer in self.layers:
            x = layer(x, causal, position_ids)
        return self.lm_head(self.norm(x))


# ------------------------------------------------------------------ YOLO ----

class ConvBNSiLU(nn.Module):
    """ultralytics Conv: Conv2d(bias=False) + BatchNorm2d + SiLU."""

    def __init__(self, cin, cout, k=1, s=1):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, k, s, k // 2, bias=False)
        self.bn = nn.BatchNorm2d(cout)

    def forward(self, x):
        return F.silu(self.bn(self.conv(x)))


class Bottleneck(nn.Module):
    def __init__(self, c, shortcut=True):
        super().__init__()
        self.cv1, self.cv2 = ConvBNSiLU(c, c, 3), ConvBNSiLU(c, c, 3)
        self.add = shortcut

    def forward(self, x):
        return x + self.cv2(self.cv1(x)) if self.add else self.cv2(self.cv1(x))


class C2f(nn.Module):
    """ultralytics C2f: 1x1 conv, chunk(2) (Split), n bottlenecks, Concat, 1x1 conv."""

    def __init__(self, cin, cout, n=1, shortcut=False):
        super().__init__()
        self.c = cout // 2
        self.cv1 = ConvBNSiLU(cin, 2 * self.c, 1)
        self.cv2 = ConvBNSiLU((2 + n) * self.c, cout, 1)
        self.m = nn.ModuleList(Bottleneck(self.c, shortcut) for _ in range(n))

    def forward(self, x):
        y = list(self.cv1(x).chunk(2, 1))
        y.extend(m(y[-1]) for m in self.m)
        return self.cv2(torch.cat(y, 1))


class SPPF(nn.Module):
    def __init__(self, cin, cout, k=5):
        super().__init__()
        self.cv1 = ConvBNSiLU(cin, cin // 2, 1)
        self.cv2 = ConvBNSiLU(cin // 2 * 4, cout, 1)
        self.m = nn.MaxPool2d(k, 1, k // 2)

    def forward(self, x):
        x = self.cv1(x)
        y1 = self.m(x)
        y2 = self.m(y1)
        return self.cv2(torch.cat((x, y1, y2, self.m(y2)), 1))


class DFL(nn.Module):
    """Distribution focal loss integral: softmax over 16 bins, 1x1 conv with
    weights 0..15 (a fixed, non-trainable Conv2d as ultralytics writes it)."""

    def __init__(self, c1=16):
        super().__init__()
        self.conv = nn.Conv2d(c1, 1, 1, bias=False).requires_grad_(False)
        self.conv.weight.data[:] = torch.arange(c1, dtype=torch.float).view(1, c1, 1, 1)
        self.c1 = c1

    def forward(self, x):
        b, c, a = x.shape
        return self.conv(x.view(b, 4, self.c1, a).transpose(2, 1).softmax(1)).view(b, 4, a)


class YoloTiny(nn.Module):
    """A YOLOv8-style detector at toy width: Conv-BN-SiLU backbone with C2f
    (Split, bottleneck residuals, Concat), SPPF (chained MaxPool), PAN neck
    (nearest Upsample, Concat, strided convs), a two-scale decoupled Detect
    head with DFL, anchors and strides made from the feature shapes
    (arange/meshgrid), dist2bbox, sigmoid class scores; output [batch, 4+nc, anchors]."""

    def __init__(self, nc=8, reg_max=16):
        super().__init__()
        self.nc, self.reg_max = nc, reg_max
        self.b0 = ConvBNSiLU(3, 8, 3, 2)          # /2
        self.b1 = ConvBNSiLU(8, 16, 3, 2)         # /4
        self.c1 = C2f(16, 16, 1, True)
        self.b2 = ConvBNSiLU(16, 32, 3, 2)        # /8  (P3)
        self.c2 = C2f(32, 32, 1, True)
        self.b3 = ConvBNSiLU(32, 32, 3, 2)        # /16 (P4)
        self.sppf = SPPF(32, 32)
        self.n1 = C2f(64, 32)
        self.d1 = ConvBNSiLU(32, 32, 3, 2)
        self.n2 = C2f(64, 32)
        self.stride = [8, 16]
        self.box = nn.ModuleList(nn.Sequential(ConvBNSiLU(32, 16, 3), nn.Conv2d(16, 4 * reg_max, 1))
                                 for _ in self.stride)
        self.cls = nn.ModuleList(nn.Sequential(ConvBNSiLU(32, 16, 3), nn.Conv2d(16, nc, 1))
                                 for _ in self.stride)
        self.dfl = DFL(reg_max)

    @staticmethod
    def make_anchors(feats, strides, offset=0.5):
        anchor_points, stride_tensor = [], []
        for i, stride in enumerate(strides):
            _, _, h, w = feats[i].shape
            sx = torch.arange(end=w, dtype=torch.float32) + offset
            sy = torch.arange(end=h, dtype=torch.float32) + offset
            sy, sx = torch.meshgrid(sy, sx, indexing="ij")
            anchor_points.append(torch.stack((sx, sy), -1).view(-1, 2))
            stride_tensor.append(torch.full((h * w, 1), stride, dtype=torch.float32))
        return torch.cat(anchor_points), torch.cat(stride_tensor)

    def forward(self, x):
        p3 = self.c2(self.b2(self.c1(self.b1(self.b0(x)))))
        p4 = self.sppf(self.b3(p3))
        n3 = self.n1(torch.cat([F.interpolate(p4, scale_factor=2.0, mode="nearest"), p3], 1))
        n4 = self.n2(torch.cat([self.d1(n3), p4], 1))
        feats = [n3, n4]
        outs = [torch.cat((self.box[i](f), self.cls[i](f)), 1) for i, f in enumerate(feats)]
        b = x.shape[0]
        anchors, strides = (t.transpose(0, 1) for t in self.make_anchors(feats, self.stride))
        x_cat = torch.cat([o.view(b, 4 * self.reg_max + self.nc, -1) for o in outs], 2)
        box, cls = x_cat.split((self.reg_max * 4, self.nc), 1)
        lt, rb = self.dfl(box).chunk(2, 1)
        anchors = anchors.unsqueeze(0)
        x1y1, x2y2 = anchors - lt, anchors + rb
        dbox = torch.cat(((x1y1 + x2y2) / 2, x2y2 - x1y1), 1) * strides
        scores = cls.sigmoid()
        # output0 as ultralytics exports it; the scores again on their own, so
        # that the test's tolerance (relative to the largest |value|, here a
        # box coordinate) does not hide errors in the 0..1 scores
        return torch.cat((dbox, scores), 1), scores


# ------------------------------------------------------------------ CRNN ----

class CRNNTiny(nn.Module):
    """A CRNN text-line recogniser as EasyOCR/PaddleOCR-style code writes it:
    conv-BN-ReLU-maxpool stages (the last pools height only), height
    averaged away, [T, batch, C] sequence, a 2-layer bidirectional
    nn.LSTM, an nn.GRU, Linear to the classes and log_softmax (CTC)."""

    def __init__(self, classes=37):
        super().__init__()
        self.cnn = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
            nn.MaxPool2d((2, 1), (2, 1)))
        self.rnn = nn.LSTM(32, 24, num_layers=2, bidirectional=True)
        self.gru = nn.GRU(48, 24)
        self.fc = nn.Linear(24, classes)

    def forward(self, image):
        f = self.cnn(image).mean(dim=2)        # [batch, C, T]
        f = f.permute(2, 0, 1)                 # [T, batch, C]
        f, _ = self.rnn(f)
        f, _ = self.gru(f)
        return F.log_softmax(self.fc(f), dim=2)


# ------------------------------------------------------------------- STN ----

class STNTiny(nn.Module):
    """The spatial transformer network of PyTorch's tutorial: a localisation
    net (conv, max-pool, ReLU, Linear) regresses an affine theta, starting
    from the identity, an affine grid is made from it and F.grid_sample
    (GridSample, opset 16) warps the input (torch 1.13 cannot export
    F.affine_grid, so the grid is written out as exported code does: a base
    grid of (x, y, 1) rows times theta^T); a small classifier
    follows. A second head warps by a predicted per-pixel flow (optical-flow
    style: base grid + offsets, bilinear, border padding)."""

    def __init__(self):
        super().__init__()
        self.loc = nn.Sequential(nn.Conv2d(1, 8, 5), nn.MaxPool2d(2), nn.ReLU(),
                                 nn.Conv2d(8, 8, 3), nn.MaxPool2d(2), nn.ReLU())
        self.fc_loc = nn.Sequential(nn.Linear(8 * 3 * 3, 16), nn.ReLU(), nn.Linear(16, 6))
        self.flow = nn.Conv2d(1, 2, 3, padding=1)
        self.cls = nn.Linear(2 * 20 * 20, 10)

    def forward(self, x):
        xs = self.loc(x).flatten(1)
        theta = self.fc_loc(xs).view(-1, 2, 3) * 0.2 + torch.tensor([[1.0, 0, 0], [0, 1.0, 0]])
        n, _, h, w = x.shape
        # F.affine_grid(theta, x.size(), align_corners=False), written out
        gx = (torch.arange(w, dtype=torch.float32) * 2 + 1) / w - 1
        gy = (torch.arange(h, dtype=torch.float32) * 2 + 1) / h - 1
        by, bx = torch.meshgrid(gy, gx, indexing="ij")
        base_grid = torch.stack((bx, by, torch.ones_like(bx)), -1).view(1, h * w, 3)
        grid = torch.matmul(base_grid, theta.transpose(1, 2)).view(n, h, w, 2)
        warped = F.grid_sample(x, grid, align_corners=False)
        ys, xs_ = torch.meshgrid(torch.linspace(-1, 1, h), torch.linspace(-1, 1, w),
                                 indexing="ij")
        base = torch.stack((xs_, ys), -1).unsqueeze(0)
        flow = torch.tanh(self.flow(x)).permute(0, 2, 3, 1) * 0.1
        warped2 = F.grid_sample(x, base + flow, mode="bilinear", padding_mode="border",
                                align_corners=True)
        logits = self.cls(torch.cat([warped, warped2], 1).flatten(1))
        return logits, warped


# ------------------------------------------------------ older opsets ----

class OldOpsetCNN(nn.Module):
    """Exported at opset 9 and 11: Clip with min/max attributes (9) or
    inputs (11), Slice and Pad with attributes (9), Upsample (9) or Resize
    (11), Unsqueeze/Squeeze with axes attributes, Softmax with the pre-13
    2-d coercion, Split with a split attribute, Gemm."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 8, 3, groups=8, padding=1)
        self.conv3 = nn.Conv2d(8, 8, 1)
        self.fc = nn.Linear(4 * 7 * 7, 12)

    def forward(self, x):
        x = F.relu6(self.conv1(x))                               # 8 x 16 x 16
        x = x[:, :, 1:-1, 2:]                                    # 8 x 14 x 14
        x = F.pad(x, (1, 1, 1, 1), value=0.5)                    # 8 x 16 x 16
        x = F.hardtanh(self.conv2(F.max_pool2d(x, 2)), -1.0, 2.0)  # 8 x 8 x 8
        x = F.interpolate(x, scale_factor=2, mode="nearest")     # 8 x 16 x 16
        a, b = torch.split(self.conv3(x), [4, 4], dim=1)
        x = F.avg_pool2d(a * torch.sigmoid(b), 2)                # 4 x 8 x 8
        x = x[:, :, :7, :7].unsqueeze(1).squeeze(1)
        y = self.fc(torch.flatten(x, 1)).view(-1, 3, 4)
        return torch.softmax(y, dim=-1), y.mean(dim=1, keepdim=True)


# ------------------------------------------------------ exporter quirks ----

class ExportQuirks(nn.Module):
    """What exporters leave around ordinary code: Shape->Gather->Unsqueeze->
    Concat->Reshape chains, Constant shape tensors, Casts to int64 and back
    (float->int truncates toward zero), Where with bool masks, Expand with
    -1 and 1 dims, the same tensor as two outputs (Identity), masked_fill,
    argmax-driven GatherElements, torch.topk (TopK), slice assignment
    (ScatterND); exported with keep_initializers_as_inputs=True and
    the large weights in one external file, the small ones inline."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6 * 8, 32)
        self.proj = nn.Linear(8, 8)
        self.scale = nn.Parameter(torch.randn(1, 1, 8))
        self.offset = nn.Parameter(torch.randn(4, 1))

    def forward(self, x, mask):
        b = x.shape[0]
        y = self.fc(x.reshape(b, -1))                  # [b, 32]
        y = y.view(b, 4, -1)                           # [b, 4, 8]
        y = y + self.scale.expand(b, -1, -1)           # Expand with -1
        y = y + self.offset.expand(-1, y.size(-1))     # [4, 8]
        q = (y * 3.0).to(torch.int64).to(torch.float32) / 3.0
        keep = mask.to(torch.int64) > 0                # [b, 8] bool
        z = torch.where(keep[:, None, :], self.proj(q), torch.zeros_like(q))
        z = z.masked_fill(~keep[:, None, :], -1.0)
        n = torch.tensor(z.shape[-1], dtype=torch.float32)
        w = z.sum(dim=-1, keepdim=True) / n
        idx = y.argmax(dim=-1)                         # [b, 4]
        g = torch.gather(y, 2, idx.unsqueeze(-1))      # [b, 4, 1]
        top, _ = torch.topk(y, 3, dim=-1)              # TopK [b, 4, 3]
        z = z.clone()
        z[:, 1:3, 0] = z[:, 0:2, 1] * 2.0              # slice assignment: ScatterND
        z[:, -1] = 0.5
        out = torch.cat([z, w, g, top], dim=-1).reshape(b, -1)
        return out, out, idx


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
           dims="", external=False, external_threshold=0, **export_args):
    """export_args go to torch.onnx.export (do_constant_folding, training,
    keep_initializers_as_inputs); external_threshold: tensors smaller than this
    many bytes stay inline when external is set (onnx's size_threshold)."""
    d = os.path.join(outdir, name)
    os.makedirs(d, exist_ok=True)
    module.eval()
    path = os.path.join(d, "model.onnx")
    kw = {"do_constant_folding": True}
    kw.update(export_args)
    with torch.no_grad():
        torch.onnx.export(module, tuple(inputs), path, input_names=input_names,
                          output_names=output_names, opset_version=opset,
                          dynamic_axes=dynamic_axes or {}, **kw)
        outs = module(*inputs)
    if not isinstance(outs, (tuple, list)):
        outs = (outs,)
    if external:
        m = onnx.load(path)
        for f in os.listdir(d):
            if f.startswith("model.onnx"):
                os.remove(os.path.join(d, f))
        # What HF/optimum do for big models: one side file, every tensor in it
        # (or every tensor of at least external_threshold bytes).
        onnx.save_model(m, path, save_as_external_data=True, all_tensors_to_one_file=True,
                        location="model.onnx.data", size_threshold=external_threshold)
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


def set_bn_affine(module):
    """Non-trivial BatchNorm gains, offsets and running statistics."""
    g = torch.Generator().manual_seed(SEED + 5)
    with torch.no_grad():
        for m in module.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.weight.copy_(1.0 + 0.1 * torch.randn(m.weight.shape, generator=g))
                m.bias.copy_(0.05 * torch.randn(m.bias.shape, generator=g))
                m.running_mean.copy_(0.1 * torch.randn(m.running_mean.shape, generator=g))
                m.running_var.copy_(0.5 + torch.rand(m.running_var.shape, generator=g))


def randomise_more(module):
    """randomise() plus the module kinds only the newer models use."""
    randomise(module)
    g = torch.Generator().manual_seed(SEED + 6)
    with torch.no_grad():
        for m in module.modules():
            if isinstance(m, nn.ConvTranspose2d):
                fan_in = m.weight.shape[0] * m.weight[0, 0].numel() // m.stride[0] // m.stride[1]
                m.weight.copy_(torch.randn(m.weight.shape, generator=g) / math.sqrt(fan_in))
                m.bias.copy_(0.05 * torch.randn(m.bias.shape, generator=g))
            elif isinstance(m, nn.Conv1d):
                fan_in = m.weight[0].numel()
                m.weight.copy_(torch.randn(m.weight.shape, generator=g) / math.sqrt(fan_in))
                m.bias.copy_(0.05 * torch.randn(m.bias.shape, generator=g))
            elif isinstance(m, (nn.LSTM, nn.GRU)):
                for pname, prm in m.named_parameters():
                    s = 1.0 / math.sqrt(m.hidden_size) if "weight" in pname else 0.1
                    prm.copy_(s * torch.randn(prm.shape, generator=g))
            elif isinstance(m, nn.MultiheadAttention):
                m.out_proj.bias.copy_(0.05 * torch.randn(m.out_proj.bias.shape, generator=g))
            elif isinstance(m, ExportQuirks):
                m.scale.copy_(torch.randn(m.scale.shape, generator=g))
                m.offset.copy_(torch.randn(m.offset.shape, generator=g))
    set_bn_affine(module)


def make_bert(outdir):
    torch.manual_seed(SEED)
    c = BertCfg()
    m = BertModel(c)
    randomise_more(m)
    g = torch.Generator().manual_seed(SEED + 7)

    def data(batch, seq, pads):
        ids = torch.randint(1, c.vocab, (batch, seq), generator=g, dtype=torch.int64)
        ids[:, 0] = 1  # [CLS]
        types = torch.zeros(batch, seq, dtype=torch.int64)
        types[:, seq // 2:] = 1  # sentence pair
        mask = torch.ones(batch, seq, dtype=torch.int64)
        for i, p in enumerate(pads):
            if p:
                mask[i, -p:] = 0
                ids[i, -p:] = 0  # [PAD]
        return [ids, mask, types]

    names = ["input_ids", "attention_mask", "token_type_ids"]
    axes = {n: {0: "batch", 1: "sequence"} for n in names}
    axes.update({"last_hidden_state": {0: "batch", 1: "sequence"}, "pooler_output": {0: "batch"}})
    export("bert_tiny", m, data(1, 16, [3]), names, ["last_hidden_state", "pooler_output"], outdir,
           opset=14, dynamic_axes=axes, dims="batch=1,sequence=16")
    # Another batch and a sequence length the export never saw.
    extra_data_set(outdir, "bert_tiny", m, data(2, 11, [0, 4]), names,
                   ["last_hidden_state", "pooler_output"], "batch2_seq11",
                   "batch=2,sequence=11")


def make_roberta(outdir):
    torch.manual_seed(SEED)
    c = BertCfg(layers=1)
    m = RobertaModel(c)
    randomise_more(m)
    g = torch.Generator().manual_seed(SEED + 10)

    def data(batch, seq, pads):
        ids = torch.randint(3, c.vocab, (batch, seq), generator=g, dtype=torch.int64)
        ids[:, 0] = 0  # <s>
        mask = torch.ones(batch, seq, dtype=torch.int64)
        for i, p in enumerate(pads):
            if p:
                ids[i, -p:] = 1  # <pad>: position id stays padding_idx
                mask[i, -p:] = 0
        return [ids, mask]

    names = ["input_ids", "attention_mask"]
    axes = {n: {0: "batch", 1: "sequence"} for n in names}
    axes["last_hidden_state"] = {0: "batch", 1: "sequence"}
    export("roberta_tiny", m, data(2, 12, [0, 5]), names, ["last_hidden_state"], outdir,
           opset=17, dynamic_axes=axes, dims="batch=2,sequence=12")
    extra_data_set(outdir, "roberta_tiny", m, data(1, 20, [2]), names, ["last_hidden_state"],
                   "batch1_seq20", "batch=1,sequence=20")


def make_llama(outdir):
    torch.manual_seed(SEED)
    c = LlamaCfg()
    m = LlamaForCausalLM(c)
    randomise_more(m)
    with torch.no_grad():
        for mod in m.modules():
            if isinstance(mod, LlamaRMSNorm):
                mod.weight.copy_(1.0 + 0.1 * torch.randn(mod.weight.shape))
    g = torch.Generator().manual_seed(SEED + 11)

    def data(batch, seq, pads):
        ids = torch.randint(0, c.vocab, (batch, seq), generator=g, dtype=torch.int64)
        mask = torch.ones(batch, seq, dtype=torch.int64)
        for i, p in enumerate(pads):
            if p:
                mask[i, :p] = 0  # left padding, as generation batches are padded
        return [ids, mask]

    names = ["input_ids", "attention_mask"]
    axes = {n: {0: "batch_size", 1: "sequence_length"} for n in names}
    axes["logits"] = {0: "batch_size", 1: "sequence_length"}
    export("llama_tiny", m, data(1, 12, [0]), names, ["logits"], outdir, opset=14,
           dynamic_axes=axes, dims="batch_size=1,sequence_length=12")
    extra_data_set(outdir, "llama_tiny", m, data(2, 7, [0, 3]), names, ["logits"],
                   "batch2_seq7", "batch_size=2,sequence_length=7")


def make_clip_text(outdir):
    torch.manual_seed(SEED)
    c = ClipTextCfg()
    m = ClipText(c)
    randomise_more(m)
    g = torch.Generator().manual_seed(SEED + 8)

    def data(batch, seq, lengths):
        # BOS=vocab-2, EOS=vocab-1 (the highest id: argmax finds it), pad 0
        ids = torch.randint(1, c.vocab - 2, (batch, seq), generator=g, dtype=torch.int64)
        mask = torch.ones(batch, seq, dtype=torch.int64)
        ids[:, 0] = c.vocab - 2
        for i, n in enumerate(lengths):
            ids[i, n - 1] = c.vocab - 1
            ids[i, n:] = 0
            mask[i, n:] = 0
        return [ids, mask]

    names = ["input_ids", "attention_mask"]
    axes = {n: {0: "batch", 1: "sequence"} for n in names}
    axes.update({"last_hidden_state": {0: "batch", 1: "sequence"}, "pooler_output": {0: "batch"}})
    export("clip_text_tiny", m, data(1, 16, [12]), names, ["last_hidden_state", "pooler_output"],
           outdir, opset=14, dynamic_axes=axes, dims="batch=1,sequence=16")
    extra_data_set(outdir, "clip_text_tiny", m, data(3, 9, [9, 4, 6]), names,
                   ["last_hidden_state", "pooler_output"], "batch3_seq9", "batch=3,sequence=9")


def make_more(outdir, which):
    torch.manual_seed(SEED)
    g = torch.Generator().manual_seed(SEED + 9)
    if which in ("mobilenet_tiny", "mobilenet_bn"):
        m = MobileNetTiny()
        randomise_more(m)
        x = torch.randn(1, 3, 32, 32, generator=g)
        if which == "mobilenet_tiny":
            # the default export: every BN folded into its conv; opset 14 has
            # HardSwish; batch and image size symbolic
            axes = {0: "batch", 2: "height", 3: "width"}
            export(which, m, [x], ["input"], ["logits"], outdir, opset=14,
                   dynamic_axes={"input": axes, "logits": {0: "batch"}},
                   dims="batch=1,height=32,width=32")
            extra_data_set(outdir, which, m, [torch.randn(2, 3, 40, 48, generator=g)], ["input"],
                           ["logits"], "batch2_40x48", "batch=2,height=40,width=48")
        else:
            # BN kept as BatchNormalization (no eval peephole, no folding);
            # opset 13 writes Hardswish as x * HardSigmoid(x)
            export(which, m, [x], ["input"], ["logits"], outdir, opset=13,
                   training=torch.onnx.TrainingMode.PRESERVE, do_constant_folding=False)
    elif which == "unet_tiny":
        m = UNetTiny()
        randomise_more(m)
        hw = {2: "height", 3: "width"}
        export(which, m, [torch.randn(1, 3, 16, 16, generator=g)], ["image"], ["mask", "side"],
               outdir, opset=13, dynamic_axes={"image": hw, "mask": hw},
               dims="height=16,width=16")
        extra_data_set(outdir, which, m, [torch.randn(1, 3, 24, 20, generator=g)], ["image"],
                       ["mask", "side"], "h24_w20", "height=24,width=20")
    elif which in ("cnn_opset9", "cnn_opset11"):
        m = OldOpsetCNN()
        randomise_more(m)
        export(which, m, [torch.randn(2, 3, 16, 16, generator=g)], ["x"], ["probs", "mean"],
               outdir, opset=9 if which == "cnn_opset9" else 11)
    elif which == "yolo_tiny":
        m = YoloTiny()
        randomise_more(m)
        m.dfl.conv.weight.data[:] = torch.arange(16, dtype=torch.float).view(1, 16, 1, 1)
        export(which, m, [torch.rand(1, 3, 64, 64, generator=g)], ["images"],
               ["output0", "scores"], outdir, opset=12)
    elif which == "stn_tiny":
        m = STNTiny()
        randomise_more(m)
        export(which, m, [torch.randn(2, 1, 20, 20, generator=g)], ["x"], ["logits", "warped"],
               outdir, opset=16)
    elif which == "crnn_tiny":
        m = CRNNTiny()
        randomise_more(m)
        # text lines of any width: batch and width symbolic
        axes = {0: "batch", 3: "width"}
        export(which, m, [torch.randn(1, 1, 32, 64, generator=g)], ["image"], ["log_probs"],
               outdir, opset=14, dynamic_axes={"image": axes, "log_probs": {0: "T", 1: "batch"}},
               dims="batch=1,width=64")
        extra_data_set(outdir, which, m, [torch.randn(2, 1, 32, 100, generator=g)], ["image"],
                       ["log_probs"], "batch2_w100", "batch=2,width=100")
    elif which == "audio_tiny":
        m = AudioEncoderTiny()
        randomise_more(m)
        export(which, m, [torch.randn(2, 16, 24, generator=g)], ["mel"],
               ["hidden", "pooled"], outdir, opset=14)
    elif which == "export_quirks":
        m = ExportQuirks()
        randomise_more(m)
        x = torch.randn(2, 6, 8, generator=g)
        mask = torch.tensor([[1, 1, 0, 1, 1, 1, 0, 1], [0, 1, 1, 1, 1, 1, 1, 1]],
                            dtype=torch.int64)
        export(which, m, [x, mask], ["x", "mask"], ["out", "out_again", "argmax"], outdir,
               opset=13, dynamic_axes={"x": {0: "batch"}, "mask": {0: "batch"},
                                       "out": {0: "batch"}, "out_again": {0: "batch"},
                                       "argmax": {0: "batch"}},
               dims="batch=2", external=True, external_threshold=1024,
               keep_initializers_as_inputs=True)
    else:
        raise SystemExit("unknown model " + which)



# ------------------------------------------------- benchmark networks ----
# The networks of shared/hw/published-measurements.md section 1 at the published input
# sizes, with random weights, for calibrating the NPU timing model against board figures
# (docs/performance.md). Built on demand only (tens to ~350 MB each); never in the tests.

def bn_act(cin, cout, k, stride=1, groups=1, act="relu", pad=None):
    """Conv (no bias) + BatchNorm + activation, the unit every CNN below is made of."""
    layers = [nn.Conv2d(cin, cout, k, stride, k // 2 if pad is None else pad, groups=groups,
                        bias=False), nn.BatchNorm2d(cout)]
    if act == "relu":
        layers.append(nn.ReLU())
    elif act == "relu6":
        layers.append(nn.ReLU6())
    elif act == "silu":
        layers.append(nn.SiLU())
    return nn.Sequential(*layers)


class MobileNetV1(nn.Module):
    """MobileNetV1 (Howard et al. 2017), width 1.0, 224 px: a 3x3/2 conv to 32 channels,
    13 depthwise-separable blocks (3x3 depthwise + BN + ReLU, 1x1 pointwise + BN + ReLU),
    global average pool, a 1000-way Linear. ReLU where the TF original has ReLU6."""

    def __init__(self):
        super().__init__()
        cfg = [(64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2)] + [(512, 1)] * 5 + \
              [(1024, 2), (1024, 1)]
        layers, c = [bn_act(3, 32, 3, 2)], 32
        for cout, s in cfg:
            layers += [bn_act(c, c, 3, s, groups=c), bn_act(c, cout, 1)]
            c = cout
        self.features = nn.Sequential(*layers)
        self.fc = nn.Linear(1024, 1000)

    def forward(self, x):
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(self.features(x), 1), 1))


class MobileNetV2(nn.Module):
    """MobileNetV2 (Sandler et al. 2018), width 1.0, 224 px, the layer shapes of
    torchvision's mobilenet_v2 (written here: torchvision is not in Debian's python):
    3x3/2 conv to 32, 17 inverted residuals (1x1 expansion x t, 3x3 depthwise, 1x1
    linear projection; residual when stride 1 and shapes match), 1x1 to 1280, global
    average pool, a 1000-way Linear. ReLU6 is Clip(0, 6)."""

    def __init__(self):
        super().__init__()
        cfg = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
               (6, 160, 3, 2), (6, 320, 1, 1)]
        self.stem, c = bn_act(3, 32, 3, 2, act="relu6"), 32
        self.blocks = nn.ModuleList()
        for t, cout, n, s in cfg:
            for i in range(n):
                hid = c * t
                layers = [bn_act(c, hid, 1, act="relu6")] if t != 1 else []
                layers += [bn_act(hid, hid, 3, s if i == 0 else 1, groups=hid, act="relu6"),
                           bn_act(hid, cout, 1, act=None)]
                blk = nn.Sequential(*layers)
                blk.residual = (s if i == 0 else 1) == 1 and c == cout
                self.blocks.append(blk)
                c = cout
        self.head = bn_act(c, 1280, 1, act="relu6")
        self.fc = nn.Linear(1280, 1000)

    def forward(self, x):
        x = self.stem(x)
        for b in self.blocks:
            x = x + b(x) if b.residual else b(x)
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(self.head(x), 1), 1))


class Bottleneck50(nn.Module):
    """ResNet-50's bottleneck (v1.5, stride on the 3x3): 1x1, 3x3, 1x1 x4 expansion, with
    a 1x1 + BN projection on the shortcut when the shape changes; ReLU after the sum."""

    def __init__(self, c, mid, stride):
        super().__init__()
        self.body = nn.Sequential(bn_act(c, mid, 1), bn_act(mid, mid, 3, stride),
                                  bn_act(mid, 4 * mid, 1, act=None))
        self.proj = bn_act(c, 4 * mid, 1, stride, act=None, pad=0) \
            if stride != 1 or c != 4 * mid else None

    def forward(self, x):
        return F.relu(self.body(x) + (self.proj(x) if self.proj is not None else x))


class ResNet50(nn.Module):
    """ResNet-50 at 224 px, the layer shapes of torchvision's resnet50 (written here):
    7x7/2 conv to 64, 3x3/2 max pool, bottleneck stages of 3, 4, 6, 3 blocks (64, 128,
    256, 512 wide, x4 out), global average pool, a 1000-way Linear."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(bn_act(3, 64, 7, 2), nn.MaxPool2d(3, 2, 1))
        blocks, c = [], 64
        for mid, n, s in [(64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)]:
            for i in range(n):
                blocks.append(Bottleneck50(c, mid, s if i == 0 else 1))
                c = 4 * mid
        self.blocks = nn.Sequential(*blocks)
        self.fc = nn.Linear(2048, 1000)

    def forward(self, x):
        x = self.blocks(self.stem(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


class C3(nn.Module):
    """YOLOv5's CSP block: two 1x1 branches, n bottlenecks (1x1, 3x3, optional residual)
    on the first, concatenated and fused by a 1x1."""

    def __init__(self, c1, c2, n, shortcut, act):
        super().__init__()
        c = c2 // 2
        self.cv1, self.cv2 = bn_act(c1, c, 1, act=act), bn_act(c1, c, 1, act=act)
        self.cv3 = bn_act(2 * c, c2, 1, act=act)
        self.m = nn.ModuleList([nn.Sequential(bn_act(c, c, 1, act=act), bn_act(c, c, 3, act=act))
                                for _ in range(n)])
        self.shortcut = shortcut

    def forward(self, x):
        y = self.cv1(x)
        for b in self.m:
            y = y + b(y) if self.shortcut else b(y)
        return self.cv3(torch.cat([y, self.cv2(x)], 1))


class C2f(nn.Module):
    """YOLOv8's C2f: a 1x1 to 2c channels split in two halves, n bottlenecks (3x3, 3x3,
    optional residual) chained on the second, every intermediate concatenated, a 1x1."""

    def __init__(self, c1, c2, n, shortcut, act):
        super().__init__()
        self.c = c2 // 2
        self.cv1 = bn_act(c1, 2 * self.c, 1, act=act)
        self.cv2 = bn_act((2 + n) * self.c, c2, 1, act=act)
        self.m = nn.ModuleList([nn.Sequential(bn_act(self.c, self.c, 3, act=act),
                                              bn_act(self.c, self.c, 3, act=act))
                                for _ in range(n)])
        self.shortcut = shortcut

    def forward(self, x):
        y = list(self.cv1(x).split((self.c, self.c), 1))
        for b in self.m:
            y.append(y[-1] + b(y[-1]) if self.shortcut else b(y[-1]))
        return self.cv2(torch.cat(y, 1))


class SPPF(nn.Module):
    """Spatial pyramid pooling, fast: 1x1 to c1/2, three chained 5x5/1 max pools,
    the four concatenated, 1x1."""

    def __init__(self, c1, c2, act):
        super().__init__()
        c = c1 // 2
        self.cv1, self.cv2 = bn_act(c1, c, 1, act=act), bn_act(4 * c, c2, 1, act=act)
        self.pool = nn.MaxPool2d(5, 1, 2)

    def forward(self, x):
        x = self.cv1(x)
        y1 = self.pool(x)
        y2 = self.pool(y1)
        return self.cv2(torch.cat([x, y1, y2, self.pool(y2)], 1))


class YoloV5s(nn.Module):
    """YOLOv5s v6 (depth 0.33, width 0.50) at 640 px with ReLU for SiLU (the model zoo's
    "relu" variant): backbone (6x6/2 stem, C3 x1/2/3/1, SPPF), PAN neck (nearest 2x
    upsampling, concatenation, C3 without residuals) and the three 1x1 detection convs
    (3 anchors x 85 = 255 channels at strides 8, 16, 32); the box decoding (sigmoid,
    grid, anchors) is left to the host as the model zoo does."""

    def __init__(self, act="relu"):
        super().__init__()
        a = act
        self.b0 = bn_act(3, 32, 6, 2, pad=2, act=a)
        self.b1 = nn.Sequential(bn_act(32, 64, 3, 2, act=a), C3(64, 64, 1, True, a))
        self.b2 = nn.Sequential(bn_act(64, 128, 3, 2, act=a), C3(128, 128, 2, True, a))
        self.b3 = nn.Sequential(bn_act(128, 256, 3, 2, act=a), C3(256, 256, 3, True, a))
        self.b4 = nn.Sequential(bn_act(256, 512, 3, 2, act=a), C3(512, 512, 1, True, a),
                                SPPF(512, 512, a))
        self.h10 = bn_act(512, 256, 1, act=a)
        self.h13 = C3(512, 256, 1, False, a)
        self.h14 = bn_act(256, 128, 1, act=a)
        self.h17 = C3(256, 128, 1, False, a)
        self.h18 = bn_act(128, 128, 3, 2, act=a)
        self.h20 = C3(256, 256, 1, False, a)
        self.h21 = bn_act(256, 256, 3, 2, act=a)
        self.h23 = C3(512, 512, 1, False, a)
        self.det = nn.ModuleList([nn.Conv2d(c, 255, 1) for c in (128, 256, 512)])
        self.up = nn.Upsample(scale_factor=2, mode="nearest")

    def forward(self, x):
        p3 = self.b2(self.b1(self.b0(x)))
        p4 = self.b3(p3)
        p5 = self.b4(p4)
        h10 = self.h10(p5)
        h14 = self.h14(self.h13(torch.cat([self.up(h10), p4], 1)))
        o3 = self.h17(torch.cat([self.up(h14), p3], 1))
        o4 = self.h20(torch.cat([self.h18(o3), h14], 1))
        o5 = self.h23(torch.cat([self.h21(o4), h10], 1))
        return tuple(d(o) for d, o in zip(self.det, (o3, o4, o5)))


class YoloV8n(nn.Module):
    """YOLOv8n (depth 0.33, width 0.25) at 640 px with SiLU: backbone (3x3/2 convs, C2f
    x1/2/2/1, SPPF), neck (upsampling, concatenation, C2f without residuals) and the
    decoupled head per stride (box branch 3x3, 3x3 to 64 channels, 1x1 to 4 x 16 DFL bins;
    class branch 3x3, 3x3 to 80, 1x1 to 80 classes); DFL, grid decoding and NMS are left
    to the host, as the model zoo's export does."""

    def __init__(self, act="silu"):
        super().__init__()
        a = act
        self.b0 = nn.Sequential(bn_act(3, 16, 3, 2, act=a), bn_act(16, 32, 3, 2, act=a),
                                C2f(32, 32, 1, True, a))
        self.b1 = nn.Sequential(bn_act(32, 64, 3, 2, act=a), C2f(64, 64, 2, True, a))
        self.b2 = nn.Sequential(bn_act(64, 128, 3, 2, act=a), C2f(128, 128, 2, True, a))
        self.b3 = nn.Sequential(bn_act(128, 256, 3, 2, act=a), C2f(256, 256, 1, True, a),
                                SPPF(256, 256, a))
        self.h12 = C2f(384, 128, 1, False, a)
        self.h15 = C2f(192, 64, 1, False, a)
        self.h16 = bn_act(64, 64, 3, 2, act=a)
        self.h18 = C2f(192, 128, 1, False, a)
        self.h19 = bn_act(128, 128, 3, 2, act=a)
        self.h21 = C2f(384, 256, 1, False, a)
        self.up = nn.Upsample(scale_factor=2, mode="nearest")

        def branch(c, mid, out):
            return nn.Sequential(bn_act(c, mid, 3, act=a), bn_act(mid, mid, 3, act=a),
                                 nn.Conv2d(mid, out, 1))
        self.box = nn.ModuleList([branch(c, 64, 64) for c in (64, 128, 256)])
        self.cls = nn.ModuleList([branch(c, 80, 80) for c in (64, 128, 256)])

    def forward(self, x):
        p3 = self.b1(self.b0(x))
        p4 = self.b2(p3)
        p5 = self.b3(p4)
        h12 = self.h12(torch.cat([self.up(p5), p4], 1))
        o3 = self.h15(torch.cat([self.up(h12), p3], 1))
        o4 = self.h18(torch.cat([self.h16(o3), h12], 1))
        o5 = self.h21(torch.cat([self.h19(o4), p5], 1))
        outs = []
        for i, o in enumerate((o3, o4, o5)):
            outs += [self.box[i](o), self.cls[i](o)]
        return tuple(outs)


class ClipVisionLayer(nn.Module):
    """One pre-LN layer of CLIP's vision transformer, written as HF CLIPEncoderLayer:
    q/k/v/out projections with biases, softmax attention, MLP with quick GELU."""

    def __init__(self, width, heads, mlp):
        super().__init__()
        self.heads, self.hd = heads, width // heads
        self.ln1, self.ln2 = nn.LayerNorm(width, eps=1e-5), nn.LayerNorm(width, eps=1e-5)
        self.q, self.k, self.v = (nn.Linear(width, width), nn.Linear(width, width),
                                  nn.Linear(width, width))
        self.o = nn.Linear(width, width)
        self.fc1, self.fc2 = nn.Linear(width, mlp), nn.Linear(mlp, width)

    def forward(self, x):
        b, t, w = x.shape
        h = self.ln1(x)
        q = (self.q(h) * self.hd ** -0.5).view(b, t, self.heads, self.hd).transpose(1, 2)
        k = self.k(h).view(b, t, self.heads, self.hd).transpose(1, 2)
        v = self.v(h).view(b, t, self.heads, self.hd).transpose(1, 2)
        a = torch.matmul(F.softmax(torch.matmul(q, k.transpose(2, 3)), dim=-1), v)
        x = x + self.o(a.transpose(1, 2).reshape(b, t, w))
        h = self.fc1(self.ln2(x))
        return x + self.fc2(h * torch.sigmoid(1.702 * h))


class ClipVision(nn.Module):
    """CLIP ViT-B/32 image tower (224 px, patch 32: 49 patches + the class token, width
    768, 12 layers, 12 heads, MLP 3072, quick GELU), as HF CLIPVisionModelWithProjection:
    patch conv without bias, class token and position embedding, pre-LN, encoder,
    post-LN of the class token, 768 -> 512 projection without bias."""

    def __init__(self, image=224, patch=32, width=768, layers=12, heads=12, mlp=3072, proj=512):
        super().__init__()
        self.patch = nn.Conv2d(3, width, patch, patch, bias=False)
        self.cls = nn.Parameter(0.02 * torch.randn(1, 1, width))
        self.pos = nn.Parameter(0.02 * torch.randn(1, (image // patch) ** 2 + 1, width))
        self.ln_pre, self.ln_post = nn.LayerNorm(width), nn.LayerNorm(width)
        self.layers = nn.ModuleList([ClipVisionLayer(width, heads, mlp) for _ in range(layers)])
        self.proj = nn.Linear(width, proj, bias=False)

    def forward(self, pixel_values):
        x = self.patch(pixel_values).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], 1) + self.pos
        x = self.ln_pre(x)
        for layer in self.layers:
            x = layer(x)
        return self.proj(self.ln_post(x[:, 0]))


class ConstMatMul(nn.Module):
    """y = x @ W with W [K, N] a constant: the vendor matmul API's B."""

    def __init__(self, k, n):
        super().__init__()
        self.w = nn.Parameter(torch.randn(k, n) / math.sqrt(k))

    def forward(self, x):
        return torch.matmul(x, self.w)


# The matmuls of published-measurements.md section 2: matmul_MxKxN.
BENCH_MATMULS = ["matmul_128x1024x8192", "matmul_1x4096x4096", "matmul_1x32x16",
                 "matmul_1x768x768", "matmul_1x768x3072"]
BENCH = ["mobilenet_v1", "mobilenet_v2", "resnet50", "yolov5s_relu", "yolov8n",
         "clip_vit_b32"] + BENCH_MATMULS


def make_bench(outdir, name):
    """One benchmark network: random weights (randomise, set_bn_stats), batch 1."""
    torch.manual_seed(SEED)
    if name.startswith("matmul_"):
        m, k, n = (int(v) for v in name[len("matmul_"):].split("x"))
        x = torch.randn(m, k, generator=torch.Generator().manual_seed(SEED))
        export(name, ConstMatMul(k, n), [x], ["a"], ["y"], outdir, 13)
        return
    size = 640 if name.startswith("yolo") else 224
    if name == "mobilenet_v1":
        m = MobileNetV1()
    elif name == "mobilenet_v2":
        m = MobileNetV2()
    elif name == "resnet50":
        m = ResNet50()
    elif name == "yolov5s_relu":
        m = YoloV5s("relu")
    elif name == "yolov8n":
        m = YoloV8n("silu")
    else:
        m = ClipVision()
    randomise(m)
    set_bn_stats(m)
    x = torch.rand(1, 3, size, size, generator=torch.Generator().manual_seed(SEED))
    with torch.no_grad():
        n_out = len(m.eval()(x)) if name.startswith("yolo") else 1
    outs = ["output%d" % i for i in range(n_out)] if n_out > 1 else ["output"]
    export(name, m, [x], ["images" if name.startswith("yolo") else "pixel_values"], outs,
           outdir, 17 if name == "clip_vit_b32" else 13)


NEWER = ["bert_tiny", "roberta_tiny", "clip_text_tiny", "llama_tiny", "audio_tiny", "crnn_tiny",
         "yolo_tiny", "stn_tiny", "mobilenet_tiny", "mobilenet_bn", "unet_tiny",
         "cnn_opset9", "cnn_opset11", "export_quirks"]
DEFAULT = ["siglip_tiny", "gpt2_tiny", "linear_gelu", "cnn_small", "external_data",
           "dynamic_batch", "odd_names"] + NEWER


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
        elif name == "bert_tiny":
            make_bert(a.out)
        elif name == "clip_text_tiny":
            make_clip_text(a.out)
        elif name == "roberta_tiny":
            make_roberta(a.out)
        elif name == "llama_tiny":
            make_llama(a.out)
        elif name in NEWER:
            make_more(a.out, name)
        elif name in BENCH:
            make_bench(a.out, name)
        else:
            make_small(a.out, name)


if __name__ == "__main__":
    sys.exit(main())

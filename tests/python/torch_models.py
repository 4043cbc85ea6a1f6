# SPDX-License-Identifier: MIT
"""Modules the opennpu.torch tests compile (tests/python/test_torch.py) and the
examples reuse: the shapes of real models (GPT-2 block, Hugging Face-style
attention with an additive mask, a UNet-style decoder) written the way such code
is written - shapes read in Python, functional calls and tensor methods - small
enough to compile in about a second."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class NewGELU(nn.Module):
    """GPT-2's tanh GELU written out (as in minGPT)."""

    def forward(self, x):
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) *
                                           (x + 0.044715 * torch.pow(x, 3.0))))


class GPT2Block(nn.Module):
    def __init__(self, d=64, heads=4, T=16):
        super().__init__()
        self.ln_1, self.ln_2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.c_attn, self.c_proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.mlp_fc, self.mlp_proj = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.act = NewGELU()
        self.drop = nn.Dropout(0.1)
        self.n_head = heads
        self.register_buffer("bias", torch.tril(torch.ones(T, T)).view(1, 1, T, T))

    def attn(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        att = self.drop(F.softmax(att, dim=-1))
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.drop(self.mlp_proj(self.act(self.mlp_fc(self.ln_2(x)))))


class HFSelfAttention(nn.Module):
    """BERT-style self-attention + output layer with the extended additive mask."""

    def __init__(self, d=64, heads=4):
        super().__init__()
        self.num_attention_heads, self.attention_head_size = heads, d // heads
        self.all_head_size = d
        self.query, self.key, self.value = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)
        self.dense, self.LayerNorm = nn.Linear(d, d), nn.LayerNorm(d, eps=1e-12)

    def transpose_for_scores(self, x):
        new_x_shape = x.size()[:-1] + (self.num_attention_heads, self.attention_head_size)
        return x.view(new_x_shape).permute(0, 2, 1, 3)

    def forward(self, hidden_states, attention_mask):
        ext = attention_mask[:, None, None, :].to(hidden_states.dtype)
        ext = (1.0 - ext) * torch.finfo(hidden_states.dtype).min
        q = self.transpose_for_scores(self.query(hidden_states))
        k = self.transpose_for_scores(self.key(hidden_states))
        v = self.transpose_for_scores(self.value(hidden_states))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.attention_head_size)
        scores = scores + ext
        probs = nn.functional.softmax(scores, dim=-1)
        ctx = torch.matmul(probs, v).permute(0, 2, 1, 3).contiguous()
        ctx = ctx.view(ctx.size()[:-2] + (self.all_head_size,))
        return self.LayerNorm(self.dense(ctx) + hidden_states)


class UpBlock(nn.Module):
    def __init__(self, cin, cskip, cout, mode):
        super().__init__()
        if mode == "transpose":
            self.up = nn.ConvTranspose2d(cin, cin, 2, stride=2)
        else:
            self.up = nn.Upsample(scale_factor=2, mode=mode,
                                  **({"align_corners": False} if mode == "bilinear" else {}))
        self.conv1 = nn.Conv2d(cin + cskip, cout, 3, padding=1)
        self.norm = nn.GroupNorm(4, cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(cout)

    def forward(self, x, skip):
        x = torch.cat([self.up(x), skip], dim=1)
        x = F.silu(self.norm(self.conv1(x)))
        return F.relu(self.bn(self.conv2(x)))


class UNetDecoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.b1 = UpBlock(32, 16, 16, "nearest")
        self.b2 = UpBlock(16, 8, 8, "bilinear")
        self.b3 = UpBlock(8, 4, 8, "transpose")
        self.head = nn.Conv2d(8, 2, 1)

    def forward(self, x, s1, s2, s3):
        return self.head(self.b3(self.b2(self.b1(x, s1), s2), s3))


class FunctionalMix(nn.Module):
    """Functional calls and tensor methods throughout."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(50, 16)
        self.conv = nn.Conv1d(16, 32, 3, padding=1)
        self.w = nn.Parameter(torch.randn(16, 16) * 0.2)
        self.proj = nn.Linear(16, 8)

    def forward(self, ids, x):
        e = self.emb(ids)                                  # [B, T, 16]
        h = F.gelu(self.conv(e.transpose(1, 2)))           # [B, 32, T]
        h = F.max_pool1d(h, 2).permute(0, 2, 1)            # [B, T/2, 32]
        a, b = h.chunk(2, dim=-1)                          # 2 x [B, T/2, 16]
        g = a * torch.sigmoid(b)
        g = torch.einsum("btd,de->bte", g, self.w)
        g = g.clamp(min=-2.0, max=2.0) + F.pad(g, (0, 0, 1, 0))[:, :-1]
        m = g.mean(dim=1, keepdim=True).expand_as(g)
        g = torch.where(g > m, g, m * 0.5)
        s = torch.stack([g, g.flip(0) if False else g * 2], dim=1).sum(1)
        y = self.proj(F.normalize(s, dim=-1))
        img = x.view(x.size(0), 1, 8, 8)
        img = F.interpolate(F.avg_pool2d(img, 2), scale_factor=2.0, mode="nearest")
        z = img.flatten(1).reshape(-1, 4, 16).softmax(dim=-1).amax(1)
        return y.sum(1) + z[:, :8], torch.cat([y, y.neg()], dim=-1).max(dim=1)[0]


class MHAModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.mha = nn.MultiheadAttention(32, 4, batch_first=True)
        self.ln = nn.LayerNorm(32)

    def forward(self, x, pad_mask):
        y, _ = self.mha(x, x, x, key_padding_mask=pad_mask, need_weights=False)
        return self.ln(x + y)

#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Torch modules written the way people write them (torchvision-style blocks, ViT
patch embedding, nn.TransformerEncoderLayer, nn.MultiheadAttention with a padding
mask, LSTM/GRU, ...), exported with torch.onnx.export and run through OpenNPU:
the CPU executor (fp32, tight tolerance) and the simulator (fp16 NPU, every node
the NPU supports placed there: relative error and cosine), each against eager
torch. Prints one row per module and exits 1 on any wrong answer or crash; a
module the exporter itself refuses, or an op the importer refuses with a clear
error naming the op and node, is reported and does not fail the run (the list
in docs/onnx-import.md, "Torch modules as people write them").

Needs Debian's /usr/bin/python3 (torch 1.13, numpy); exits 77 (skip) without torch.
Usage: probe_torch_modules.py [fast|slow|all] [--markdown] [NAME...]
  fast: every module at the exporter's default opset (14 in torch 1.13) on cpu
        and sim, plus the opennpu.torch.compile path on cpu;
  slow: every module at opset 17 on cpu and sim."""
import math
import os
import re
import sys
import tempfile
import time

if os.environ.get("OPENNPU_TEST_SKIP"):
    print("SKIP: " + os.environ["OPENNPU_TEST_SKIP"])
    sys.exit(77)
try:
    import numpy as np
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError as e:
    print("SKIP: %s (run with /usr/bin/python3, which has torch and numpy)" % e)
    sys.exit(77)

import warnings  # noqa: E402

import opennpu  # noqa: E402

warnings.filterwarnings("ignore")

CPU_TOL = 1e-4  # max |diff| / max |eager|, fp32
SIM_TOL = 2e-2  # the same on the fp16 NPU (as tests/python/test_torch.py)
SIM_COS = 0.999


def _bn(m):
    """Gives every BatchNorm running statistics and an affine of its own, as a trained
    network has, so that a folded BN that drops a term shows."""
    g = torch.Generator().manual_seed(7)
    for b in m.modules():
        if isinstance(b, (nn.BatchNorm1d, nn.BatchNorm2d)):
            n = b.num_features
            b.running_mean.copy_(torch.randn(n, generator=g) * 0.2)
            b.running_var.copy_(torch.rand(n, generator=g) + 0.5)
            b.weight.data.copy_(torch.rand(n, generator=g) + 0.5)
            b.bias.data.copy_(torch.randn(n, generator=g) * 0.1)
    return m


# ---------------------------------------------------------------- the modules


class ConvBNReLU(nn.Sequential):
    def __init__(self, cin, cout, k=3, stride=1, groups=1, act=nn.ReLU):
        super().__init__(nn.Conv2d(cin, cout, k, stride, (k - 1) // 2, groups=groups,
                                   bias=False),
                         nn.BatchNorm2d(cout), act(inplace=True))


class DepthwiseSeparable(nn.Module):
    def __init__(self, cin=16, cout=24):
        super().__init__()
        self.dw = ConvBNReLU(cin, cin, 3, stride=2, groups=cin, act=nn.ReLU6)
        self.pw = ConvBNReLU(cin, cout, 1, act=nn.Hardswish)

    def forward(self, x):
        return self.pw(self.dw(x))


class SqueezeExcitation(nn.Module):
    def __init__(self, c=32, squeeze=8):
        super().__init__()
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc1 = nn.Conv2d(c, squeeze, 1)
        self.fc2 = nn.Conv2d(squeeze, c, 1)
        self.relu = nn.ReLU()
        self.gate = nn.Sigmoid()

    def forward(self, x):
        s = self.gate(self.fc2(self.relu(self.fc1(self.avgpool(x)))))
        return x * s


class SELinear(nn.Module):
    """The other common SE form: mean over H, W, two Linears, view back."""

    def __init__(self, c=32, r=4):
        super().__init__()
        self.fc = nn.Sequential(nn.Linear(c, c // r, bias=False), nn.ReLU(inplace=True),
                                nn.Linear(c // r, c, bias=False), nn.Hardsigmoid())

    def forward(self, x):
        b, c, _, _ = x.size()
        y = x.mean((2, 3))
        y = self.fc(y).view(b, c, 1, 1)
        return x * y.expand_as(x)


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, inplanes=32, planes=16, stride=2):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = nn.Conv2d(planes, planes * 4, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(planes * 4)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = nn.Sequential(nn.Conv2d(inplanes, planes * 4, 1, stride, bias=False),
                                        nn.BatchNorm2d(planes * 4))

    def forward(self, x):
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        identity = self.downsample(x)
        out += identity
        return self.relu(out)


class Pools(nn.Module):
    def __init__(self):
        super().__init__()
        self.mp = nn.MaxPool2d(3, 2, ceil_mode=True)
        self.ap_incl = nn.AvgPool2d(3, 2, padding=1)
        self.ap_excl = nn.AvgPool2d(3, 2, padding=1, count_include_pad=False)
        self.ap_ceil = nn.AvgPool2d(2, 2, ceil_mode=True)

    def forward(self, x):  # x: 13x13, so ceil_mode adds a partial window
        a = self.mp(x)
        b = self.ap_incl(x)
        c = self.ap_excl(x)
        d = self.ap_ceil(x)
        return a, b - c, d


class PatchEmbedViT(nn.Module):
    def __init__(self, img=64, patch=16, dim=48):
        super().__init__()
        self.proj = nn.Conv2d(3, dim, patch, patch)
        n = (img // patch) ** 2
        self.cls_token = nn.Parameter(torch.randn(1, 1, dim) * 0.02)
        self.pos_embed = nn.Parameter(torch.randn(1, n + 1, dim) * 0.02)
        self.pos_drop = nn.Dropout(0.1)
        self.norm = nn.LayerNorm(dim, eps=1e-6)

    def forward(self, x):
        x = self.proj(x).flatten(2).transpose(1, 2)
        cls = self.cls_token.expand(x.shape[0], -1, -1)
        x = torch.cat((cls, x), dim=1)
        x = self.pos_drop(x + self.pos_embed)
        return self.norm(x)[:, 0]


class Encoder(nn.Module):
    def __init__(self, norm_first, activation):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(64, 4, 128, dropout=0.1,
                                                activation=activation, batch_first=True,
                                                norm_first=norm_first)

    def forward(self, x):
        return self.layer(x)


class EncoderMasked(nn.Module):
    """nn.TransformerEncoder (2 layers) with a src_key_padding_mask input."""

    def __init__(self):
        super().__init__()
        layer = nn.TransformerEncoderLayer(32, 4, 64, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)

    def forward(self, x, pad):
        return self.enc(x, src_key_padding_mask=pad)


class MHAPadding(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = nn.MultiheadAttention(32, 4, batch_first=True)

    def forward(self, x, key_padding_mask):
        out, _ = self.attn(x, x, x, key_padding_mask=key_padding_mask, need_weights=False)
        return out


class MHAWeights(nn.Module):
    """Cross attention (query from one sequence, keys from another) that also
    returns the head-averaged weights (need_weights defaults to True)."""

    def __init__(self):
        super().__init__()
        self.attn = nn.MultiheadAttention(32, 2, batch_first=True)

    def forward(self, q, kv):
        return self.attn(q, kv, kv)


class EinsumAttention(nn.Module):
    def __init__(self, dim=32, heads=4):
        super().__init__()
        self.heads = heads
        self.scale = (dim // heads) ** -0.5
        self.to_qkv = nn.Linear(dim, dim * 3, bias=False)
        self.to_out = nn.Linear(dim, dim)

    def forward(self, x):
        b, n, _ = x.shape
        q, k, v = self.to_qkv(x).chunk(3, dim=-1)
        q, k, v = (t.reshape(b, n, self.heads, -1).permute(0, 2, 1, 3) for t in (q, k, v))
        dots = torch.einsum("bhid,bhjd->bhij", q, k) * self.scale
        attn = dots.softmax(dim=-1)
        out = torch.einsum("bhij,bhjd->bhid", attn, v)
        out = out.permute(0, 2, 1, 3).reshape(b, n, -1)
        return self.to_out(out)


class Norms(nn.Module):
    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(4, 16)
        self.inorm = nn.InstanceNorm2d(16, affine=True)
        self.inorm_plain = nn.InstanceNorm2d(16)
        self.ln_hw = nn.LayerNorm([8, 8])
        for p in self.parameters():
            with torch.no_grad():
                p.copy_(torch.randn_like(p) * 0.3 + (1.0 if p.dim() and p is not None else 0))

    def forward(self, x):
        return self.gn(x), self.inorm(x) + self.inorm_plain(x), self.ln_hw(x)


class LayerNormLast(nn.Module):
    """LayerNorm over the last dim and over the last two, on (B, T, C)."""

    def __init__(self):
        super().__init__()
        self.ln = nn.LayerNorm(24)
        self.ln2 = nn.LayerNorm([10, 24], elementwise_affine=False)

    def forward(self, x):
        return self.ln(x) + self.ln2(x * 3 + 1)


class Decoder(nn.Module):
    """ConvTranspose2d (stride 2, output_padding 1) upsampling with a skip concat."""

    def __init__(self):
        super().__init__()
        self.up = nn.ConvTranspose2d(16, 8, 3, stride=2, padding=1, output_padding=1)
        self.up2 = nn.ConvTranspose2d(16, 8, 2, stride=2)
        self.conv = ConvBNReLU(16, 8)

    def forward(self, x, skip):
        u = self.up(x)
        return self.conv(torch.cat([u, skip], dim=1)), self.up2(x)


class Interp(nn.Module):
    def forward(self, x):
        a = F.interpolate(x, scale_factor=2, mode="nearest")
        b = F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False)
        c = F.interpolate(x, size=(15, 13), mode="bilinear", align_corners=True)
        d = F.interpolate(x, size=(12, 20), mode="nearest")
        return a + b, c, d


class UNetUp(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True)
        self.conv = nn.Sequential(nn.Conv2d(12, 8, 3, padding=1), nn.BatchNorm2d(8),
                                  nn.ReLU(inplace=True))

    def forward(self, x1, x2):
        x1 = self.up(x1)
        diff_y = x2.size()[2] - x1.size()[2]
        diff_x = x2.size()[3] - x1.size()[3]
        x1 = F.pad(x1, [diff_x // 2, diff_x - diff_x // 2, diff_y // 2, diff_y - diff_y // 2])
        return self.conv(torch.cat([x2, x1], dim=1))


class SubPixel(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(8, 3 * 4, 3, padding=1)
        self.ps = nn.PixelShuffle(2)
        self.pu = nn.PixelUnshuffle(2)

    def forward(self, x):
        y = self.ps(self.conv(x))
        return y, self.pu(y)


class ChunkSplitCatStack(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(16, 32)

    def forward(self, x):
        a, gate = self.proj(x).chunk(2, dim=-1)  # GLU
        glu = a * torch.sigmoid(gate)
        p, q, r = torch.split(x, [4, 4, 8], dim=-1)
        s = torch.stack([p, q], dim=1).sum(1)
        t = torch.cat([s, r[..., :4]], dim=-1)
        return glu, t, torch.stack(torch.unbind(x, dim=1), dim=-1)


class MaskedFillWhere(nn.Module):
    def forward(self, scores, mask):
        t = scores.size(-1)
        causal = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)
        s = scores.masked_fill(causal, float("-inf"))
        s = s.masked_fill(mask[:, None, :] == 0, -1e9)
        p = F.softmax(s, dim=-1)
        return torch.where(p > 0.1, p, torch.zeros_like(p)), torch.where(scores > 0, scores,
                                                                           0.1 * scores)


class Clamps(nn.Module):
    def forward(self, x):
        return (x.clamp(min=-0.5, max=0.75) + F.hardtanh(x, -2.0, 2.0) +
                torch.clamp(x, min=0) + x.clamp(max=0.2) + F.relu6(x * 4))


class CumsumFlip(nn.Module):
    def forward(self, x):
        return torch.cumsum(x, dim=1), x.flip(-1).cumsum(-1).flip(-1), torch.cumsum(x, 0)


class ArgmaxTopk(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Linear(16, 10)

    def forward(self, x):
        logits = self.head(x)
        probs, idx = torch.topk(logits.softmax(-1), 3, dim=-1)
        return logits.argmax(dim=-1), probs, idx


class GatherIndexSelect(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("perm", torch.tensor([3, 0, 2, 2, 5]))

    def forward(self, x, idx):
        g = torch.gather(x, 1, idx)
        s = torch.index_select(x, 2, self.perm)
        return g, s, x[:, :, self.perm]


class Embeddings(nn.Module):
    """BERT-style: word + position + token type, LayerNorm, dropout."""

    def __init__(self, vocab=100, dim=32, max_pos=64):
        super().__init__()
        self.word = nn.Embedding(vocab, dim, padding_idx=0)
        self.pos = nn.Embedding(max_pos, dim)
        self.tt = nn.Embedding(2, dim)
        self.ln = nn.LayerNorm(dim, eps=1e-12)
        self.drop = nn.Dropout(0.1)
        self.register_buffer("position_ids", torch.arange(max_pos).expand((1, -1)))

    def forward(self, input_ids):
        n = input_ids.size(1)
        pos = self.position_ids[:, :n]
        tt = torch.zeros_like(input_ids)
        return self.drop(self.ln(self.word(input_ids) + self.pos(pos) + self.tt(tt)))


class Activations(nn.Module):
    def __init__(self):
        super().__init__()
        self.prelu = nn.PReLU(8)
        with torch.no_grad():
            self.prelu.weight.copy_(torch.linspace(-0.5, 0.5, 8))
        self.acts = nn.ModuleList([nn.SiLU(), nn.Mish(), nn.GELU(), nn.GELU(approximate="tanh"),
                                   nn.LeakyReLU(0.1), nn.ELU(alpha=0.7), nn.Hardswish(),
                                   nn.Softplus(), nn.Tanh(), nn.SELU(), nn.CELU(0.5)])

    def forward(self, x):
        return tuple([a(x) for a in self.acts] + [self.prelu(x)])


class Reductions(nn.Module):
    def forward(self, x):
        return (x.mean(dim=(2, 3), keepdim=True), x.sum(dim=1), x.mean(-1),
                torch.amax(x, dim=(1, 3), keepdim=True), x.std(dim=-1, keepdim=True),
                x.var(dim=1, unbiased=False), x.norm(dim=-1), x.prod(dim=2))


class MatmulBroadcast(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(8, 5) * 0.3)

    def forward(self, a, b):
        # (B, H, T, D) @ (D, E); (B, 1, T, D) @ (1, H, D, T); (T, D) @ (B, H, D, T)
        return a @ self.w, torch.matmul(a[:, :1], b), torch.matmul(a[0, 0], b)


class ChannelShuffle(nn.Module):
    def __init__(self, groups=4):
        super().__init__()
        self.groups = groups

    def forward(self, x):
        b, c, h, w = x.size()
        x = x.view(b, self.groups, c // self.groups, h, w)
        x = torch.transpose(x, 1, 2).contiguous()
        x = x.view(b, -1, h, w)
        return x.permute(0, 2, 3, 1).reshape(b, -1, c)


class AudioBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv1d(40, 64, 5, padding=2, bias=False)
        self.bn1 = nn.BatchNorm1d(64)
        self.conv2 = nn.Conv1d(64, 64, 3, padding=2, dilation=2, groups=4)
        self.bn2 = nn.BatchNorm1d(64)
        self.pool = nn.MaxPool1d(2)
        self.head = nn.Linear(64, 12)

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = F.relu(self.bn2(self.conv2(y)) + y)
        y = self.pool(y)
        return self.head(y.mean(-1))


class LSTMNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(16, 24, num_layers=1, batch_first=True)
        self.fc = nn.Linear(24, 4)

    def forward(self, x):
        out, (h, c) = self.lstm(x)
        return self.fc(out[:, -1, :]), out, h


class GRUNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(16, 20, batch_first=True, bidirectional=True)

    def forward(self, x):
        out, h = self.gru(x)
        return out, h


class MLPHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(),
                                      nn.AdaptiveAvgPool2d((2, 2)))
        self.classifier = nn.Sequential(nn.Flatten(), nn.Dropout(0.2), nn.Linear(32, 16),
                                        nn.ReLU(inplace=True), nn.Linear(16, 5))

    def forward(self, x):
        return F.softmax(self.classifier(self.features(x)), dim=1)


class NormalizeCosine(nn.Module):
    def forward(self, a, b):
        an = F.normalize(a, dim=-1)
        bn = F.normalize(b, p=2, dim=-1)
        return an @ bn.t(), F.cosine_similarity(a, b, dim=-1)


class PoolsCeilEdge(nn.Module):
    """ceil_mode windows that would start in the right padding (torch drops them),
    and an average over a window that overhangs the padding."""

    def forward(self, x):  # x: 7x7
        return (F.max_pool2d(x, 2, 2, padding=1, ceil_mode=True),
                F.avg_pool2d(x, 2, 2, padding=1, ceil_mode=True),
                F.avg_pool2d(x, 3, 2, padding=1, ceil_mode=True, count_include_pad=False),
                F.avg_pool2d(x, 3, 2, padding=1, ceil_mode=True))


def pools_ceil_edge_onnx(m, x):
    """What torch 1.13's export of PoolsCeilEdge means: avg_pool2d(2, 2, padding=1,
    ceil_mode=True) becomes Pad + AveragePool(ceil_mode=1, no pads), whose last
    window starts inside the padded tensor and is kept (eager drops it: 5x5, not 4x4)."""
    a, _, c, d = m(x)
    return a, F.avg_pool2d(F.pad(x, (1, 1, 1, 1)), 2, 2, ceil_mode=True), c, d


class ConvPadModes(nn.Module):
    def __init__(self):
        super().__init__()
        self.reflect = nn.Conv2d(4, 4, 3, padding=1, padding_mode="reflect")
        self.replicate = nn.Conv2d(4, 4, 3, padding=(1, 2), padding_mode="replicate")
        self.dil = nn.Conv2d(4, 4, 3, padding=2, dilation=2, groups=4)

    def forward(self, x):
        return self.reflect(x), self.replicate(x), self.dil(x)


class ConvCircular(nn.Module):
    def __init__(self):
        super().__init__()
        self.circular = nn.Conv2d(4, 4, 3, padding=1, padding_mode="circular")

    def forward(self, x):
        return self.circular(x)


def conv_circular_onnx(m, x):
    """torch 1.13 exports circular padding p as the slice [-(p+1):-1] (one row too
    early), not [-p:]: what its graph means."""
    a = torch.cat([x[:, :, -2:-1], x, x[:, :, 0:1]], 2)
    b = torch.cat([a[:, :, :, -2:-1], a, a[:, :, :, 0:1]], 3)
    return F.conv2d(b, m.circular.weight, m.circular.bias)


class MaskedMeanPool(nn.Module):
    """Sentence-embedding pooling: mean over the tokens the attention mask keeps."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(50, 16)

    def forward(self, input_ids, attention_mask):
        tok = self.emb(input_ids)
        m = attention_mask.unsqueeze(-1).expand(tok.size()).float()
        s = torch.sum(tok * m, 1) / torch.clamp(m.sum(1), min=1e-9)
        return F.normalize(s, p=2, dim=1)


class RollRepeatArange(nn.Module):
    def forward(self, x):
        pos = torch.arange(x.size(1), dtype=torch.float32).unsqueeze(0)
        y = torch.roll(x, shifts=(2, -1), dims=(1, 2)) + pos.unsqueeze(-1)
        return y.repeat(1, 2, 1), x.new_zeros(x.shape[0], 3) + x[:, :3, 0]


class LSTMState(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(8, 12, batch_first=True)

    def forward(self, x, h0, c0):
        out, (h, c) = self.lstm(x, (h0, c0))
        return out, h, c


class LinearBN1d(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(16, 32), nn.BatchNorm1d(32), nn.ReLU(),
                                 nn.Linear(32, 8), nn.LogSoftmax(dim=-1))

    def forward(self, x):
        return self.net(x)


class ConvNeXtBlock(nn.Module):
    def __init__(self, dim=32):
        super().__init__()
        self.dwconv = nn.Conv2d(dim, dim, kernel_size=7, padding=3, groups=dim)
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.pwconv1 = nn.Linear(dim, 4 * dim)
        self.act = nn.GELU()
        self.pwconv2 = nn.Linear(4 * dim, dim)
        self.gamma = nn.Parameter(1e-1 * torch.ones(dim))

    def forward(self, x):
        inp = x
        x = self.dwconv(x)
        x = x.permute(0, 2, 3, 1)  # (N, C, H, W) -> (N, H, W, C)
        x = self.pwconv2(self.act(self.pwconv1(self.norm(x))))
        x = self.gamma * x
        return inp + x.permute(0, 3, 1, 2)


class WindowAttention(nn.Module):
    """Swin-style: window partition with 6-D view/permute, relative position bias
    gathered from a table by a registered index, window reverse."""

    def __init__(self, dim=16, ws=4, heads=2):
        super().__init__()
        self.ws, self.heads = ws, heads
        self.scale = (dim // heads) ** -0.5
        self.table = nn.Parameter(torch.randn((2 * ws - 1) ** 2, heads) * 0.1)
        coords = torch.stack(torch.meshgrid(torch.arange(ws), torch.arange(ws), indexing="ij"))
        flat = torch.flatten(coords, 1)
        rel = (flat[:, :, None] - flat[:, None, :]).permute(1, 2, 0).contiguous()
        rel[:, :, 0] += ws - 1
        rel[:, :, 1] += ws - 1
        rel[:, :, 0] *= 2 * ws - 1
        self.register_buffer("rel_index", rel.sum(-1))
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):  # (B, H, W, C)
        B, H, W, C = x.shape
        ws = self.ws
        x = x.view(B, H // ws, ws, W // ws, ws, C).permute(0, 1, 3, 2, 4, 5)
        win = x.contiguous().view(-1, ws * ws, C)
        B_, N, _ = win.shape
        qkv = self.qkv(win).reshape(B_, N, 3, self.heads, C // self.heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        attn = (q * self.scale) @ k.transpose(-2, -1)
        bias = self.table[self.rel_index.view(-1)].view(N, N, -1).permute(2, 0, 1)
        attn = (attn + bias.unsqueeze(0)).softmax(dim=-1)
        out = self.proj((attn @ v).transpose(1, 2).reshape(B_, N, C))
        out = out.view(B, H // ws, W // ws, ws, ws, C).permute(0, 1, 3, 2, 4, 5)
        return out.reshape(B, H, W, C)


class LlamaBits(nn.Module):
    """Hand-written RMSNorm, rotary embedding (rotate_half) and a SwiGLU MLP."""

    def __init__(self, dim=32, hidden=64, T=8):
        super().__init__()
        self.weight = nn.Parameter(torch.rand(dim) + 0.5)
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)
        inv = 1.0 / (10000 ** (torch.arange(0, dim, 2).float() / dim))
        freqs = torch.outer(torch.arange(T).float(), inv)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("cos", emb.cos())
        self.register_buffer("sin", emb.sin())

    @staticmethod
    def rotate_half(x):
        x1 = x[..., : x.shape[-1] // 2]
        x2 = x[..., x.shape[-1] // 2:]
        return torch.cat((-x2, x1), dim=-1)

    def forward(self, x):
        h = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.weight
        T = h.shape[1]
        h = h * self.cos[:T] + self.rotate_half(h) * self.sin[:T]
        return x + self.w2(F.silu(self.w1(h)) * self.w3(h))


class CausalSelfAttention(nn.Module):
    """nanoGPT style: one qkv Linear, split, view/transpose heads, a tril buffer."""

    def __init__(self, n_embd=32, n_head=4, block=16):
        super().__init__()
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.n_head = n_head
        self.register_buffer("bias", torch.tril(torch.ones(block, block))
                             .view(1, 1, block, block))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class YoloBits(nn.Module):
    """YOLOv5-style Focus slicing, SPPF, nearest upsample + concat, and a detect head
    (view, permute, sigmoid, grid from meshgrid)."""

    def __init__(self):
        super().__init__()
        self.focus = nn.Conv2d(12, 16, 3, padding=1)
        self.cv = nn.Conv2d(16, 8, 1)
        self.m = nn.MaxPool2d(5, 1, 2)
        self.cv2 = nn.Conv2d(32, 16, 1)
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        self.det = nn.Conv2d(32, 3 * 7, 1)

    def forward(self, x):
        x = torch.cat([x[..., ::2, ::2], x[..., 1::2, ::2], x[..., ::2, 1::2],
                       x[..., 1::2, 1::2]], 1)
        f = F.silu(self.focus(x))
        y = self.cv(f)
        y1 = self.m(y)
        y2 = self.m(y1)
        s = self.cv2(torch.cat((y, y1, y2, self.m(y2)), 1))
        p = self.det(torch.cat([self.up(F.max_pool2d(s, 2)), f], 1))
        bs, _, ny, nx = p.shape
        p = p.view(bs, 3, 7, ny, nx).permute(0, 1, 3, 4, 2).contiguous()
        yv, xv = torch.meshgrid([torch.arange(ny), torch.arange(nx)], indexing="ij")
        grid = torch.stack((xv, yv), 2).view(1, 1, ny, nx, 2).float()
        p = p.sigmoid()
        xy = (p[..., 0:2] * 2 - 0.5 + grid) * 8
        return torch.cat((xy, p[..., 2:]), -1).view(bs, -1, 7)


class SinusoidalPE(nn.Module):
    """The positional encoding computed in forward from arange (Transformer tutorial),
    plus a boolean any/all over a mask and logical ops."""

    def __init__(self, d=16):
        super().__init__()
        self.d = d

    def forward(self, x):
        T = x.size(1)
        position = torch.arange(T, dtype=torch.float).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, self.d, 2).float() * (-math.log(10000.0) / self.d))
        pe = torch.zeros(T, self.d)
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        y = x + pe.unsqueeze(0)
        m = (x > 0) & (x < 1)
        return y, m.any(dim=-1), (~m).all(dim=-1), m.float().sum(-1)


class STNGridSample(nn.Module):
    """Spatial transformer: the affine grid by hand (torch 1.13 cannot export
    affine_grid) + grid_sample (bilinear, zeros padding, align_corners False; the
    exporter has it from opset 16)."""

    def __init__(self, h=8, w=8):
        super().__init__()
        self.loc = nn.Linear(3 * h * w, 6)
        with torch.no_grad():
            self.loc.weight.mul_(0.01)
            self.loc.bias.copy_(torch.tensor([1.0, 0.1, 0.0, -0.1, 0.9, 0.05]))
        ys = (torch.arange(h).float() * 2 + 1) / h - 1
        xs = (torch.arange(w).float() * 2 + 1) / w - 1
        gy, gx = torch.meshgrid(ys, xs, indexing="ij")
        self.register_buffer("base", torch.stack([gx, gy, torch.ones_like(gx)], -1)
                             .view(1, h * w, 3))
        self.h, self.w = h, w

    def forward(self, x):
        theta = self.loc(x.flatten(1)).view(-1, 2, 3)
        grid = torch.matmul(self.base, theta.transpose(1, 2)).view(-1, self.h, self.w, 2)
        return F.grid_sample(x, grid, mode="bilinear", padding_mode="zeros",
                             align_corners=False)


class AttentionPool(nn.Module):
    def __init__(self, d=24):
        super().__init__()
        self.score = nn.Linear(d, 1)
        self.pool = nn.AdaptiveMaxPool1d(1)

    def forward(self, x, mask):
        w = self.score(x).squeeze(-1).masked_fill(~mask, -1e4).softmax(dim=1)
        att = torch.bmm(w.unsqueeze(1), x).squeeze(1)
        return att, self.pool(x.transpose(1, 2)).squeeze(-1), F.avg_pool1d(
            x.transpose(1, 2), 3, 2).mean(-1)


class OneHot(nn.Module):
    def forward(self, ids, x):
        # (F.one_hot(ids) without num_classes exports depth -1: torch 1.13 cannot size it)
        return F.one_hot(ids, num_classes=6).float() * x[..., None], F.one_hot(ids, 7)


class MaskedSelect(nn.Module):
    """A boolean-mask select: its shape depends on the data (NonZero; refused)."""

    def forward(self, x):
        return x[x > 0]


def R(*s):
    return torch.randn(*s)


def build():
    """(name, module, example inputs, input names, dynamic batch?[, onnx_ref]) in a
    fixed order; onnx_ref(module, *inputs) gives what the exported graph means where
    torch 1.13's exporter is known to differ from eager torch (checked against both:
    the eager result must differ, else the note is stale)."""
    torch.manual_seed(0)
    lens = torch.tensor([[False] * 8, [False] * 5 + [True] * 3])
    lens9 = torch.tensor([[True] * 9, [True] * 6 + [False] * 3])
    ids = torch.randint(1, 100, (2, 12))
    ids[1, 9:] = 0
    return [
        ("conv_bn_relu", ConvBNReLU(8, 16), (R(2, 8, 16, 16),), ["x"], True),
        ("dw_separable", DepthwiseSeparable(), (R(1, 16, 16, 16),), ["x"], False),
        ("squeeze_excite", SqueezeExcitation(), (R(1, 32, 8, 8),), ["x"], False),
        ("se_linear", SELinear(), (R(2, 32, 6, 6),), ["x"], False),
        ("bottleneck", Bottleneck(), (R(1, 32, 16, 16),), ["x"], True),
        ("pools_ceil_pad", Pools(), (R(1, 4, 13, 13),), ["x"], False),
        ("vit_patch_embed", PatchEmbedViT(), (R(2, 3, 64, 64),), ["x"], True),
        ("encoder_post_relu", Encoder(False, "relu"), (R(2, 10, 64),), ["x"], True),
        ("encoder_pre_gelu", Encoder(True, "gelu"), (R(2, 10, 64),), ["x"], False),
        ("encoder2_padmask", EncoderMasked(), (R(2, 8, 32), lens), ["x", "pad"], False),
        ("mha_key_padding", MHAPadding(), (R(2, 8, 32), lens), ["x", "key_padding_mask"],
         False),
        ("mha_cross_weights", MHAWeights(), (R(2, 5, 32), R(2, 7, 32)), ["q", "kv"], False),
        ("einsum_attention", EinsumAttention(), (R(2, 9, 32),), ["x"], True),
        ("group_inst_ln_norm", Norms(), (R(2, 16, 8, 8),), ["x"], False),
        ("layernorm_last", LayerNormLast(), (R(2, 10, 24),), ["x"], False),
        ("convtranspose_dec", Decoder(), (R(1, 16, 8, 8), R(1, 8, 16, 16)), ["x", "skip"],
         False),
        ("interpolate", Interp(), (R(1, 3, 6, 5),), ["x"], False),
        ("unet_up_pad", UNetUp(), (R(1, 4, 7, 7), R(1, 8, 15, 15)), ["x1", "x2"], False),
        ("pixel_shuffle", SubPixel(), (R(1, 8, 6, 6),), ["x"], False),
        ("chunk_split_stack", ChunkSplitCatStack(), (R(2, 3, 16),), ["x"], False),
        ("masked_fill_where", MaskedFillWhere(),
         (R(2, 6, 6), torch.tensor([[1] * 6, [1] * 4 + [0] * 2])), ["scores", "mask"], False),
        ("clamp_hardtanh", Clamps(), (R(3, 17) * 2,), ["x"], False),
        ("cumsum_flip", CumsumFlip(), (R(3, 7),), ["x"], False),
        ("argmax_topk", ArgmaxTopk(), (R(4, 16),), ["x"], True),
        ("gather_index_sel", GatherIndexSelect(),
         (R(2, 5, 6), torch.randint(0, 5, (2, 3, 6))), ["x", "idx"], False),
        ("bert_embeddings", Embeddings(), (ids,), ["input_ids"], True),
        ("activations", Activations(), (R(2, 8, 5) * 3,), ["x"], False),
        ("reductions", Reductions(), (R(2, 3, 4, 5),), ["x"], False),
        ("matmul_broadcast", MatmulBroadcast(), (R(2, 3, 4, 8), R(1, 3, 8, 4)), ["a", "b"],
         False),
        ("channel_shuffle", ChannelShuffle(), (R(1, 16, 5, 6),), ["x"], False),
        ("conv1d_audio", AudioBlock(), (R(2, 40, 50),), ["x"], True),
        ("lstm", LSTMNet(), (R(2, 7, 16),), ["x"], False),
        ("gru_bidir", GRUNet(), (R(2, 7, 16),), ["x"], False),
        ("mlp_head", MLPHead(), (R(2, 3, 10, 10),), ["x"], False),
        ("normalize_cosine", NormalizeCosine(), (R(4, 16), R(4, 16)), ["a", "b"], False),
        ("pools_ceil_edge", PoolsCeilEdge(), (R(1, 2, 7, 7),), ["x"], False,
         pools_ceil_edge_onnx),
        ("conv_pad_modes", ConvPadModes(), (R(1, 4, 6, 7),), ["x"], False),
        ("conv_circular", ConvCircular(), (R(1, 4, 6, 7),), ["x"], False, conv_circular_onnx),
        ("masked_mean_pool", MaskedMeanPool(), (ids % 50, (ids > 0).long()),
         ["input_ids", "attention_mask"], True),
        ("roll_repeat_arange", RollRepeatArange(), (R(2, 5, 4),), ["x"], False),
        ("lstm_state", LSTMState(), (R(2, 6, 8), R(1, 2, 12), R(1, 2, 12)), ["x", "h0", "c0"],
         False),
        ("linear_bn1d", LinearBN1d(), (R(4, 16),), ["x"], False),
        ("convnext_block", ConvNeXtBlock(), (R(1, 32, 8, 8),), ["x"], True),
        ("swin_window_attn", WindowAttention(), (R(1, 8, 8, 16),), ["x"], False),
        ("llama_rms_rope_swiglu", LlamaBits(), (R(2, 8, 32),), ["x"], False),
        ("nanogpt_attention", CausalSelfAttention(), (R(2, 10, 32),), ["x"], False),
        ("yolo_focus_sppf_head", YoloBits(), (R(1, 3, 32, 32),), ["x"], False),
        ("sinusoidal_pe_any_all", SinusoidalPE(), (R(2, 6, 16),), ["x"], False),
        ("stn_grid_sample", STNGridSample(), (R(2, 3, 8, 8),), ["x"], False),
        ("attention_pool", AttentionPool(), (R(2, 9, 24), lens9), ["x", "mask"], False),
        ("one_hot", OneHot(), (torch.tensor([[0, 5, 2, 2, 1], [3, 3, 0, 4, 1]]), R(2, 5)),
         ["ids", "x"], False),
        ("masked_select", MaskedSelect(), (R(3, 4),), ["x"], False),
    ]


# ---------------------------------------------------------------- checking


def compare(refs, gots, sim):
    """(ok, text): max |diff| / max |eager| over the outputs (and the smallest cosine);
    integer outputs must match exactly on cpu; on the fp16 simulator an index output
    may pick another entry only where the eager values it chooses between are within
    fp16's rounding (reported as a count)."""
    if len(refs) != len(gots):
        return False, "%d outputs, eager %d" % (len(gots), len(refs))
    worst, cos_min, idx_off = 0.0, 1.0, 0
    for r, g in zip(refs, gots):
        r = r.detach().numpy()
        if tuple(g.shape) != tuple(r.shape):
            return False, "shape %s, eager %s" % (tuple(g.shape), tuple(r.shape))
        if r.dtype.kind in "iub":
            bad = int((g.astype(r.dtype) != r).sum())
            if bad and not sim:
                return False, "%d of %d integer values differ" % (bad, r.size)
            idx_off += bad
            continue
        rf, gf = r.astype(np.float64), g.astype(np.float64)
        fin = np.isfinite(rf)
        if not np.array_equal(fin, np.isfinite(gf)) or not np.array_equal(rf[~fin], gf[~fin]):
            return False, "inf/nan where eager has none (or the reverse)"
        rf, gf = rf[fin], gf[fin]
        scale = max(np.abs(rf).max(initial=0.0), 1e-6)
        worst = max(worst, np.abs(gf - rf).max(initial=0.0) / scale)
        den = np.linalg.norm(rf) * np.linalg.norm(gf)
        if den > 0:
            cos_min = min(cos_min, float(np.dot(rf.ravel(), gf.ravel()) / den))
    tol = SIM_TOL if sim else CPU_TOL
    ok = worst <= tol and (not sim or cos_min >= SIM_COS) and idx_off <= (2 if sim else 0)
    text = "%.1e cos %.5f" % (worst, cos_min)
    if idx_off:
        text += " idx~%d" % idx_off
    return ok, text


def first_line(e):
    s = str(e).strip().splitlines()
    s = [x for x in s if x.strip()] or [type(e).__name__]
    # the library's own error (the last logged message names the node) is most telling
    return " | ".join(x.strip() for x in s[-2:])[:300]


def export(name, module, inputs, names, dyn, opset, folder, onnx_ref=None):
    path = os.path.join(folder, "%s-%s.onnx" % (name, opset or "def"))
    with torch.no_grad():
        ref = module(*inputs)
        if onnx_ref:
            ref = onnx_ref(module, *inputs)
    refs = list(ref) if isinstance(ref, (tuple, list)) else [ref]
    outs = ["y%d" % i for i in range(len(refs))]
    kw = {}
    if opset:
        kw["opset_version"] = opset
    if dyn:
        kw["dynamic_axes"] = {n: {0: "batch"} for n in names + outs}
    torch.onnx.export(module, inputs, path, input_names=names, output_names=outs, **kw)
    return path, refs


def run_onnx(path, inputs, names, backend, dyn):
    dims = {"batch": int(inputs[0].shape[0])} if dyn else None
    with opennpu.Model(path, backend=backend, dims=dims,
                       partition="supported" if backend == "sim" else None) as m:
        feed = {}
        for n, t, io in zip(names, inputs, m.inputs):
            a = t.numpy()
            if a.dtype != io.dtype:  # torch's int64 ids / bool masks, as the model declares
                a = a.astype(io.dtype)
            feed[n] = a
        out = m.run(feed)
        st = m.stats
        return [out[o.name] for o in m.outputs], st


def probe(name, module, inputs, names, dyn, opset, backends, folder, onnx_ref=None):
    row = {"name": name, "opset": opset or 14}
    try:
        path, refs = export(name, module, inputs, names, dyn, opset, folder, onnx_ref)
    except Exception as e:  # the exporter's refusal is torch's, not ours
        for be in backends:
            row[be] = ("export", "torch.onnx.export: " + first_line(e))
        return row
    for be in backends:
        try:
            gots, st = run_onnx(path, inputs, names, be, dyn)
            ok, text = compare(refs, gots, be == "sim")
            if be == "sim" and st.submits == 0:
                text += " (no NPU work)"
            if onnx_ref:
                with torch.no_grad():
                    eager = module(*inputs)
                eager = list(eager) if isinstance(eager, (tuple, list)) else [eager]
                stale, _ = compare(eager, gots, be == "sim")
                text += (" vs the exported graph (torch 1.13's exporter differs from eager)"
                         if not stale else " (the exporter note is stale: matches eager)")
                ok = ok and not stale
            row[be] = ("ok" if ok else "WRONG", text)
        except opennpu.Error as e:  # a refusal naming the op is fine, anything else not
            msg = first_line(e)
            row[be] = ("refused" if "unsupported op" in msg else "error", msg)
        except Exception as e:
            row[be] = ("crash", "%s: %s" % (type(e).__name__, first_line(e)))
    if dyn:
        # the point of a dynamic batch: run the same file at another batch (one more row)
        more = tuple(torch.cat([t, t[:1]], 0) for t in inputs)
        try:
            with torch.no_grad():
                ref = module(*more)
            refs = list(ref) if isinstance(ref, (tuple, list)) else [ref]
            gots, _ = run_onnx(path, more, names, "cpu", dyn)
            ok, text = compare(refs, gots, False)
            row["cpu"] = (row["cpu"][0] if ok else "WRONG",
                          row["cpu"][1] + ("; batch %d ok" % more[0].shape[0] if ok else
                                           "; batch %d: %s" % (more[0].shape[0], text)))
        except Exception as e:
            row["cpu"] = ("error", row["cpu"][1] + "; batch %d: %s" % (more[0].shape[0],
                                                                      first_line(e)))
    return row


def probe_compile(name, module, inputs):
    """opennpu.torch.compile on cpu (no ONNX): the same module, the other front end."""
    import opennpu.torch as ot
    try:
        cm = ot.compile(module, inputs, backend="cpu", fallback="error")
        got = cm(*inputs)
    except ot.UnsupportedError as e:
        return ("refused", first_line(e))
    except ot.TraceError as e:
        return ("refused", first_line(e))
    except Exception as e:
        return ("crash", "%s: %s" % (type(e).__name__, first_line(e)))
    with torch.no_grad():
        ref = module(*inputs)
    refs = list(ref) if isinstance(ref, (tuple, list)) else [ref]
    gots = list(got) if isinstance(got, (tuple, list)) else [got]
    ok, text = compare(refs, [g.detach().numpy() for g in gots], False)
    return ("ok" if ok else "WRONG", text)


def _cell(res):
    """A short markdown cell: the status and the figure, or the first words of why."""
    if res is None:
        return "-"
    st, text = res
    if st in ("ok", "WRONG"):
        text = text.replace(" vs the exported graph (torch 1.13's exporter differs from "
                            "eager)", " (vs the exported graph)")
        return "%s %s" % (st, text.replace("; batch", "; batch"))
    return "%s: %s" % (st, text[:90].replace("|", "/") + ("..." if len(text) > 90 else ""))


def print_markdown(rows):
    """One row per module; the opset 17 results are named only where they differ."""
    print("| module | exporter opset | cpu (max err / max eager) | sim (max err, cosine) "
          "| opennpu.torch on cpu |")
    print("|---|---|---|---|---|")
    by = {}
    for r in rows:
        by.setdefault(r["name"], []).append(r)
    for name, rs in by.items():
        first = rs[0]
        ops = " / ".join(str(r["opset"]) for r in rs)
        cpu, sim = _cell(first.get("cpu")), _cell(first.get("sim"))
        for r in rs[1:]:
            for be in ("cpu", "sim"):
                if r.get(be) and first.get(be) and r[be][0] != first[be][0]:
                    extra = "; at %s: %s" % (r["opset"], _cell(r[be]))
                    if be == "cpu":
                        cpu += extra
                    else:
                        sim += extra
        torch_cell = _cell(next((r["torch"] for r in rs if r.get("torch")), None))
        # fp32 columns: the error is the figure (cosine is 1.00000 throughout)
        cpu = re.sub(r" cos 1\.00000", "", cpu)
        torch_cell = re.sub(r" cos 1\.00000", "", torch_cell)
        print("| %s | %s | %s | %s | %s |" % (name, ops, cpu, sim, torch_cell))


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    mode = args[0] if args and args[0] in ("fast", "slow", "all") else "fast"
    only = set(args[1:] if args and args[0] in ("fast", "slow", "all") else args)
    markdown = "--markdown" in sys.argv
    plans = []
    if mode in ("fast", "all"):
        plans.append((None, True))
    if mode in ("slow", "all"):
        plans.append((17, False))
    rows = []
    t0 = time.time()
    with tempfile.TemporaryDirectory() as folder:
        for name, module, inputs, names, dyn, *onnx_ref in build():
            if only and name not in only:
                continue
            _bn(module).eval()
            onnx_ref = onnx_ref[0] if onnx_ref else None
            for opset, with_compile in plans:
                row = probe(name, module, inputs, names, dyn, opset, ["cpu", "sim"], folder,
                            onnx_ref)
                if with_compile:
                    row["torch"] = probe_compile(name, module, inputs)
                rows.append(row)
    bad = sum(1 for r in rows for be in ("cpu", "sim", "torch")
              if r.get(be) and r[be][0] in ("WRONG", "crash", "error"))
    if markdown:
        print_markdown(rows)
    for r in rows if not markdown else ():
        cells = ["%s %s" % r[be] if r.get(be) else "-" for be in ("cpu", "sim", "torch")]
        print("%-20s %-3s | %s" % (r["name"], r["opset"], " | ".join(cells)))
    print("%d rows, %d wrong/crash/error, %.1f s" % (len(rows), bad, time.time() - t0))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Small text towers and tokenizers for the text-encoder tests (tests/gst).

Needs Debian's /usr/bin/python3 (torch 1.13, numpy, onnx). Random weights,
width 64, 2 layers, sequence length 16; the module semantics follow
transformers' CLIPTextTransformer and SiglipTextTransformer, written out here:

  clip   clip_text.onnx        input_ids int64 [1, 16] -> text_embeds [1, 32]
         clip_tokenizer.json   CLIP-style tokenizer.json: byte-level BPE with
                               the "</w>" end-of-word suffix, merges learnt
                               here from a generated corpus, NFC + Replace
                               (\\s+ -> " ") + Lowercase, Split + ByteLevel,
                               RobertaProcessing (<|startoftext|> ...
                               <|endoftext|>)
         clip_labels.txt       the label strings
         clip_ref.txt          per label: the ids (padded to 16) from the
                               reference BPE below (openai's CLIP algorithm)
         clip_ref.npy          [N, 32] torch's text_embeds for those ids
         clip_tiny_tokenizer.json  a characters-only tokenizer with the ids of
                               tests/models/data/clip_text_tiny (BOS 126, EOS 127)
  siglip siglip_text.onnx      input_ids int64 [1, 16] -> pooler_output [1, 64]
         siglip.model          a SentencePiece unigram model trained here with
                               spm_train (pad 0, </s> 1, <unk> 2, no BOS)
         siglip_labels.txt, siglip_ref.txt, siglip_ref.npy as above; the ids
                               are spm_encode's (the sentencepiece CLI) on
                               SigLIP's canonical text, + </s>, padded with </s>
  image  image_tower.onnx      x f32 [1,3,8,8] -> image_embeds [1, 32]: a
                               linear map of the per-channel means (an image
                               tower of CLIP's width for the npuembed test)
         image_tower64.onnx    the same with [1, 64] (SigLIP's width)

Usage: make-text-models.py clip|siglip|image OUTDIR
"""
import json
import os
import re
import string
import subprocess
import sys

import numpy as np
import torch
from torch import nn

import onnx
from onnx import TensorProto, helper, numpy_helper

SEQ = 16
WIDTH = 64
LAYERS = 2
HEADS = 4
CLIP_PROJ = 32

LABELS = [
    "a red car",
    "a photo of a cat",
    "Dog!",
    "two   dogs, playing in the snow",
    "an airplane in the blue sky",
    "blue",
    "a photo of a small bird sitting on a branch of an old tree near a river at night",
    "zebra's stripes",
    "Café au lait: 3 cups",
]

WORDS = ("a the photo of cat dog car red blue green sky tree bird snow river "
         "night day small large airplane two three playing sitting on in near "
         "branch old new person people street house road boat water zebra "
         "stripes quick brown fox jumps over lazy mountain").split()


def corpus(n):
    rng = np.random.default_rng(7)
    lines = []
    for _ in range(n):
        k = int(rng.integers(3, 10))
        lines.append(" ".join(rng.choice(WORDS, k)))
    return lines


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.q_proj = nn.Linear(WIDTH, WIDTH)
        self.k_proj = nn.Linear(WIDTH, WIDTH)
        self.v_proj = nn.Linear(WIDTH, WIDTH)
        self.out_proj = nn.Linear(WIDTH, WIDTH)

    def forward(self, x, mask):
        b, n, _ = x.shape
        hd = WIDTH // HEADS
        q = self.q_proj(x).view(b, n, HEADS, hd).transpose(1, 2) * hd ** -0.5
        k = self.k_proj(x).view(b, n, HEADS, hd).transpose(1, 2)
        v = self.v_proj(x).view(b, n, HEADS, hd).transpose(1, 2)
        w = q @ k.transpose(-1, -2)
        if mask is not None:
            w = w + mask
        w = torch.softmax(w, dim=-1)
        o = (w @ v).transpose(1, 2).reshape(b, n, WIDTH)
        return self.out_proj(o)


class Layer(nn.Module):
    """Pre-LN encoder layer (CLIPEncoderLayer / SiglipEncoderLayer)."""

    def __init__(self, act):
        super().__init__()
        self.layer_norm1 = nn.LayerNorm(WIDTH, eps=1e-5)
        self.self_attn = Attention()
        self.layer_norm2 = nn.LayerNorm(WIDTH, eps=1e-5)
        self.fc1 = nn.Linear(WIDTH, 4 * WIDTH)
        self.fc2 = nn.Linear(4 * WIDTH, WIDTH)
        self.act = act

    def forward(self, x, mask):
        x = x + self.self_attn(self.layer_norm1(x), mask)
        return x + self.fc2(self.act(self.fc1(self.layer_norm2(x))))


def quick_gelu(x):
    return x * torch.sigmoid(1.702 * x)


def gelu_tanh(x):
    return nn.functional.gelu(x, approximate="tanh")


class ClipText(nn.Module):
    """CLIPTextTransformer + text_projection (CLIPTextModelWithProjection):
    causal attention, final LayerNorm, pooled at the first EOS."""

    def __init__(self, vocab, eos):
        super().__init__()
        self.token_embedding = nn.Embedding(vocab, WIDTH)
        self.position_embedding = nn.Embedding(SEQ, WIDTH)
        self.layers = nn.ModuleList([Layer(quick_gelu) for _ in range(LAYERS)])
        self.final_layer_norm = nn.LayerNorm(WIDTH, eps=1e-5)
        self.text_projection = nn.Linear(WIDTH, CLIP_PROJ, bias=False)
        self.eos = eos
        causal = torch.full((SEQ, SEQ), float("-inf")).triu(1)
        self.register_buffer("causal", causal)

    def forward(self, input_ids):
        pos = torch.arange(SEQ).unsqueeze(0)
        x = self.token_embedding(input_ids) + self.position_embedding(pos)
        for layer in self.layers:
            x = layer(x, self.causal)
        x = self.final_layer_norm(x)
        # transformers: (input_ids == eos_token_id).int().argmax(-1)
        idx = (input_ids == self.eos).int().argmax(dim=-1)
        pooled = x[torch.arange(x.shape[0]), idx]
        return self.text_projection(pooled)


class SiglipText(nn.Module):
    """SiglipTextTransformer: no mask, final LayerNorm, the last position,
    then the head (Linear)."""

    def __init__(self, vocab):
        super().__init__()
        self.token_embedding = nn.Embedding(vocab, WIDTH)
        self.position_embedding = nn.Embedding(SEQ, WIDTH)
        self.layers = nn.ModuleList([Layer(gelu_tanh) for _ in range(LAYERS)])
        self.final_layer_norm = nn.LayerNorm(WIDTH, eps=1e-6)
        self.head = nn.Linear(WIDTH, WIDTH)

    def forward(self, input_ids):
        pos = torch.arange(SEQ).unsqueeze(0)
        x = self.token_embedding(input_ids) + self.position_embedding(pos)
        for layer in self.layers:
            x = layer(x, None)
        x = self.final_layer_norm(x)
        return self.head(x[:, -1, :])


def randomise(model, seed):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "layer_norm" in name:
                p.copy_(1.0 + 0.1 * torch.randn(p.shape, generator=g)
                        if name.endswith("weight")
                        else 0.1 * torch.randn(p.shape, generator=g))
            else:
                p.copy_(0.2 * torch.randn(p.shape, generator=g))
    model.eval()


def export(model, path, out_name):
    ids = torch.zeros((1, SEQ), dtype=torch.int64)
    torch.onnx.export(model, (ids,), path, input_names=["input_ids"],
                      output_names=[out_name], opset_version=14,
                      do_constant_folding=True)


def embed(model, rows):
    with torch.no_grad():
        out = model(torch.tensor(rows, dtype=torch.int64).reshape(-1, SEQ)[0:1])
        outs = []
        for r in rows:
            outs.append(model(torch.tensor([r], dtype=torch.int64))[0].numpy())
    e = np.stack(outs).astype(np.float32)
    return e / np.linalg.norm(e, axis=1, keepdims=True)


def write_ref(outdir, prefix, labels, rows, emb):
    with open(os.path.join(outdir, prefix + "_labels.txt"), "w") as f:
        f.write("\n".join(labels) + "\n")
    with open(os.path.join(outdir, prefix + "_ref.txt"), "w") as f:
        for r in rows:
            f.write(" ".join(str(i) for i in r) + "\n")
    np.save(os.path.join(outdir, prefix + "_ref.npy"), emb)


# ---- CLIP: byte-level BPE with "</w>", the openai algorithm -----------------

def bytes_to_unicode():
    bs = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
          + list(range(ord("®"), ord("ÿ") + 1)))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, [chr(c) for c in cs]))


B2U = bytes_to_unicode()
# CLIP's pattern in Python's re (no \p{L}: letters are [^\W\d_]; the labels
# have no "_"): 's 't ... runs of letters, one digit, runs of other non-space
# characters
CLIP_PAT = re.compile(r"'s|'t|'re|'ve|'m|'ll|'d|[^\W\d_]+|\d|[^\s\w]+")


def clip_words(text):
    text = " ".join(text.split()).lower()
    return ["".join(B2U[b] for b in w.encode()) for w in CLIP_PAT.findall(text)]


def bpe_word(word, ranks):
    sym = list(word[:-1]) + [word[-1] + "</w>"]
    while len(sym) > 1:
        pairs = [(ranks.get((a, b), 1e9), i) for i, (a, b) in enumerate(zip(sym, sym[1:]))]
        r, i = min(pairs)
        if r == 1e9:
            break
        first, second = sym[i], sym[i + 1]
        out, j = [], 0
        while j < len(sym):
            if j < len(sym) - 1 and sym[j] == first and sym[j + 1] == second:
                out.append(first + second)
                j += 2
            else:
                out.append(sym[j])
                j += 1
        sym = out
    return sym


def learn_merges(lines, n):
    words = {}
    for line in lines:
        for w in clip_words(line):
            words[w] = words.get(w, 0) + 1
    seqs = {w: list(w[:-1]) + [w[-1] + "</w>"] for w in words}
    merges = []
    for _ in range(n):
        counts = {}
        for w, s in seqs.items():
            for a, b in zip(s, s[1:]):
                counts[(a, b)] = counts.get((a, b), 0) + words[w]
        if not counts:
            break
        best = max(sorted(counts), key=lambda p: counts[p])
        merges.append(best)
        for w, s in seqs.items():
            out, j = [], 0
            while j < len(s):
                if j < len(s) - 1 and (s[j], s[j + 1]) == best:
                    out.append(s[j] + s[j + 1])
                    j += 2
                else:
                    out.append(s[j])
                    j += 1
            seqs[w] = out
    return merges


def make_clip(outdir):
    merges = learn_merges(corpus(300), 120)
    vocab = {}
    for c in B2U.values():
        vocab[c] = len(vocab)
    for c in B2U.values():
        vocab[c + "</w>"] = len(vocab)
    for a, b in merges:
        if a + b not in vocab:
            vocab[a + b] = len(vocab)
    bos, eos = len(vocab), len(vocab) + 1
    vocab["<|startoftext|>"] = bos
    vocab["<|endoftext|>"] = eos
    ranks = {m: i for i, m in enumerate(merges)}
    tok = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [
            {"id": bos, "content": "<|startoftext|>", "single_word": False, "lstrip": False,
             "rstrip": False, "normalized": True, "special": True},
            {"id": eos, "content": "<|endoftext|>", "single_word": False, "lstrip": False,
             "rstrip": False, "normalized": False, "special": True},
        ],
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "NFC"},
            {"type": "Replace", "pattern": {"Regex": "\\s+"}, "content": " "},
            {"type": "Lowercase"}]},
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex":
                "<\\|startoftext\\|>|<\\|endoftext\\|>|'s|'t|'re|'ve|'m|'ll|'d|[\\p{L}]+|[\\p{N}]|[^\\s\\p{L}\\p{N}]+"},
             "behavior": "Removed", "invert": True},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
             "use_regex": False}]},
        "post_processor": {"type": "RobertaProcessing", "sep": ["<|endoftext|>", eos],
                           "cls": ["<|startoftext|>", bos], "trim_offsets": False,
                           "add_prefix_space": False},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                    "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": "<|endoftext|>",
                  "continuing_subword_prefix": "", "end_of_word_suffix": "</w>",
                  "fuse_unk": False, "byte_fallback": False, "vocab": vocab,
                  "merges": [a + " " + b for a, b in merges]},
    }
    with open(os.path.join(outdir, "clip_tokenizer.json"), "w") as f:
        json.dump(tok, f, ensure_ascii=False)

    rows = []
    for text in LABELS:
        ids = [vocab[t] for w in clip_words(text) for t in bpe_word(w, ranks)]
        ids = [bos] + ids[:SEQ - 2] + [eos]
        rows.append(ids + [eos] * (SEQ - len(ids)))

    # for tests/models/data/clip_text_tiny (vocab 128: BOS 126, EOS 127, the
    # highest id): characters only, no merges
    tiny = {"<unk>": 0}
    for ch in "abcdefghijklmnopqrstuvwxyz0123456789":
        tiny[ch] = len(tiny)
    tiny_tok = dict(tok)
    tiny_tok["added_tokens"] = [dict(a, id=126 + k) for k, a in enumerate(tok["added_tokens"])]
    tiny_tok["post_processor"] = dict(tok["post_processor"], sep=["<|endoftext|>", 127],
                                      cls=["<|startoftext|>", 126])
    tiny_tok["pre_tokenizer"] = None
    tiny_tok["decoder"] = None
    tiny_tok["model"] = dict(tok["model"], unk_token="<unk>", end_of_word_suffix=None,
                             vocab=dict(tiny, **{"<|startoftext|>": 126, "<|endoftext|>": 127}),
                             merges=[])
    with open(os.path.join(outdir, "clip_tiny_tokenizer.json"), "w") as f:
        json.dump(tiny_tok, f)

    torch.manual_seed(0)
    model = ClipText(len(vocab), eos)
    randomise(model, 11)
    export(model, os.path.join(outdir, "clip_text.onnx"), "text_embeds")
    write_ref(outdir, "clip", LABELS, rows, embed(model, rows))


# ---- SigLIP: SentencePiece ----------------------------------------------------

def siglip_canonical(text):
    text = text.lower().translate(str.maketrans("", "", string.punctuation))
    return re.sub(r"\s+", " ", text).strip()


def vocab_size(path):
    with open(path, encoding="utf-8") as f:
        return sum(1 for _ in f)


def make_siglip(outdir):
    corpus_path = os.path.join(outdir, "siglip_corpus.txt")
    with open(corpus_path, "w") as f:
        f.write("\n".join(corpus(400)) + "\n")
    prefix = os.path.join(outdir, "siglip")
    subprocess.run(["spm_train", "--input=" + corpus_path, "--model_prefix=" + prefix,
                    "--vocab_size=100", "--hard_vocab_limit=false", "--model_type=unigram", "--pad_id=0",
                    "--eos_id=1", "--unk_id=2", "--bos_id=-1",
                    "--character_coverage=1.0", "--num_threads=1", "--seed_sentencepiece_size=2000",
                    "--minloglevel=2"],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    canon = [siglip_canonical(t) for t in LABELS]
    enc = subprocess.run(["spm_encode", "--model=" + prefix + ".model", "--output_format=id"],
                         input="\n".join(canon) + "\n", capture_output=True, text=True,
                         check=True).stdout.splitlines()
    eos = 1
    rows = []
    for line in enc:
        ids = [int(x) for x in line.split()]
        ids = ids[:SEQ - 1] + [eos]
        rows.append(ids + [eos] * (SEQ - len(ids)))
    assert len(rows) == len(LABELS)
    model = SiglipText(vocab_size(prefix + ".vocab"))
    randomise(model, 12)
    export(model, os.path.join(outdir, "siglip_text.onnx"), "pooler_output")
    write_ref(outdir, "siglip", LABELS, rows, embed(model, rows))


def make_image(outdir):
    make_image_tower(outdir, "image_tower.onnx", CLIP_PROJ, 3)
    make_image_tower(outdir, "image_tower64.onnx", WIDTH, 4)


def make_image_tower(outdir, name, dims, seed):
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((3, dims)).astype(np.float32)
    b = rng.standard_normal((dims,)).astype(np.float32) * 0.1
    nodes = [
        helper.make_node("ReduceMean", ["x"], ["m"], axes=[2, 3], keepdims=0),
        helper.make_node("MatMul", ["m", "w"], ["mw"]),
        helper.make_node("Add", ["mw", "b"], ["image_embeds"]),
    ]
    g = helper.make_graph(
        nodes, "image_tower",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("image_embeds", TensorProto.FLOAT, [1, dims])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.save(m, os.path.join(outdir, name))


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("clip", "siglip", "image"):
        sys.exit(__doc__)
    os.makedirs(sys.argv[2], exist_ok=True)
    {"clip": make_clip, "siglip": make_siglip, "image": make_image}[sys.argv[1]](sys.argv[2])

#!/usr/bin/python3
"""Trains the LLM test pair and writes it as GGUF v3 (shared/DESIGN.md: tests/llm/models).

  austen-target-*.gguf  llama architecture, ~4.7 M parameters (dim 256, 6 layers, 8 heads / 4 KV
                        heads (GQA), SwiGLU 640, separate output head)
  austen-draft-*.gguf   ~0.9 M parameters (dim 128, 4 layers, 4 heads / 2 KV heads, SwiGLU 384,
                        output head tied to the embeddings: no output.weight in the file)
Both share one SentencePiece-style vocabulary of 1024 tokens (tokenizer.ggml.model = "llama": <unk>,
<s>, </s>, 256 <0xXX> byte tokens, the characters of the text, then BPE merges learned here, each
scored -rank), so llama.cpp and Infera read the same tokenizer keys.

Text: Jane Austen's novels (public domain), from Debian's r-cran-janeaustenr, read with Rscript.
Training: the target on next-token prediction, then the draft distilled from the target's
distributions on the same text (so that it agrees with the target often: speculative decoding).
Training is deliberately tiny (10 + 12 steps of 8 x 64 tokens): the build machine's 2 cores are shared
by many jobs; --steps/--draft-steps train longer.
Target weight matrices are snapped to the Q8_0 grid before writing, so the committed Q8_0 file
holds the F32 weights exactly and `make_models.py --f32-from-q8` regenerates the F32 copy bit for bit
(the F32 target is too big to commit).  Reference outputs (tests/llm/models/ref/): PyTorch's logits
(float64 forward pass, stored float32) and greedy continuations for a few prompts; see README.md.

usage: make_models.py [--out DIR] [--steps N] [--draft-steps N]      (train + write everything)
       make_models.py --f32-from-q8 [--out DIR]                       (regenerate the F32 target)
Needs python3-torch, python3-numpy, r-cran-janeaustenr (Debian).
"""
import argparse
import heapq
import json
import math
import os
import subprocess
import sys
import time
from collections import Counter

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gguf_io as G  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SPACE = "\u2581"
N_VOCAB = 1024
SEQ = 64
CTX = 512
TARGET = dict(dim=256, n_layers=6, n_heads=8, n_kv_heads=4, ffn=640, tied=False)
DRAFT = dict(dim=128, n_layers=4, n_heads=4, n_kv_heads=2, ffn=384, tied=True)
ROPE_BASE = 10000.0
EPS = 1e-5
PROMPTS = ["It is a truth universally acknowledged, that a single man",
           "Elizabeth looked at her sister and",
           "\"My dear Mr. Bennet,\" said his lady to him one day,",
           "Mr. Darcy"]
N_GREEDY = 16


# ---------------------------------------------------------------- text
def austen_paragraphs():
    r = subprocess.run(["Rscript", "-e", "library(janeaustenr); b <- austen_books(); "
                        "writeLines(paste(b$book, b$text, sep='\\t'))"],
                       check=True, capture_output=True, text=True)
    books, paras, cur = {}, [], []
    for line in r.stdout.split("\n"):
        if "\t" not in line:
            continue
        book, text = line.split("\t", 1)
        text = text.strip()
        if text:
            cur.append(text)
        elif cur:
            books.setdefault(book, []).append(" ".join(cur))
            cur = []
    return books


# ---------------------------------------------------------------- tokenizer
def words_of(escaped):
    out, cur = [], ""
    for ch in escaped:
        if ch == SPACE and cur:
            out.append(cur)
            cur = ""
        cur += ch
    if cur:
        out.append(cur)
    return out


def train_vocab(paragraphs):
    freq = Counter()
    for p in paragraphs:
        for w in words_of(SPACE + p.replace(" ", SPACE)):
            freq[w] += 1
    chars = sorted({c for w in freq for c in w})
    words = {tuple(w): n for w, n in freq.items()}
    pieces = []
    n_merges = N_VOCAB - 3 - 256 - len(chars)
    for _ in range(n_merges):
        pairs = Counter()
        for w, n in words.items():
            for a, b in zip(w, w[1:]):
                pairs[a, b] += n
        if not pairs:
            break
        (a, b), _n = max(pairs.items(), key=lambda kv: (kv[1], kv[0]))
        pieces.append(a + b)
        merged = {}
        for w, n in words.items():
            if a in w and b in w:
                out, i = [], 0
                while i < len(w):
                    if i + 1 < len(w) and w[i] == a and w[i + 1] == b:
                        out.append(a + b)
                        i += 2
                    else:
                        out.append(w[i])
                        i += 1
                w = tuple(out)
            merged[w] = merged.get(w, 0) + n
        words = merged
    tokens = ["<unk>", "<s>", "</s>"] + ["<0x%02X>" % b for b in range(256)] + chars + pieces
    types = [2, 3, 3] + [6] * 256 + [1] * (len(chars) + len(pieces))
    scores = [0.0] * (3 + 256) + [0.0] * len(chars) + [-float(i) for i in range(len(pieces))]
    return tokens, scores, types


class SPM:
    """llama.cpp's SentencePiece tokenizer (llm_tokenizer_spm_session) for this vocabulary."""

    def __init__(self, tokens, scores, types):
        self.tokens, self.scores, self.types = tokens, scores, types
        self.id = {t: i for i, t in enumerate(tokens)}
        self.cache = {}

    def _word(self, w):
        if w in self.cache:
            return self.cache[w]
        syms = [[c, i - 1, i + 1] for i, c in enumerate(w)]  # text, prev, next
        if syms:
            syms[-1][2] = -1
        heap = []

        def push(l, r):
            if l < 0 or r < 0:
                return
            t = syms[l][0] + syms[r][0]
            if t in self.id:
                heapq.heappush(heap, (-self.scores[self.id[t]], l, r, len(t)))

        for i in range(1, len(syms)):
            push(i - 1, i)
        while heap:
            _s, l, r, size = heapq.heappop(heap)
            L, R = syms[l], syms[r]
            if not L[0] or not R[0] or len(L[0]) + len(R[0]) != size:
                continue
            L[0] += R[0]
            R[0] = ""
            L[2] = R[2]
            if R[2] >= 0:
                syms[R[2]][1] = l
            push(L[1], l)
            push(l, L[2])
        ids = []
        for s, _p, _n in syms:
            if not s:
                continue
            if s in self.id:
                ids.append(self.id[s])
            else:
                ids.extend(self.id["<0x%02X>" % b] for b in s.encode("utf-8"))
        self.cache[w] = ids
        return ids

    def encode(self, text, bos=True):
        ids = [1] if bos else []
        for w in words_of(SPACE + text.replace(" ", SPACE)):
            ids.extend(self._word(w))
        return ids

    def decode(self, ids):
        out = b""
        for i in ids:
            t, ty = self.tokens[i], self.types[i]
            if ty == 6:
                out += bytes([int(t[3:5], 16)])
            elif ty == 1:
                out += t.replace(SPACE, " ").encode("utf-8")
        return out.decode("utf-8", "replace")


# ---------------------------------------------------------------- model
def build_model(cfg, torch):
    nn = torch.nn

    class RMSNorm(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(d))

        def forward(self, x):
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + EPS) * self.weight

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            d, hd = cfg["dim"], cfg["dim"] // cfg["n_heads"]
            self.attn_norm, self.ffn_norm = RMSNorm(d), RMSNorm(d)
            self.wq = nn.Linear(d, d, bias=False)
            self.wk = nn.Linear(d, cfg["n_kv_heads"] * hd, bias=False)
            self.wv = nn.Linear(d, cfg["n_kv_heads"] * hd, bias=False)
            self.wo = nn.Linear(d, d, bias=False)
            self.w_gate = nn.Linear(d, cfg["ffn"], bias=False)
            self.w_up = nn.Linear(d, cfg["ffn"], bias=False)
            self.w_down = nn.Linear(cfg["ffn"], d, bias=False)

    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(N_VOCAB, cfg["dim"])
            self.blocks = nn.ModuleList([Block() for _ in range(cfg["n_layers"])])
            self.norm = RMSNorm(cfg["dim"])
            self.out = None if cfg["tied"] else nn.Linear(cfg["dim"], N_VOCAB, bias=False)
            nn.init.normal_(self.embed.weight, std=0.02)

        def rope(self, x, pos):
            # ggml's LLAMA_ROPE_TYPE_NORM: rotate the adjacent pairs (x[2i], x[2i+1]) by pos * base^(-2i/hd)
            hd = x.shape[-1]
            inv = ROPE_BASE ** (-torch.arange(0, hd, 2, dtype=x.dtype) / hd)
            ang = pos[:, None].to(x.dtype) * inv[None, :]
            cos, sin = torch.cos(ang)[:, None, :], torch.sin(ang)[:, None, :]  # [T, 1, hd/2] over heads
            x0, x1 = x[..., 0::2], x[..., 1::2]
            return torch.stack((x0 * cos - x1 * sin, x0 * sin + x1 * cos), dim=-1).flatten(-2)

        def forward(self, ids):
            B, T = ids.shape
            H, KV = cfg["n_heads"], cfg["n_kv_heads"]
            hd = cfg["dim"] // H
            pos = torch.arange(T)
            mask = torch.full((T, T), float("-inf"), dtype=self.embed.weight.dtype).triu(1)
            x = self.embed(ids)
            for b in self.blocks:
                h = b.attn_norm(x)
                q = self.rope(b.wq(h).view(B, T, H, hd), pos).transpose(1, 2)
                k = self.rope(b.wk(h).view(B, T, KV, hd), pos).transpose(1, 2)
                v = b.wv(h).view(B, T, KV, hd).transpose(1, 2)
                k = k.repeat_interleave(H // KV, dim=1)
                v = v.repeat_interleave(H // KV, dim=1)
                att = (q @ k.transpose(-1, -2)) / math.sqrt(hd) + mask
                y = (att.softmax(-1) @ v).transpose(1, 2).reshape(B, T, -1)
                x = x + b.wo(y)
                h = b.ffn_norm(x)
                x = x + b.w_down(torch.nn.functional.silu(b.w_gate(h)) * b.w_up(h))
            x = self.norm(x)
            return x @ (self.embed.weight if self.out is None else self.out.weight).T

    return LM()


def gguf_tensors(model, cfg):
    """(GGUF name, float32 array [out, in]) in llama.cpp's tensor naming."""
    sd = {k: v.detach().to("cpu").float().numpy() for k, v in model.state_dict().items()}
    out = [("token_embd.weight", sd["embed.weight"])]
    for i in range(cfg["n_layers"]):
        p = "blocks.%d." % i
        out += [("blk.%d.attn_norm.weight" % i, sd[p + "attn_norm.weight"]),
                ("blk.%d.attn_q.weight" % i, sd[p + "wq.weight"]),
                ("blk.%d.attn_k.weight" % i, sd[p + "wk.weight"]),
                ("blk.%d.attn_v.weight" % i, sd[p + "wv.weight"]),
                ("blk.%d.attn_output.weight" % i, sd[p + "wo.weight"]),
                ("blk.%d.ffn_norm.weight" % i, sd[p + "ffn_norm.weight"]),
                ("blk.%d.ffn_gate.weight" % i, sd[p + "w_gate.weight"]),
                ("blk.%d.ffn_up.weight" % i, sd[p + "w_up.weight"]),
                ("blk.%d.ffn_down.weight" % i, sd[p + "w_down.weight"])]
    out.append(("output_norm.weight", sd["norm.weight"]))
    if not cfg["tied"]:
        out.append(("output.weight", sd["out.weight"]))
    return out


def gguf_kvs(name, cfg, vocab, file_type):
    tokens, scores, types = vocab
    return [("general.architecture", "llama"), ("general.name", name), ("general.file_type", file_type),
            ("general.license", "public domain text; model CC0"),
            ("llama.context_length", CTX), ("llama.embedding_length", cfg["dim"]),
            ("llama.block_count", cfg["n_layers"]), ("llama.feed_forward_length", cfg["ffn"]),
            ("llama.attention.head_count", cfg["n_heads"]), ("llama.attention.head_count_kv", cfg["n_kv_heads"]),
            ("llama.rope.dimension_count", cfg["dim"] // cfg["n_heads"]), ("llama.rope.freq_base", ROPE_BASE),
            ("llama.attention.layer_norm_rms_epsilon", EPS), ("llama.vocab_size", N_VOCAB),
            ("tokenizer.ggml.model", "llama"),
            ("tokenizer.ggml.tokens", ("arr", G.T_STR, tokens)),
            ("tokenizer.ggml.scores", ("arr", G.T_F32, scores)),
            ("tokenizer.ggml.token_type", ("arr", G.T_I32, types)),
            ("tokenizer.ggml.bos_token_id", 1), ("tokenizer.ggml.eos_token_id", 2),
            ("tokenizer.ggml.unknown_token_id", 0), ("tokenizer.ggml.add_bos_token", True),
            ("tokenizer.ggml.add_eos_token", False), ("tokenizer.ggml.add_space_prefix", True)]


FILE_TYPE = {G.GGML_F32: 0, G.GGML_Q8_0: 7, G.GGML_Q4_0: 2}


def write_model(path, name, cfg, vocab, tensors, gtype):
    ts = [(n, a, gtype if a.ndim == 2 else G.GGML_F32) for n, a in tensors]
    G.write_gguf(path, gguf_kvs(name, cfg, vocab, FILE_TYPE[gtype]), ts)
    print("wrote %s (%.1f MB)" % (path, os.path.getsize(path) / 1e6))


# ---------------------------------------------------------------- training
def batches(stream, rng, n, batch):
    for _ in range(n):
        starts = rng.integers(0, len(stream) - SEQ - 1, size=batch)
        yield np.stack([stream[s:s + SEQ + 1] for s in starts])


def train(model, stream, steps, lr, torch, teacher=None, batch=8, seed=0):
    rng = np.random.default_rng(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01, betas=(0.9, 0.95))
    t0 = time.time()
    for step, b in enumerate(batches(stream, rng, steps, batch)):
        for g in opt.param_groups:  # warmup then cosine
            g["lr"] = lr * min(1.0, (step + 1) / 2) * 0.5 * (1 + math.cos(math.pi * step / steps))
        x = torch.from_numpy(b[:, :-1]).long()
        y = torch.from_numpy(b[:, 1:]).long()
        logits = model(x)
        if teacher is None:
            loss = torch.nn.functional.cross_entropy(logits.reshape(-1, N_VOCAB), y.reshape(-1))
        else:
            with torch.no_grad():
                p = teacher(x).softmax(-1)
            loss = -(p * logits.log_softmax(-1)).sum(-1).mean()
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        print("  step %d/%d loss %.3f (%.0fs)" % (step, steps, loss.item(), time.time() - t0), flush=True)


def snap_model_to_q8_0(model, torch):
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() == 2:
                p.copy_(torch.from_numpy(G.snap_to_q8_0(p.detach().numpy())))


# ---------------------------------------------------------------- references
def references(model, spm, name, refdir, torch):
    m64 = model.double()
    out = {}
    with torch.no_grad():
        for k, prompt in enumerate(PROMPTS):
            ids = spm.encode(prompt)
            seq = list(ids)
            for _ in range(N_GREEDY):  # up to N_GREEDY tokens, stopping after an EOS as generation does
                seq.append(int(m64(torch.tensor([seq]))[0, -1].argmax()))
                if seq[-1] == 2:
                    break
            gen = seq[len(ids):]
            # logits at every position of prompt + greedy continuation (last token fed too)
            logits = m64(torch.tensor([seq]))[0].numpy()
            np.save(os.path.join(refdir, "%s-prompt%d-logits.npy" % (name, k)), logits.astype(np.float32))
            out[str(k)] = {"prompt": prompt, "prompt_tokens": ids, "greedy_tokens": gen,
                           "greedy_text": spm.decode(gen)}
    model.float()
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=HERE)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--draft-steps", type=int, default=12)
    ap.add_argument("--f32-from-q8", action="store_true")
    ap.add_argument("--draft-q4-from-f32", action="store_true",
                    help="write austen-draft-q4_0.gguf (matrices Q4_0) from the F32 draft in --out")
    ap.add_argument("--threads", type=int, default=2, help="PyTorch threads (1 is faster on a loaded machine)")
    a = ap.parse_args()
    if a.f32_from_q8:
        kvs, tensors = G.read_gguf(os.path.join(a.out, "austen-target-q8_0.gguf"))
        kvs = [(k, 0 if k == "general.file_type" else v) for k, v in kvs]
        G.write_gguf(os.path.join(a.out, "austen-target-f32.gguf"), kvs,
                     [(n, arr, G.GGML_F32) for n, arr, _t in tensors])
        return
    if a.draft_q4_from_f32:
        kvs, tensors = G.read_gguf(os.path.join(a.out, "austen-draft-f32.gguf"))
        kvs = [(k, FILE_TYPE[G.GGML_Q4_0] if k == "general.file_type" else v) for k, v in kvs]
        G.write_gguf(os.path.join(a.out, "austen-draft-q4_0.gguf"), kvs,
                     [(n, arr, G.GGML_Q4_0 if arr.ndim == 2 else G.GGML_F32) for n, arr, _t in tensors])
        return
    import torch
    torch.manual_seed(0)
    torch.set_num_threads(a.threads)
    cache = os.path.join(os.path.expanduser(os.environ.get("INFERA_CACHE", "~/.cache/infera")), "austen-corpus.json")
    if os.path.exists(cache):  # vocabulary + token stream of a previous run (deterministic)
        with open(cache) as f:
            c = json.load(f)
        vocab, stream = (c["tokens"], c["scores"], c["types"]), np.array(c["stream"], dtype=np.int64)
        spm = SPM(*vocab)
    else:
        books = austen_paragraphs()
        vocab = train_vocab(books["Pride & Prejudice"])
        spm = SPM(*vocab)
        stream = []
        for paras in books.values():
            for p in paras:
                stream += spm.encode(p) + [2]
        os.makedirs(os.path.dirname(cache), exist_ok=True)
        with open(cache, "w") as f:
            json.dump({"tokens": vocab[0], "scores": vocab[1], "types": vocab[2], "stream": stream}, f)
        stream = np.array(stream, dtype=np.int64)
    print("vocab %d tokens, corpus %d tokens" % (len(vocab[0]), len(stream)), flush=True)

    target = build_model(TARGET, torch)
    print("target: %d parameters" % sum(p.numel() for p in target.parameters()), flush=True)
    train(target, stream, a.steps, 5e-3, torch)
    snap_model_to_q8_0(target, torch)
    target.eval()
    draft = build_model(DRAFT, torch)
    print("draft: %d parameters" % sum(p.numel() for p in draft.parameters()), flush=True)
    train(draft, stream, a.draft_steps, 8e-3, torch, teacher=target, seed=1)
    draft.eval()

    os.makedirs(a.out, exist_ok=True)
    tt, dt = gguf_tensors(target, TARGET), gguf_tensors(draft, DRAFT)
    write_model(os.path.join(a.out, "austen-target-f32.gguf"), "austen-target", TARGET, vocab, tt, G.GGML_F32)
    write_model(os.path.join(a.out, "austen-target-q8_0.gguf"), "austen-target", TARGET, vocab, tt, G.GGML_Q8_0)
    write_model(os.path.join(a.out, "austen-target-q4_0.gguf"), "austen-target", TARGET, vocab, tt, G.GGML_Q4_0)
    write_model(os.path.join(a.out, "austen-draft-f32.gguf"), "austen-draft", DRAFT, vocab, dt, G.GGML_F32)
    write_model(os.path.join(a.out, "austen-draft-q8_0.gguf"), "austen-draft", DRAFT, vocab, dt, G.GGML_Q8_0)
    refdir = os.path.join(a.out, "ref")
    os.makedirs(refdir, exist_ok=True)
    ref = {"target": references(target, spm, "target", refdir, torch),
           "draft": references(draft, spm, "draft", refdir, torch)}
    agree = np.mean([x == y for k in ref["target"] for x, y in
                     zip(ref["target"][k]["greedy_tokens"], ref["draft"][k]["greedy_tokens"])])
    ref["draft_target_greedy_agreement"] = float(agree)
    with open(os.path.join(refdir, "reference.json"), "w") as f:
        json.dump(ref, f, indent=1, ensure_ascii=False)
    print("draft/target greedy agreement %.2f" % agree)


if __name__ == "__main__":
    main()

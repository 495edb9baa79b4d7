#!/usr/bin/env python3
"""
Hold every thread pool to the count: OPENBLAS_NUM_THREADS=N OMP_NUM_THREADS=N MKL_NUM_THREADS=N, one thread
count per process (bench/torch_peer.ts does this; set_num_threads alone leaves OpenBLAS a thread per core).
PyTorch peer of bench/decode_bench.ts (chapter 7): generation speed, in new tokens
per second, of the same decoder-only transformer (nanoGPT's CPU "baby" config by
default), with a KV cache and without one (recomputing the whole window every step).
On demand only, never in CI.

Install:  apt-get install -y python3-torch libopenblas0  (OpenBLAS: see torch_blas.py)
Run:      /usr/bin/python3 bench/decode_torch.py [--threads 1,2] [--new-tokens 256] [--json]

The model matches lib/models/transformer.ts: pre-LN blocks, GELU (tanh approximation), biases,
learned positions, LM head tied to the token embedding, float32. Weights are random
(speed does not depend on training). Each new token is sampled from the softmax of the
logits (torch.multinomial, fixed seed), as in the workbook's benchmark.

Context longer than block_size follows the same rule as lib/decode/decode.ts:
- without a cache (nanoGPT's generate), every step runs the model on the last
  block_size tokens;
- with a cache, positions are absolute, so a full cache cannot slide by one token; when
  it is full it is rebuilt from the last block_size // 2 tokens (one forward pass) and
  decoding continues one token at a time.
With --json the last line is a JSON object that decode_bench.ts reads.
"""
import argparse
import json
import math
import time

import torch

from torch_blas import require_fast_blas  # bench/torch_blas.py: refuse the reference BLAS
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, n_embd, n_head, block_size):
        super().__init__()
        self.n_head = n_head
        self.register_buffer("causal", torch.tril(torch.ones(block_size, block_size)))
        self.ln_1 = nn.LayerNorm(n_embd)
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.ln_2 = nn.LayerNorm(n_embd)
        self.c_fc = nn.Linear(n_embd, 4 * n_embd)
        self.mlp_proj = nn.Linear(4 * n_embd, n_embd)

    def attn(self, x, cache):
        """cache: None (no cache) or a dict with "k", "v" of shape (B, h, t, hs) or None."""
        B, T, C = x.shape
        q, k, v = self.c_attn(x).split(C, dim=2)                     # (B, T, C) each
        hs = C // self.n_head
        q = q.view(B, T, self.n_head, hs).transpose(1, 2)             # (B, h, T, hs)
        k = k.view(B, T, self.n_head, hs).transpose(1, 2)             # (B, h, T, hs)
        v = v.view(B, T, self.n_head, hs).transpose(1, 2)             # (B, h, T, hs)
        past = 0
        if cache is not None:
            if cache.get("k") is not None:
                past = cache["k"].shape[2]
                k = torch.cat([cache["k"], k], dim=2)                 # (B, h, t+T, hs)
                v = torch.cat([cache["v"], v], dim=2)                 # (B, h, t+T, hs)
            cache["k"], cache["v"] = k, v
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))       # (B, h, T, t+T)
        if T > 1:
            mask = self.causal[past:past + T, :past + T]
            att = att.masked_fill(mask == 0, float("-inf"))           # (B, h, T, t+T)
        att = F.softmax(att, dim=-1)                                  # (B, h, T, t+T)
        y = att @ v                                                   # (B, h, T, hs)
        y = y.transpose(1, 2).contiguous().view(B, T, C)              # (B, T, C)
        return self.c_proj(y)

    def forward(self, x, cache=None):
        x = x + self.attn(self.ln_1(x), cache)
        x = x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))
        return x


class GPT(nn.Module):
    def __init__(self, vocab_size, block_size, n_layer, n_head, n_embd):
        super().__init__()
        self.block_size = block_size
        self.wte = nn.Embedding(vocab_size, n_embd)
        self.wpe = nn.Embedding(block_size, n_embd)
        self.blocks = nn.ModuleList([Block(n_embd, n_head, block_size) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(n_embd)
        for name, p in self.named_parameters():
            if p.dim() == 2:
                std = 0.02 / math.sqrt(2 * n_layer) if name.endswith("proj.weight") else 0.02
                nn.init.normal_(p, 0.0, std)
            elif name.endswith("bias"):
                nn.init.zeros_(p)

    def forward(self, idx, caches=None, start=0):
        """Logits of the last position. caches: one dict per block, or None."""
        B, T = idx.shape
        pos = torch.arange(start, start + T)
        x = self.wte(idx) + self.wpe(pos)                             # (B, T, C)
        for i, block in enumerate(self.blocks):
            x = block(x, None if caches is None else caches[i])       # (B, T, C)
        x = self.ln_f(x[:, -1, :])                                    # (B, C)
        return x @ self.wte.weight.T                                  # (B, V), tied head


@torch.no_grad()
def generate_recompute(model, idx, new_tokens, gen):
    for _ in range(new_tokens):
        logits = model(idx[:, -model.block_size:])                    # (1, V)
        nxt = torch.multinomial(F.softmax(logits, dim=-1), 1, generator=gen)  # (1, 1)
        idx = torch.cat([idx, nxt], dim=1)
    return idx


@torch.no_grad()
def generate_cached(model, idx, new_tokens, gen):
    n_layer = len(model.blocks)
    caches = [{} for _ in range(n_layer)]
    logits = model(idx[:, -model.block_size:], caches, 0)             # prefill
    length = min(idx.shape[1], model.block_size)
    for _ in range(new_tokens):
        nxt = torch.multinomial(F.softmax(logits, dim=-1), 1, generator=gen)  # (1, 1)
        idx = torch.cat([idx, nxt], dim=1)
        if length == model.block_size:                               # full: rebuild from the last half
            keep = model.block_size // 2
            caches = [{} for _ in range(n_layer)]
            logits = model(idx[:, -keep:], caches, 0)
            length = keep
        else:
            logits = model(nxt, caches, length)
            length += 1
    return idx


def bench(threads, args):
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    model = GPT(args.vocab, args.block, args.layers, args.heads, args.embd).eval()
    prompt = torch.zeros((1, 1), dtype=torch.long)
    out = {"threads": threads}
    for name, fn in (("cached", generate_cached), ("recompute", generate_recompute)):
        fn(model, prompt, 16, torch.Generator().manual_seed(0))      # warm-up
        times = []
        for r in range(args.repeats):
            t0 = time.perf_counter()
            fn(model, prompt, args.new_tokens, torch.Generator().manual_seed(r))
            times.append(time.perf_counter() - t0)
        best = min(times)
        out[name] = {"seconds": best, "tokens_per_second": args.new_tokens / best}
    out["speedup"] = out["cached"]["tokens_per_second"] / out["recompute"]["tokens_per_second"]
    return out


def check_cache(args):
    """Greedy with and without the cache gives the same tokens inside one window."""
    torch.manual_seed(1)
    model = GPT(args.vocab, args.block, args.layers, args.heads, args.embd).eval()
    prompt = torch.tensor([[1, 2, 3]])
    with torch.no_grad():
        a = prompt
        for _ in range(args.block - 3):
            a = torch.cat([a, model(a).argmax(-1, keepdim=True)], dim=1)
        caches = [{} for _ in model.blocks]
        b = prompt
        logits = model(b, caches, 0)
        for t in range(args.block - 3):
            nxt = logits.argmax(-1, keepdim=True)
            b = torch.cat([b, nxt], dim=1)
            if t < args.block - 4:
                logits = model(nxt, caches, b.shape[1] - 1)
    return bool(torch.equal(a, b))


def main():
    require_fast_blas()
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--embd", type=int, default=128)
    p.add_argument("--block", type=int, default=64)
    p.add_argument("--vocab", type=int, default=65)
    p.add_argument("--new-tokens", type=int, default=256)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    p.add_argument("--json", action="store_true", help="print a JSON summary as the last line")
    args = p.parse_args()
    print(f"PyTorch {torch.__version__}: {args.layers} layers, {args.heads} heads, {args.embd} dims, "
          f"block {args.block}, vocab {args.vocab}; {args.new_tokens} new tokens from a 1-token prompt, "
          f"best of {args.repeats}")
    print(f"greedy with and without the cache agree inside one window: {check_cache(args)}")
    results = []
    for threads in [int(t) for t in args.threads.split(",")]:
        r = bench(threads, args)
        results.append(r)
        print(f"threads={threads}: cached {r['cached']['tokens_per_second']:.0f} tok/s, "
              f"recompute {r['recompute']['tokens_per_second']:.0f} tok/s, cache speed-up {r['speedup']:.1f}x")
    if args.json:
        print(json.dumps({"torch": torch.__version__, "new_tokens": args.new_tokens, "results": results}))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""
Hold every thread pool to the count: OPENBLAS_NUM_THREADS=N OMP_NUM_THREADS=N MKL_NUM_THREADS=N, one thread
count per process (bench/torch_peer.ts does this; set_num_threads alone leaves OpenBLAS a thread per core).
PyTorch peer of bench/transformer_bench.ts (chapter 6): training tokens per second
of the same decoder-only transformer (nanoGPT's CPU "baby" config by default) on the
same machine. On demand only, never in CI.

Install:  apt-get install -y python3-torch libopenblas0  (OpenBLAS: see torch_blas.py)
Run:      /usr/bin/python3 bench/transformer_torch.py [--threads 1,2] [--steps 20] [--json]

The model matches lib/models/transformer.ts: pre-LN blocks, GELU (tanh approximation), biases,
learned positions, LM head tied to the token embedding, AdamW, float32.
With --json the last line is a JSON object that transformer_bench.ts reads.
"""
import argparse
import json
import math
import sys
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

    def attn(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(x).split(C, dim=2)                     # (B, T, C) each
        hs = C // self.n_head
        q = q.view(B, T, self.n_head, hs).transpose(1, 2)             # (B, h, T, hs)
        k = k.view(B, T, self.n_head, hs).transpose(1, 2)             # (B, h, T, hs)
        v = v.view(B, T, self.n_head, hs).transpose(1, 2)             # (B, h, T, hs)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))       # (B, h, T, T)
        att = att.masked_fill(self.causal[:T, :T] == 0, float("-inf"))  # (B, h, T, T)
        att = F.softmax(att, dim=-1)                                  # (B, h, T, T)
        y = att @ v                                                   # (B, h, T, hs)
        y = y.transpose(1, 2).contiguous().view(B, T, C)              # (B, T, C)
        return self.c_proj(y)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        x = x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))
        return x


class GPT(nn.Module):
    def __init__(self, vocab_size, block_size, n_layer, n_head, n_embd):
        super().__init__()
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

    def forward(self, idx, targets):
        B, T = idx.shape
        pos = torch.arange(T, device=idx.device)
        x = self.wte(idx) + self.wpe(pos)                             # (B, T, C)
        for block in self.blocks:
            x = block(x)                                              # (B, T, C)
        x = self.ln_f(x)                                              # (B, T, C)
        logits = x @ self.wte.weight.T                                # (B, T, V), tied head
        return F.cross_entropy(logits.reshape(B * T, -1), targets.reshape(B * T))


def bench(threads, args):
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    model = GPT(args.vocab, args.block, args.layers, args.heads, args.embd).to(args.device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.1)
    gen = torch.Generator().manual_seed(0)

    def step():
        idx = torch.randint(0, args.vocab, (args.batch, args.block + 1), generator=gen).to(args.device)
        loss = model(idx[:, :-1], idx[:, 1:])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss.item()

    for _ in range(args.warmup):
        step()
    times = []
    for _ in range(args.steps):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    times.sort()
    median, best = times[len(times) // 2], times[0]
    tokens = args.batch * args.block
    # The median step, and the best one: on a shared machine the best is the
    # closest to what the step costs when nothing else runs.
    return {"threads": threads, "seconds_per_step": median, "tokens_per_second": tokens / median,
            "best_seconds_per_step": best, "best_tokens_per_second": tokens / best}


def main():
    # On a GPU (--device cuda or mps) the products do not use the CPU's BLAS.
    on_cpu = "--device" not in sys.argv or sys.argv[sys.argv.index("--device") + 1:][:1] == ["cpu"]
    if on_cpu:
        require_fast_blas()
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--embd", type=int, default=128)
    p.add_argument("--block", type=int, default=64)
    p.add_argument("--batch", type=int, default=12)
    p.add_argument("--vocab", type=int, default=65)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    p.add_argument("--device", default="cpu", help="cpu, cuda or mps (tools/gpu/gpu.ts times the GPU as a peer)")
    p.add_argument("--json", action="store_true", help="print a JSON summary as the last line")
    args = p.parse_args()
    n_params = sum(p.numel() for p in GPT(args.vocab, args.block, args.layers, args.heads, args.embd).parameters())
    print(f"PyTorch {torch.__version__}: {args.layers} layers, {args.heads} heads, {args.embd} dims, "
          f"block {args.block}, batch {args.batch}, vocab {args.vocab}, {n_params:,} parameters", flush=True)
    results = []
    for t in [int(s) for s in args.threads.split(",")]:
        r = bench(t, args)
        results.append(r)
        print(f"  {t} thread(s): {r['seconds_per_step'] * 1000:.1f} ms/step (best {r['best_seconds_per_step'] * 1000:.1f}), "
              f"{r['tokens_per_second']:.0f} tokens/s", flush=True)
    if args.json:
        print(json.dumps({"torch": torch.__version__, "params": n_params, "results": results}))


if __name__ == "__main__":
    main()

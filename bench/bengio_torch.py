#!/usr/bin/python3
"""
Hold every thread pool to the count: OPENBLAS_NUM_THREADS=N OMP_NUM_THREADS=N MKL_NUM_THREADS=N, one thread
count per process (bench/torch_peer.ts does this; set_num_threads alone leaves OpenBLAS a thread per core).
PyTorch peer of lmbook's fixed-window model (chapter 3): training throughput.

The same network as lib/models/fixed_window.ts (Bengio et al., 2003: embeddings,
concatenation, tanh hidden layer, optional direct connections, softmax over
the vocabulary), trained the same way as lib/train/train.ts's Trainer: shuffled
mini-batches of real Brown windows, AdamW, gradient clipping by global norm.
It measures training examples per second and prints one JSON line.

On demand only (never in CI). Run by bench/bengio_throughput.ts, which writes
the windows file and prints the ratio; or by hand:

    /usr/bin/python3 bench/bengio_torch.py --windows build/bench/bengio_windows.bin --threads 2

Needs Debian's python3-torch (apt-get install -y python3-torch libopenblas0).
"""
import argparse
import json
import time

import numpy as np
import torch

from torch_blas import require_fast_blas  # bench/torch_blas.py: refuse the reference BLAS


class FixedWindow(torch.nn.Module):
    def __init__(self, vocab_size, block_size, n_embd, n_hidden, direct):
        super().__init__()
        self.block_size, self.n_embd = block_size, n_embd
        self.embedding = torch.nn.Embedding(vocab_size, n_embd)
        torch.nn.init.normal_(self.embedding.weight, std=0.1)  # as lib/models/fixed_window.ts
        self.hidden = torch.nn.Linear(block_size * n_embd, n_hidden) if n_hidden > 0 else None
        out_in = n_hidden + (block_size * n_embd if direct else 0)
        self.direct = direct
        self.output = torch.nn.Linear(out_in, vocab_size)

    def forward(self, x):  # x: (B, n) int64
        B = x.shape[0]
        xs = self.embedding(x).reshape(B, self.block_size * self.n_embd)  # (B, n*m)
        parts = []
        if self.hidden is not None:
            parts.append(torch.tanh(self.hidden(xs)))  # (B, h)
        if self.direct:
            parts.append(xs)
        feats = parts[0] if len(parts) == 1 else torch.cat(parts, 1)  # (B, h [+ n*m])
        return self.output(feats)  # (B, V)


def main():
    require_fast_blas()
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--windows", required=True, help="int32 file: header [N, n, V], then N*n contexts, then N targets")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--n-embd", type=int, default=30)
    ap.add_argument("--n-hidden", type=int, default=100)
    ap.add_argument("--direct", action="store_true")
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--weight-decay", type=float, default=0.01)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    raw = np.fromfile(args.windows, dtype=np.int32)
    N, n, V = (int(v) for v in raw[:3])
    X = torch.from_numpy(raw[3:3 + N * n].astype(np.int64).reshape(N, n))
    Y = torch.from_numpy(raw[3 + N * n:3 + N * n + N].astype(np.int64))

    model = FixedWindow(V, n, args.n_embd, args.n_hidden, args.direct)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": args.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
        lr=args.lr,
    )
    params = list(model.parameters())
    gen = torch.Generator().manual_seed(args.seed)
    order = torch.randperm(N, generator=gen)
    cursor = 0

    def step():
        nonlocal cursor, order
        if cursor + args.batch > N:
            order, cursor = torch.randperm(N, generator=gen), 0
        idx = order[cursor:cursor + args.batch]
        cursor += args.batch
        logits = model(X[idx])
        loss = torch.nn.functional.cross_entropy(logits, Y[idx])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        return loss

    for _ in range(5):  # warm-up
        step()
    steps, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < args.seconds:
        loss = step()
        steps += 1
    loss = float(loss)
    dt = time.perf_counter() - t0
    print(json.dumps({
        "framework": f"pytorch {torch.__version__}",
        "threads": torch.get_num_threads(),
        "batch": args.batch,
        "steps": steps,
        "seconds": dt,
        "examplesPerSecond": steps * args.batch / dt,
        "msPerStep": 1000 * dt / steps,
        "lastLoss": loss,
    }))


if __name__ == "__main__":
    main()

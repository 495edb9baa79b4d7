#!/usr/bin/env python3
"""PyTorch peer of the modern block (chapter 6): RMSNorm, a SwiGLU feed-forward,
rotary positions (RoPE) and grouped-query attention, built with torch.nn from the
weights an lmbook TransformerLM exported, so that bench/modern_block_check.ts can
compare logits, loss and every gradient. On demand only, never in CI.

Install:  apt-get install -y python3-torch libopenblas0
Run:      /usr/bin/python3 bench/modern_block_torch.py IN.json OUT.json
          (bench/modern_block_check.ts writes IN.json and reads OUT.json)

IN.json holds the lmbook config, the weights by lmbook name ({"shape", "data"},
lmbook's (in, out) layout for matrices), and int token ids x, y (B, T). OUT.json
gets the logits (B, T, V), the mean cross-entropy and the gradient of the loss
with respect to every weight, in lmbook's names and layouts.

Written from the papers and the usual PyTorch idioms, independent of lmbook's code:
- RMSNorm as in Meta's Llama reference: x * rsqrt(mean(x^2) + eps) * weight
  (torch 1.13 has no nn.RMSNorm);
- SwiGLU: w2(silu(w1(x)) * w3(x));
- RoPE as in Meta's Llama reference: consecutive channel pairs (2i, 2i+1) viewed as
  complex numbers and multiplied by exp(i * pos * theta_i), theta_i = 10000^(-2i/d);
- grouped-query attention: keys and values repeated with repeat_interleave over the
  head axis (kv head j serves query heads j*g .. (j+1)*g - 1).
It also checks the split-halves RoPE convention (GPT-NeoX, Hugging Face Llama:
rotate_half) on weights whose q/k rows are permuted per head, which must give the
same logits: the conversion documented in lib/models/transformer.ts.
"""
import json
import math
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F


def rms_norm(x, weight, eps=1e-5):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight


def rope_interleaved(x, pos, theta=10000.0):
    """x (B, H, T, d): rotate pairs (2i, 2i+1) by pos * theta^(-2i/d) (RoFormer, Meta's Llama)."""
    d = x.shape[-1]
    freqs = theta ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)  # (d/2)
    angles = torch.outer(pos.double(), freqs)  # (T, d/2)
    rot = torch.polar(torch.ones_like(angles), angles).to(torch.complex64)  # (T, d/2)
    xc = torch.view_as_complex(x.float().reshape(*x.shape[:-1], d // 2, 2))  # (B, H, T, d/2)
    return torch.view_as_real(xc * rot).flatten(-2).type_as(x)  # (B, H, T, d)


def rope_split_halves(x, pos, theta=10000.0):
    """The GPT-NeoX / Hugging Face convention: channel i pairs with i + d/2 (rotate_half)."""
    d = x.shape[-1]
    freqs = theta ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    angles = torch.outer(pos.double(), freqs)  # (T, d/2)
    emb = torch.cat([angles, angles], -1)  # (T, d)
    cos, sin = emb.cos().float(), emb.sin().float()
    x1, x2 = x[..., : d // 2], x[..., d // 2 :]
    return x * cos + torch.cat([-x2, x1], -1) * sin


def sinusoidal(T, C):
    pos = torch.arange(T, dtype=torch.float64)[:, None]
    j = torch.arange(C)
    angle = pos / torch.pow(10000.0, (j - j % 2).double() / C)
    return torch.where(j % 2 == 0, angle.sin(), angle.cos()).float()  # (T, C)


def linear(n_in, n_out, w, b):
    """nn.Linear from lmbook's (in, out) matrix: PyTorch stores (out, in)."""
    lin = nn.Linear(n_in, n_out, bias=b is not None)
    with torch.no_grad():
        lin.weight.copy_(w.t())
        if b is not None:
            lin.bias.copy_(b)
    return lin


class Block(nn.Module):
    def __init__(self, c, w, l, rope=rope_interleaved):
        super().__init__()
        p = lambda n: w.get(f"h{l}.{n}")  # noqa: E731
        C, self.nH, self.nKV = c["nEmbd"], c["nHead"], c["nKVHead"]
        self.hs = C // self.nH
        self.c, self.rope = c, rope
        KV = self.nKV * self.hs
        self.wq = linear(C, C, p("attn.wq"), p("attn.bq"))
        self.wk = linear(C, KV, p("attn.wk"), p("attn.bk"))
        self.wv = linear(C, KV, p("attn.wv"), p("attn.bv"))
        self.wo = linear(C, C, p("attn.wo"), p("attn.bo"))
        H = p("mlp.w1").shape[1]
        self.w1 = linear(C, H, p("mlp.w1"), p("mlp.b1"))
        self.w3 = linear(C, H, p("mlp.w3"), p("mlp.b3")) if c["mlp"] == "swiglu" else None
        self.w2 = linear(H, C, p("mlp.w2"), p("mlp.b2"))
        if c["normalization"] == "rms":
            self.g1, self.g2 = nn.Parameter(p("ln1.g").clone()), nn.Parameter(p("ln2.g").clone())
            self.norm1 = lambda x: rms_norm(x, self.g1)  # noqa: E731
            self.norm2 = lambda x: rms_norm(x, self.g2)  # noqa: E731
        else:
            self.ln1, self.ln2 = nn.LayerNorm(C, elementwise_affine=True), nn.LayerNorm(C)
            for ln, g, b in ((self.ln1, p("ln1.g"), p("ln1.b")), (self.ln2, p("ln2.g"), p("ln2.b"))):
                with torch.no_grad():
                    ln.weight.copy_(g)
                    ln.bias.copy_(b if b is not None else torch.zeros(C))
                if b is None:
                    ln.bias.requires_grad_(False)
            self.norm1, self.norm2 = self.ln1, self.ln2

    def attn(self, x):
        B, T, C = x.shape
        q = self.wq(x).view(B, T, self.nH, self.hs).transpose(1, 2)  # (B, nH, T, hs)
        k = self.wk(x).view(B, T, self.nKV, self.hs).transpose(1, 2)  # (B, nKV, T, hs)
        v = self.wv(x).view(B, T, self.nKV, self.hs).transpose(1, 2)  # (B, nKV, T, hs)
        if self.c["positions"] == "rope":
            pos = torch.arange(T)
            q, k = self.rope(q, pos), self.rope(k, pos)
        g = self.nH // self.nKV
        k = k.repeat_interleave(g, dim=1)  # (B, nH, T, hs)
        v = v.repeat_interleave(g, dim=1)  # (B, nH, T, hs)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(self.hs)  # (B, nH, T, T)
        att = att.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf"))
        y = F.softmax(att, dim=-1) @ v  # (B, nH, T, hs)
        return self.wo(y.transpose(1, 2).reshape(B, T, C))  # (B, T, C)

    def mlp(self, x):
        if self.w3 is not None:
            return self.w2(F.silu(self.w1(x)) * self.w3(x))  # SwiGLU
        u = self.w1(x)
        act = F.relu(u) if self.c["activation"] == "relu" else F.gelu(u, approximate="tanh")
        return self.w2(act)

    def forward(self, x):
        if self.c["norm"] == "pre":
            x = x + self.attn(self.norm1(x))
            return x + self.mlp(self.norm2(x))
        x = self.norm1(x + self.attn(x))
        return self.norm2(x + self.mlp(x))


class Model(nn.Module):
    def __init__(self, c, w, rope=rope_interleaved):
        super().__init__()
        self.c = c
        self.wte = nn.Parameter(w["wte"].clone())
        self.wpe = nn.Parameter(w["wpe"].clone()) if c["positions"] == "learned" else None
        self.blocks = nn.ModuleList(Block(c, w, l, rope) for l in range(c["nLayer"]))
        self.gF = nn.Parameter(w["lnF.g"].clone()) if "lnF.g" in w else None
        self.bF = nn.Parameter(w["lnF.b"].clone()) if "lnF.b" in w else None

    def forward(self, idx):
        B, T = idx.shape
        x = F.embedding(idx, self.wte)  # (B, T, C)
        if self.c["positions"] == "learned":
            x = x + self.wpe[:T]
        elif self.c["positions"] == "sinusoidal":
            x = x + sinusoidal(T, self.c["nEmbd"])
        for b in self.blocks:
            x = b(x)
        if self.gF is not None:
            if self.c["normalization"] == "rms":
                x = rms_norm(x, self.gF)
            else:
                bias = self.bF if self.bF is not None else torch.zeros_like(self.gF)
                x = F.layer_norm(x, (x.shape[-1],), self.gF, bias, 1e-5)
        return x @ self.wte.t()  # (B, T, V), tied head

    def lmbook_grads(self):
        """Gradients under lmbook's names and (in, out) layouts."""
        out = {"wte": self.wte.grad}
        if self.wpe is not None:
            out["wpe"] = self.wpe.grad
        if self.gF is not None:
            out["lnF.g"] = self.gF.grad
        if self.bF is not None:
            out["lnF.b"] = self.bF.grad
        for l, b in enumerate(self.blocks):
            for name, lin in (("attn.wq", b.wq), ("attn.wk", b.wk), ("attn.wv", b.wv), ("attn.wo", b.wo),
                              ("mlp.w1", b.w1), ("mlp.w3", b.w3), ("mlp.w2", b.w2)):
                if lin is None:
                    continue
                out[f"h{l}.{name}"] = lin.weight.grad.t()
                if lin.bias is not None:
                    out[f"h{l}.{name.replace('.w', '.b')}"] = lin.bias.grad
            if self.c["normalization"] == "rms":
                out[f"h{l}.ln1.g"], out[f"h{l}.ln2.g"] = b.g1.grad, b.g2.grad
            else:
                out[f"h{l}.ln1.g"], out[f"h{l}.ln2.g"] = b.ln1.weight.grad, b.ln2.weight.grad
                if b.ln1.bias.requires_grad:
                    out[f"h{l}.ln1.b"], out[f"h{l}.ln2.b"] = b.ln1.bias.grad, b.ln2.bias.grad
        return out


def split_halves_weights(c, w):
    """Permutes each head's q and k output channels from interleaved pairs to split halves:
    split-halves channel i takes interleaved channel 2i, channel i + d/2 takes 2i + 1."""
    hs = c["nEmbd"] // c["nHead"]
    perm_head = [2 * i for i in range(hs // 2)] + [2 * i + 1 for i in range(hs // 2)]
    out = dict(w)
    for l in range(c["nLayer"]):
        for name, heads in (("attn.wq", c["nHead"]), ("attn.wk", c["nKVHead"])):
            perm = [h * hs + j for h in range(heads) for j in perm_head]
            out[f"h{l}.{name}"] = w[f"h{l}.{name}"][:, perm]  # columns = PyTorch's rows
            bname = f"h{l}.{name.replace('.w', '.b')}"
            if bname in w:
                out[bname] = w[bname][perm]
    return out


def main():
    torch.manual_seed(0)
    with open(sys.argv[1]) as f:
        spec = json.load(f)
    c = spec["config"]
    w = {k: torch.tensor(v["data"], dtype=torch.float32).reshape(v["shape"]) for k, v in spec["weights"].items()}
    x = torch.tensor(spec["x"], dtype=torch.long)
    y = torch.tensor(spec["y"], dtype=torch.long)
    model = Model(c, w)
    logits = model(x)
    loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
    loss.backward()
    out = {
        "torch": torch.__version__,
        "logits": logits.detach().reshape(-1).tolist(),
        "loss": loss.item(),
        "grads": {k: v.reshape(-1).tolist() for k, v in model.lmbook_grads().items()},
    }
    if c["positions"] == "rope":
        with torch.no_grad():
            halves = Model(c, split_halves_weights(c, w), rope=rope_split_halves)(x)
        out["splitHalvesMaxDiff"] = (halves - logits.detach()).abs().max().item()
    with open(sys.argv[2], "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main()

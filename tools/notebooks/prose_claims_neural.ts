/**
 * The checked claims of chapters 3 to 8 (neural models, attention, transformers, decoding, scale): see
 * tools/notebooks/prose_claims.ts and tools/notebooks/prose_claims_book.ts.
 *
 * @module
 */
import { type ClaimBook, monotone, type RunOutputs, verdict } from "./prose_claims.ts";

const list = (xs: number[]) => xs.join(", ");

/** Chapter 4's gradient sizes of one cell (the table's row starting with `cell`) at the given distances. */
const gradients = (run: RunOutputs, cell: string, columns: string[]) => {
  const t = run.table("Gradient size k steps back");
  return columns.map((c) => t.value(cell, c));
};

/** The r² of a least-squares line through points. */
function rSquared(points: number[][]): number {
  const n = points.length, mx = points.reduce((s, [x]) => s + x, 0) / n, my = points.reduce((s, [, y]) => s + y, 0) / n;
  let sxy = 0, sxx = 0, syy = 0;
  for (const [x, y] of points) [sxy, sxx, syy] = [sxy + (x - mx) * (y - my), sxx + (x - mx) ** 2, syy + (y - my) ** 2];
  return (sxy * sxy) / (sxx * syy);
}

/** Chapter 6's logit-lens table: each row's prediction at every position, as characters. */
const logitLens = (run: RunOutputs) => {
  const t = run.table("What each depth would predict");
  return new Map(t.rows.map((r) => [r[0], [...(JSON.parse(r[1]) as string)]]));
};

/** At how many positions two strings (as arrays of characters) agree. */
const matches = (a: string[], b: string[]) => a.filter((c, i) => c === b[i]).length;

/** The checked claims of chapters 3 to 8. */
export const NEURAL_CLAIMS: ClaimBook = {
  "03_neural_lm": {
    "short-run-under-a-tenth-of-an-epoch": {
      says: "the short run takes under a tenth of a pass over the training text",
      check: (run) => {
        const epochs = run.number(/examples \(([\d.]+) epochs\) in/);
        return verdict(epochs < 0.1, `${epochs} epochs`);
      },
    },
    "perplexity-falls-fast-then-slowly": {
      says: "training perplexity falls fast in the first fifth of the run (twice as much as in the rest), then slowly",
      check: (run) => {
        const s = run.plot("Perplexity during training").find((s) => s.name.endsWith(": training"))!;
        const x = s.x as number[], y = s.y, a = x.findIndex((v) => v >= x.at(-1)! / 5);
        const [fast, slow] = [y[0] - y[a], y[a] - y.at(-1)!];
        return verdict(
          fast > 2 * slow && slow > 0,
          `perplexity ${y[0].toFixed(0)}, ${y[a].toFixed(0)} after a fifth, ` +
            `${y.at(-1)!.toFixed(0)} at the end`,
        );
      },
    },
    "short-run-behind-kneser-ney": {
      says: "the short run is far behind Kneser-Ney (a perplexity 30% higher at least)",
      check: (run) => {
        const t = run.table("Perplexity on the first");
        const [mlp, kn] = [t.value("MLP9, short run", "perplexity"), t.value("Kneser-Ney 3-gram", "perplexity")];
        return verdict(mlp > 1.3 * kn, `MLP9 ${mlp}, Kneser-Ney 3-gram ${kn}`);
      },
    },
    "output-layer-dominates": {
      says: "almost all of MLP9's multiplications per example (over 95%) are in the output layer",
      check: (run) => {
        const t = run.table("MLP9's weights");
        const [hidden, output] = [
          t.value("H (hidden weights)", "parameters"),
          t.value("U (output weights)", "parameters"),
        ];
        return verdict(output > 0.95 * (hidden + output), `H ${hidden}, U ${output} multiplications per example`);
      },
    },
    "mixture-beats-both": {
      says: "the mixture beats both the network and the trigram",
      check: (run) => {
        const t = run.table("Mixing, on the same");
        const [kn, mlp, mix] = [
          t.value("Kneser-Ney 3-gram", "perplexity"),
          t.value("MLP9", "perplexity"),
          t.value("mixture", "perplexity"),
        ];
        return verdict(mix < kn && mix < mlp, `Kneser-Ney ${kn}, MLP9 ${mlp}, mixture ${mix}`);
      },
    },
  },
  "04_rnn": {
    "gain-below-1-decays-geometrically": {
      says: "with a gain below 1 the gradient falls along a straight line on the log scale (r² of log against k " +
        "above 0.9) to nothing (under a millionth) fifty steps back",
      check: (run) => {
        const s = run.plot("How much the last state depends").find((s) => s.name === "RNN, Wh gain 0.5")!;
        const pts = s.y.map((y, i) => [s.x[i] as number, y]).filter(([, y]) => y > 0).map(([x, y]) => [x, Math.log(y)]);
        const r2 = rSquared(pts);
        const [g0, g50] = gradients(run, "RNN, Wh gain 0.5", ["k = 0", "k = 50"]);
        return verdict(r2 > 0.9 && g50 < 1e-6 * g0, `r² = ${r2.toFixed(3)}; ${g0} at k = 0, ${g50} at k = 50`);
      },
    },
    "gain-1-decays-slower": {
      says: "with a gain of 1 the gradient decays more slowly than with 0.5, but to under a thousandth at k = 50",
      check: (run) => {
        const [a0, a10] = gradients(run, "RNN, Wh gain 0.5", ["k = 0", "k = 10"]);
        const [b0, b10, b50] = gradients(run, "RNN, Wh gain 1.0", ["k = 0", "k = 10", "k = 50"]);
        return verdict(
          b10 / b0 > a10 / a0 && b50 < 1e-3 * b0,
          `gain 1: ${b0}, ${b10}, ${b50}; gain 0.5: ${a0}, ${a10}`,
        );
      },
    },
    "gain-2-grows": {
      says: "with a gain of 2 the gradient grows with distance, far less than geometrically (under 1,000-fold)",
      check: (run) => {
        const [g0, g50] = gradients(run, "RNN, Wh gain 2.0", ["k = 0", "k = 50"]);
        const peak = Math.max(
          ...run.plot("How much the last state depends").find((s) => s.name === "RNN, Wh gain 2.0")!.y,
        );
        return verdict(g50 > g0 && peak < 1000 * g0, `${g0} at k = 0, ${g50} at k = 50, at most ${peak}`);
      },
    },
    "lstm-keeps-the-gradient": {
      says: "through the LSTM's cell the gradient survives far longer (over 1% left at k = 50, 1,000 times the RNN's " +
        "share at gain 1)",
      check: (run) => {
        const [l0, l50] = gradients(run, "LSTM", ["k = 0", "k = 50"]);
        const [r0, r50] = gradients(run, "RNN, Wh gain 1.0", ["k = 0", "k = 50"]);
        return verdict(l50 / l0 > 0.01 && l50 / l0 > 1000 * (r50 / r0), `LSTM ${l0} -> ${l50}; RNN ${r0} -> ${r50}`);
      },
    },
  },
  "05_attention": {
    "hand-row-matches": {
      says: "the softmax by hand is the first row of the library's weights, and its output the library's",
      check: (run) => {
        const nums = (s: string) => s.split(",").map(Number);
        const hand = nums(run.find(/weights of 'the' by hand: \[([^\]]*)\]/)[1]);
        const row = run.table("attention weights").rows.find((r) => r[0] === "the")!.slice(1).map(Number);
        const out = run.find(/output of 'the' by hand:\s*\[([^\]]*)\]\s*library: \[([^\]]*)\]/);
        const ok = hand.every((w, i) => Math.abs(w - row[i]) < 1e-3) &&
          out[1].replace(/\s/g, "") === out[2].replace(/\s/g, "");
        return verdict(ok, `by hand ${list(hand)}, library ${list(row)}; outputs [${out[1]}] and [${out[2]}]`);
      },
    },
    "dot-product-variance-is-dk": {
      says: "the variance of q·k is d_k (within 10%)",
      check: (run) => {
        const t = run.table("Dot products of random"), d = t.column("d_k"), v = t.column("var(q·k)");
        return verdict(v.every((x, i) => Math.abs(x / d[i] - 1) < 0.1), `d_k ${list(d)}; variance ${list(v)}`);
      },
    },
    "scaled-variance-is-1": {
      says: "divided by √d_k the variance is 1 (within 10%) at every d_k",
      check: (run) => {
        const v = run.table("Dot products of random").column("var(q·k/√d_k)");
        return verdict(v.every((x) => Math.abs(x - 1) < 0.1), `variance ${list(v)}`);
      },
    },
    "unscaled-softmax-saturates": {
      says:
        "without the scale the largest weight rises towards 1 (over 0.95) and the Jacobian shrinks (tenfold at least)",
      check: (run) => {
        const t = run.table("Dot products of random"), w = t.column("max weight"), j = t.column("|Jacobian|");
        const ok = monotone(w, "up") && w.at(-1)! > 0.95 && monotone(j, "down") && j.at(-1)! < 0.1 * j[0];
        return verdict(ok, `largest weight ${list(w)}; Jacobian ${list(j)}`);
      },
    },
    "scaled-softmax-stays-put": {
      says: "with the scale the largest weight and the Jacobian stay put (within a factor of 1.5)",
      check: (run) => {
        const t = run.table("Dot products of random");
        const [w, j] = [t.column("max weight, scaled"), t.column("|Jacobian|, scaled")];
        const flat = (xs: number[]) => Math.max(...xs) < 1.5 * Math.min(...xs);
        return verdict(flat(w) && flat(j), `largest weight ${list(w)}; Jacobian ${list(j)}`);
      },
    },
    "unmasked-loss-collapses": {
      says: "without the mask the training loss collapses towards zero (under 0.2, a tenth of the masked model's)",
      check: (run) => {
        const t = run.table("Leakage"), col = "final training loss";
        const [masked, unmasked] = [t.value("with the causal mask", col), t.value("WITHOUT the mask", col)];
        return verdict(unmasked < 0.2 && unmasked < 0.1 * masked, `${unmasked} without the mask, ${masked} with it`);
      },
    },
    "unmasked-model-falls-apart": {
      says: "scored honestly, the unmasked model falls apart (a perplexity 5 times the masked model's at least)",
      check: (run) => {
        const t = run.table("Leakage"), col = /^honest validation perplexity/;
        const [masked, unmasked] = [t.value("with the causal mask", col), t.value("WITHOUT the mask", col)];
        return verdict(unmasked > 5 * masked, `${unmasked} without the mask, ${masked} with it`);
      },
    },
    "swap-leaves-last-output": {
      says: "without positions, swapping two earlier tokens leaves the last output unchanged (by under 1e-5)",
      check: (run) => {
        const d = run.table("Permutation equivariance").value("tokens only", /^largest change/);
        return verdict(d < 1e-5, `largest change ${d}`);
      },
    },
    "positions-break-the-symmetry": {
      says: "with positions added, the swap changes the last output (by over 1e-3)",
      check: (run) => {
        const d = run.table("Permutation equivariance").value("tokens + sinusoidal", /^largest change/);
        return verdict(d > 1e-3, `largest change ${d}`);
      },
    },
    "heads-cost-the-same": {
      says: "every number of heads costs the same arithmetic",
      check: (run) => {
        const t = run.table("Cost of one layer");
        const cols = t.columns.filter((c) => c.endsWith("(GFLOP)")).map((c) => t.column(c));
        return verdict(cols.every((c) => c.every((x) => x === c[0])), cols.map((c) => list(c)).join("; "));
      },
    },
  },
  "06_transformer": {
    "estimate-takes-over": {
      says: "as d grows, the exact count gets closer to 12 L d² (the ratio falls at every width, to within 5%)",
      check: (run) => {
        const r = run.plot("How good is 12 L d²?").find((s) => s.name === "total / 12 L d²")!.y;
        return verdict(
          monotone(r, "down") && r.at(-1)! < 1.05,
          `total / 12 L d² by width: ${r.map((x) => x.toFixed(3)).join(", ")}`,
        );
      },
    },
    "lens-embedding-returns-input": {
      says: "read off the embedding, the lens returns the input character at most positions",
      check: (run) => {
        const lens = logitLens(run), same = matches(lens.get("embedding")!, lens.get("input")!);
        return verdict(same > 0.5 * lens.get("input")!.length, `${same} of ${lens.get("input")!.length} positions`);
      },
    },
    "lens-blocks-move-to-next": {
      says: "block by block, the lens predicts the true next character at no fewer positions, and the last block " +
        "returns the input at fewer positions than the embedding does",
      check: (run) => {
        const lens = logitLens(run), next = lens.get("true next character")!, input = lens.get("input")!;
        const depths = [...lens.keys()].filter((k) => k === "embedding" || k.startsWith("after block"));
        const toNext = depths.map((d) => matches(lens.get(d)!, next)),
          toInput = depths.map((d) => matches(lens.get(d)!, input));
        const ok = toNext.every((x, i) => i === 0 || x >= toNext[i - 1]) && toInput.at(-1)! < toInput[0];
        return verdict(
          ok,
          `${depths.join(", ")}: the next character at ${list(toNext)}, the input at ${list(toInput)}`,
        );
      },
    },
  },
  "07_decoding": {
    "greedy-loops": {
      says: "greedy decoding quickly falls into a loop (within its first 100 characters)",
      check: (run) => {
        const start = run.number(/from character (\d+) on, the output repeats/);
        return verdict(start < 100, `the loop starts at character ${start}`);
      },
    },
    "top-p-adapts": {
      says: "top-p keeps more tokens when the model is less sure (a higher temperature), never fewer",
      check: (run) => {
        const t = run.table("How many characters top-p keeps");
        const cols = ["kept at t = 0.7", "kept at t = 1", "kept at t = 1.5"].map((c) => t.column(c));
        const rows = t.rows.map((_, r) => cols.map((c) => c[r]));
        const ok = rows.every((k) => k[0] <= k[1] && k[1] <= k[2]) && rows.some((k) => k[2] > k[0]);
        return verdict(ok, rows.map((k) => k.join(" <= ")).join("; "));
      },
    },
    "temperature-trades-likelihood-for-diversity": {
      says: "as the temperature rises the samples grow more diverse (never less) and less likely (at every step)",
      check: (run) => {
        const distinct = run.plot("Diversity of samples")[0].y;
        const logProb = run.plot("...and their likelihood").find((s) => s.name === "samples")!.y;
        const ok = distinct.every((d, i) => i === 0 || d >= distinct[i - 1]) && distinct.at(-1)! > distinct[0] &&
          monotone(logProb, "down");
        return verdict(
          ok,
          `distinct-2 ${distinct.map((d) => d.toFixed(2)).join(", ")}; log-probability ` +
            logProb.map((x) => x.toFixed(2)).join(", "),
        );
      },
    },
    "beam-finds-more-probable": {
      says: "beam search finds a more probable continuation than greedy decoding (on at least one passage)",
      check: (run) => {
        const won = run.number(/beam 4 found a more probable continuation than greedy decoding in (\d+)/);
        return verdict(won >= 1, `more probable on ${won} passages`);
      },
    },
    "greedy-and-beam-loop": {
      says: "greedy decoding loops, and beam search's completion repeats one word for most of its length",
      check: (run) => {
        const start = run.number(/from character (\d+) on, the output repeats/);
        const words = run.table("Completing").rows.find((r) => r[0].startsWith("beam 4"))![1].split(/[␣\s]+/).filter(
          Boolean,
        );
        const top = Math.max(...[...new Set(words)].map((w) => words.filter((x) => x === w).length));
        return verdict(
          start < 100 && top > words.length / 2,
          `greedy loops from character ${start}; beam 4 repeats a ` +
            `word ${top} times in ${words.length}`,
        );
      },
    },
    "kv-cache-speeds-up-many-times": {
      says: "the KV cache speeds generation up many times (3-fold at least)",
      check: (run) => {
        const x = run.number(/speed-up of the fast cache over recomputation: ([\d.]+)x/);
        return verdict(x >= 3, `${x}x`);
      },
    },
  },
  "08_scale": {
    "characters-four-to-five-times-longer": {
      says: "characters make sequences four to five times longer than words",
      check: (run) => {
        const x = run.table("Two extremes on Brown").value("characters", "tokens per word");
        return verdict(x >= 4 && x <= 5, `${x} characters per word`);
      },
    },
    "lowest-splits-into-low-est": {
      says: "the toy merges spell the unseen word lowest as low + est",
      check: (run) => {
        const pieces = run.find(/"lowest" -> \[([^\]]*)\]/)[1].replace(/\s/g, "");
        return verdict(pieces === '"low","est"', `lowest -> [${pieces}]`);
      },
    },
    "compression-returns-diminish": {
      says: "each extra vocabulary entry saves fewer tokens per word than the ones before",
      check: (run) => {
        const t = run.table("Compression of the Brown validation text");
        const [v, tpw] = [t.column("vocabulary size").slice(0, -1), t.column("tokens per word").slice(0, -1)];
        const gain = tpw.slice(1).map((x, i) => (tpw[i] - x) / (v[i + 1] - v[i]));
        return verdict(
          gain.every((g) => g > 0) && monotone(gain, "down"),
          `tokens per word saved per entry: ` +
            gain.map((g) => g.toExponential(1)).join(", "),
        );
      },
    },
    "emoji-bytes-against-one-token": {
      says: "our Brown BPE spells the emoji as four byte pieces, GPT-2 as one token",
      check: (run) => {
        const t = run.table("The same text under four tokenizers");
        const pieces = (scheme: string) =>
          t.rows.find((r) => r[0].startsWith("Naïve") && r[1].startsWith(scheme))![3].split(" | ");
        const ours = pieces("our BPE"), gpt2 = pieces("GPT-2");
        const bytes = ours.join("").match(/\uFFFD+/g)?.map((m) => m.length) ?? [];
        return verdict(
          bytes.includes(4) && gpt2.includes("␣🙂"),
          `ours: ${ours.join(" | ")}; GPT-2: ${gpt2.join(" | ")}`,
        );
      },
    },
    "bpe-round-trips": {
      says: "both BPE tokenizers decode the strange string back exactly",
      check: (run) => {
        const ok = run.table("Round trips of a deliberately strange string").texts(/^decode/);
        return verdict(ok.length === 2 && ok.every((x) => x === "true"), ok.join(", "));
      },
    },
    "newer-pretokenizers-differ": {
      says: "the newer tokenizers cut digits into groups of at most three and keep newlines together, and o200k_base " +
        "splits getElementById and McDonald at their capitals where cl100k_base keeps McDonald whole",
      check: (run) => {
        const t = run.table("How numbers, whitespace and case split");
        const cell = (text: string, col: string) =>
          t.texts(col)[t.texts("text").indexOf(JSON.stringify(text))].split(" | ");
        const [cl, o2] = ["cl100k_base (GPT-4)", "o200k_base (GPT-4o)"];
        const digits = [cl, o2].every((c) => cell(" 1234567", c).every((p) => (p.match(/\d/g) ?? []).length <= 3));
        const newlines = [cl, o2].every((c) => cell("\n\n\n", c).length === 1);
        const capitals = cell("getElementById", o2).slice(1).every((p) => /^[A-Z]/.test(p)) &&
          cell(" McDonald", o2).length > 1 && cell(" McDonald", cl).length === 1;
        return verdict(digits && newlines && capitals, `digits ${digits}, newlines ${newlines}, capitals ${capitals}`);
      },
    },
    "stream-equals-whole": {
      says: "encoding a stream of chunks gives exactly the ids of encoding the whole text",
      check: (run) => {
        const same = run.find(/identical to encoding the whole book at once: \*\*(\w+)\*\*/)[1];
        return verdict(same === "true", same);
      },
    },
    "gpt2-number-pieces": {
      says: "GPT-2 spells ` 1962` as one token and `1,250` as three",
      check: (run) => {
        const t = run.table("The same text under four tokenizers");
        const gpt2 = t.rows.find((r) => r[0].startsWith("The jury") && r[1].startsWith("GPT-2"))![3];
        return verdict(gpt2.split(" | ").includes("␣1962") && gpt2.includes("␣1 | , | 250 |"), gpt2);
      },
    },
    "duplicates-rare": {
      says: "exact duplicate sentences are rare in Brown (under 1% of the sentences of 6 words or more)",
      check: (run) => {
        const m = run.find(/([\d,]+) sentences of 6\+ words; (\d+) occur more than once/);
        const [all, repeated] = [Number(m[1].replace(/,/g, "")), Number(m[2])];
        return verdict(repeated < 0.01 * all, `${repeated} of ${all}`);
      },
    },
    "shared-8grams-are-tags": {
      says: "the shared 8-grams printed are dialogue tags, punctuation and <unk> (half their tokens or more)",
      check: (run) => {
        const lines = run.find(/distinct shared 8-grams, e\.g\.:\n([\s\S]*)/)[1].split("\n").map((l) => l.trim())
          .filter(Boolean);
        const filler = (w: string) => /^(<unk>|<\/s>|said|asked|\W+)$/.test(w);
        const ok = lines.length > 0 && lines.every((l) => l.split(" ").filter(filler).length >= 4);
        return verdict(ok, lines.join(" / "));
      },
    },
    "filter-keeps-its-reference": {
      says: "each filter keeps its own reference genre among the three genres it keeps most of",
      check: (run) => {
        const t = run.table("Per-word perplexity of each genre"), genres = t.texts("genre");
        const rank = (ref: string) => {
          const kept = t.column(`% kept, ref. ${ref}`);
          return kept.filter((k) => k > kept[genres.indexOf(ref)]).length + 1;
        };
        return verdict(
          rank("learned") <= 3 && rank("fiction") <= 3,
          `learned ranks ${rank("learned")} under its own ` +
            `filter, fiction ${rank("fiction")}`,
        );
      },
    },
  },
};

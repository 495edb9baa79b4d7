/**
 * Graded tests for chapter 9 (pretrain once, fine-tune many).
 * Run: `deno test exercises/ch09_finetuning_test.ts`.
 *
 * Expected values are computed here from scratch with plain JavaScript
 * arrays (or by hand, in comments), never by calling a reference solution.
 * @module
 */
import { expectClose, expectEqual, expectShape, expectThrows, graded, Rng, tf } from "../lib/mod.ts";
import { classifierHead, selectTrainable } from "./ch09_finetuning.ts";

type M = number[][];

// ---------------------------------------------------------------- 9.1 classifierHead

// Spec 9.1: pool "first" = position 0, "mean" = mean over positions with mask 1 (all positions without a mask);
// logits = pooled w + b (B, K); loss = mean over the batch of -log softmax(logits)[label], stable for large
// logits; RangeErrors naming labels.length and B, labels[i]=v for a label that is not an integer in [0, K), and
// pool; only logits and loss stay alive; inputs unchanged and not disposed.

/** One right (default) or wrong way to compute the head, for diagnosing a failure. */
interface HeadVariant {
  first?: "first" | "last";
  mean?: "masked" | "ignoreMask" | "divideByT";
  bias?: boolean;
  reduce?: "mean" | "sum";
}

/** The head from scratch: logits and loss. */
function refHead(
  h: number[][][],
  labels: number[],
  w: M,
  b: number[],
  pool: "mean" | "first",
  mask?: M,
  v: HeadVariant = {},
) {
  const C = w.length, K = b.length;
  const logits = h.map((seq, i) => {
    const pooled = new Array(C).fill(0);
    if (pool === "first") {
      const row = v.first === "last" ? seq[seq.length - 1] : seq[0];
      row.forEach((x, c) => (pooled[c] = x));
    } else {
      let n = 0;
      seq.forEach((vec, t) => {
        const m = mask && v.mean !== "ignoreMask" ? mask[i][t] : 1;
        n += m;
        vec.forEach((x, c) => (pooled[c] += m * x));
      });
      if (v.mean === "divideByT") n = seq.length;
      for (let c = 0; c < C; c++) pooled[c] /= n;
    }
    return Array.from(
      { length: K },
      (_, k) => (v.bias === false ? 0 : b[k]) + pooled.reduce((s, x, c) => s + x * w[c][k], 0),
    );
  });
  const total = logits.reduce((s, z, i) => {
    const m = Math.max(...z);
    return s + m + Math.log(z.reduce((t, x) => t + Math.exp(x - m), 0)) - z[labels[i]];
  }, 0);
  return { logits, loss: v.reduce === "sum" ? total : total / logits.length };
}

const HEAD_MISTAKES: { variant: HeadVariant; hint: string }[] = [
  { variant: { first: "last" }, hint: '"first" pooling takes position 0 of each sequence, not the last position' },
  { variant: { mean: "ignoreMask" }, hint: "mean pooling averaged the padding too: weight each position by its mask" },
  {
    variant: { mean: "divideByT" },
    hint: "mean pooling divided by T: divide the masked sum by the number of real tokens (the mask's row sum)",
  },
  { variant: { bias: false }, hint: "the bias b was not added: logits = pooled w + b" },
  { variant: { reduce: "sum" }, hint: "the loss was summed over the batch: take the mean" },
];

function headMistakes(compute: (v: HeadVariant) => unknown) {
  return HEAD_MISTAKES.map((m) => ({ value: compute(m.variant), hint: m.hint }));
}

/** Runs the student's head on plain arrays and returns plain arrays (tensors disposed). */
function runHead(h: number[][][], labels: number[], w: M, b: number[], pool: "mean" | "first", mask?: M) {
  const inputs = {
    hidden: tf.tensor3d(h),
    w: tf.tensor2d(w),
    b: tf.tensor1d(b),
    mask: mask ? tf.tensor2d(mask) : undefined,
  };
  try {
    const r = classifierHead(inputs.hidden, labels, { w: inputs.w, b: inputs.b, pool, mask: inputs.mask });
    const out = { logits: r.logits.arraySync() as M, loss: r.loss.arraySync() as number, shape: r.logits.shape };
    tf.dispose([r.logits, r.loss]);
    return out;
  } finally {
    tf.dispose([inputs.hidden, inputs.w, inputs.b, ...(inputs.mask ? [inputs.mask] : [])]);
  }
}

// Two sequences of two positions, two channels; w = identity, b = [0.5, -0.5].
const H: number[][][] = [[[1, 2], [3, 0]], [[0, 1], [2, 5]]];
const W: M = [[1, 0], [0, 1]];
const BIAS = [0.5, -0.5];

graded("9.1 classifierHead: first-token pooling, by hand", () => {
  // pooled = [1, 2] and [0, 1]; logits = pooled + b = [1.5, 1.5] and [0.5, 0.5]; both uniform: loss = ln 2.
  const r = runHead(H, [0, 1], W, BIAS, "first");
  expectEqual(r.shape, [2, 2], { what: "the logits' shape (B, K)", hint: "one row of K scores per sequence" });
  expectClose(r.logits, [[1.5, 1.5], [0.5, 0.5]], {
    what: 'logits with pool "first"',
    input: { hidden: H, w: W, b: BIAS },
    hint: "take hidden[:, 0, :] (tf.slice), multiply by w and add b",
    mistakes: headMistakes((v) => refHead(H, [0, 1], W, BIAS, "first", undefined, v).logits),
  });
  expectClose(r.loss, Math.log(2), {
    what: "the loss when both rows are uniform over 2 labels",
    hint: "the cross-entropy of a uniform distribution over K labels is ln K",
    mistakes: headMistakes((v) => refHead(H, [0, 1], W, BIAS, "first", undefined, v).loss),
  });
});

graded("9.1 classifierHead: mean pooling skips the padding", () => {
  // Sequence 0 has both positions real: mean [2, 1]. Sequence 1 has only position 0 real: mean [0, 1].
  const mask: M = [[1, 1], [1, 0]];
  const labels = [0, 1];
  const r = runHead(H, labels, W, BIAS, "mean", mask);
  expectClose(r.logits, [[2.5, 0.5], [0.5, 0.5]], {
    what: 'logits with pool "mean" and a mask',
    input: { hidden: H, mask },
    hint: "sum hidden * mask over the positions (axis 1) and divide by the mask's row sum",
    mistakes: headMistakes((v) => refHead(H, labels, W, BIAS, "mean", mask, v).logits),
  });
  expectClose(r.loss, refHead(H, labels, W, BIAS, "mean", mask).loss, {
    what: "the loss with mean pooling",
    hint: "loss = mean over sequences of logsumexp(logits) - logits[label]",
    mistakes: headMistakes((v) => refHead(H, labels, W, BIAS, "mean", mask, v).loss),
  });
});

graded("9.1 classifierHead: mean pooling without a mask averages every position", () => {
  const r = runHead(H, [1, 0], W, BIAS, "mean");
  expectClose(r.logits, [[2.5, 0.5], [1.5, 2.5]], {
    what: 'logits with pool "mean" and no mask',
    input: { hidden: H },
    hint: "without a mask every position is a real token: the plain mean over axis 1",
    mistakes: headMistakes((v) => refHead(H, [1, 0], W, BIAS, "mean", undefined, v).logits),
  });
});

graded("9.1 classifierHead: random shapes, masks and labels match a from-scratch head", () => {
  const rng = new Rng(91);
  const r1 = (x: number) => Math.round(x * 10) / 10;
  for (let trial = 0; trial < 12; trial++) {
    const B = 1 + rng.int(4), T = 1 + rng.int(5), C = 1 + rng.int(5), K = 2 + rng.int(4);
    const pool = trial % 2 === 0 ? "mean" : "first";
    const h = Array.from(
      { length: B },
      () => Array.from({ length: T }, () => Array.from({ length: C }, () => r1(rng.normal()))),
    );
    const w = Array.from({ length: C }, () => Array.from({ length: K }, () => r1(rng.normal())));
    const b = Array.from({ length: K }, () => r1(rng.normal()));
    const mask = trial % 3 === 2 ? undefined : Array.from({ length: B }, () => {
      const row = Array.from({ length: T }, () => (rng.next() < 0.6 ? 1 : 0));
      if (!row.includes(1)) row[rng.int(T)] = 1;
      return row;
    });
    const labels = Array.from({ length: B }, () => rng.int(K));
    const r = runHead(h, labels, w, b, pool, mask);
    const ref = refHead(h, labels, w, b, pool, mask);
    const input = { B, T, C, K, pool, mask, labels };
    expectClose(r.logits, ref.logits, {
      what: `logits, trial ${trial}`,
      input,
      hint: "check the pooling first (position 0, or the masked mean), then pooled w + b",
      mistakes: headMistakes((v) => refHead(h, labels, w, b, pool, mask, v).logits),
    });
    expectClose(r.loss, ref.loss, {
      what: `loss, trial ${trial}`,
      input,
      hint: "loss = mean over the batch of -log softmax(logits)[label]",
      mistakes: headMistakes((v) => refHead(h, labels, w, b, pool, mask, v).loss),
    });
  }
});

graded("9.1 classifierHead: large logits do not overflow", () => {
  const big: M = [[1000, 0], [0, -1000]];
  const h = [[[1, 0.5]], [[0.2, 1]]];
  const r = runHead(h, [1, 0], big, [0, 0], "first");
  const ref = refHead(h, [1, 0], big, [0, 0], "first");
  expectClose(r.loss, ref.loss, {
    what: "the loss with logits near 1000",
    input: { hidden: h, w: big, labels: [1, 0] },
    hint: "log(softmax(z)) underflows to log(0) = -Infinity: use tf.logSoftmax, which subtracts the maximum first",
  });
});

graded("9.1 classifierHead: bad labels, a count mismatch and an unknown pooling are errors", () => {
  const call = (labels: number[], pool = "mean") => () => runHead(H, labels, W, BIAS, pool as "mean");
  expectThrows(call([0]), RangeError, {
    what: "one label for two sequences",
    includes: "labels.length",
    hint: "compare labels.length with B = hidden.shape[0] and throw a RangeError naming labels.length",
  });
  for (const [labels, i] of [[[0, 2], 1], [[-1, 0], 0], [[0, 0.5], 1], [[NaN, 1], 0]] as [number[], number][]) {
    expectThrows(call(labels), RangeError, {
      what: `labels ${JSON.stringify(labels.map(String))} with K = 2`,
      includes: `labels[${i}]=${labels[i]}`,
      hint: "check every label: Number.isInteger(l) && 0 <= l < K (K = w.shape[1]); name it as labels[i]=value",
    });
  }
  expectThrows(call([0, 1], "max"), RangeError, {
    what: 'pool "max"',
    includes: "pool",
    hint: 'accept only "mean" and "first"; throw a RangeError naming pool otherwise',
  });
});

graded("9.1 classifierHead: no leaked tensors, inputs unchanged and not disposed", () => {
  const hidden = tf.tensor3d(H), w = tf.tensor2d(W), b = tf.tensor1d(BIAS), mask = tf.tensor2d([[1, 1], [1, 0]]);
  const inputs = [hidden, w, b, mask];
  const before = inputs.map((t) => t.arraySync());
  const count = tf.memory().numTensors;
  const r = classifierHead(hidden, [0, 1], { w, b, pool: "mean", mask });
  expectEqual(tf.memory().numTensors - count, 2, {
    what: "tensors alive after the call minus before (only logits and loss may stay)",
    hint: "wrap the computation in tf.tidy(() => ...) and return { logits, loss } from it",
  });
  expectEqual(inputs.findIndex((t) => t.isDisposed), -1, {
    what: "the index of an input tensor your function disposed (-1 = none)",
    hint: "never dispose the caller's tensors",
  });
  inputs.forEach((t, i) =>
    expectClose(t, before[i], { what: `input ${i} after the call`, hint: "leave the inputs unchanged" })
  );
  const logits = r.logits.arraySync();
  tf.dispose(inputs);
  expectClose(r.logits, logits, {
    what: "the logits once the caller disposed the inputs",
    hint: "return new tensors, not views of the inputs",
  });
  expectShape(r.loss, [], { what: "the loss", hint: "the loss is a scalar: take the mean over the batch" });
  tf.dispose([r.logits, r.loss]);
});

// ---------------------------------------------------------------- 9.2 selectTrainable

// Spec 9.2: keep the names (in order) that start with a `train` prefix (any name when train is absent) and with
// no `freeze` prefix; freeze wins; startsWith, not includes or equality; a prefix matching no name is a RangeError
// naming it; an empty result is a RangeError containing "nothing to train"; inputs unchanged.

/** The rule from scratch. */
function refSelect(names: string[], train: string[] | undefined, freeze: string[]): string[] {
  const starts = (n: string, ps: string[]) => ps.some((p) => n.slice(0, p.length) === p);
  return names.filter((n) => (train === undefined || starts(n, train)) && !starts(n, freeze));
}

const NAMES = ["body.wte", "body.wpe", "body.e0.attn.wq", "body.e0.ln1.g", "head.w", "head.b"];

graded("9.2 selectTrainable: freezing the body trains the head only", () => {
  const got = selectTrainable(NAMES, { freeze: ["body."] });
  expectEqual(got, ["head.w", "head.b"], {
    what: 'selectTrainable(NAMES, { freeze: ["body."] })',
    input: NAMES,
    hint: "drop every name that starts with a freeze prefix, keep the others in order",
  });
});

graded("9.2 selectTrainable: no options train everything, in the given order", () => {
  const got = selectTrainable(NAMES);
  expectEqual(got, NAMES, {
    what: "selectTrainable(NAMES)",
    input: NAMES,
    hint: "without train or freeze every variable is trained; keep the order of names (do not sort)",
  });
});

graded("9.2 selectTrainable: train and freeze together, freeze wins", () => {
  const got = selectTrainable(NAMES, { train: ["body.e0.", "head."], freeze: ["head.b", "body.e0.ln"] });
  expectEqual(got, ["body.e0.attn.wq", "head.w"], {
    what: 'train ["body.e0.", "head."], freeze ["head.b", "body.e0.ln"]',
    input: NAMES,
    hint: "a name is trained when it starts with a train prefix AND with no freeze prefix",
  });
});

graded("9.2 selectTrainable: prefixes match the start of a name only", () => {
  const names = ["body.head.w", "head.w", "headline.w", "body.w"];
  expectEqual(selectTrainable(names, { freeze: ["head"] }), ["body.head.w", "body.w"], {
    what: 'freeze ["head"]',
    input: names,
    hint: 'use name.startsWith(prefix): "head" matches head.w and headline.w but not body.head.w',
  });
  expectEqual(selectTrainable(names, { train: ["body"] }), ["body.head.w", "body.w"], {
    what: 'train ["body"]',
    input: names,
    hint: "a prefix need not be a whole name: body matches body.head.w and body.w",
  });
});

graded("9.2 selectTrainable: random names and prefixes match a from-scratch rule", () => {
  const rng = new Rng(92);
  const parts = ["body", "head", "e0", "e1", "attn", "w", "b"];
  for (let trial = 0; trial < 30; trial++) {
    const names = [
      ...new Set(
        Array.from(
          { length: 2 + rng.int(6) },
          () => Array.from({ length: 1 + rng.int(3) }, () => parts[rng.int(parts.length)]).join("."),
        ),
      ),
    ];
    const prefixOf = () => {
      const n = names[rng.int(names.length)];
      return n.slice(0, 1 + rng.int(n.length));
    };
    const train = rng.next() < 0.5 ? undefined : Array.from({ length: 1 + rng.int(2) }, prefixOf);
    const freeze = Array.from({ length: rng.int(3) }, prefixOf);
    const expected = refSelect(names, train, freeze);
    const input = { names, train, freeze };
    if (expected.length === 0) {
      expectThrows(() => selectTrainable(names, { train, freeze }), RangeError, {
        what: `trial ${trial}: everything frozen`,
        input,
        includes: "nothing to train",
        hint: "when no name is left, throw a RangeError whose message contains 'nothing to train'",
      });
    } else {
      expectEqual(selectTrainable(names, { train, freeze }), expected, {
        what: `trial ${trial}`,
        input,
        hint: "keep a name when (no train list, or it starts with a train prefix) and it starts with no freeze prefix",
      });
    }
  }
});

graded("9.2 selectTrainable: a prefix that matches nothing, and an empty selection, are errors", () => {
  for (
    const options of [{ freeze: ["encoder."] }, { train: ["encoder."] }, { train: ["head."], freeze: ["encoder."] }]
  ) {
    expectThrows(() => selectTrainable(NAMES, options), RangeError, {
      what: `selectTrainable(NAMES, ${JSON.stringify(options)})`,
      includes: "encoder.",
      hint:
        "check every prefix of train and freeze against the names and throw a RangeError naming one that matches none",
    });
  }
  expectThrows(() => selectTrainable(NAMES, { freeze: ["body.", "head."] }), RangeError, {
    what: 'freeze ["body.", "head."]',
    includes: "nothing to train",
    hint: "an empty result would train nothing: throw a RangeError containing 'nothing to train'",
  });
  expectThrows(() => selectTrainable(NAMES, { train: ["head."], freeze: ["head"] }), RangeError, {
    what: 'train ["head."], freeze ["head"]',
    includes: "nothing to train",
    hint: "freeze wins over train: here nothing is left",
  });
});

graded("9.2 selectTrainable: the names and option lists are left unchanged", () => {
  const names = ["z.b", "head.w", "a.w", "body.x"];
  const train = ["head.", "a."], freeze = ["a."];
  const got = selectTrainable(names, { train, freeze });
  expectEqual(got, ["head.w"], {
    what: "the selection",
    input: { names, train, freeze },
    hint: "freeze wins over train",
  });
  expectEqual({ names, train, freeze }, {
    names: ["z.b", "head.w", "a.w", "body.x"],
    train: ["head.", "a."],
    freeze: ["a."],
  }, {
    what: "names, train and freeze after the call",
    hint: "do not sort or splice the arrays you are given: filter returns a new array",
  });
  expectEqual(got === names, false, { what: "is the result the names array itself?", hint: "return a new array" });
});

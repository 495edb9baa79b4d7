/**
 * Graded tests for chapter 3 (the fixed-window neural language model).
 * Run: `deno test exercises/ch03_neural_lm_test.ts`.
 *
 * Expected values are computed here from scratch with plain numbers (or by
 * hand, in comments), never by calling a reference solution. When an answer
 * is wrong, the tests also compute the answers that the usual mistakes give
 * and, if yours matches one, the hint names that mistake.
 * @module
 */
import { arb, expectClose, expectEqual, expectShape, expectThrows, fc, forAll, graded, Rng, tf } from "../lib/mod.ts";
import {
  batchNll,
  emWeightUpdate,
  fixedWindowForward,
  type FixedWindowParams,
  makeWindows,
  mixDistributions,
} from "./ch03_neural_lm.ts";

const BOS = 1, EOS = 2;

// ---------------------------------------------------------------- 3.1 windows
// Spec: one (context, target) per token, </s> included, in stream order; the context is the blockSize tokens
// before the target in the same sentence, oldest first, left-padded with <s> (1); a sentence starts at the
// stream's start and after every </s> (2), so no context holds </s>; the stream need not end with </s>; empty
// sentences (</s> right after </s>) and blockSize longer than any sentence work; [] gives no windows; blockSize
// that is not an integer >= 1 (0, negative, 2.5, NaN, +-Infinity) is a RangeError naming blockSize and its value;
// tokens is not modified, targets is a new array and every context a new array of its own.
// The rules of 3.1 to 3.5, with the tests and a mutant of each: tests/mutants/ch03_neural_lm.json "rules".

type WindowMistake =
  | "none"
  | "shifted"
  | "shiftedNoReset"
  | "noReset"
  | "padZero"
  | "newestFirst"
  | "eosInWindow";

/** Windows from scratch, with switches that reproduce the usual mistakes. */
function windowsPlain(tokens: number[], n: number, mistake: WindowMistake = "none"): number[][] {
  const pad = mistake === "padZero" ? 0 : BOS;
  let w: number[] = new Array(n).fill(pad);
  const out: number[][] = [];
  const slide = (t: number) => {
    const reset = t === EOS && mistake !== "noReset" && mistake !== "shiftedNoReset";
    if (reset) {
      w = mistake === "eosInWindow" ? [...new Array(n - 1).fill(pad), EOS] : new Array(n).fill(pad);
    } else w = [...w.slice(1), t];
  };
  for (const t of tokens) {
    if (mistake === "shifted" || mistake === "shiftedNoReset") slide(t);
    out.push(mistake === "newestFirst" ? [...w].reverse() : [...w]);
    if (mistake !== "shifted" && mistake !== "shiftedNoReset") slide(t);
  }
  return out;
}

function windowHints(tokens: number[], n: number) {
  const shifted = "the windows are shifted by one: a context must end just BEFORE its target, never include it";
  return [
    { value: windowsPlain(tokens, n, "shifted"), hint: shifted },
    { value: windowsPlain(tokens, n, "shiftedNoReset"), hint: shifted },
    {
      value: windowsPlain(tokens, n, "padZero"),
      hint: "pad with <s> (BOS_ID = 1), not with 0 (which is <unk>)",
    },
    {
      value: windowsPlain(tokens, n, "newestFirst"),
      hint: "contexts are oldest word first: [5, 6] before the target 7, not [6, 5]",
    },
    {
      value: windowsPlain(tokens, n, "noReset"),
      hint: "after </s> (2) the window must restart from <s>: contexts do not cross sentences",
    },
    {
      value: windowsPlain(tokens, n, "eosInWindow"),
      hint: "reset the window to all <s> after </s>, without putting </s> itself into it",
    },
  ];
}

/** The whole answers ({ contexts, targets }) the usual mistakes give on a stream, each with its hint. */
function windowMistakes(tokens: number[], n: number) {
  return windowHints(tokens, n).map((m) => ({ value: { contexts: m.value, targets: tokens }, hint: m.hint }));
}

graded("3.1 makeWindows: one sentence, padded with <s> at its start", () => {
  const tokens = [5, 6, 7, EOS];
  const got = makeWindows(tokens, 2);
  // worked by hand: the contexts of 5, 6, 7 and </s>
  const expected = { contexts: [[BOS, BOS], [BOS, 5], [5, 6], [6, 7]], targets: [5, 6, 7, EOS] };
  expectEqual(got, expected, {
    what: "makeWindows([5, 6, 7, 2], 2)  (2 is </s>, 1 is <s>)",
    hint: "the context of token t is the blockSize tokens before it, padded on the left with <s> (1)",
    mistakes: windowMistakes(tokens, 2),
  });
});

graded("3.1 makeWindows: every token is a target, </s> included, in stream order", () => {
  const tokens = [8, 9, EOS, 10, EOS];
  const got = makeWindows(tokens, 1);
  expectEqual(got?.targets, tokens, {
    what: "makeWindows([8, 9, 2, 10, 2], 1).targets",
    hint: "one example per token: the targets are the tokens themselves, </s> (2) included",
  });
  expectEqual(got?.contexts?.length, tokens.length, {
    what: "the number of contexts of makeWindows([8, 9, 2, 10, 2], 1)",
    hint: "one context per target",
  });
});

graded("3.1 makeWindows: a new sentence starts after </s>", () => {
  const tokens = [5, 6, EOS, 7, 8, EOS];
  const got = makeWindows(tokens, 3);
  const expected = [
    [BOS, BOS, BOS],
    [BOS, BOS, 5],
    [BOS, 5, 6],
    [BOS, BOS, BOS],
    [BOS, BOS, 7],
    [BOS, 7, 8],
  ];
  expectEqual(got?.contexts, expected, {
    what: "makeWindows([5, 6, 2, 7, 8, 2], 3).contexts",
    hint: "each sentence's windows start from <s> <s> <s> again",
    mistakes: windowHints(tokens, 3),
  });
});

graded("3.1 makeWindows: long sentences keep the last blockSize words, oldest first", () => {
  const got = makeWindows([5, 6, 7, 8, 9], 3);
  expectEqual(got?.contexts?.[4], [6, 7, 8], {
    what: "the context of the target 9 in makeWindows([5, 6, 7, 8, 9], 3)",
    hint: "keep only the blockSize most recent words, in text order: drop the oldest as the window slides",
    mistakes: [
      { value: [8, 7, 6], hint: "contexts are oldest word first: [6, 7, 8], not [8, 7, 6]" },
      { value: [7, 8, 9], hint: "the context ends just BEFORE its target: it must not include 9 itself" },
    ],
  });
});

graded("3.1 makeWindows: rejects a blockSize that is not a positive integer", () => {
  for (const bad of [0, -1, 2.5]) {
    expectThrows(() => makeWindows([5, EOS], bad as number), RangeError, {
      what: `makeWindows([5, 2], ${bad})`,
      mentions: ["blockSize"],
      hint:
        "check the argument first: throw new RangeError(`blockSize must be a positive integer: blockSize=${blockSize}`)",
    });
  }
});

/** A random token stream: sentences of random lengths (some empty) from ids 0 and 3..9; maybe no final </s>. */
function randomStream(rng: Rng, sentences: number): number[] {
  const out: number[] = [];
  for (let s = 0; s < sentences; s++) {
    const len = rng.int(6);
    for (let i = 0; i < len; i++) out.push(rng.int(4) === 0 ? 0 : 3 + rng.int(7));
    if (s < sentences - 1 || rng.int(2) === 0) out.push(EOS);
  }
  return out;
}

graded("3.1 makeWindows: random streams and block sizes match a from-scratch reference", () => {
  const rng = new Rng(31);
  for (let t = 0; t < 60; t++) {
    const tokens = randomStream(rng, 1 + Math.floor(t / 10));
    const n = 1 + rng.int(Math.min(6, 1 + Math.floor(t / 8)));
    const got = makeWindows(tokens, n);
    expectEqual(got, { contexts: windowsPlain(tokens, n), targets: [...tokens] }, {
      what: `makeWindows(${JSON.stringify(tokens)}, ${n})  (2 is </s>, 1 is <s>, 0 is <unk>)`,
      hint: "one example per token: its context is the blockSize tokens before it in the same sentence, oldest " +
        "first, padded on the left with <s> (1); after each </s> (2) start again from all <s>; it must work for " +
        "every blockSize",
      mistakes: windowMistakes(tokens, n),
    });
  }
});

graded("3.1 makeWindows: empty streams, and NaN, Infinity or fractional block sizes", () => {
  expectEqual(makeWindows([], 3), { contexts: [], targets: [] }, {
    what: "makeWindows([], 3)",
    hint: "no tokens, no examples: { contexts: [], targets: [] }",
  });
  for (const bad of [NaN, Infinity, -Infinity, 2.5, 0.5, -3, undefined]) {
    expectThrows(() => makeWindows([5, EOS], bad as number), RangeError, {
      what: `makeWindows([5, 2], ${bad})`,
      mentions: [bad ?? "undefined"],
      hint: "blockSize < 1 is false for NaN, Infinity and 2.5: test !Number.isInteger(blockSize) || blockSize < 1 " +
        "and name the value: `blockSize must be a positive integer: blockSize=${blockSize}`",
    });
    expectThrows(() => makeWindows([5, EOS], bad as number), RangeError, {
      what: `makeWindows([5, 2], ${bad})`,
      mentions: ["blockSize"],
      hint: "name the argument in the message: `blockSize must be a positive integer: blockSize=${blockSize}`",
    });
  }
});

graded("3.1 makeWindows: fresh arrays, and the tokens are left alone", () => {
  const tokens = [5, 6, EOS, 7, EOS, EOS, 8];
  const got = makeWindows(tokens, 2);
  expectEqual(tokens, [5, 6, EOS, 7, EOS, EOS, 8], {
    what: "the tokens after makeWindows(tokens, 2)",
    hint: "only read the tokens: do not shift, splice or pad the caller's array",
  });
  if (got && Array.isArray(got.contexts) && Array.isArray(got.targets) && got.contexts.every(Array.isArray)) {
    got.targets[0] = 99;
    expectEqual(tokens[0], 5, {
      what: "tokens[0] after setting makeWindows(tokens, 2).targets[0] = 99",
      hint: "return a copy of the tokens as targets ([...tokens]), not the caller's array itself",
    });
    for (const row of got.contexts) row[0] = 99;
    expectEqual(tokens, [5, 6, EOS, 7, EOS, EOS, 8], {
      what: "the tokens after changing every returned context",
      hint: "a context must be a new array, not a view of the tokens",
    });
    const again = makeWindows([5, EOS, 6, EOS, 7], 2);
    if (Array.isArray(again?.contexts) && again.contexts.length === 5 && again.contexts.every(Array.isArray)) {
      const before = again.contexts.map((row) => [...row]);
      again.contexts[0][1] = 99;
      expectEqual(again.contexts.slice(1), before.slice(1), {
        what: "the other contexts of makeWindows([5, 2, 6, 2, 7], 2) after changing the first one",
        hint: "every context must be its own array: push a copy of the window ([...window]), and build a new " +
          "all-<s> window at each sentence start rather than reusing one shared padding array",
      });
    }
  }
});

// Property tests: any stream of ids (</s> often, so empty sentences and a missing final </s> come up; <unk> = 0;
// ids up to a real vocabulary's 200,000), the empty stream included, with any blockSize up to 30 (longer than most
// sentences); every blockSize that is not an integer >= 1, for any stream.

/** A token of a stream: </s>, <unk> (0) or a word id from 3 up to 200,000 (<s> only pads, it is never a token). */
const TOKEN = fc.oneof(
  { arbitrary: fc.constant(EOS), weight: 2 },
  { arbitrary: fc.constant(0), weight: 1 },
  { arbitrary: fc.integer({ min: 3, max: 9 }), weight: 4 },
  { arbitrary: fc.integer({ min: 3, max: 200_000 }), weight: 1 },
);
/** A stream of 0 to 24 tokens. */
const STREAM = arb.list(TOKEN, { maxLength: 24 });
/** Every blockSize that is not an integer >= 1: 0 (and -0), negatives, fractions, NaN, +-Infinity, undefined. */
const BAD_BLOCK: fc.Arbitrary<number | undefined> = fc.oneof(
  fc.integer({ min: -1000, max: 0 }),
  arb.finite({ min: -1e6, max: 1e6 }).filter((x) => !Number.isInteger(x)),
  fc.constantFrom(NaN, Infinity, -Infinity, undefined, -0, 0.5, 1.5, 1 - Number.EPSILON),
);

graded("3.1 makeWindows: any stream and blockSize, against a from-scratch reference, in fresh arrays", () => {
  forAll(fc.tuple(STREAM, fc.oneof(fc.integer({ min: 1, max: 4 }), fc.integer({ min: 5, max: 30 }))), ([tokens, n]) => {
    const given = [...tokens];
    const got = makeWindows(given, n);
    expectEqual(got, { contexts: windowsPlain(tokens, n), targets: [...tokens] }, {
      what: `makeWindows(${JSON.stringify(tokens)}, ${n})  (2 is </s>, 1 is <s>, 0 is <unk>)`,
      hint: "one example per token, </s> included: its context is the blockSize tokens before it in the same " +
        "sentence, oldest first, padded on the left with <s> (1); after each </s> (2) start again from all <s>; an " +
        "empty stream gives no windows",
      mistakes: windowMistakes(tokens, n),
    });
    const rows = got.contexts;
    expectEqual(
      {
        tokens: given,
        targetsAreTokens: got.targets === given,
        sharedContexts: new Set(rows).size !== rows.length || rows.some((r) => r === given),
      },
      { tokens, targetsAreTokens: false, sharedContexts: false },
      {
        what: `the arrays of makeWindows(${JSON.stringify(tokens)}, ${n})`,
        hint: "only read the tokens; return a new targets array ([...tokens]) and a new array for every context " +
          "(push a copy of the window, and build a new all-<s> window at each sentence start)",
      },
    );
  }, { show: ([tokens, blockSize]) => ({ tokens, blockSize }) });
});

graded("3.1 makeWindows: any blockSize that is not an integer >= 1 is a RangeError naming it and its value", () => {
  forAll(fc.tuple(STREAM, BAD_BLOCK), ([tokens, bad]) => {
    expectThrows(() => makeWindows(tokens, bad as number), RangeError, {
      what: `makeWindows(${JSON.stringify(tokens)}, ${bad})`,
      mentions: ["blockSize", bad ?? "undefined"],
      hint: "check blockSize first, for every stream (the empty one too), with no default: " +
        "if (!Number.isInteger(blockSize) || blockSize < 1) throw a RangeError naming blockSize and its value",
    });
  }, { show: ([tokens, blockSize]) => ({ tokens, blockSize }) });
});

// ---------------------------------------------------------------- 3.2 forward pass
// Spec: softmax over axis 1 of b + tanh(d + x H) U (+ x W when W is given), x the concatenated embeddings of the
// context, oldest first; any B, n, m, h, V (shape (B, V)); every row sums to 1; per-row stable softmax (rows
// whose logits are near +1000 beside rows near -1000); exactly one tensor left (the result); the inputs are
// neither disposed nor changed; W left out or undefined means no direct connections.

interface Plain {
  C: number[][];
  H: number[][];
  d: number[];
  U: number[][];
  b: number[];
  W?: number[][];
}

/** The forward pass from scratch, with switches that reproduce the usual mistakes. */
function forwardPlain(
  p: Plain,
  contexts: number[][],
  mistake: "none" | "newestFirst" | "noTanh" | "noDirect" | "axis0" | "logits" = "none",
): number[][] {
  const logits = contexts.map((ctx) => {
    const order = mistake === "newestFirst" ? [...ctx].reverse() : ctx;
    const x = order.flatMap((id) => p.C[id]);
    const a = p.d.map((dj, j) => {
      const pre = dj + x.reduce((s, xi, i) => s + xi * p.H[i][j], 0);
      return mistake === "noTanh" ? pre : Math.tanh(pre);
    });
    return p.b.map((bk, k) => {
      let y = bk + a.reduce((s, aj, j) => s + aj * p.U[j][k], 0);
      if (p.W && mistake !== "noDirect") y += x.reduce((s, xi, i) => s + xi * p.W![i][k], 0);
      return y;
    });
  });
  if (mistake === "logits") return logits;
  if (mistake === "axis0") {
    const V = logits[0].length;
    const cols = Array.from({ length: V }, (_, k) => softmaxPlain(logits.map((r) => r[k])));
    return logits.map((r, bi) => r.map((_, k) => cols[k][bi]));
  }
  return logits.map(softmaxPlain);
}

/** The largest entry, with a loop (Math.max(...z) overflows the call stack on a 200,000-word vocabulary). */
function maxOf(z: number[]): number {
  let m = -Infinity;
  for (const v of z) if (v > m) m = v;
  return m;
}

function softmaxPlain(z: number[]): number[] {
  const m = maxOf(z);
  const e = z.map((v) => Math.exp(v - m));
  const s = e.reduce((a, b) => a + b, 0);
  return e.map((v) => v / s);
}

function toParams(p: Plain): FixedWindowParams {
  return {
    C: tf.tensor2d(p.C),
    H: tf.tensor2d(p.H),
    d: tf.tensor1d(p.d),
    U: tf.tensor2d(p.U),
    b: tf.tensor1d(p.b),
    ...(p.W ? { W: tf.tensor2d(p.W) } : {}),
  };
}

// V = 4 words, m = 2, n = 2 context words, h = 3 hidden units. H is far from
// symmetric, so swapping the two context words changes the answer, and some
// pre-activations exceed 1, so forgetting tanh changes it too.
const SMALL: Plain = {
  C: [[0.1, -0.2], [0.5, 0.3], [-0.4, 0.8], [1.0, -0.6]],
  H: [[0.9, -0.3, 0.2], [0.1, 0.7, -0.5], [-1.2, 0.4, 0.6], [0.3, -0.8, 1.1]],
  d: [0.5, -0.4, 1.5],
  U: [[1.0, -0.5, 0.3, 0.2], [-0.7, 0.9, 0.1, -0.3], [0.4, 0.2, -1.1, 0.8]],
  b: [0.1, 0.0, -0.2, 0.3],
};

const FORWARD_HINTS = (p: Plain, ctx: number[][]) => [
  {
    value: forwardPlain(p, ctx, "newestFirst"),
    hint: "concatenate the context embeddings OLDEST word first: C[ctx[0]] then C[ctx[1]] ...",
  },
  {
    value: forwardPlain(p, ctx, "axis0"),
    hint: "take the softmax over the vocabulary (axis 1, each row), not over the batch (axis 0)",
  },
  {
    value: forwardPlain(p, ctx, "noTanh"),
    hint: "apply tanh to the hidden layer: a = tanh(x H + d)",
  },
  {
    value: forwardPlain(p, ctx, "logits"),
    hint: "return probabilities: apply softmax to the logits",
  },
  ...(p.W
    ? [{
      value: forwardPlain(p, ctx, "noDirect"),
      hint: "add the direct connections x W to the logits when params.W is given",
    }]
    : []),
];

graded("3.2 fixedWindowForward: matches a hand computation (no direct connections)", () => {
  const ctx = [[1, 3], [2, 0]];
  const params = toParams(SMALL);
  const got = fixedWindowForward(params, tf.tensor2d(ctx, [2, 2], "int32"));
  const expected = forwardPlain(SMALL, ctx);
  expectShape(got, [2, 4], {
    what: "fixedWindowForward on 2 contexts with V = 4",
    hint: "the output is (B, V)",
  });
  expectClose(got, expected, {
    what: "fixedWindowForward(small params, contexts [[1, 3], [2, 0]])",
    input: { contexts: ctx, ...SMALL },
    hint: "softmax(b + tanh(d + x H) U) with x = [C[oldest], ..., C[newest]]",
    mistakes: FORWARD_HINTS(SMALL, ctx),
  });
});

graded("3.2 fixedWindowForward: the context order matters (oldest word first)", () => {
  const ctx = [[3, 1], [1, 3]];
  const got = fixedWindowForward(toParams(SMALL), tf.tensor2d(ctx, [2, 2], "int32"));
  expectClose(got, forwardPlain(SMALL, ctx), {
    what: "fixedWindowForward on the contexts [3, 1] and [1, 3]",
    hint: "the concatenation follows the context's order, oldest word first",
    mistakes: FORWARD_HINTS(SMALL, ctx),
  });
});

graded("3.2 fixedWindowForward: each row is a distribution over the vocabulary", () => {
  const ctx = [[0, 1], [2, 3], [3, 3]]; // B = 3, V = 4: rows and columns differ
  const got = fixedWindowForward(toParams(SMALL), tf.tensor2d(ctx, [3, 2], "int32"));
  expectShape(got, [3, 4], {
    what: "fixedWindowForward on 3 contexts with V = 4",
    hint: "the output is (B, V)",
  });
  const sums = got.sum(1);
  expectClose(sums, [1, 1, 1], {
    what: "the row sums of fixedWindowForward's output",
    hint: "apply the softmax along axis 1 so that each row sums to 1",
    mistakes: FORWARD_HINTS(SMALL, ctx).map((m) => ({
      value: (m.value as number[][]).map((r) => r.reduce((a, b) => a + b, 0)),
      hint: m.hint,
    })),
  });
});

graded("3.2 fixedWindowForward: adds the direct connections W when given", () => {
  const withW: Plain = {
    ...SMALL,
    W: [[0.5, -0.5, 0, 1], [0.2, 0.3, -0.7, 0], [-0.6, 0, 0.4, 0.9], [0, 1.2, -0.3, -0.4]],
  };
  const ctx = [[1, 2], [3, 0]];
  const got = fixedWindowForward(toParams(withW), tf.tensor2d(ctx, [2, 2], "int32"));
  expectClose(got, forwardPlain(withW, ctx), {
    what: "fixedWindowForward with direct connections W (4, 4)",
    input: { contexts: ctx, W: withW.W },
    hint: "logits = b + x W + tanh(d + x H) U",
    mistakes: FORWARD_HINTS(withW, ctx),
  });
});

graded("3.2 fixedWindowForward: leaves no tensors behind", () => {
  const params = toParams(SMALL);
  const ctx = tf.tensor2d([[1, 2]], [1, 2], "int32");
  const before = tf.memory().numTensors;
  const out = fixedWindowForward(params, ctx);
  const created = tf.memory().numTensors - before;
  out.dispose();
  expectEqual(created, 1, {
    what: "tensors left by one fixedWindowForward call (only the result should remain)",
    hint: "wrap the computation in tf.tidy(() => ...) so that intermediates are freed",
  });
});

/** Random parameters with the given sizes (values drawn from N(0, scale)). */
function randomPlain(rng: Rng, V: number, m: number, n: number, h: number, withW: boolean, scale = 1): Plain {
  const mat = (r: number, c: number) =>
    Array.from({ length: r }, () => Array.from({ length: c }, () => rng.normal(0, scale)));
  return {
    C: mat(V, m),
    H: mat(n * m, h),
    d: mat(1, h)[0],
    U: mat(h, V),
    b: mat(1, V)[0],
    ...(withW ? { W: mat(n * m, V) } : {}),
  };
}

graded("3.2 fixedWindowForward: random sizes and weights match a from-scratch forward pass", () => {
  const rng = new Rng(32);
  for (let t = 0; t < 12; t++) {
    const V = 2 + rng.int(6), m = 1 + rng.int(4), n = 1 + rng.int(4), h = 1 + rng.int(5), B = 1 + rng.int(5);
    const plain = randomPlain(rng, V, m, n, h, t % 2 === 1, 1.5);
    const ctx = Array.from({ length: B }, () => Array.from({ length: n }, () => rng.int(V)));
    const params = toParams(plain);
    const contexts = tf.tensor2d(ctx, [B, n], "int32");
    const got = fixedWindowForward(params, contexts);
    try {
      expectClose(got, forwardPlain(plain, ctx), {
        what: `fixedWindowForward with V = ${V}, m = ${m}, n = ${n}, h = ${h}, B = ${B}` +
          (plain.W ? ", with direct connections W" : ""),
        input: { contexts: ctx, ...plain },
        hint: "softmax(b + tanh(d + x H) U (+ x W)) along axis 1, x = the n embeddings concatenated oldest " +
          "first: read B, n and m from the tensors' shapes, never assume n = 2",
        mistakes: FORWARD_HINTS(plain, ctx),
      });
    } finally {
      tf.dispose([got, contexts, ...Object.values(params)]);
    }
  }
});

graded("3.2 fixedWindowForward: rows near +1000 and near -1000 (each row's own max)", () => {
  // tanh saturates to +-1, so the logits of word 0's row are about +-1000 and those of word 1's row the opposite.
  const plain: Plain = {
    C: [[3], [-3]],
    H: [[4]],
    d: [0],
    U: [[1000, 1001, 999]],
    b: [0, 0, 0],
  };
  const ctx = [[0], [1]];
  const params = toParams(plain), contexts = tf.tensor2d(ctx, [2, 1], "int32");
  const got = fixedWindowForward(params, contexts);
  try {
    expectClose(got, forwardPlain(plain, ctx), {
      what: "fixedWindowForward where row 0's logits are about [1000, 1001, 999] and row 1's [-1000, -1001, -999]",
      input: plain,
      hint: "exp(1000) overflows and exp(-1000) underflows: subtract EACH ROW's own maximum before exp " +
        "(tf.softmax does), not one maximum over the whole batch",
    });
  } finally {
    tf.dispose([got, contexts, ...Object.values(params)]);
  }
});

graded("3.2 fixedWindowForward: a vocabulary of 200,000 words", () => {
  // GPT-4o's vocabulary size, m = 2, h = 2, n = 2, B = 2: output weights of magnitudes 1e-7 ... 1e2 give logits
  // that differ by orders of magnitude. Any way of computing the softmax works (tensor ops, or loops over rows
  // whose max is found with a loop): Math.max(...row) overflows the call stack on rows this long.
  const V = 200_000, m = 2, h = 2;
  const rng = new Rng(3200);
  // Typed arrays with cheap deterministic fills, so building the example costs little.
  const C = Float32Array.from({ length: V * m }, (_, i) => Math.sin(i * 0.37));
  const H = [[0.9, -0.3], [0.1, 0.7], [-1.2, 0.4], [0.3, -0.8]], d = [0.1, -0.2];
  const U = Float32Array.from({ length: h * V }, () => (rng.next() < 0.5 ? -1 : 1) * 10 ** (-7 + 9 * rng.next()));
  const b = Float32Array.from({ length: V }, (_, k) => Math.cos(k * 0.11));
  const ctx = [[7, 199_999], [123_456, 1]];
  // The reference from scratch, in float64 from the float32 weights.
  const expected = new Float64Array(2 * V);
  ctx.forEach((row, r) => {
    const x = row.flatMap((id) => [C[id * m], C[id * m + 1]]);
    const a = d.map((dj, j) => Math.tanh(dj + x.reduce((acc, xi, i) => acc + xi * H[i][j], 0)));
    let top = -Infinity;
    for (let k = 0; k < V; k++) {
      const y = b[k] + a[0] * U[k] + a[1] * U[V + k];
      expected[r * V + k] = y;
      if (y > top) top = y;
    }
    let total = 0;
    for (let k = 0; k < V; k++) total += expected[r * V + k] = Math.exp(expected[r * V + k] - top);
    for (let k = 0; k < V; k++) expected[r * V + k] /= total;
  });
  const params: FixedWindowParams = {
    C: tf.tensor2d(C, [V, m]),
    H: tf.tensor2d(H),
    d: tf.tensor1d(d),
    U: tf.tensor2d(U, [h, V]),
    b: tf.tensor1d(b),
  };
  const contexts = tf.tensor2d(ctx, [2, 2], "int32");
  const want = tf.tensor2d(Float32Array.from(expected), [2, V]);
  try {
    const got = fixedWindowForward(params, contexts);
    try {
      expectShape(got, [2, V], { what: "fixedWindowForward with V = 200000", hint: "the result is (B, V)" });
      expectClose(got, want, {
        what: "fixedWindowForward on 2 contexts with V = 200000, m = 2, h = 2 (logits of very different sizes)",
        hint: "softmax over each row of 200,000 logits, stable: tf.softmax(logits, 1), or a loop over the rows " +
          "that finds each max with a loop (Math.max(...row) overflows the call stack)",
        atol: 1e-6,
        rtol: 1e-3,
      });
    } finally {
      tf.dispose(got);
    }
  } finally {
    tf.dispose([contexts, want, ...Object.values(params)]);
  }
});

graded("3.2 fixedWindowForward: no tensors left behind with W either, inputs kept alive", () => {
  const rng = new Rng(320);
  const plain = randomPlain(rng, 5, 3, 3, 4, true);
  const params = toParams(plain);
  const contexts = tf.tensor2d([[1, 2, 3], [4, 0, 1]], [2, 3], "int32");
  const before = tf.memory().numTensors;
  const out = fixedWindowForward(params, contexts);
  const created = tf.memory().numTensors - before;
  out?.dispose?.();
  const disposed = Object.entries(params).filter(([, v]) => v.isDisposed).map(([k]) => k);
  if (contexts.isDisposed) disposed.push("contexts");
  tf.dispose([contexts, ...Object.values(params)]);
  expectEqual(created, 1, {
    what: "tensors left by one fixedWindowForward call with direct connections (only the result should remain)",
    hint: "do all the work, the x W term included, inside one tf.tidy(() => ...) and return the result from it",
  });
  expectEqual(disposed, [], {
    what: "the input tensors disposed by fixedWindowForward (or by disposing its result)",
    hint: "never dispose the caller's tensors (params, contexts), and return a new tensor, not one of them",
  });
});

// Property test: any sizes (V 2 to 7, m 1 to 3, n 1 to 4, h 1 to 4, B 1 to 4), float32 weights of very different
// scales (output weights up to 300, so that rows' logits lie near +1000 and near -1000 in one batch), W given, left
// out or present but undefined; the result against the float64 forward pass of the same float32 weights, with a
// tolerance of float32 rounding at the logits' size; one tensor left, the inputs alive.

/** A drawn forward-pass case: the sizes, how W is passed, the weights' scales and the seed of their values. */
const FORWARD_CASES = fc.record({
  V: fc.integer({ min: 2, max: 7 }),
  m: fc.integer({ min: 1, max: 3 }),
  n: fc.integer({ min: 1, max: 4 }),
  h: fc.integer({ min: 1, max: 4 }),
  B: fc.integer({ min: 1, max: 4 }),
  w: fc.constantFrom("given", "left out", "undefined"),
  embedScale: fc.constantFrom(0.1, 1, 3),
  outScale: fc.constantFrom(0.5, 3, 300),
  seed: fc.nat(),
});
type ForwardCase = typeof FORWARD_CASES extends fc.Arbitrary<infer T> ? T : never;

/** The weights (rounded to float32, as the tensors hold them) and contexts of a drawn case. */
function forwardInputs(c: ForwardCase): { plain: Plain; ctx: number[][] } {
  const rng = new Rng(c.seed);
  const mat = (r: number, k: number, scale: number) =>
    Array.from({ length: r }, () => Array.from({ length: k }, () => Math.fround(rng.normal(0, scale))));
  const plain: Plain = {
    C: mat(c.V, c.m, c.embedScale),
    H: mat(c.n * c.m, c.h, 1),
    d: mat(1, c.h, 1)[0],
    U: mat(c.h, c.V, c.outScale),
    b: mat(1, c.V, 1)[0],
    ...(c.w === "given" ? { W: mat(c.n * c.m, c.V, c.outScale / 10) } : {}),
  };
  const ctx = Array.from({ length: c.B }, () => Array.from({ length: c.n }, () => rng.int(c.V)));
  return { plain, ctx };
}

graded("3.2 fixedWindowForward: any sizes and weights, W left out or undefined, against a from-scratch pass", () => {
  forAll(FORWARD_CASES, (c) => {
    const { plain, ctx } = forwardInputs(c);
    const params = toParams(plain);
    if (c.w === "undefined") params.W = undefined;
    const contexts = tf.tensor2d(ctx, [c.B, c.n], "int32");
    // float32 rounds each logit to about 6e-8 of the sizes added up in it; a probability moves by twice that.
    let size = 0;
    for (const row of forwardPlain(plain, ctx, "logits")) for (const y of row) size = Math.max(size, Math.abs(y));
    const tol = Math.max(1e-5, 6e-8 * 4 * (size + c.h + c.n * c.m));
    const before = tf.memory().numTensors;
    try {
      const got = fixedWindowForward(params, contexts);
      const created = tf.memory().numTensors - before;
      try {
        expectClose(got, forwardPlain(plain, ctx), {
          what: `fixedWindowForward with V = ${c.V}, m = ${c.m}, n = ${c.n}, h = ${c.h}, B = ${c.B}, W ${c.w}`,
          rtol: tol,
          atol: tol,
          hint: "softmax(b + tanh(d + x H) U (+ x W when W is given)) along axis 1, stable per row (each row's own " +
            "max), x = the n embeddings concatenated oldest first; read B, n and m from the shapes; W: undefined " +
            "is the same as no W (test params.W, not 'W' in params)",
          mistakes: FORWARD_HINTS(plain, ctx),
        });
      } finally {
        tf.dispose(got);
      }
      const disposed = [...Object.entries(params).filter(([, v]) => v?.isDisposed).map(([k]) => k)];
      if (contexts.isDisposed) disposed.push("contexts");
      expectEqual({ created, disposed }, { created: 1, disposed: [] }, {
        what: "tensors left by fixedWindowForward, and the inputs it disposed",
        hint: "do all the work inside one tf.tidy(() => ...) and return the result from it; never dispose the " +
          "caller's params or contexts",
      });
    } finally {
      tf.dispose([contexts, ...Object.values(params).filter((t): t is tf.Tensor => t instanceof tf.Tensor)]);
    }
  }, { show: (c) => ({ ...c, ...forwardInputs(c) }) });
});

// ---------------------------------------------------------------- 3.3 batch NLL
// Spec: -(1/B) sum_b ln softmax(logits_b)[targets_b] in nats, any B >= 1 and V >= 2, a scalar (shape []); the
// target's column (not the argmax); stable per row: rows near +1000 beside rows near -1000, and a target 150
// below its row's max (ln softmax = -150: log(softmax) underflows to -Infinity in float32); one tensor left; the
// inputs are not disposed.

function nllPlain(logits: number[][], targets: number[]): number[] {
  return logits.map((row, i) => {
    const m = maxOf(row);
    const lse = m + Math.log(row.reduce((s, v) => s + Math.exp(v - m), 0));
    return lse - row[targets[i]];
  });
}

const NLL_HINTS = (logits: number[][], targets: number[]) => {
  const each = nllPlain(logits, targets);
  const mean = each.reduce((a, b) => a + b, 0) / each.length;
  return [
    { value: each.reduce((a, b) => a + b, 0), hint: "return the MEAN over the batch, not the sum" },
    {
      value: -mean,
      hint: "the negative log-likelihood is MINUS the mean log-probability: it is >= 0",
    },
    { value: mean / Math.LN2, hint: "use natural logarithms (nats), not log2" },
  ];
};

graded("3.3 batchNll: matches a hand computation", () => {
  // row 0: ln softmax([1, 2, 3])[2] = 3 - ln(e + e^2 + e^3); row 1: ln(1/3)
  const logits = [[1, 2, 3], [1, 1, 1]], targets = [2, 0];
  const got = batchNll(tf.tensor2d(logits), tf.tensor1d(targets, "int32"));
  expectShape(got, [], {
    what: "batchNll's result",
    hint: "return a scalar (shape []): reduce with mean()",
  });
  const each = nllPlain(logits, targets);
  expectClose(got, (each[0] + each[1]) / 2, {
    what: "batchNll([[1, 2, 3], [1, 1, 1]], [2, 0])",
    hint: "-(1/B) Σ_b ln softmax(logits_b)[targets_b]",
    mistakes: NLL_HINTS(logits, targets),
  });
});

graded("3.3 batchNll: a mean, so repeating the batch does not change it", () => {
  const logits = [[0.5, -1, 2, 0], [3, 0, 0, 1], [0, 0, 0, 0], [-2, 1, 1, 4]],
    targets = [1, 0, 3, 3];
  const got = batchNll(tf.tensor2d(logits), tf.tensor1d(targets, "int32"));
  const each = nllPlain(logits, targets);
  expectClose(got, each.reduce((a, b) => a + b, 0) / 4, {
    what: "batchNll on a batch of 4",
    input: { logits, targets },
    hint: "average the per-example negative log-probabilities",
    mistakes: NLL_HINTS(logits, targets),
  });
});

graded("3.3 batchNll: reads the target's column, not the most likely one", () => {
  const logits = [[5, 0, 0], [0, 0, 5]], targets = [1, 1];
  const got = batchNll(tf.tensor2d(logits), tf.tensor1d(targets, "int32"));
  const each = nllPlain(logits, targets);
  expectClose(got, (each[0] + each[1]) / 2, {
    what: "batchNll([[5, 0, 0], [0, 0, 5]], [1, 1])",
    hint: "pick column targets[b] of row b (tf.oneHot, or tf.gather row by row)",
    mistakes: [
      ...NLL_HINTS(logits, targets),
      {
        value: nllPlain(logits, [0, 2]).reduce((a, b) => a + b, 0) / 2,
        hint: "pick column targets[b] of each row, not the row's largest logit",
      },
    ],
  });
});

graded("3.3 batchNll: large logits do not overflow", () => {
  // ln softmax([1000, 0])[1] = -1000 (to float precision); ln softmax([0, 1000])[1] = 0
  const got = batchNll(tf.tensor2d([[1000, 0], [0, 1000]]), tf.tensor1d([1, 1], "int32"));
  expectClose(got, 500, {
    what: "batchNll([[1000, 0], [0, 1000]], [1, 1])",
    atol: 1e-3,
    hint: "exp(1000) is Infinity: use tf.logSoftmax, or subtract each row's max before exp",
    mistakes: [
      { value: 1000, hint: "return the MEAN over the batch, not the sum" },
      { value: -500, hint: "the negative log-likelihood is MINUS the mean log-probability: it is >= 0" },
      { value: 500 / Math.LN2, hint: "use natural logarithms (nats), not log2" },
    ],
  });
});

graded("3.3 batchNll: leaves no tensors behind", () => {
  const logits = tf.tensor2d([[1, 2], [3, 4]]), targets = tf.tensor1d([0, 1], "int32");
  const before = tf.memory().numTensors;
  const out = batchNll(logits, targets);
  const created = tf.memory().numTensors - before;
  out.dispose();
  expectEqual(created, 1, {
    what: "tensors left by one batchNll call (only the result should remain)",
    hint: "wrap the computation in tf.tidy(() => ...)",
  });
});

graded("3.3 batchNll: random batches match a from-scratch mean negative log-likelihood", () => {
  const rng = new Rng(33);
  for (let t = 0; t < 12; t++) {
    const B = 1 + rng.int(6), V = 2 + rng.int(7);
    const logits = Array.from({ length: B }, () => Array.from({ length: V }, () => rng.normal(0, 3)));
    const targets = Array.from({ length: B }, () => rng.int(V));
    const lt = tf.tensor2d(logits), tt = tf.tensor1d(targets, "int32");
    const got = batchNll(lt, tt);
    const each = nllPlain(logits, targets);
    const argmax = logits.map((row) => row.indexOf(maxOf(row)));
    try {
      expectClose(got, each.reduce((a, b) => a + b, 0) / B, {
        what: `batchNll on a batch of ${B} rows of ${V} logits`,
        input: { logits, targets },
        hint: "-(1/B) sum over the rows of ln softmax(row)[target], with natural logarithms",
        mistakes: [
          ...NLL_HINTS(logits, targets),
          {
            value: nllPlain(logits, argmax).reduce((a, b) => a + b, 0) / B,
            hint: "pick column targets[b] of each row, not the row's largest logit",
          },
        ],
        atol: 1e-4,
      });
    } finally {
      tf.dispose([got, lt, tt]);
    }
  }
});

graded("3.3 batchNll: rows near +1000 beside rows near -1000, and a target far below the max", () => {
  const logits = [[1000, 1001, 999], [-1000, -999, -1001], [0, 150, 0]], targets = [0, 2, 0];
  const lt = tf.tensor2d(logits), tt = tf.tensor1d(targets, "int32");
  const got = batchNll(lt, tt);
  const each = nllPlain(logits, targets);
  try {
    expectClose(got, (each[0] + each[1] + each[2]) / 3, {
      what: "batchNll([[1000, 1001, 999], [-1000, -999, -1001], [0, 150, 0]], [0, 2, 0])",
      atol: 1e-3,
      hint: "use tf.logSoftmax (or x - max - log(sum(exp(x - max))) with EACH ROW's own max): one max over the " +
        "whole batch underflows the rows near -1000, and log(softmax(x)) gives log(0) = -Infinity for a target " +
        "150 below its row's max",
    });
  } finally {
    tf.dispose([got, lt, tt]);
  }
});

graded("3.3 batchNll: a vocabulary of 200,000, logits of very different sizes", () => {
  // Two rows of GPT-4o's vocabulary size, magnitudes 1e-7 ... 1e3 of both signs; targets both near and far below
  // each row's max. Loops over arraySync() rows are fine if each max is found with a loop, not Math.max(...row).
  const rng = new Rng(3300);
  const V = 200_000;
  const flat = Float32Array.from({ length: 2 * V }, () => (rng.next() < 0.5 ? -1 : 1) * 10 ** (-7 + 10 * rng.next()));
  flat[5] = 1000;
  flat[V + 199_998] = -2;
  const targets = [199_999, 5];
  const rows = [Array.from(flat.subarray(0, V)), Array.from(flat.subarray(V))];
  const each = nllPlain(rows, targets);
  const lt = tf.tensor2d(flat, [2, V]), tt = tf.tensor1d(targets, "int32");
  try {
    const got = batchNll(lt, tt);
    try {
      expectClose(got, (each[0] + each[1]) / 2, {
        what: "batchNll on 2 rows of 200,000 logits with magnitudes from 1e-7 to 1e3",
        hint: "a stable log-softmax of each row (tf.logSoftmax, or each row's max found with a loop: " +
          "Math.max(...row) overflows the call stack on 200,000 entries), the target's entry, minus the mean",
        mistakes: NLL_HINTS(rows, targets),
        rtol: 1e-4,
        atol: 1e-2,
      });
    } finally {
      tf.dispose(got);
    }
  } finally {
    tf.dispose([lt, tt]);
  }
});

graded("3.3 batchNll: one row, no tensors left behind, inputs kept alive", () => {
  const lt = tf.tensor2d([[2, -1, 0.5, 0]]), tt = tf.tensor1d([3], "int32");
  const before = tf.memory().numTensors;
  const out = batchNll(lt, tt);
  const created = tf.memory().numTensors - before;
  const value = out instanceof tf.Tensor && !out.isDisposed ? out.dataSync()[0] : out;
  out?.dispose?.();
  const alive = [lt.isDisposed ? "logits disposed" : "", tt.isDisposed ? "targets disposed" : ""].filter((x) => x);
  tf.dispose([lt, tt]);
  expectClose(value, nllPlain([[2, -1, 0.5, 0]], [3])[0], {
    what: "batchNll([[2, -1, 0.5, 0]], [3]) (a batch of one)",
    hint: "with B = 1 the mean is the single row's negative log-probability",
  });
  expectEqual(created, 1, {
    what: "tensors left by one batchNll call (only the result should remain)",
    hint: "wrap the whole computation in tf.tidy(() => ...) and return the scalar from it",
  });
  expectEqual(alive, [], {
    what: "the input tensors after batchNll",
    hint: "never dispose the caller's logits or targets",
  });
});

// Property test: batches of 1 to 5 rows of 2 to 8 float32 logits, each row around its own offset (0, +-1000, near
// float32's exp limits, anything up to +-1e5; spreads from near-ties to 1e5), any targets: against the float64 mean
// negative log-likelihood of the same float32 logits, with a tolerance of float32 rounding at the logits' size;
// one tensor left, the inputs alive.

/** A batch: rows drawn on their own by arb.logits (float32, kept within +-1e5), and a target per row. */
const NLL_CASES = fc.tuple(
  arb.matrix((cols) => arb.logits({ minLength: cols, maxLength: cols, float32: true }), {
    minRows: 1,
    maxRows: 5,
    minCols: 2,
    maxCols: 8,
  }),
  fc.array(fc.nat(), { minLength: 5, maxLength: 5 }),
).map(([m, picks]) => {
  const logits = m.values.map((row) => row.map((x) => Math.fround(Math.max(-1e5, Math.min(1e5, x)))));
  return { logits, targets: logits.map((row, i) => picks[i] % row.length) };
});

graded("3.3 batchNll: any batch, rows far apart and targets far below the max, against a from-scratch loss", () => {
  forAll(NLL_CASES, ({ logits, targets }) => {
    const B = logits.length;
    const lt = tf.tensor2d(logits), tt = tf.tensor1d(targets, "int32");
    const each = nllPlain(logits, targets);
    const argmax = logits.map((row) => row.indexOf(maxOf(row)));
    // float32 rounds x - max (and max + log(sum)) to about 6e-8 of the logits' size.
    const size = maxOf(logits.flat().map(Math.abs));
    const before = tf.memory().numTensors;
    try {
      const got = batchNll(lt, tt);
      const created = tf.memory().numTensors - before;
      try {
        expectShape(got, [], { what: "batchNll's result", hint: "return a scalar (shape []): reduce with mean()" });
        expectClose(got, each.reduce((a, b) => a + b, 0) / B, {
          what: `batchNll on a batch of ${B} rows of ${logits[0].length} logits`,
          atol: 1e-5 + 3e-7 * size,
          rtol: 1e-5,
          hint: "-(1/B) sum over the rows of ln softmax(row)[target] in nats: tf.logSoftmax(logits, 1) (or each " +
            "row's own max subtracted, staying in logs: log(softmax) is -Infinity for a target more than 103 below " +
            "its row's max in float32), the target's column, minus the mean",
          mistakes: [
            ...NLL_HINTS(logits, targets),
            {
              value: () => nllPlain(logits, argmax).reduce((a, b) => a + b, 0) / B,
              hint: "pick column targets[b] of each row, not the row's largest logit",
            },
          ],
        });
      } finally {
        tf.dispose(got);
      }
      const disposed = [lt.isDisposed ? "logits" : "", tt.isDisposed ? "targets" : ""].filter((x) => x);
      expectEqual({ created, disposed }, { created: 1, disposed: [] }, {
        what: "tensors left by batchNll, and the inputs it disposed",
        hint: "wrap the whole computation, the one-hot mask included, in tf.tidy(() => ...) and return the " +
          "scalar from it; never dispose the caller's logits or targets",
      });
    } finally {
      tf.dispose([lt, tt]);
    }
  });
});

// ---------------------------------------------------------------- 3.4 mixing
// Spec: λ p_i + (1 - λ) q_i for every i, any length (0 included), λ in [0, 1] with both ends allowed; λ outside
// [0, 1], NaN or +-Infinity is a RangeError naming lambda and its value; different lengths are a RangeError naming
// both; p and q are not modified and the result is a new array (never p or q itself, even for λ = 0 or 1).

graded("3.4 mixDistributions: λ weighs the first distribution", () => {
  // 0.25 * [0.2, 0.8] + 0.75 * [0.6, 0.4] = [0.05 + 0.45, 0.2 + 0.3] = [0.5, 0.5]
  const got = mixDistributions([0.2, 0.8], [0.6, 0.4], 0.25);
  expectClose(got, [0.5, 0.5], {
    what: "mixDistributions([0.2, 0.8], [0.6, 0.4], 0.25)",
    hint: "compute λ p_i + (1 - λ) q_i for each word i",
    mistakes: [
      {
        value: [0.3, 0.7],
        hint: "lambda is the weight of p (the first argument): λ p + (1 - λ) q",
      },
      { value: [0.2, 0.3], hint: "the weights must be λ and 1 - λ, so that the mixture sums to 1" },
    ],
  });
});

graded("3.4 mixDistributions: an arithmetic mixture that sums to one", () => {
  const p = [0.5, 0.25, 0.125, 0.125], q = [0.1, 0.2, 0.3, 0.4];
  const got = mixDistributions(p, q, 0.6);
  const expected = p.map((pi, i) => 0.6 * pi + 0.4 * q[i]);
  const geometric = p.map((pi, i) => pi ** 0.6 * q[i] ** 0.4);
  const z = geometric.reduce((a, b) => a + b, 0);
  expectClose(got, expected, {
    what: "mixDistributions([0.5, 0.25, 0.125, 0.125], [0.1, 0.2, 0.3, 0.4], 0.6)",
    hint: "λ p_i + (1 - λ) q_i",
    mistakes: [
      {
        value: geometric,
        hint: "mix the probabilities, not their logarithms: λ p + (1 - λ) q, not p^λ q^(1-λ)",
      },
      {
        value: geometric.map((g) => g / z),
        hint: "mix the probabilities, not their logarithms: λ p + (1 - λ) q",
      },
    ],
  });
  expectClose(mixDistributions(p, q, 1), p, {
    what: "mixDistributions(p, q, 1) is p",
    hint: "λ = 1 keeps only the first distribution: getting q means λ weighs the second one (weights swapped)",
  });
  expectClose(mixDistributions(p, q, 0), q, {
    what: "mixDistributions(p, q, 0) is q",
    hint: "λ = 0 keeps only the second distribution: getting p means the weights are swapped, anything else " +
      "that the two weights do not add up to 1",
  });
});

graded("3.4 mixDistributions: a new array on every call, at every size (empty and one word too)", () => {
  const rng = new Rng(3404);
  for (const n of [0, 1, 2, 5]) {
    for (const lambda of [0, 1, 0.5, 0.3]) {
      const p = Array.from({ length: n }, () => rng.next()), q = Array.from({ length: n }, () => rng.next());
      const pCopy = [...p], qCopy = [...q];
      const a = mixDistributions(p, q, lambda), b = mixDistributions(p, q, lambda);
      const aliases = { isP: a === p || b === p, isQ: a === q || b === q, sameTwice: a === b };
      a.push(-1);
      a.fill(-1);
      expectEqual({ ...aliases, p, q, second: b.length }, {
        isP: false,
        isQ: false,
        sameTwice: false,
        p: pCopy,
        q: qCopy,
        second: n,
      }, {
        what:
          `two calls mixDistributions(p, q, ${lambda}) with ${n}-word p and q, after the caller changed the first result`,
        hint: "always build a new array (p.map(...)), also when p and q are empty and when λ is 0 or 1: never " +
          "return p, q or a cached array",
      });
    }
  }
});

graded("3.4 mixDistributions: rejects a weight outside [0, 1] and mismatched lengths", () => {
  for (const bad of [1.5, -0.1, NaN]) {
    expectThrows(() => mixDistributions([1, 0], [0, 1], bad as number), RangeError, {
      what: `mixDistributions([1, 0], [0, 1], ${bad})`,
      mentions: ["lambda"],
      hint: "a weight outside [0, 1] does not give a distribution: throw a RangeError naming lambda",
    });
  }
  expectThrows(() => mixDistributions([1, 0], [0.5, 0.25, 0.25], 0.5), RangeError, {
    what: "mixDistributions of a 2-word and a 3-word distribution",
    mentions: [2, 3],
    hint: "throw a RangeError naming both lengths (p.length=2, q.length=3)",
  });
});

graded("3.4 mixDistributions: random distributions, lengths and weights match a from-scratch mixture", () => {
  const rng = new Rng(34);
  for (let t = 0; t < 40; t++) {
    const len = Math.floor(t / 3);
    // Half the trials mix parts of distributions (entries in [0, 1] that need not sum to 1): the mixture is
    // still λ p_i + (1 - λ) q_i word by word, never renormalised.
    const dist = () => {
      const raw = Array.from({ length: len }, () => rng.next());
      const z = t % 2 === 0 ? raw.reduce((a, b) => a + b, 0) || 1 : 1;
      return raw.map((x) => x / z);
    };
    const p = dist(), q = dist();
    const lambda = t % 7 === 0 ? (t % 2) : rng.next();
    expectClose(mixDistributions(p, q, lambda), p.map((pi, i) => lambda * pi + (1 - lambda) * q[i]), {
      what: `mixDistributions(p, q, ${lambda})`,
      input: { p, q },
      hint: "λ p_i + (1 - λ) q_i for every i, for any length (an empty pair gives []), with no renormalisation",
      mistakes: [
        { value: p.map((pi, i) => (1 - lambda) * pi + lambda * q[i]), hint: "lambda weighs p, the FIRST argument" },
        { value: p.map((pi, i) => lambda * pi + lambda * q[i]), hint: "the second weight is 1 - λ, not λ" },
        {
          value: p.map((pi, i) => (pi + q[i]) / 2),
          hint: lambda === 0
            ? "λ = 0 gave a plain average: 0 is a weight, not a missing one (lambda || 0.5 turns it into 0.5)"
            : "use lambda, not a plain average",
        },
      ],
    });
  }
});

graded("3.4 mixDistributions: errors name lambda's value and both lengths", () => {
  for (const bad of [NaN, Infinity, -Infinity, 1.0001, -1e-9, undefined]) {
    expectThrows(() => mixDistributions([1, 0], [0, 1], bad as number), RangeError, {
      what: `mixDistributions([1, 0], [0, 1], ${bad})`,
      mentions: [bad ?? "undefined"],
      hint: "NaN < 0 and NaN > 1 are both false: test !(lambda >= 0 && lambda <= 1) and put the value in the " +
        "message (`lambda must be in [0, 1]: lambda=${lambda}`)",
    });
  }
  for (const [a, b] of [[2, 5], [5, 2], [0, 3]]) {
    const p = new Array(a).fill(1 / Math.max(a, 1)), q = new Array(b).fill(1 / b);
    for (const want of [String(a), String(b)]) {
      expectThrows(() => mixDistributions(p, q, 0.5), RangeError, {
        what: `mixDistributions of a ${a}-word and a ${b}-word distribution`,
        mentions: [Number(want)],
        hint: "compare p.length and q.length before mixing (q[i] past the end is undefined, giving NaN) and name " +
          "both: `p.length=2, q.length=5`",
      });
    }
  }
});

graded("3.4 mixDistributions: a new array, and p and q are left alone", () => {
  for (const lambda of [0, 1, 0.3]) {
    const p = [0.2, 0.8], q = [0.6, 0.4];
    const got = mixDistributions(p, q, lambda);
    expectEqual([p, q], [[0.2, 0.8], [0.6, 0.4]], {
      what: `p and q after mixDistributions(p, q, ${lambda})`,
      hint: "write the mixture into a new array (p.map(...)), not into p or q",
    });
    if (Array.isArray(got) && got.length === 2) {
      got[0] = 99;
      expectEqual([p, q], [[0.2, 0.8], [0.6, 0.4]], {
        what: `p and q after changing the result of mixDistributions(p, q, ${lambda})`,
        hint: "return a new array even when λ is 0 or 1 (returning p or q itself lets the caller's later " +
          "changes to the mixture corrupt them)",
      });
    }
  }
});

// Property tests: p and q of any length from 0 to 8 whose entries are probabilities (0, 1, anything between,
// 1e-300), parts of distributions as much as whole ones; λ = 0, 1, -0, 1/2, anything in [0, 1] and tiny; every
// bad λ, and every pair of lengths that differ.

/** A probability: 0, 1, anything between, or very small. */
const PROB = fc.oneof(
  fc.constantFrom(0, 1, 0.5),
  fc.double({ min: 0, max: 1, noNaN: true }),
  arb.magnitude({ min: 1e-300, max: 1 }),
);
/** A weight in [0, 1]: its ends (0, -0, 1), 1/2, anything between, or very close to an end. */
const LAMBDA = fc.oneof(
  fc.constantFrom(0, -0, 1, 0.5, 1 - Number.EPSILON / 2),
  fc.double({ min: 0, max: 1, noNaN: true }),
  arb.magnitude({ min: 1e-300, max: 1 }),
);
/** Every λ outside [0, 1]: NaN, +-Infinity, undefined, negatives and numbers above 1 of any size. */
const BAD_LAMBDA: fc.Arbitrary<number | undefined> = fc.oneof(
  fc.constantFrom(NaN, Infinity, -Infinity, undefined, -Number.MIN_VALUE, 1 + Number.EPSILON),
  arb.magnitude().map((x) => -x),
  arb.magnitude().map((x) => 1 + x).filter((x) => x > 1),
);

graded("3.4 mixDistributions: any p, q and λ in [0, 1], against a from-scratch mixture, in a new array", () => {
  const cases = fc.integer({ min: 0, max: 8 }).chain((len) =>
    fc.tuple(fc.array(PROB, { minLength: len, maxLength: len }), fc.array(PROB, { minLength: len, maxLength: len }))
  );
  forAll(fc.tuple(cases, LAMBDA), ([[p, q], lambda]) => {
    const gp = [...p], gq = [...q];
    const got = mixDistributions(gp, gq, lambda);
    expectClose(got, p.map((pi, i) => lambda * pi + (1 - lambda) * q[i]), {
      what: `mixDistributions(p, q, ${lambda}) with ${p.length} words`,
      rtol: 1e-12,
      atol: 1e-15,
      hint: "λ p_i + (1 - λ) q_i for every i, for any length (an empty pair gives []), with no renormalisation; " +
        "λ = 0 and λ = 1 are weights like any other",
      mistakes: [
        { value: p.map((pi, i) => (1 - lambda) * pi + lambda * q[i]), hint: "lambda weighs p, the FIRST argument" },
        { value: p.map((pi, i) => lambda * pi + lambda * q[i]), hint: "the second weight is 1 - λ, not λ" },
      ],
    });
    expectEqual({ p: gp, q: gq, isP: got === gp, isQ: got === gq }, { p, q, isP: false, isQ: false }, {
      what: `p, q and the result of mixDistributions(p, q, ${lambda})`,
      hint: "only read p and q, and always return a new array (p.map(...)), also when they are empty and when λ " +
        "is 0 or 1",
    });
  }, { show: ([[p, q], lambda]) => ({ p, q, lambda }) });
});

graded(
  "3.4 mixDistributions: any λ outside [0, 1], and any two lengths that differ, is a RangeError naming them",
  () => {
    const lengths = fc.tuple(fc.nat(8), fc.nat(8)).filter(([a, b]) => a !== b);
    const cases = fc.oneof(
      fc.tuple(fc.nat(8), BAD_LAMBDA).map(([len, lambda]) => ({ a: len, b: len, lambda, bad: "lambda" })),
      fc.tuple(lengths, LAMBDA).map(([[a, b], lambda]) => ({ a, b, lambda, bad: "lengths" })),
    );
    forAll(cases, ({ a, b, lambda, bad }) => {
      const p = new Array(a).fill(0.5), q = new Array(b).fill(0.25);
      expectThrows(() => mixDistributions(p, q, lambda as number), RangeError, {
        what: `mixDistributions of a ${a}-word and a ${b}-word distribution, lambda = ${lambda}`,
        mentions: bad === "lambda" ? ["lambda", lambda ?? "undefined"] : [a, b],
        hint: bad === "lambda"
          ? "lambda has no default and must be in [0, 1]: test !(lambda >= 0 && lambda <= 1) (NaN and undefined " +
            "fail it) and name lambda and its value"
          : "compare p.length and q.length before mixing and name both lengths (p.length=2, q.length=5)",
      });
    });
  },
);

// ---------------------------------------------------------------- 3.5 EM
// Spec: the mean over tokens of r_i = λ pA[i] / (λ pA[i] + (1 - λ) pB[i]), for any length >= 1; a token where the
// mixture's probability is 0 counts as r_i = λ (it stays in the mean); tiny probabilities (1e-200) give the right
// share; empty or different-length arrays are a RangeError naming both lengths; λ outside [0, 1] or NaN is a
// RangeError naming lambda; pA and pB are not modified. Only an exact 0 is 0: a mixture probability below 1e-300
// still gives the token its share.

function emPlain(pA: number[], pB: number[], l: number): number {
  return pA.reduce((s, a, i) => s + (l * a) / (l * a + (1 - l) * pB[i]), 0) / pA.length;
}

graded("3.5 emWeightUpdate: matches a hand computation", () => {
  // shares: 0.3*0.8/(0.24+0.14) = 0.6316, 0.06/(0.06+0.28) = 0.1765, 0.15/(0.15+0.35) = 0.3
  const pA = [0.8, 0.2, 0.5], pB = [0.2, 0.4, 0.5];
  const got = emWeightUpdate(pA, pB, 0.3);
  const shares = pA.map((a, i) => (0.3 * a) / (0.3 * a + 0.7 * pB[i]));
  expectClose(got, emPlain(pA, pB, 0.3), {
    what: "emWeightUpdate([0.8, 0.2, 0.5], [0.2, 0.4, 0.5], 0.3)",
    hint: "new λ = mean over tokens of λ pA[i] / (λ pA[i] + (1 - λ) pB[i])",
    mistakes: [
      {
        value: shares.reduce((a, b) => a + b, 0),
        hint: "return the MEAN of the shares, not their sum",
      },
      {
        value: pA.reduce((s, a, i) => s + a / (a + pB[i]), 0) / 3,
        hint: "weigh each model by the current λ: r_i = λ pA / (λ pA + (1 - λ) pB)",
      },
      {
        value: pA.reduce((s, a, i) => s + (0.3 * a) / (a + pB[i]), 0) / 3,
        hint: "the denominator is the mixture's probability λ pA + (1 - λ) pB",
      },
    ],
  });
});

graded("3.5 emWeightUpdate: repeated updates converge to the best weight", () => {
  // 700 tokens where A says 0.9 and B 0.1, 300 where A says 0.1 and B 0.9. The log-likelihood
  // 700 ln(0.1 + 0.8 λ) + 300 ln(0.9 - 0.8 λ) is largest where 560/(0.1 + 0.8λ) = 240/(0.9 - 0.8λ),
  // i.e. λ = (700 * 0.9 - 300 * 0.1) / 800 = 0.75.
  const pA = [...new Array(700).fill(0.9), ...new Array(300).fill(0.1)];
  const pB = pA.map((p) => 1 - p);
  let lambda = 0.5;
  for (let i = 0; i < 300; i++) lambda = emWeightUpdate(pA, pB, lambda);
  expectClose(lambda, 0.75, {
    what: "λ after 300 EM updates from 0.5",
    atol: 1e-3,
    hint: "each update must be the mean share of model A under the current λ",
  });
});

graded("3.5 emWeightUpdate: a token both models find impossible counts as the current λ", () => {
  const got = emWeightUpdate([0.5, 0], [0.5, 0], 0.4);
  // token 0: 0.2 / (0.2 + 0.3) = 0.4; token 1: 0/0, counted as λ = 0.4
  expectClose(got, 0.4, {
    what: "emWeightUpdate([0.5, 0], [0.5, 0], 0.4)",
    hint: "0 / 0 is NaN: when λ pA + (1 - λ) pB is 0, count the token's share as lambda",
    mistakes: [
      { value: 0.8, hint: "return the MEAN of the shares, not their sum" },
      { value: 0.2, hint: "a token both models give 0 counts as λ, not as 0" },
      { value: 0.5, hint: "a token both models give 0 counts as the current λ, not as 1/2" },
    ],
  });
});

graded("3.5 emWeightUpdate: rejects empty or mismatched inputs", () => {
  expectThrows(() => emWeightUpdate([], [], 0.5), RangeError, {
    what: "emWeightUpdate([], [], 0.5)",
    hint: "no tokens, no estimate: throw a RangeError (the mean of nothing is NaN)",
  });
  expectThrows(() => emWeightUpdate([0.5, 0.5], [0.5], 0.5), RangeError, {
    what: "emWeightUpdate of 2 and 1 probabilities",
    mentions: [2, 1],
    hint: "throw a RangeError naming both lengths",
  });
});

/** Reference 3.5 with the 0/0 rule, from scratch. */
function emPlainZero(pA: number[], pB: number[], l: number, zeroShare: "lambda" | "skip" | "zero" = "lambda"): number {
  let total = 0, count = 0;
  for (let i = 0; i < pA.length; i++) {
    const a = l * pA[i], b = (1 - l) * pB[i];
    if (a + b > 0) {
      total += a / (a + b);
      count++;
    } else if (zeroShare === "lambda") {
      total += l;
      count++;
    } else if (zeroShare === "zero") count++;
  }
  return total / count;
}

graded("3.5 emWeightUpdate: random probabilities, zeros and lengths match a from-scratch update", () => {
  const rng = new Rng(35);
  for (let t = 0; t < 40; t++) {
    const len = 1 + Math.floor(t / 2);
    const scale = t % 5 === 4 ? 1e-200 : 1;
    const draw = () => (rng.int(4) === 0 ? 0 : rng.next() * scale);
    const pA = Array.from({ length: len }, draw), pB = Array.from({ length: len }, draw);
    if (t % 3 === 0) pA[rng.int(len)] = pB[rng.int(len)] = 0;
    const lambda = 0.05 + 0.9 * rng.next();
    expectClose(emWeightUpdate(pA, pB, lambda), emPlainZero(pA, pB, lambda), {
      what: `emWeightUpdate(pA, pB, ${lambda})`,
      input: { pA, pB },
      hint: "the mean over ALL tokens of λ pA / (λ pA + (1 - λ) pB), a token whose mixture probability is 0 " +
        "counting as λ",
      mistakes: [
        { value: emPlainZero(pA, pB, lambda, "skip"), hint: "a token both models give 0 still counts, as λ" },
        { value: emPlainZero(pA, pB, lambda, "zero"), hint: "a token both models give 0 counts as λ, not 0" },
      ],
    });
  }
});

graded("3.5 emWeightUpdate: errors name both lengths and lambda; the inputs are left alone", () => {
  for (const [a, b] of [[3, 5], [5, 3], [0, 0]]) {
    for (const want of [`${a}`, `${b}`]) {
      expectThrows(() => emWeightUpdate(new Array(a).fill(0.5), new Array(b).fill(0.5), 0.5), RangeError, {
        what: `emWeightUpdate of ${a} and ${b} probabilities`,
        mentions: [Number(want)],
        hint: "check that pA and pB are non-empty and of the same length, and name both: " +
          "`pA.length=3, pB.length=5`",
      });
    }
  }
  for (const bad of [NaN, -0.5, 1.5, Infinity, undefined]) {
    expectThrows(() => emWeightUpdate([0.5], [0.5], bad as number), RangeError, {
      what: `emWeightUpdate([0.5], [0.5], ${bad})`,
      mentions: ["lambda", String(bad)],
      hint: "a weight must be in [0, 1]: test !(lambda >= 0 && lambda <= 1) (NaN fails every comparison) and " +
        "throw a RangeError naming lambda and its value",
    });
  }
  // At the ends, λ = 0 or 1, a token that the weighted model gives 0 has a mixture probability of 0 too.
  expectClose(emWeightUpdate([0.5, 0.5], [0, 0.5], 0), 0, {
    what: "emWeightUpdate([0.5, 0.5], [0, 0.5], 0)",
    hint: "λ = 0 is allowed: token 0's mixture probability 0 * 0.5 + 1 * 0 is 0, so its share is λ = 0; test " +
      "whether λ pA + (1 - λ) pB is 0, not whether pA and pB both are",
  });
  expectClose(emWeightUpdate([0, 0.5], [0.5, 0.5], 1), 1, {
    what: "emWeightUpdate([0, 0.5], [0.5, 0.5], 1)",
    hint: "λ = 1 is allowed: token 0's mixture probability is 1 * 0 + 0 * 0.5 = 0, so its share is λ = 1",
  });
  const pA = [0.8, 0, 0.5], pB = [0.2, 0, 0.5];
  emWeightUpdate(pA, pB, 0.3);
  expectEqual([pA, pB], [[0.8, 0, 0.5], [0.2, 0, 0.5]], {
    what: "pA and pB after emWeightUpdate(pA, pB, 0.3)",
    hint: "compute the shares into a new array or a running sum; do not overwrite pA or pB",
  });
});

// Property tests: 1 to 8 tokens whose probabilities are 0 (often, in both models too), 1, anything between, or tiny
// (down to 1e-305, also whole texts of tiny ones, whose mixture probabilities lie below 1e-300 yet are not 0);
// λ = 0, 1, 1/2 or anything in [1e-4, 1 - 1e-4]; every bad λ, empty arrays and lengths that differ.

/**
 * A token's probability under one model: 0 (often), 1, anything between, or tiny; never below 1e-305 but 0, so that
 * λ p keeps its precision (a subnormal p leaves λ p a few bits, and the share would depend on the order of the
 * arithmetic).
 */
const EM_PROB = fc.oneof(
  { arbitrary: fc.constant(0), weight: 2 },
  { arbitrary: fc.constantFrom(1, 0.5), weight: 1 },
  { arbitrary: fc.double({ min: 0, max: 1, noNaN: true }).map((x) => (x < 1e-305 ? 0 : x)), weight: 2 },
  { arbitrary: arb.magnitude({ min: 1e-305, max: 1 }), weight: 2 },
);
/** A probability of a text made of very unlikely tokens: 0 or 1e-305 to 1e-250. */
const TINY_PROB = fc.oneof(fc.constant(0), arb.magnitude({ min: 1e-305, max: 1e-250 }));
/** pA and pB of the same length, 1 to 8 tokens: any probabilities, or a text of tiny ones only. */
const EM_TEXTS = fc.integer({ min: 1, max: 8 }).chain((len) => {
  const text = (prob: fc.Arbitrary<number>) => fc.array(prob, { minLength: len, maxLength: len });
  return fc.oneof(
    { arbitrary: fc.tuple(text(EM_PROB), text(EM_PROB)), weight: 3 },
    { arbitrary: fc.tuple(text(TINY_PROB), text(TINY_PROB)), weight: 1 },
  );
});
/** A current weight: an end, 1/2, or anything in [1e-4, 1 - 1e-4] (so that λ p stays a normal float). */
const EM_LAMBDA = fc.oneof(fc.constantFrom(0, 1, 0.5), fc.double({ min: 1e-4, max: 1 - 1e-4, noNaN: true }));

graded("3.5 emWeightUpdate: any probabilities, zeros and tiny ones, and any λ, against a from-scratch update", () => {
  forAll(fc.tuple(EM_TEXTS, EM_LAMBDA), ([[pA, pB], lambda]) => {
    const gA = [...pA], gB = [...pB];
    expectClose(emWeightUpdate(gA, gB, lambda), emPlainZero(pA, pB, lambda), {
      what: `emWeightUpdate(pA, pB, ${lambda}) with ${pA.length} tokens`,
      rtol: 1e-12,
      atol: 1e-15,
      hint: "the mean over ALL tokens of λ pA / (λ pA + (1 - λ) pB); a token whose mixture probability is exactly " +
        "0 counts as λ (test the mixture's probability for 0, not for being small: 1e-300 is not 0)",
      mistakes: [
        { value: () => emPlainZero(pA, pB, lambda, "skip"), hint: "a token both models give 0 still counts, as λ" },
        { value: () => emPlainZero(pA, pB, lambda, "zero"), hint: "a token both models give 0 counts as λ, not 0" },
      ],
    });
    expectEqual([gA, gB], [pA, pB], {
      what: "pA and pB after emWeightUpdate(pA, pB, lambda)",
      hint: "compute the shares into a running sum; do not overwrite pA or pB",
    });
  }, { show: ([[pA, pB], lambda]) => ({ pA, pB, lambda }) });
});

graded("3.5 emWeightUpdate: any bad λ, empty arrays or lengths that differ is a RangeError naming them", () => {
  const lengths = fc.tuple(fc.nat(8), fc.nat(8)).filter(([a, b]) => a !== b || a === 0);
  const cases = fc.oneof(
    fc.tuple(fc.integer({ min: 1, max: 8 }), BAD_LAMBDA).map(([len, lambda]) => ({ a: len, b: len, lambda })),
    fc.tuple(lengths, EM_LAMBDA).map(([[a, b], lambda]) => ({ a, b, lambda: lambda as number | undefined })),
  );
  forAll(cases, ({ a, b, lambda }) => {
    const lengthsBad = a !== b || a === 0;
    expectThrows(() => emWeightUpdate(new Array(a).fill(0.5), new Array(b).fill(0.25), lambda as number), RangeError, {
      what: `emWeightUpdate of ${a} and ${b} probabilities, lambda = ${lambda}`,
      mentions: lengthsBad ? [a, b] : ["lambda", lambda ?? "undefined"],
      hint: lengthsBad
        ? "pA and pB must be non-empty and of the same length: check both and name both lengths (pA.length=3, " +
          "pB.length=5)"
        : "lambda has no default and must be in [0, 1]: test !(lambda >= 0 && lambda <= 1) (NaN and undefined " +
          "fail it) and name lambda and its value",
    });
  });
});

/**
 * The run-time guard of the transformer's fast paths (chapter 6). The model
 * is `gpt.ts`, the readable one; for speed, {@link TransformerLM} trains and
 * scores it through the fused time-major kernels of `gpt_fast.ts`, and
 * generation runs the WebAssembly cached decoder of
 * `lib/decode/fast_decoder.ts`. Both are copies of gpt.ts's arithmetic, so an
 * edit to gpt.ts (a new weight, another activation) reaches them only if
 * someone makes it there too.
 *
 * So before a model first trains, scores or generates through a fast path,
 * {@link PathGuard} runs that path and gpt.ts on a small seeded probe (2
 * sequences of up to 8 tokens, this model's config and weights) and compares
 * what the run needs: for the fused kernels, the logits, the loss, every
 * weight's gradient and the logits of their cached decoding; for the decoder,
 * its logits. It also checks that the fast path reads every weight the model
 * has: a weight added in `initWeights` that the fast path never reads is an
 * edit it does not follow. Then:
 *
 * - they agree: the fast path runs, as it always did (nothing is printed);
 * - they differ: gpt.ts runs instead, and the first call says so, once,
 *   naming the first output or weight that differed and by how much, and how
 *   to make the fast path follow (edit the file it names; or ignore it: the
 *   readable model is right, only slower).
 *
 * The check runs once per model and fast path (a model built by `loadModel`
 * is a new model, checked afresh; so is one whose config changed). The
 * model's `path` option changes this: `"fast"` runs the fast path and throws
 * when it differs, `"readable"` always runs gpt.ts, unchecked.
 *
 * "Agree" means: the largest difference in an output, divided by the largest
 * value of the readable one, is below {@link TOLERANCE} (each gradient's
 * scale taken as at least 1% of the largest gradient of the model, since some
 * gradients are zero up to rounding: the key biases'). These are the
 * tolerances of `gpt_fast_test.ts`. On the baby config, with weights
 * perturbed as training would, float32 rounding left at most 4.5e-6 in the
 * logits, 1.2e-7 in the loss and 6e-6 in a gradient: 40 to 160 times
 * below them. An edit that changes the model less than that is, to float32,
 * no change.
 *
 * @module
 */
import * as tf from "../core/tf.ts";
import { Rng } from "../core/random.ts";
import { gptForward } from "./gpt.ts";
import type { FastForward } from "./gpt_fast.ts";
import type { FullTransformerConfig } from "./transformer_config.ts";

/** Which implementation a model runs: checked (`"auto"`), forced (`"fast"`), or gpt.ts only (`"readable"`). */
export type PathOption = "auto" | "fast" | "readable";

/** A fast path the guard checks, as its messages name it. */
export interface FastPath {
  /** A short key, e.g. `"fused"`. */
  key: string;
  /** What it is, e.g. "the fast path (the fused kernels of lib/models/gpt_fast.ts)". */
  name: string;
  /** The same, short, e.g. "the fast path". */
  short: string;
  /** The file to edit so that it follows gpt.ts. */
  file: string;
  /** What it runs, e.g. "training and scoring". */
  runs: string;
}

/** The fused time-major kernels (`gpt_fast.ts`): training, scoring, `forward` and the tfjs KV cache. */
export const FUSED_PATH: FastPath = {
  key: "fused",
  name: "the fast path (the fused kernels of lib/models/gpt_fast.ts)",
  short: "the fast path",
  file: "lib/models/gpt_fast.ts (on webgpu, its fused shaders: lib/models/gpt_fast_webgpu.ts and " +
    "lib/kernels/webgpu_blocks.ts)",
  runs: "training and scoring",
};

/** The largest relative difference that counts as agreement, per kind of output (see the module docs). */
export const TOLERANCE = { logits: 2e-4, loss: 2e-5, gradient: 5e-4 } as const;

/** A gradient's scale is taken as at least this fraction of the model's largest gradient. */
const GRADIENT_FLOOR = 1e-2;

/** The probe's shape and seed: 2 sequences (a layout that mixes them up shows) of up to 8 tokens. */
export const PROBE = { batch: 2, tokens: 8, seed: 4049 } as const;

/** One output of the probe: the fast path's numbers and the readable model's. */
export interface ProbeOutput {
  /** What it is: "logits", "loss", "the gradient of h0.attn.wq", ... */
  what: string;
  /** The fast path's numbers; null when it gave none (no gradient reaches a weight it never reads). */
  fast: tf.Tensor | Float32Array | null;
  /** The readable model's numbers. */
  readable: tf.Tensor | Float32Array;
  /** The largest relative difference allowed ({@link TOLERANCE}). */
  tolerance: number;
  /** Outputs of one group (the gradients) share a floor under their scale: a fraction of the group's largest value. */
  group?: string;
  /** Where a flat index is, in words ("sequence 1, position 3, token 17"). */
  where?: (i: number) => string;
}

/** What a probe gives the guard to compare (the guard reads and frees the tensors). */
export interface Probe {
  /** The probe's size, in words ("2 sequences of 8 tokens"). */
  size: string;
  /** The outputs, in the order they are reported. */
  outputs: ProbeOutput[];
  /** The model's weights that the fast path never read. */
  unread: string[];
  /** The fast path's error, when it could not run on this model (e.g. a weight it needs is missing). */
  failed?: string;
}

/** The first output that differed, and by how much. */
export interface PathDifference {
  /** The output. */
  what: string;
  /** The largest difference divided by the readable output's scale. */
  error: number;
  /** What was allowed. */
  tolerance: number;
  /** Where, with both values. */
  detail: string;
}

/** A guard's decision for one fast path. */
export interface PathVerdict {
  /** What runs: the fast path, or gpt.ts. */
  path: "fast" | "readable";
  /** Whether the fast path equals gpt.ts on the probe (undefined: not checked). */
  agrees?: boolean;
  /** Why, in words: what a notebook prints and a trainer's history keeps. */
  reason: string;
  /** The first output that differed, when one did. */
  difference?: PathDifference;
  /** Weights the fast path never read. */
  unread: string[];
  /** Milliseconds the check took (0 when there was none). */
  ms: number;
}

/** Options of {@link PathGuard}. */
export interface PathGuardOptions {
  /** The model's name, for messages. */
  owner: string;
  /** `"auto"` (default), `"fast"` or `"readable"`. */
  option?: PathOption;
  /** A path decided elsewhere (a data-parallel helper gets its trainer's): run it, unchecked. */
  decided?: "fast" | "readable";
  /** What must not change for a verdict to hold (the config, as JSON). */
  key: () => string;
}

/** Whether tensors on the current backend can be read synchronously (webgpu cannot, in Deno). */
export function canReadSync(): boolean {
  return tf.getBackend() !== "webgpu";
}

/**
 * The seeded probe tokens: `batch` rows of `tokens + 1` ids (inputs and next-token targets).
 * @param c the config (`vocabSize`, `blockSize`).
 * @returns the rows, and the length T of the inputs.
 */
export function probeTokens(
  c: Pick<FullTransformerConfig, "vocabSize" | "blockSize">,
): { rows: number[][]; T: number } {
  const T = Math.min(PROBE.tokens, c.blockSize), rng = new Rng(PROBE.seed);
  const rows = Array.from({ length: PROBE.batch }, () => Array.from({ length: T + 1 }, () => rng.int(c.vocabSize)));
  return { rows, T };
}

/**
 * Guards the fast paths of one model (chapter 6): checks each once against
 * gpt.ts on a seeded probe and says which runs (see the module docs).
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import * as tf from "@tensorflow/tfjs";
 * import { TransformerLM } from "./transformer.ts";
 * await tf.setBackend("cpu");
 * const model = new TransformerLM({ ...{ nLayer: 1, nHead: 2, nEmbd: 8, blockSize: 8 }, vocabSize: 10 }, { seed: 1 });
 * const verdict = await model.checkPaths(); // what a trainer does before it trains
 * assertEquals([verdict.path, verdict.agrees], ["fast", true]);
 * model.dispose();
 * ```
 */
export class PathGuard {
  /** The model's `path` option. */
  readonly option: PathOption;
  #owner: string;
  #decided?: "fast" | "readable";
  #key: () => string;
  #verdicts = new Map<string, { key: string; verdict: PathVerdict }>();
  #told = new Set<string>();
  /** Checks under way (two callers at once share one probe). */
  #pending = new Map<string, Promise<PathVerdict>>();
  /** What a call that asks for the fast path is told where it differs. */
  #refusals = new Map<string, string>();

  /**
   * A guard with no verdict yet.
   * @param options the model's name, its `path` option, and what a verdict depends on.
   * @throws {RangeError} on an unknown `path` option.
   */
  constructor(options: PathGuardOptions) {
    const option = options.option ?? "auto";
    if (!["auto", "fast", "readable"].includes(option)) {
      throw new RangeError(`path must be "auto", "fast" or "readable": path=${JSON.stringify(option)}`);
    }
    this.option = option;
    this.#owner = options.owner;
    this.#decided = options.decided;
    this.#key = options.key;
  }

  /**
   * The verdict for a fast path, if there is one (none before its check, or after the config changed).
   * @param path the fast path.
   * @returns the verdict, or undefined.
   */
  verdict(path: FastPath): PathVerdict | undefined {
    if (this.#decided) {
      const reason = `${this.#decided === "fast" ? path.name : "the readable model (gpt.ts)"} runs, ` +
        "as the process that started this helper decided";
      return { path: this.#decided, reason, unread: [], ms: 0 };
    }
    if (this.option === "readable") {
      return {
        path: "readable",
        reason: 'the readable model (gpt.ts) runs: the model was built with path: "readable"',
        unread: [],
        ms: 0,
      };
    }
    return this.#held(path);
  }

  /** The verdict of the last check of a fast path, if the config has not changed since. */
  #held(path: FastPath): PathVerdict | undefined {
    const held = this.#verdicts.get(path.key);
    return held && held.key === this.#key() ? held.verdict : undefined;
  }

  /**
   * Checks a fast path once, reading the probe's numbers asynchronously (every backend), and says so when gpt.ts must run.
   * @param path the fast path.
   * @param probe runs both on the probe.
   * @returns the verdict.
   * @throws {Error} with the reason when the model's option is `"fast"` and they differ.
   */
  check(path: FastPath, probe: () => Probe | Promise<Probe>): Promise<PathVerdict> {
    const known = this.verdict(path);
    if (known) return Promise.resolve().then(() => this.#settle(path, known));
    let pending = this.#pending.get(path.key);
    if (!pending) {
      pending = this.#checkAsync(path, probe).finally(() => this.#pending.delete(path.key));
      this.#pending.set(path.key, pending);
    }
    return pending;
  }

  async #checkAsync(path: FastPath, probe: () => Probe | Promise<Probe>): Promise<PathVerdict> {
    const t0 = performance.now();
    const p = await probe();
    const read = async (t: tf.Tensor | Float32Array | null) =>
      t instanceof tf.Tensor ? await t.data() as Float32Array : t;
    const values = await Promise.all(
      p.outputs.map(async (o) => [await read(o.fast), (await read(o.readable))!] as const),
    );
    return this.#decide(path, p, values, t0);
  }

  /**
   * The same check with synchronous reads (a backend that has them; see {@link canReadSync}).
   * @param path the fast path.
   * @param probe runs both on the probe.
   * @returns the verdict.
   * @throws {Error} with the reason when the model's option is `"fast"` and they differ.
   */
  checkSync(path: FastPath, probe: () => Probe): PathVerdict {
    const known = this.verdict(path);
    return known ? this.#settle(path, known) : this.#checkNow(path, probe);
  }

  /**
   * Whether a call runs the fast path: the verdict, checked now (synchronously) if there is none yet.
   * @param path the fast path.
   * @param probe runs both on the probe.
   * @param requested the call's own `path` (`forward(..., { path })`), if any.
   * @returns true for the fast path, false for gpt.ts.
   * @throws {Error} when the fast path is required (`"fast"`) and differs.
   */
  useFast(path: FastPath, probe: () => Probe, requested?: "fast" | "readable"): boolean {
    if (requested === "readable") return false;
    if (this.#decided) return this.#decided === "fast";
    if (requested !== "fast" && this.option === "readable") return false;
    let v = this.#held(path);
    if (!v && !canReadSync()) {
      // A synchronous call before the asynchronous check (webgpu): gpt.ts is right, the fast path unchecked
      // (a call that asks for the fast path gets it).
      if (requested === "fast") return true;
      this.#tell(
        `${path.key}:unchecked`,
        `${this.#owner}: the readable model (gpt.ts) runs this call: on ${tf.getBackend()} the check of ${path.name} ` +
          "needs an asynchronous read; `await model.checkPaths()` checks it (the trainer, generate and logProbs do)",
      );
      return false;
    }
    v ??= this.#checkNow(path, probe); // throws under path: "fast" where they differ
    if (!v.agrees && (requested === "fast" || this.option === "fast")) {
      throw new Error(this.#refusals.get(path.key) ?? v.reason);
    }
    return v.agrees === true;
  }

  #checkNow(path: FastPath, probe: () => Probe): PathVerdict {
    const t0 = performance.now();
    const p = probe();
    const read = (t: tf.Tensor | Float32Array | null) => t instanceof tf.Tensor ? t.dataSync() as Float32Array : t;
    return this.#decide(path, p, p.outputs.map((o) => [read(o.fast), read(o.readable)!] as const), t0);
  }

  /** Compares, frees the probe's tensors, records and reports the verdict. */
  #decide(
    path: FastPath,
    p: Probe,
    values: (readonly [Float32Array | null, Float32Array])[],
    t0: number,
  ): PathVerdict {
    tf.dispose(p.outputs.flatMap((o) => [o.fast, o.readable].filter((t) => t instanceof tf.Tensor) as tf.Tensor[]));
    let difference: PathDifference | undefined;
    let worst: PathDifference | undefined;
    if (!p.failed && p.unread.length === 0) {
      const floors = new Map<string, number>();
      p.outputs.forEach((o, i) => {
        if (o.group) floors.set(o.group, Math.max(floors.get(o.group) ?? 0, maxAbs(values[i][1])));
      });
      for (let i = 0; i < p.outputs.length && !difference; i++) {
        const o = p.outputs[i], [fast, readable] = values[i];
        const floor = o.group ? GRADIENT_FLOOR * floors.get(o.group)! : 0;
        const d = compare(o, fast, readable, floor);
        if (d.error > o.tolerance || !(d.error >= 0)) difference = d;
        else if (!worst || d.error / d.tolerance > worst.error / worst.tolerance) worst = d;
      }
    }
    const ms = performance.now() - t0;
    const agrees = !p.failed && p.unread.length === 0 && !difference;
    const verdict: PathVerdict = {
      path: agrees || this.option === "fast" ? "fast" : "readable",
      agrees,
      reason: agrees
        ? `${path.name} agrees with the readable model (gpt.ts) on a seeded probe (${p.size}; largest difference ` +
          `${worst ? `${fmt(worst.error)}, in ${worst.what}, tolerance ${fmt(worst.tolerance)}` : "0"}): it is used ` +
          `for ${path.runs} (checked in ${ms.toFixed(0)} ms)`
        : this.#disagreement(path, p, difference, ms, this.option === "fast"),
      difference,
      unread: p.unread,
      ms,
    };
    if (!agrees) this.#refusals.set(path.key, this.#disagreement(path, p, difference, ms, true));
    this.#verdicts.set(path.key, { key: this.#key(), verdict });
    return this.#settle(path, verdict);
  }

  /** Says a disagreement once (or throws it under `path: "fast"`); returns the verdict. */
  #settle(path: FastPath, v: PathVerdict): PathVerdict {
    if (v.agrees === false && this.option === "fast") throw new Error(v.reason);
    if (v.agrees === false && this.option === "auto") this.#tell(path.key, v.reason);
    return v;
  }

  #tell(key: string, message: string): void {
    if (this.#told.has(key)) return;
    this.#told.add(key);
    console.log(message);
  }

  #disagreement(path: FastPath, p: Probe, d: PathDifference | undefined, ms: number, forced: boolean): string {
    const it = path.short, n = p.unread.length;
    const what = p.failed
      ? `${it} fails on this model: ${p.failed}`
      : n
      ? `${it} never reads the weight${n > 1 ? "s" : ""} ${list(p.unread)}, which gpt.ts reads (initWeights made ` +
        `${n > 1 ? "them" : "it"}), so it does not compute the model you wrote`
      : `on a seeded probe (${p.size}) ${it} differs from gpt.ts in ${d!.what} by ${fmt(d!.error)} (the largest ` +
        `difference relative to the largest value; tolerance ${fmt(d!.tolerance)}): ${d!.detail}`;
    const head = forced
      ? `${this.#owner}: path: "fast" was asked, but ${what}.`
      : `${this.#owner}: the readable model (lib/models/gpt.ts) is used for ${path.runs} instead of ${path.name}: ` +
        `${what}. Its results are right, only slower.`;
    return `${head} To make ${it} follow gpt.ts, make the same change in ${path.file} ` +
      `(lib/models/gpt_fast_test.ts compares the two)${forced ? "" : ", or ignore this"}. ` +
      `(Checked once, in ${ms.toFixed(0)} ms; the model's option path: "readable" skips this check, ` +
      `path: "fast" refuses to run when they differ.)`;
  }
}

function list(names: string[]): string {
  const shown = names.slice(0, 4).map((n) => JSON.stringify(n));
  return shown.join(", ") + (names.length > 4 ? ` and ${names.length - 4} more` : "");
}

function fmt(x: number): string {
  return Number.isFinite(x) ? x.toExponential(1) : String(x);
}

function maxAbs(a: Float32Array): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]));
  return m;
}

/** The largest |fast - readable| over the scale of the readable output (at least `floor`), and where. */
function compare(o: ProbeOutput, fast: Float32Array | null, readable: Float32Array, floor: number): PathDifference {
  const scale = Math.max(maxAbs(readable), floor, 1e-30);
  if (!fast || fast.length !== readable.length) {
    const got = fast ? `${fast.length} numbers against ${readable.length}` : "nothing (no gradient reaches it)";
    return { what: o.what, error: Infinity, tolerance: o.tolerance, detail: `the fast path gave ${got}` };
  }
  let error = 0, at = 0;
  for (let i = 0; i < readable.length; i++) {
    const e = Math.abs(fast[i] - readable[i]) / scale;
    if (Number.isNaN(e)) [error, at, i] = [Infinity, i, readable.length]; // NaN (or Infinity) is the worst
    else if (e > error) [error, at] = [e, i];
  }
  const where = o.where ? o.where(at) : readable.length > 1 ? `at index ${at}` : "";
  const detail = `${where ? where + ": " : ""}fast ${fast[at].toPrecision(5)}, readable ${readable[at].toPrecision(5)}`;
  return { what: o.what, error, tolerance: o.tolerance, detail };
}

/**
 * The weights by name, and the names a pass asked for (a weight it never asks for cannot be in its arithmetic).
 * @param w the weights.
 * @returns a view of them that records each name read, and those names.
 */
export function tracking(w: Record<string, tf.Variable>): { weights: Record<string, tf.Variable>; seen: Set<string> } {
  const seen = new Set<string>();
  const weights = new Proxy(w, { get: (t, k) => (typeof k === "string" && seen.add(k), t[k as string]) });
  return { weights, seen };
}

/**
 * The probe of the fused kernels (`gpt_fast.ts`): on the seeded tokens, in
 * training mode (dropout, if any, draws the same masks on both), the logits,
 * loss and every weight's gradient of both passes; then, in evaluation mode,
 * the logits of the fused pass with a KV cache (the first half of the first
 * row, then the rest) against gpt.ts's on the whole row. An error of
 * gpt.ts's own is thrown: it is the model's.
 *
 * @param fast the model's fused pass.
 * @param w the model's variables by name.
 * @returns the probe (its tensors belong to the guard).
 */
export function fusedProbe(fast: FastForward, w: Record<string, tf.Variable>): Probe {
  const c = fast.config, V = c.vocabSize, names = Object.keys(w), vars = names.map((n) => w[n]);
  const { rows, T } = probeTokens(c), B = rows.length, seed = PROBE.seed;
  const outputs: ProbeOutput[] = [];
  const ours = tracking(w), theirs = tracking(w);
  const idx = tf.tensor2d(rows.map((r) => r.slice(0, T)), [B, T], "int32"); // (B, T)
  const targets = tf.tensor2d(rows.map((r) => r.slice(1)), [B, T], "int32"); // (B, T)
  const at = (i: number) =>
    `sequence ${Math.floor(i / (V * T))}, position ${Math.floor(i / V) % T}, logit of token ${i % V}`;
  let readableLogits: tf.Tensor | undefined, fastLogits: tf.Tensor | null = null;
  let failed: string | undefined;
  try {
    const readable = tf.variableGrads(() => {
      const r = gptForward(ours.weights, { c, idx, targets }, { training: true, seed });
      readableLogits = tf.keep(r.logits); // (B, T, V)
      return r.loss!;
    }, vars);
    let fastLoss: tf.Tensor | null = null, fastGrads: tf.NamedTensorMap = {};
    try {
      const f = tf.variableGrads(() => {
        const r = fast.run(theirs.weights, { idx, targets }, { training: true, seed });
        fastLogits = tf.keep(tf.transpose(tf.reshape(r.logitsTB, [T, B, V]), [1, 0, 2])); // (B, T, V)
        return r.loss!;
      }, vars);
      [fastLoss, fastGrads] = [f.value, f.grads];
    } catch (e) {
      failed = e instanceof Error ? e.message : String(e);
      tf.dispose([fastLogits as tf.Tensor | null].filter((t) => t !== null) as tf.Tensor[]);
      fastLogits = null;
    }
    outputs.push({
      what: "the logits",
      fast: fastLogits,
      readable: readableLogits!,
      tolerance: TOLERANCE.logits,
      where: at,
    });
    outputs.push({ what: "the loss", fast: fastLoss, readable: readable.value, tolerance: TOLERANCE.loss });
    names.forEach((n, i) => {
      const r = readable.grads[vars[i].name], f = fastGrads[vars[i].name] ?? null;
      if (!r && !f) return; // a weight neither pass uses
      outputs.push({
        what: `the gradient of ${n}`,
        fast: f,
        readable: r ?? new Float32Array(vars[i].size), // gpt.ts does not use it: its gradient is zero
        tolerance: TOLERANCE.gradient,
        group: "gradients",
        where: (j) => `element ${j} of ${n} [${vars[i].shape}]`,
      });
    });
    if (!failed && c.causal) {
      try {
        const reference = c.dropout === 0 ? readableLogits : undefined; // else gpt.ts again, without dropout
        outputs.push({
          what: "the logits of cached decoding",
          ...cachedLogits(fast, w, { idx, reference }),
          tolerance: TOLERANCE.logits,
        });
      } catch (e) {
        failed = `with a KV cache: ${e instanceof Error ? e.message : String(e)}`;
      }
    }
    // A weight gpt.ts reads and the fused pass never asks for.
    const unread = failed ? [] : names.filter((n) => ours.seen.has(n) && !theirs.seen.has(n));
    return { size: `${B} sequences of ${T} tokens`, outputs, unread, failed };
  } catch (e) {
    tf.dispose(outputs.flatMap((o) => [o.fast, o.readable].filter((t) => t instanceof tf.Tensor) as tf.Tensor[]));
    throw e;
  } finally {
    tf.dispose([idx, targets]);
  }
}

/**
 * The fused pass's logits with a KV cache (half of row 0, then the rest), and
 * gpt.ts's on the whole row: taken from `reference` (B, T, V) when given.
 */
function cachedLogits(
  fast: FastForward,
  w: Record<string, tf.Variable>,
  input: { idx: tf.Tensor2D; reference?: tf.Tensor },
): { fast: tf.Tensor; readable: tf.Tensor } {
  const { idx, reference } = input, c = fast.config, T = idx.shape[1], V = c.vocabSize, k = Math.max(1, T >> 1);
  const [readable, cached] = tf.tidy(() => {
    const row = tf.slice(idx, [0, 0], [1, T]) as tf.Tensor2D; // (1, T)
    const whole = reference ?? gptForward(w, { c, idx: row }).logits; // (1 or B, T, V)
    const first = fast.run(w, { idx: tf.slice(row, [0, 0], [1, k]) as tf.Tensor2D }, { past: [] }); // k rows
    const parts = [tf.slice(first.logitsTB, [k - 1, 0], [1, V])]; // (1, V): position k - 1
    if (k < T) {
      const rest = fast.run(w, { idx: tf.slice(row, [0, k], [1, T - k]) as tf.Tensor2D }, { past: first.present });
      parts.push(rest.logitsTB); // (T - k, V)
    }
    return [tf.reshape(tf.slice(whole, [0, k - 1, 0], [1, T - k + 1, V]), [T - k + 1, V]), tf.concat(parts)]; // (T-k+1, V)
  });
  return { fast: cached, readable };
}

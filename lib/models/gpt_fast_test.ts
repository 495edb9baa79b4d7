/**
 * The fast paths equal the readable model (chapter 6): for every config
 * option, on `cpu`, `wasm` and `webgpu`, the fused time-major pass
 * (`gpt_fast.ts`, what training and scoring run) gives the logits, loss and
 * gradients of `gpt.ts`'s box-by-box model, and both caches (the tfjs `past`
 * of the fast pass and the WebAssembly {@link FastDecoder}) give the logits
 * of the readable model run on the whole context.
 *
 * Run: deno test -A --import-map tests/offline_import_map.json lib/models/gpt_fast_test.ts
 *
 * Without any WebGPU adapter the webgpu part is skipped with a message,
 * unless LMBOOK_REQUIRE_WEBGPU=1 makes that a failure (CI sets it).
 */
import { assert } from "@std/assert";
import * as tf from "@tensorflow/tfjs";
import { initBackend, webGpuOrSkip } from "../core/backend.ts";
import { Rng } from "../core/random.ts";
import { FastDecoder } from "../decode/fast_decoder.ts";
import type { KVCacheEntry } from "./attention.ts";
import { TransformerLM } from "./transformer.ts";
import { type TransformerConfig, transformerConfig } from "./transformer_config.ts";

/** Largest allowed |fast - readable| / (1 + |readable|), per number: float32 rounding through two layers. */
const TOLERANCE = { logits: 2e-4, loss: 2e-5, grads: 5e-4 };

/** One config per option value, and the modern block with every option at once. */
const VARIANTS: Partial<TransformerConfig>[] = [
  {},
  { normPlacement: "post" },
  { normKind: "rms" },
  { mlp: "swiglu" },
  { activation: "relu" },
  { positions: "sinusoidal" },
  { positions: "rope" },
  { nKVHead: 2 },
  { nKVHead: 1 },
  { bias: false },
  { dropout: 0.2 },
  { causal: false },
  { normKind: "rms", mlp: "swiglu", positions: "rope", bias: false, nKVHead: 2 },
  { normKind: "rms", mlp: "swiglu", positions: "rope", nKVHead: 2, dropout: 0.3 },
];

/** A model whose every weight (biases and gains included) is perturbed away from its initial value. */
function model(over: Partial<TransformerConfig>): TransformerLM {
  const m = new TransformerLM(
    transformerConfig({ nLayer: 2, nHead: 4, nEmbd: 16, blockSize: 8 }, { vocabSize: 11, ...over }),
    { seed: 7 },
  );
  const rng = new Rng(3);
  for (const v of Object.values(m.variables())) {
    tf.tidy(() => {
      const noise = Float32Array.from({ length: v.size }, () => rng.normal(0, 0.3));
      v.assign(tf.add(v, tf.tensor(noise, v.shape)));
    });
  }
  return m;
}

/** The largest |a - b| / (1 + |b|), and where. */
function worst(a: ArrayLike<number>, b: ArrayLike<number>): { err: number; at: number } {
  assert(a.length === b.length, `lengths differ: ${a.length} vs ${b.length}`);
  let err = 0, at = -1;
  for (let i = 0; i < a.length; i++) {
    const e = Math.abs(a[i] - b[i]) / (1 + Math.abs(b[i]));
    if (!(e <= err)) [err, at] = [e, i];
  }
  return { err, at };
}

function check(what: string, got: ArrayLike<number>, want: ArrayLike<number>, tol: number): void {
  const { err, at } = worst(got, want);
  assert(
    err <= tol,
    `${what}: fast and readable differ by ${err.toExponential(2)} (relative) at flat index ${at}: ` +
      `fast ${got[at]}, readable ${want[at]} (tolerance ${tol})`,
  );
}

async function read(t: tf.Tensor): Promise<Float32Array> {
  return new Float32Array(await t.data() as Float32Array);
}

/** Checks every variant on the current backend. */
async function checkBackend(backend: string): Promise<void> {
  const B = 2, T = 6;
  const rng = new Rng(11);
  const rows = Array.from({ length: B * (T + 1) }, () => rng.int(11));
  const seq = Int32Array.from(rows);
  for (const over of VARIANTS) {
    const before = tf.memory().numTensors;
    const m = model(over), name = `${backend} ${JSON.stringify(over)}`;
    const x = tf.tensor2d(seq.filter((_, i) => i % (T + 1) !== T), [B, T], "int32");
    const y = tf.tensor2d(seq.filter((_, i) => i % (T + 1) !== 0), [B, T], "int32");

    // Logits and loss.
    const [fast, slow] = (["fast", "readable"] as const).map((path) =>
      tf.tidy(() => {
        const { logits, loss } = m.forward(x, y, { path });
        return { logits, loss: loss! };
      })
    );
    const readable = await read(slow.logits);
    check(`${name} logits`, await read(fast.logits), readable, TOLERANCE.logits);
    const evalLoss = (await read(slow.loss))[0];
    check(`${name} loss`, await read(fast.loss), await read(slow.loss), TOLERANCE.loss);
    tf.dispose([fast.logits, fast.loss, slow.logits, slow.loss]);

    // Gradients of the loss with respect to every weight.
    const grads = (["fast", "readable"] as const).map((path) =>
      tf.variableGrads(() => m.forward(x, y, { path }).loss!, Object.values(m.variables()))
    );
    for (const v of Object.keys(m.variables())) {
      const id = m.variables()[v].name;
      check(
        `${name} gradient of ${v}`,
        await read(grads[0].grads[id]),
        await read(grads[1].grads[id]),
        TOLERANCE.grads,
      );
    }
    tf.dispose(grads.flatMap((g) => [g.value, ...Object.values(g.grads)]));

    // In training, dropout drops the same units on both paths (one mask per logical shape).
    if ((over.dropout ?? 0) > 0) {
      const train = { training: true, seed: 5 };
      const [fastT, slowT] = (["fast", "readable"] as const).map((path) =>
        tf.tidy(() => {
          const { logits, loss } = m.forward(x, y, { ...train, path });
          return { logits, loss: loss! };
        })
      );
      const dropped = (await read(slowT.loss))[0];
      assert(Math.abs(dropped - evalLoss) > 1e-4, `${name}: training with dropout should change the loss`);
      check(`${name} training logits`, await read(fastT.logits), await read(slowT.logits), TOLERANCE.logits);
      check(`${name} training loss`, await read(fastT.loss), await read(slowT.loss), TOLERANCE.loss);
      const gT = (["fast", "readable"] as const).map((path) =>
        tf.variableGrads(() => m.forward(x, y, { ...train, path }).loss!, Object.values(m.variables()))
      );
      for (const v of Object.keys(m.variables())) {
        const id = m.variables()[v].name;
        check(
          `${name} training gradient of ${v}`,
          await read(gT[0].grads[id]),
          await read(gT[1].grads[id]),
          TOLERANCE.grads,
        );
      }
      // A data-parallel part (the second sequence alone, at rowOffset 1) drops the units the whole batch
      // drops for that sequence, on both paths.
      const whole = (await read(slowT.logits)).subarray(T * 11);
      for (const path of ["fast", "readable"] as const) {
        const part = tf.tidy(() =>
          m.forward(tf.slice(x, [1], [1]), tf.slice(y, [1], [1]), { ...train, path, rowOffset: 1 }).logits
        );
        check(
          `${name} ${path} training logits of the second sequence alone, at rowOffset 1`,
          await read(part),
          whole,
          TOLERANCE.logits,
        );
        part.dispose();
      }
      tf.dispose([fastT.logits, fastT.loss, slowT.logits, slowT.loss]);
      tf.dispose(gT.flatMap((g) => [g.value, ...Object.values(g.grads)]));
    }

    // Cached decoding: the first sequence fed 3 tokens, then one at a time, through both
    // tfjs caches (fast and readable) and the WebAssembly decoder.
    const full = Array.from(seq.subarray(0, T));
    const want = (i: number) => readable.subarray(i * 11, (i + 1) * 11); // readable logits of row 0 at position i
    // (Without the causal mask, an earlier position reads later tokens: no cache reproduces that.)
    for (const path of over.causal === false ? [] : ["fast", "readable"] as const) {
      let past: KVCacheEntry[] = [];
      for (const [from, to] of [[0, 3], [3, 4], [4, 5], [5, 6]]) {
        const step = tf.tensor2d([full.slice(from, to)], [1, to - from], "int32");
        const [logits, ...kv] = tf.tidy(() => {
          const r = m.forward(step, undefined, { past, path });
          return [r.logits, ...r.present!.flatMap((e) => [e.k, e.v])];
        });
        const present = Array.from({ length: kv.length / 2 }, (_, i) => ({
          k: kv[2 * i] as tf.Tensor4D,
          v: kv[2 * i + 1] as tf.Tensor4D,
        }));
        const got = await read(logits);
        check(
          `${name} ${path} KV cache, position ${to - 1}`,
          got.subarray((to - from - 1) * 11),
          want(to - 1),
          TOLERANCE.logits,
        );
        tf.dispose([step, logits, ...past.flatMap((e) => [e.k, e.v])]);
        past = present;
      }
      tf.dispose(past.flatMap((e) => [e.k, e.v]));
    }
    if (over.causal !== false) {
      const dec = await FastDecoder.fromModel(m);
      check(`${name} FastDecoder.feed, position 2`, dec.feed(full.slice(0, 3)), want(2), TOLERANCE.logits);
      for (let t = 3; t < T; t++) {
        check(`${name} FastDecoder.step, position ${t}`, dec.step(full[t]), want(t), TOLERANCE.logits);
      }
    }
    tf.dispose([x, y]);
    m.dispose();
    assert(tf.memory().numTensors === before, `${name}: tensors leaked: ${tf.memory().numTensors - before}`);
  }
}

Deno.test("fast paths equal the readable model: logits, loss, gradients, KV caches (cpu, wasm, webgpu)", async () => {
  await initBackend("cpu");
  await checkBackend("cpu");
  await initBackend("wasm");
  await checkBackend("wasm");
  if (await webGpuOrSkip("the webgpu part of this test")) {
    await initBackend("webgpu");
    await checkBackend("webgpu");
  }
  await initBackend("cpu");
});

/**
 * The library's webgpu product shader (`webgpu_gemm.ts`) against a
 * from-scratch product in JavaScript, for each thing it does as it reads
 * and stores: strides (transposes read in place), batches, summed segments,
 * activations, dropout masks on A, B and C, one-hot rows, a row of ones,
 * a bias, the activation's derivative, a residual and a scale. Sizes are
 * not multiples of the 64×64 tiles or the 16-step of the shared size.
 *
 * Without a WebGPU adapter the test is skipped with a message, unless
 * LMBOOK_REQUIRE_WEBGPU=1 makes that a failure (CI sets it).
 *
 * Run: deno test -A --import-map tests/offline_import_map.json lib/kernels/webgpu_gemm_test.ts
 */
import { assert } from "@std/assert";
import * as tf from "@tensorflow/tfjs";
import { initBackend, webGpuOrSkip } from "../core/backend.ts";
import { Rng } from "../core/random.ts";
import { dropoutMask, dropoutUniforms } from "./dropout.ts";
import { gemm, type GemmOperand, type GemmSpec } from "./webgpu_gemm.ts";

const gelu = (x: number) => 0.5 * x * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (x + 0.044715 * x ** 3)));
const geluSlope = (x: number) => (gelu(x + 1e-4) - gelu(x - 1e-4)) / 2e-4;

/** What the shader should compute, one element at a time (time-major token rows for masks and ids). */
function reference(spec: GemmSpec, data: Map<tf.TensorInfo, Float32Array | Int32Array>, keep: Float32Array) {
  const { M, N, K } = spec, batch = spec.batch ?? 1, S = spec.segments ?? 1, d = spec.dropout!;
  const mask = (r: number, c: number) => keep[((r % d.B) * d.T + Math.floor(r / d.B)) * d.C + c]; // logical (B, T, C)
  const read = (o: GemmOperand, z: number, s: number, i: number, j: number) =>
    data.get(o.t)![(o.off ?? 0) + z * (o.sZ ?? 0) + s * (o.sS ?? 0) + i * o.s0 + j * o.s1];
  const out = new Float32Array(batch * M * N);
  for (let z = 0; z < batch; z++) {
    for (let m = 0; m < M; m++) {
      for (let n = 0; n < N; n++) {
        let acc = 0;
        for (let s = 0; s < S; s++) {
          for (let k = 0; k < K; k++) {
            let a: number;
            if (spec.a.oneHot) {
              const ids = data.get(spec.a.oneHot)!;
              a = ids[(k % d.B) * d.T + Math.floor(k / d.B)] === m ? 1 : 0;
            } else if (spec.a.onesRow && m === M - 1) a = 1;
            else {
              a = read(spec.a, z, s, m, k);
              if (spec.a.act === "relu") a = Math.max(a, 0);
              if (spec.a.act === "gelu") a = gelu(a);
              if (spec.a.mask) a *= mask(m, k);
            }
            let b = read(spec.b, z, s, k, n);
            if (spec.b.mask) b *= mask(k, n);
            acc += a * b;
          }
        }
        if (spec.scale) acc *= data.get(spec.scale)![0];
        if (spec.bias) acc += data.get(spec.bias.t)![(spec.bias.off ?? 0) + z * (spec.bias.sZ ?? 0) + n];
        if (spec.outAct === "relu") acc = Math.max(acc, 0);
        if (spec.outAct === "gelu") acc = gelu(acc);
        const aux = spec.aux && data.get(spec.aux.t)![(spec.aux.off ?? 0) + z * (spec.aux.sZ ?? 0) + m * N + n];
        if (spec.actPrime === "relu") acc *= aux! > 0 ? 1 : 0;
        if (spec.actPrime === "gelu") acc *= geluSlope(aux!);
        if (spec.outMask) acc *= mask(m, n);
        if (spec.residual) acc += aux!;
        out[(z * M + m) * N + n] = acc;
      }
    }
  }
  return out;
}

Deno.test("the webgpu product shader computes every fused variant as a from-scratch product does", async () => {
  if (!(await webGpuOrSkip())) return;
  await initBackend("webgpu");
  const rng = new Rng(4);
  const data = new Map<tf.TensorInfo, Float32Array | Int32Array>();
  const rand = (n: number) => {
    const v = Float32Array.from({ length: n }, () => rng.normal(0, 1));
    const t = tf.tensor1d(v);
    data.set(t, v);
    return t;
  };
  // A (B, T, C) = (3, 23, 67) stream: 69 token rows of 67 channels, and its dropout mask.
  const B = 3, T = 23, C = 67, R = B * T;
  const { seedHash, threshold, scale } = dropoutUniforms(0.3, 99);
  const dropout = { seedHash, threshold, scale, B, T, C, base: 2 * T * C }; // rowOffset 2
  const keep = await dropoutMask([B, T, C], { rate: 0.3, seed: 99, rowOffset: 2 }).data() as Float32Array;
  const idsValues = Int32Array.from({ length: R }, () => rng.int(40));
  const ids = tf.tensor2d(idsValues, [B, T], "int32");
  data.set(ids, idsValues);
  const one = tf.tensor1d([0.7]);
  data.set(one, Float32Array.of(0.7));
  const x = rand(R * C), w = rand(C * 81), xt = rand(2 * C * R), wt = rand(2 * 81 * C), bias = rand(2 * 81);
  const pre = rand(2 * R * 81), seg = rand(3 * R * C), segW = rand(3 * C * 50), y = rand(R * C);
  const cases: [string, GemmSpec][] = [
    ["plain", { M: R, N: 81, K: C, a: { t: x, s0: C, s1: 1 }, b: { t: w, s0: 81, s1: 1 } }],
    ["transposed, batched, bias, GELU, residual", {
      M: R,
      N: 81,
      K: C,
      batch: 2,
      a: { t: xt, s0: 1, s1: R, sZ: R * C },
      b: { t: wt, s0: 1, s1: C, sZ: 81 * C },
      bias: { t: bias, sZ: 81 },
      outAct: "gelu",
      aux: { t: pre, sZ: R * 81 },
      residual: true,
    }],
    ["three segments summed, B read transposed", {
      M: R,
      N: 50,
      K: C,
      segments: 3,
      a: { t: seg, s0: C, s1: 1, sS: R * C },
      b: { t: segW, s0: 1, s1: C, sS: C * 50 },
    }],
    ["A masked (a gradient through dropout), times ReLU' and GELU'", {
      M: R,
      N: 81,
      K: C,
      a: { t: y, s0: C, s1: 1, mask: true },
      b: { t: wt, s0: 1, s1: C },
      aux: { t: pre },
      actPrime: "gelu",
      dropout,
    }],
    ["ReLU'", {
      M: R,
      N: 81,
      K: C,
      a: { t: y, s0: C, s1: 1 },
      b: { t: wt, s0: 1, s1: C },
      aux: { t: pre },
      actPrime: "relu",
    }],
    ["A transposed with ReLU on load and a row of ones, B masked", {
      M: 82,
      N: C,
      K: R,
      a: { t: pre, s0: 1, s1: 81, act: "relu", onesRow: true },
      b: { t: y, s0: C, s1: 1, mask: true },
      dropout,
    }],
    ["one-hot ids, B masked", {
      M: 40,
      N: C,
      K: R,
      a: { t: y, s0: 0, s1: 0, oneHot: ids },
      b: { t: y, s0: C, s1: 1, mask: true },
      dropout,
    }],
    ["C masked then the residual; a scale", {
      M: R,
      N: C,
      K: C,
      a: { t: x, s0: C, s1: 1 },
      b: { t: x, s0: C, s1: 1 },
      outMask: true,
      dropout,
      bias: { t: bias },
      aux: { t: y },
      residual: true,
    }],
    ["scaled by a one-element tensor", {
      M: R,
      N: 81,
      K: C,
      a: { t: x, s0: C, s1: 1 },
      b: { t: w, s0: 81, s1: 1 },
      scale: one,
    }],
  ];
  for (const [what, spec] of cases) {
    const got = gemm(spec) as tf.Tensor;
    const values = await got.data() as Float32Array;
    got.dispose();
    const want = reference({ ...spec, dropout: spec.dropout ?? dropout }, data, keep);
    let worst = 0, at = 0;
    for (let i = 0; i < want.length; i++) {
      const e = Math.abs(values[i] - want[i]) / (1 + Math.abs(want[i]));
      if (!(e <= worst)) [worst, at] = [e, i];
    }
    assert(
      worst < 2e-5 && values.length === want.length,
      `what: ${what}: shader and reference differ by ${worst} at ${at} (${values[at]} vs ${want[at]})`,
    );
  }
  tf.dispose([...data.keys()] as tf.Tensor[]);
  await initBackend("cpu");
});

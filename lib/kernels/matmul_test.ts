/**
 * Our matrix-product kernel (relaxed and plain SIMD builds, the left operand
 * splatted in place or copied broadcast first) against tf.matMul on the cpu
 * backend, for random shapes including sizes that are not multiples of the
 * 6 x 8 block; the fused form (bias, ReLU); the two ways of reading A giving
 * the same bits; products it must leave to XNNPACK; gradients through it; no
 * leaked tensors.
 * Run: deno test -A --import-map tests/offline_import_map.json lib/kernels/matmul_test.ts
 */
import { assert, assertEquals, assertThrows } from "@std/assert";
import * as tf from "@tensorflow/tfjs";
import { initBackend } from "../core/backend.ts";
import { Rng } from "../core/random.ts";
import {
  BROADCAST_COPY_BYTES,
  broadcastCopies,
  broadcastWins,
  installMatMulKernel,
  type MatMulCopy,
  matMulKernelCalls,
  oursWins,
  relaxedSimdAvailable,
  setMatMulCopy,
  setMatMulKernel,
} from "./matmul.ts";
import { RELAXED_MODULE_BYTES } from "./wasm.ts";

await initBackend("wasm");
installMatMulKernel();

function values(n: number, rng: Rng): Float32Array {
  return Float32Array.from({ length: n }, () => rng.normal(0, 1));
}

/** Runs `f` on `backend` with tensors made from the given arrays and shapes; returns the output's values. */
async function on(
  backend: string,
  data: [Float32Array, number[]][],
  f: (...t: tf.Tensor[]) => tf.Tensor,
): Promise<{ values: Float32Array; shape: number[] }> {
  await tf.setBackend(backend);
  return tf.tidy(() => {
    const y = f(...data.map(([v, s]) => tf.tensor(v, s)));
    return { values: y.dataSync() as Float32Array, shape: y.shape };
  });
}

function assertClose(got: Float32Array, want: Float32Array, tol: number, what: string): void {
  assertEquals(got.length, want.length, what);
  let worst = 0, at = -1;
  for (let i = 0; i < got.length; i++) {
    const d = Math.abs(got[i] - want[i]);
    if (!(d <= worst)) [worst, at] = [d, i];
  }
  assert(
    worst <= tol,
    `${what}: |got - want| = ${worst} at index ${at} (got ${got[at]}, want ${want[at]}), tolerance ${tol}`,
  );
}

const builds = (relaxedSimdAvailable() ? ["relaxed", "simd"] : ["simd"]) as ("relaxed" | "simd")[];
const copyModes: Exclude<MatMulCopy, "auto">[] = ["splat", "broadcast"];

/**
 * Runs `f` with our kernel's build and copy set (restoring "auto" after), then checks that it ran exactly one
 * product, copying A exactly when `copy` is "broadcast".
 */
async function withKernel<T>(
  use: { build: "relaxed" | "simd"; copy: Exclude<MatMulCopy, "auto">; what: string },
  f: () => Promise<T>,
): Promise<T> {
  setMatMulKernel(use.build);
  setMatMulCopy(use.copy);
  const calls = matMulKernelCalls(), copied = broadcastCopies();
  let out: T;
  try {
    out = await f();
  } finally {
    setMatMulKernel("auto");
    setMatMulCopy("auto");
  }
  assertEquals(matMulKernelCalls(), calls + 1, `our kernel ran the product: ${use.what}`);
  assertEquals(broadcastCopies(), copied + (use.copy === "broadcast" ? 1 : 0), `A copied as asked: ${use.what}`);
  return out;
}

/**
 * Edge sizes (1, odd, not multiples of 4, 6 or 8) and random ones, plus two training shapes and a larger one whose
 * A (about 420 KB) no longer fits a small second-level cache, with a partial block of rows.
 */
function shapes(rng: Rng): [number, number, number][] {
  const out: [number, number, number][] = [
    [1, 1, 1],
    [1, 7, 9],
    [2, 3, 8],
    [5, 1, 17],
    [6, 8, 16],
    [7, 13, 8],
    [13, 5, 3],
    [11, 4, 33],
    [96, 128, 65],
    [64, 512, 40],
    [14, 777, 70],
    [7, 385, 130],
    [151, 700, 20],
  ];
  for (let i = 0; i < 10; i++) out.push([1 + rng.int(40), 1 + rng.int(40), 1 + rng.int(40)]);
  return out;
}

Deno.test("relaxed SIMD is detected in Deno and the relaxed module validates", () => {
  assertEquals(relaxedSimdAvailable(), true);
  assert(WebAssembly.validate(RELAXED_MODULE_BYTES));
});

for (const build of builds) {
  for (const copy of copyModes) {
    Deno.test(`the ${build} build (A ${copy}) matches tf.matMul on cpu for odd and random shapes`, async () => {
      const rng = new Rng(7);
      for (const [m, k, n] of shapes(rng)) {
        const a = values(m * k, rng), b = values(k * n, rng);
        const want = await on("cpu", [[a, [m, k]], [b, [k, n]]], (x, y) => tf.matMul(x, y));
        const what = `${build}, A ${copy}, [${m}, ${k}] x [${k}, ${n}]`;
        const got = await withKernel(
          { build, copy, what },
          () => on("wasm", [[a, [m, k]], [b, [k, n]]], (x, y) => tf.matMul(x, y)),
        );
        assertEquals(got.shape, [m, n]);
        assertClose(got.values, want.values, 3e-6 * k + 1e-6, what);
      }
    });
  }

  Deno.test(`the ${build} build runs the fused product: bias and ReLU, batch 1, A splatted or copied`, async () => {
    const rng = new Rng(8);
    for (const [m, k, n] of [[1, 3, 5], [9, 17, 12], [30, 64, 129], [13, 600, 75], [97, 1100, 19]]) {
      const a = values(m * k, rng), b = values(k * n, rng), c = values(n, rng);
      for (const activation of ["linear", "relu"] as const) {
        const f = (x: tf.Tensor, y: tf.Tensor, z: tf.Tensor) =>
          tf.fused.matMul({ a: x as tf.Tensor3D, b: y as tf.Tensor3D, bias: z, activation });
        const data: [Float32Array, number[]][] = [[a, [1, m, k]], [b, [1, k, n]], [c, [n]]];
        const want = await on("cpu", data, f);
        for (const copy of copyModes) {
          const what = `${build}, A ${copy}, fused ${activation} [${m}, ${k}, ${n}]`;
          const got = await withKernel({ build, copy, what }, () => on("wasm", data, f));
          assertEquals(got.shape, [1, m, n]);
          assertClose(got.values, want.values, 3e-6 * k + 1e-6, what);
        }
      }
    }
  });
}

for (const build of builds) {
  Deno.test(`the ${build} build runs transposed products (A^T B, A B^T, A^T B^T) for odd shapes`, async () => {
    const rng = new Rng(11);
    for (
      const [m, k, n] of [[1, 1, 1], [5, 7, 3], [13, 9, 17], [6, 16, 8], [40, 33, 65], [11, 530, 70], [131, 800, 19]]
    ) {
      const a = values(m * k, rng), b = values(k * n, rng);
      for (const [ta, tb] of [[true, false], [false, true], [true, true]]) {
        const data: [Float32Array, number[]][] = [[a, ta ? [k, m] : [m, k]], [b, tb ? [n, k] : [k, n]]];
        const f = (x: tf.Tensor, y: tf.Tensor) => tf.matMul(x, y, ta, tb);
        const want = await on("cpu", data, f);
        for (const copy of copyModes) {
          const what = `${build}, A ${copy}, transposeA=${ta} transposeB=${tb} [${m}, ${k}, ${n}]`;
          const got = await withKernel({ build, copy, what }, () => on("wasm", data, f));
          assertEquals(got.shape, [m, n]);
          assertClose(got.values, want.values, 3e-6 * k + 1e-6, what);
        }
      }
    }
  });
}

for (const build of builds) {
  Deno.test(`the ${build} build gives the same bits with A splatted or copied, for random shapes and options`, async () => {
    const rng = new Rng(12);
    for (let t = 0; t < 44; t++) {
      // The last four are larger: A about 250-650 KB (its copy four times that), a partial block of rows.
      const [m, k, n] = t < 40
        ? [1 + rng.int(30), 1 + rng.int(90), 1 + rng.int(150)]
        : [100 + rng.int(80), 600 + rng.int(300), 1 + rng.int(40)];
      const ta = rng.int(2) === 1, tb = rng.int(2) === 1, activation = rng.int(2) === 1 ? "relu" : "linear";
      const data: [Float32Array, number[]][] = [
        [values(m * k, rng), ta ? [k, m] : [m, k]],
        [values(k * n, rng), tb ? [n, k] : [k, n]],
        [values(n, rng), [n]],
      ];
      const f = (x: tf.Tensor, y: tf.Tensor, z: tf.Tensor) =>
        tf.fused.matMul({
          a: x as tf.Tensor2D,
          b: y as tf.Tensor2D,
          transposeA: ta,
          transposeB: tb,
          bias: z,
          activation,
        });
      const what = `${build} [${m}, ${k}, ${n}] transposeA=${ta} transposeB=${tb} ${activation}`;
      const splat = await withKernel({ build, copy: "splat", what }, () => on("wasm", data, f));
      const copied = await withKernel({ build, copy: "broadcast", what }, () => on("wasm", data, f));
      const bits = (v: Float32Array) => new Uint32Array(v.buffer, v.byteOffset, v.length);
      const [x, y] = [bits(splat.values), bits(copied.values)];
      const at = x.findIndex((v, i) => v !== y[i]);
      assertEquals(at, -1, `${what}: value ${at} differs (splat ${splat.values[at]}, copied ${copied.values[at]})`);
    }
  });
}

Deno.test("the copy rule: wide products whose copy fits the budget; setMatMulCopy rejects other values", () => {
  assertEquals(broadcastWins([384, 128, 512]), true);
  assertEquals(broadcastWins([128, 100, 14116]), true);
  assertEquals(broadcastWins([384, 128, 127]), false, "too few panels");
  const k = 128, m = BROADCAST_COPY_BYTES / (16 * k);
  assertEquals(broadcastWins([m, k, 512]), true, "a copy of exactly the budget");
  assertEquals(broadcastWins([m + 1, k, 512]), false, "a copy over the budget");
  assertEquals(broadcastWins([128, 14116, 128]), false, "a long inner size: the copy would not stay in cache");
  assertThrows(() => setMatMulCopy("always" as never), RangeError, "always");
});

Deno.test("under auto, a wide product copies A and a narrow one does not", async () => {
  const rng = new Rng(13);
  for (const [m, k, n, wide] of [[32, 16, 256, true], [32, 16, 40, false]] as const) {
    const data: [Float32Array, number[]][] = [[values(m * k, rng), [m, k]], [values(k * n, rng), [k, n]]];
    const copied = broadcastCopies(), calls = matMulKernelCalls();
    await on("wasm", data, (x, y) => tf.matMul(x, y));
    assertEquals(matMulKernelCalls(), calls + (relaxedSimdAvailable() ? 1 : 0), `[${m}, ${k}, ${n}] ran on ours`);
    assertEquals(broadcastCopies() - copied, relaxedSimdAvailable() && wide ? 1 : 0, `[${m}, ${k}, ${n}] copied A`);
  }
});

Deno.test("batched products stay with XNNPACK and stay right", async () => {
  const rng = new Rng(9);
  const a = values(2 * 5 * 7, rng), b = values(2 * 7 * 3, rng);
  setMatMulKernel("relaxed");
  const before = matMulKernelCalls();
  const data: [Float32Array, number[]][] = [[a, [2, 5, 7]], [b, [2, 7, 3]]];
  const want = await on("cpu", data, (x, y) => tf.matMul(x, y));
  const got = await on("wasm", data, (x, y) => tf.matMul(x, y));
  assertClose(got.values, want.values, 1e-4, "batch 2");
  setMatMulKernel("auto");
  assertEquals(matMulKernelCalls(), before, "the batched product did not run on our kernel");
});

Deno.test("gradients through our kernel match cpu, and no tensor leaks", async () => {
  const rng = new Rng(10);
  const [m, k, n] = [13, 21, 10];
  const a = values(m * k, rng), b = values(k * n, rng);
  const f = (x: tf.Tensor, y: tf.Tensor) => {
    const [ga, gb] = tf.grads((p: tf.Tensor, q: tf.Tensor) => tf.sum(tf.square(tf.matMul(p, q))))([x, y]);
    return tf.concat([ga.flatten(), gb.flatten()]);
  };
  const want = await on("cpu", [[a, [m, k]], [b, [k, n]]], f);
  setMatMulKernel("relaxed");
  const before = matMulKernelCalls();
  const got = await on("wasm", [[a, [m, k]], [b, [k, n]]], f);
  assert(matMulKernelCalls() > before, "the forward product ran on our kernel");
  assertClose(got.values, want.values, 1e-3, "gradients of sum((A B)^2)");
  const x = tf.tensor2d(a, [m, k]), y = tf.tensor2d(b, [k, n]);
  tf.matMul(x, y).dispose();
  const tensors = tf.memory().numTensors;
  for (let i = 0; i < 5; i++) tf.matMul(x, y).dispose();
  assertEquals(tf.memory().numTensors, tensors, "tensor count stays flat");
  tf.dispose([x, y]);
  setMatMulKernel("auto");
});

Deno.test("setMatMulKernel rejects an unknown kernel, and the measured rule needs FMA and 16 rows", () => {
  assertThrows(() => setMatMulKernel("fast" as never), RangeError, "fast");
  assertEquals(oursWins([768, 128, 384], { relaxed: true }), true);
  assertEquals(oursWins([768, 128, 384], { relaxed: false }), false);
  assertEquals(oursWins([15, 128, 384], { relaxed: true }), false);
  assertEquals(oursWins([16, 8, 8], { relaxed: true }), true);
  assertEquals(oursWins([4, 4, 4], { relaxed: false, transposed: true }), true);
});

/**
 * Runs `code` (a module that may import lib by absolute URL) in a fresh Deno process and returns what it printed
 * last, parsed as JSON.
 */
async function inFreshProcess(code: string): Promise<Record<string, unknown>> {
  const file = await Deno.makeTempFile({ suffix: ".ts" });
  try {
    await Deno.writeTextFile(file, code);
    const res = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "--no-lock", "--quiet", file],
      cwd: new URL("../../", import.meta.url).pathname,
      stdout: "piped",
      stderr: "piped",
    }).output();
    const out = new TextDecoder().decode(res.stdout).trim();
    assert(res.success, `the fresh process failed:\n${out}\n${new TextDecoder().decode(res.stderr)}`);
    return JSON.parse(out.split("\n").at(-1)!);
  } finally {
    await Deno.remove(file);
  }
}

Deno.test({
  name:
    "initBackend puts the kernel in place: a fresh process's first product and first gradient run as its later ones",
  ignore: !relaxedSimdAvailable(), // without relaxed SIMD XNNPACK runs every product, first or not
  fn: async () => {
    const lib = (p: string) => new URL(`../${p}`, import.meta.url).href;
    const got = await inFreshProcess(`
      import * as lm from ${JSON.stringify(lib("mod.ts"))};
      import { matMulKernelCalls } from ${JSON.stringify(lib("kernels/matmul.ts"))};
      const tf = lm.tf;
      await lm.initBackend("wasm", { useEnv: false, probeWebGpu: false });
      // The very first op of the process: a product the measured rule gives to our kernel.
      const a = tf.randomNormal([32, 24], 0, 1, "float32", 1), b = tf.randomNormal([24, 16], 0, 1, "float32", 2);
      tf.matMul(a, b).dataSync();
      const firstProductOurs = matMulKernelCalls() === 1;
      const model = new lm.TransformerLM(
        lm.transformerConfig({ nLayer: 1, nHead: 2, nEmbd: 16, blockSize: 16 }, { vocabSize: 23 }),
        { seed: 3 },
      );
      const data = lm.sequenceDataset(Int32Array.from({ length: 400 }, (_, i) => (i * 7) % 23), 16);
      const batch = data.batch(Int32Array.from({ length: 8 }, (_, i) => i * 3));
      const vars = model.variables();
      const bits = () => tf.tidy(() => {
        const { value, grads } = tf.variableGrads(() => model.loss(batch, { training: true, seed: 0 }), Object.values(vars));
        const all = [value, ...Object.values(grads)].map((t) => Array.from(new Uint32Array(new Float32Array(t.dataSync()).buffer)));
        return all.flat();
      });
      const first = bits(), second = bits();
      const differing = first.filter((x, i) => x !== second[i]).length;
      console.log(JSON.stringify({ firstProductOurs, differing, values: first.length }));
    `);
    assertEquals(
      got.firstProductOurs,
      true,
      "the first product of the process went to XNNPACK: the kernel was not in place",
    );
    assert((got.values as number) > 1000, `too few values compared: ${got.values}`);
    assertEquals(got.differing, 0, "the model's first loss and gradients differ in the last bits from its second ones");
  },
});

/**
 * The fused WebAssembly SIMD kernels against plain tfjs ops on the wasm backend.
 * Run: deno test -A --import-map tests/offline_import_map.json lib/kernels/fused_test.ts
 */
import { assert, assertEquals, assertThrows } from "@std/assert";
import * as tf from "@tensorflow/tfjs";
import { initBackend } from "../core/backend.ts";
import { Rng } from "../core/random.ts";
import {
  copyFloats,
  fusedAxpby,
  fusedColSum,
  fusedCrossEntropy,
  fusedCrossEntropyGrad,
  fusedGatherRows,
  fusedGelu,
  fusedLayerNorm,
  fusedLayerNormGrad,
  fusedSoftmaxGrad,
  fusedSumOfSquares,
  fusedTranspose2d,
  SIMD_MODULE_BYTES,
  wasmSimdReady,
} from "./mod.ts";

function randn(shape: number[], seed: number, std = 1): tf.Tensor {
  const rng = new Rng(seed);
  const n = shape.reduce((a, b) => a * b, 1);
  return tf.tensor(Float32Array.from({ length: n }, () => rng.normal(0, std)), shape);
}

function maxDiff(a: tf.Tensor, b: tf.Tensor): number {
  assertEquals(a.shape, b.shape);
  return tf.tidy(() => tf.max(tf.abs(tf.sub(a, b))).dataSync()[0]);
}

Deno.test("the module validates, and the kernels refuse to run off wasm", async () => {
  assert(WebAssembly.validate(SIMD_MODULE_BYTES));
  await initBackend("cpu");
  assertEquals(wasmSimdReady(), false);
  assertThrows(() => fusedGelu(tf.ones([4])), Error, "needs the wasm backend");
});

Deno.test("fused kernels match tfjs ops on wasm", async (t) => {
  await initBackend("wasm");
  assert(wasmSimdReady([4]));
  assertEquals(wasmSimdReady([6]), false, "sizes must be multiples of 4");

  await t.step("x a + y b: bit for bit the three tfjs ops it replaces; one shape or a RangeError", () => {
    for (const [shape, a, b] of [[[4], 0.5, 0.5], [[3, 128], 7 / 12, 5 / 12], [[512, 128], 1, 1 / 3]] as const) {
      tf.tidy(() => {
        const x = randn([...shape], shape.length, 10), y = randn([...shape], 7, 0.01);
        const fused = fusedAxpby(x, y, { a, b }).dataSync(), ops = tf.add(tf.mul(x, a), tf.mul(y, b)).dataSync();
        assertEquals(Array.from(fused), Array.from(ops), `shape [${shape}], a=${a}, b=${b}`);
      });
    }
    tf.tidy(() =>
      assertThrows(() => fusedAxpby(tf.ones([8]), tf.ones([2, 4]), { a: 1, b: 1 }), RangeError, "one shape")
    );
  });

  await t.step("sum of squares: every size (tails of 1-3 floats), many tensors, float64 sums; float32 only", () => {
    const rng = new Rng(11);
    for (const sizes of [[1], [3], [4], [5], [7, 0, 129], [1000, 2, 4099], [128 * 512]]) {
      tf.tidy(() => {
        const arrays = sizes.map((n) => Float32Array.from({ length: n }, () => rng.normal(0, 1) * 10 ** rng.int(4)));
        const tensors = arrays.map((a) => tf.tensor(a));
        let want = 0; // from scratch, in float64
        for (const a of arrays) for (const v of a) want += v * v;
        const got = fusedSumOfSquares(tensors);
        assert(Math.abs(got - want) <= 1e-12 * want, `sizes [${sizes}]: ${got} against ${want}`);
      });
    }
    assertEquals(fusedSumOfSquares([]), 0);
    tf.tidy(() =>
      assertThrows(() => fusedSumOfSquares([tf.ones([4]), tf.ones([4], "int32")]), TypeError, "tensors[1]")
    );
  });

  await t.step("copyFloats: the values dataSync gives, at any offset; clear errors", () => {
    for (const [size, offset] of [[1, 0], [5, 3], [4099, 17], [0, 2]]) {
      tf.tidy(() => {
        const t = randn([size], size + offset);
        const into = new Float32Array(size + offset + 2).fill(-7);
        copyFloats(t, into, offset);
        assertEquals(Array.from(into.subarray(offset, offset + size)), Array.from(t.dataSync()), `size ${size}`);
        assert(into.subarray(0, offset).every((v) => v === -7) && into.subarray(offset + size).every((v) => v === -7));
      });
    }
    tf.tidy(() => assertThrows(() => copyFloats(tf.ones([4]), new Float32Array(5), 2), RangeError, "offset 2"));
    tf.tidy(() => assertThrows(() => copyFloats(tf.ones([4], "int32"), new Float32Array(4)), TypeError, "int32"));
  });

  await t.step("transpose: tiles, edges and stacks", () => {
    for (const shape of [[4, 4], [12, 20], [20, 36], [2, 20, 36], [52, 8]]) {
      tf.tidy(() => {
        const x = randn(shape, shape.length);
        const perm = shape.length === 2 ? [1, 0] : [0, 2, 1];
        assertEquals(maxDiff(fusedTranspose2d(x), tf.transpose(x, perm)), 0, `shape [${shape}]`);
      });
    }
  });

  await t.step("column sums: exactly the documented order (four rows at a time, then one), any row count", () => {
    for (const [rows, C] of [[1, 4], [3, 12], [4, 8], [5, 4], [17, 12], [768, 128]]) {
      tf.tidy(() => {
        const x = randn([rows, C], rows + C, 3) as tf.Tensor2D;
        const v = x.dataSync() as Float32Array;
        const want = new Float32Array(C); // a from-scratch reference of the order the kernel promises
        const f = Math.fround;
        let r = 0;
        for (; r + 4 <= rows; r += 4) {
          for (let c = 0; c < C; c++) {
            let acc = f(want[c] + v[r * C + c]);
            acc = f(acc + v[(r + 1) * C + c]);
            acc = f(acc + v[(r + 2) * C + c]);
            want[c] = f(acc + v[(r + 3) * C + c]);
          }
        }
        for (; r < rows; r++) for (let c = 0; c < C; c++) want[c] = f(want[c] + v[r * C + c]);
        const got = fusedColSum(x);
        assertEquals(got.shape, [C]);
        assertEquals(Array.from(got.dataSync()), Array.from(want), `rows ${rows}, C ${C}`);
        assert(maxDiff(got, tf.sum(x, 0)) < 1e-4 * rows, `rows ${rows}, C ${C}: far from tf.sum`);
      });
    }
  });

  await t.step("gelu and its derivative, including large |x|", () => {
    tf.tidy(() => {
      const x = tf.concat([randn([60], 1, 3), tf.tensor1d([-100, -30, 30, 100])]);
      const [y, d] = fusedGelu(x);
      const g = (v: tf.Tensor) =>
        tf.mul(
          tf.mul(0.5, v),
          tf.add(1, tf.tanh(tf.mul(Math.sqrt(2 / Math.PI), tf.add(v, tf.mul(0.044715, tf.pow(v, 3)))))),
        );
      assert(maxDiff(y, g(x)) < 1e-5, "gelu");
      assert(maxDiff(d, tf.grad((v) => tf.sum(g(v)))(x)) < 1e-4, "derivative");
    });
  });

  await t.step("layer norm forward and backward", () => {
    tf.tidy(() => {
      const x = randn([5, 12], 2, 3) as tf.Tensor2D,
        gamma = randn([12], 3) as tf.Tensor1D,
        beta = randn([12], 4) as tf.Tensor1D;
      const [y, xhat, rstd] = fusedLayerNorm(x, { gamma, beta, eps: 1e-5 });
      const ref = (xx: tf.Tensor, gg: tf.Tensor, bb: tf.Tensor) => {
        const m = tf.moments(xx, -1, true);
        return tf.add(tf.mul(tf.div(tf.sub(xx, m.mean), tf.sqrt(tf.add(m.variance, 1e-5))), gg), bb);
      };
      assert(maxDiff(y, ref(x, gamma, beta)) < 1e-5);
      const dy = randn([5, 12], 5);
      const [dx, dg, db] = fusedLayerNormGrad(dy as tf.Tensor2D, { xhat, rstd, gamma });
      const [gx, gg, gb] = tf.grads((a, b, c) => tf.sum(tf.mul(ref(a, b, c), dy)))([x, gamma, beta]);
      assert(maxDiff(dx, gx) < 1e-4 && maxDiff(dg, gg) < 1e-4 && maxDiff(db, gb) < 1e-4);
    });
  });

  await t.step("softmax gradient, gather, cross-entropy", () => {
    tf.tidy(() => {
      const p = tf.softmax(randn([3, 5, 8], 6)), dp = randn([3, 5, 8], 7);
      const ref = tf.mul(tf.mul(p, tf.sub(dp, tf.sum(tf.mul(dp, p), -1, true))), 0.25);
      assert(maxDiff(fusedSoftmaxGrad(p, { dp, scale: 0.25 }), ref) < 1e-6);
      const table = randn([10, 8], 8) as tf.Tensor2D, ids = tf.tensor1d([9, 0, 3, 3], "int32");
      assertEquals(maxDiff(fusedGatherRows(table, ids), tf.gather(table, ids)), 0);
      const logits = randn([6, 12], 9, 4) as tf.Tensor2D, targets = tf.tensor1d([0, 11, 5, 5, 2, 7], "int32");
      const [e, stats] = fusedCrossEntropy(logits, { targets, storeE: true });
      const [s, mMinusLt] = tf.split(stats, 2, 1);
      const nll = tf.reshape(tf.add(tf.log(s), mMinusLt), [6]);
      const refNll = tf.neg(tf.sum(tf.mul(tf.logSoftmax(logits), tf.oneHot(targets, 12).toFloat()), -1));
      assert(maxDiff(nll, refNll) < 1e-5, "per-row loss");
      const g = fusedCrossEntropyGrad(e, { targets, stats, scale: 0.5 });
      const refG = tf.mul(tf.sub(tf.softmax(logits), tf.oneHot(targets, 12).toFloat()), 0.5);
      assert(maxDiff(g, refG) < 1e-6, "gradient");
    });
  });
  await initBackend("cpu");
});

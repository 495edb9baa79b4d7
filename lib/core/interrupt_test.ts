// Run: deno test -A --import-map tests/offline_import_map.json lib/core/interrupt_test.ts
import { assert, assertEquals, assertRejects } from "@std/assert";
import * as tf from "./tf.ts";
import { engineMark, InterruptedError, LoopGuard, nextTask, restoreEngine } from "./interrupt.ts";

// deno-lint-ignore no-explicit-any
const engineState = () => (tf.engine() as any).state;

/** `p`, or a failure after `ms` (a guard that misses a dead loop would otherwise hang the test). */
function within<T>(p: Promise<T>, ms = 10_000): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`not settled within ${ms} ms: the dead loop was not noticed`)), ms);
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

Deno.test("restoreEngine: closes the tidy scopes and the gradient tape a terminated step left open, and frees their tensors", async () => {
  await tf.setBackend("cpu");
  const w = tf.variable(tf.ones([3]));
  const mark = engineMark(), before = tf.memory().numTensors;
  // What a step stopped inside `tf.variableGrads(() => tf.tidy(...))` leaves: two open scopes and a live tape.
  const engine = tf.engine();
  engine.startScope("step");
  // deno-lint-ignore no-explicit-any
  (engine as any).startTape();
  engine.startScope("forward");
  const y = tf.sum(tf.mul(w, tf.scalar(2))); // recorded on the tape, which keeps copies of its inputs
  assert(!y.isDisposed && engineState().activeTape.length > 0);
  assertEquals(restoreEngine(mark), 2);
  assertEquals(tf.memory().numTensors, before, "tensors of the stopped step are left");
  assertEquals([engineState().scopeStack.length, engineState().gradientDepth], [mark.scopes, 0]);
  assertEquals(engineState().activeTape, null);
  // The next step works, and is not recorded on a dead tape.
  const g = tf.grad((x: tf.Tensor) => tf.sum(tf.square(x)))(w);
  assertEquals(Array.from(g.dataSync()), [2, 2, 2]);
  assertEquals(restoreEngine(mark), 0); // nothing left open: nothing to do
  // Stopped in the backward pass: the forward pass is over (depth 0), the tape and the copies it keeps are not.
  engine.startScope("step");
  // deno-lint-ignore no-explicit-any
  (engine as any).startTape();
  tf.sum(tf.mul(w, tf.scalar(3)));
  // deno-lint-ignore no-explicit-any
  (engine as any).endTape();
  engine.startScope("backward");
  assertEquals(restoreEngine(mark), 2);
  assertEquals(tf.memory().numTensors, before + 1, "the copies a tape keeps are left"); // (+ g)
  assertEquals(engineState().activeTape, null);
  tf.dispose([g, w]);
});

Deno.test("LoopGuard: a loop that ends, or fails, settles as it would without the guard", async () => {
  const guard = new LoopGuard({ repair: () => "never", everyMs: 1 });
  let i = 0;
  const loop = async () => {
    for (; i < 50; i++) {
      guard.beat();
      const t = performance.now();
      while (performance.now() - t < 1) { /* a millisecond of work between awaits */ }
      await guard.wait(i % 2 ? nextTask() : Promise.resolve());
    }
    return i;
  };
  // Checked every millisecond, from a timer, while the loop's continuations come from messages: no false alarm.
  assertEquals(await guard.watch(loop()), 50);
  assert(!guard.interrupted);
  const failing = new LoopGuard({ repair: () => "never", everyMs: 1 });
  const err = await assertRejects(() => failing.watch(Promise.reject(new RangeError("loss became NaN"))));
  assert(err instanceof RangeError && !(err instanceof InterruptedError));
});

Deno.test("LoopGuard: a loop stopped between two of its awaits is repaired, and the caller told where", async () => {
  const repairs: string[] = [];
  const guard = new LoopGuard({ repair: () => (repairs.push("repaired"), "stopped at step 3"), everyMs: 5 });
  // As after Jupyter's Stop: the loop's code is gone, its promise never settles, and it is at none of its awaits.
  const err = await assertRejects(() => within(guard.watch(new Promise<never>(() => {}))), InterruptedError);
  assertEquals(err.message, "stopped at step 3");
  assertEquals(err.name, "Interrupted");
  assertEquals(repairs, ["repaired"]);
  assert(guard.interrupted);
});

Deno.test("LoopGuard: a loop stopped inside code it awaits is found by a garbage collection; a live wait is not", async () => {
  // Stopped inside a nested async function: the loop is "at an await" for ever, and nothing can resume it.
  const dead = new LoopGuard({ repair: () => "stopped inside", everyMs: 20, quietMs: 200 });
  const loop = async () => {
    dead.beat();
    await dead.wait(new Promise(() => {})); // (no one holds its resolve: as a continuation a stop dropped)
  };
  const err = await assertRejects(() => within(dead.watch(loop())), InterruptedError);
  assertEquals(err.message, "stopped inside");
  // A loop that waits on something still on its way (a timer holds it) is alive: left alone.
  const live = new LoopGuard({ repair: () => "wrongly stopped", everyMs: 20, quietMs: 100 });
  const waits = async () => {
    await live.wait(new Promise((r) => setTimeout(r, 800)));
    return "done";
  };
  assertEquals(await live.watch(waits()), "done");
  assert(!live.interrupted);
});

Deno.test("LoopGuard: a repair that fails still ends the loop, saying so", async () => {
  const guard = new LoopGuard({
    repair: () => {
      throw new Error("disk full");
    },
    everyMs: 5,
  });
  const err = await assertRejects(() => within(guard.watch(new Promise<never>(() => {}))), InterruptedError);
  assertEquals(err.message, "stopped; putting things back failed: disk full");
});

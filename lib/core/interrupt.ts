/**
 * Long loops that Jupyter's Stop button stops cleanly (chapter 3's trainer,
 * chapter 2's scoring).
 *
 * With `"interrupt_mode": "message"` in its kernelspec (`deno task lab`
 * registers it so), Deno's Jupyter kernel answers Stop (Interrupt) by
 * terminating the JavaScript that is running: V8 ends it between any two
 * statements, or inside a WebAssembly kernel, with nothing that code can
 * catch (no `catch`, no `finally`), and drops the promise continuations
 * queued behind it. The kernel keeps its variables, but a loop that awaits
 * between its steps (to draw its progress bar) leaves three things behind:
 *
 * - the cell that awaited the loop never settles: its promise can no longer
 *   resolve, and the kernel stays busy until V8's garbage collector happens
 *   to collect it (measured with Deno 2.9.6: after 30 s, or not within two
 *   minutes);
 * - `tf.tidy` scopes and a gradient tape stay open in TensorFlow.js's
 *   engine, so the tensors of the step that was running are never freed
 *   and later ops would be recorded on the dead tape;
 * - whatever the loop was changing (a model's weights, an optimiser's
 *   moments) may be half changed.
 *
 * A {@link LoopGuard} notices the death. The loop marks each of its `await`s
 * ({@link LoopGuard.wait}); a check that finds it at none of them, and still
 * at none without having moved a task later, has found dead code (live code
 * at none of its awaits is running, or is about to run, and has moved by
 * then). A loop that died inside code it called (a nested `async` function)
 * is found by a garbage collection that collects its promise (Deno allows one
 * through `node:v8`). The guard then closes the engine's open scopes and tape
 * (freeing their tensors), runs the loop's own repair (the trainer puts its
 * model back to the latest completed step), and rejects the loop's promise
 * with an {@link InterruptedError} that says where it stopped: the cell
 * reports it, and the kernel is idle again.
 *
 * Where the checks run matters. Deno 2.9.6 re-arms the termination when it
 * ends a call it made into JavaScript with a `TryCatch` (a timer's callback,
 * a promise continuation run between two timers): no JavaScript runs again
 * until the next cell, which never comes, since the kernel is still waiting
 * for this one (measured: busy for minutes, timers and all). Continuations
 * run after a message or an I/O result are left alone. So the checks run in
 * the handler of a message that a small worker sends every 200 ms (started
 * once, in the Deno kernel only), a loop yields with {@link nextTask} (a
 * message) rather than a timer, and the repair runs after one too. Stopped
 * anywhere else (inside a timer's callback), the kernel can still be stuck:
 * restart it, and the run resumes from its last save.
 *
 * @module
 */
import * as tf from "./tf.ts";
import { platform } from "./platform.ts";

/**
 * What a loop stopped by Jupyter's Stop button rejects with (chapter 3): the
 * message says where it stopped and what was kept.
 */
export class InterruptedError extends Error {
  /**
   * An error for a loop that Jupyter's Stop ended.
   * @param message where the loop stopped and what it kept.
   */
  constructor(message: string) {
    super(message);
    this.name = "Interrupted";
    this.stack = `${this.name}: ${message}`; // the kernel shows the stack: the guard's timer is no help to a reader
  }
}

/** The state of TensorFlow.js's engine that a terminated loop can leave open (see {@link engineMark}). */
export interface EngineMark {
  /** Open `tf.tidy` scopes. */
  scopes: number;
  /** Nested gradient computations (a tape is recorded while above 0). */
  gradientDepth: number;
  /** Nested kernel calls. */
  kernelDepth: number;
  /** The engine's stack of data-move counters. */
  moves: number;
}

// deno-lint-ignore no-explicit-any
type EngineState = any; // tfjs's EngineState is not exported

function engineState(): EngineState {
  return (tf.engine() as unknown as { state: EngineState }).state;
}

/**
 * The engine's open scopes and gradient depth now (chapter 3), to give to
 * {@link restoreEngine} if the code that follows is terminated.
 * @returns the mark.
 */
export function engineMark(): EngineMark {
  const s = engineState();
  return {
    scopes: s.scopeStack.length,
    gradientDepth: s.gradientDepth,
    kernelDepth: s.kernelDepth,
    moves: s.numDataMovesStack.length,
  };
}

/**
 * Closes what terminated code left open in TensorFlow.js's engine since
 * `mark` (chapter 3): each `tf.tidy` scope is ended as `tf.tidy` would have
 * ended it (its tensors freed, those it kept kept), and a gradient tape is
 * dropped with the tensors it saved.
 *
 * @param mark what {@link engineMark} returned before the code ran.
 * @returns the number of scopes closed.
 *
 * @example
 * ```ts
 * import * as tf from "@tensorflow/tfjs";
 * import { assertEquals } from "@std/assert";
 * import { engineMark, restoreEngine } from "./interrupt.ts";
 * const mark = engineMark(), before = tf.memory().numTensors;
 * tf.engine().startScope(); // as a tf.tidy that never returned
 * tf.ones([3]).square();
 * assertEquals(restoreEngine(mark), 1);
 * assertEquals(tf.memory().numTensors, before);
 * ```
 */
export function restoreEngine(mark: EngineMark): number {
  const s = engineState(), engine = tf.engine();
  let closed = 0;
  while (s.scopeStack.length > mark.scopes) {
    engine.endScope();
    closed++;
  }
  if (s.numDataMovesStack.length > mark.moves) s.numDataMovesStack.length = mark.moves;
  s.kernelDepth = mark.kernelDepth;
  if (s.gradientDepth > mark.gradientDepth) s.gradientDepth = mark.gradientDepth;
  // A tape at depth 0 is one a gradient computation stopped in its backward pass was still using: the copies
  // of the forward pass's tensors it kept are freed there, and would never be otherwise.
  if (s.gradientDepth === 0 && s.activeTape) {
    for (const node of s.activeTape) for (const t of node.saved ?? []) t.dispose();
    s.activeTape = null;
  }
  return closed;
}

/**
 * Waits for a new task of the event loop that is not a timer's (a message
 * through a `MessageChannel`; a timer where there is none) (chapter 3).
 *
 * Code run by a timer is a poor place to be stopped: Deno 2.9 runs the
 * callbacks of timers that are due together in one call, with the promise
 * continuations between them, and if Stop ends that call it arms no timer
 * again, so no `setTimeout` or `setInterval` fires any more (the kernel then
 * stays busy, and nothing can notice the stop). A long loop that yields with
 * this function instead, and a {@link LoopGuard}'s repair, which runs in
 * such a task, keep the timers alive.
 *
 * @returns a promise that resolves in the new task.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { nextTask } from "./interrupt.ts";
 * const order: string[] = [];
 * const done = nextTask().then(() => order.push("task"));
 * await Promise.resolve().then(() => order.push("microtask"));
 * await done;
 * assertEquals(order, ["microtask", "task"]);
 * ```
 */
export function nextTask(): Promise<void> {
  if (typeof MessageChannel !== "function") return new Promise((resolve) => setTimeout(resolve, 0));
  return new Promise((resolve) => {
    const { port1, port2 } = new MessageChannel();
    port2.onmessage = () => {
      port1.close();
      port2.close();
      resolve();
    };
    port1.postMessage(null);
  });
}

let testTimerMs: number | undefined;

/**
 * Makes every {@link LoopGuard} created from now on check every `ms`
 * milliseconds with a timer of its own, outside Deno's Jupyter kernel too
 * (tests: a loop's death is simulated there by a promise that never settles).
 * @param ms the interval, or undefined for the default (see {@link LoopGuardOptions.everyMs}).
 */
export function setGuardTimer(ms: number | undefined): void {
  testTimerMs = ms;
}

/** The checks of the guards watching a loop now (see {@link LoopGuard}). */
const watching = new Set<() => void>();
let waker: Worker | null = null;

/**
 * The guards' clock in Deno's Jupyter kernel (see the module's notes): a
 * worker that sends a message every 200 ms, whose handler runs the checks.
 * Started by the first guard, for the kernel's life.
 * @returns whether the clock runs.
 */
function startWaker(): boolean {
  if (waker) return true;
  if (platform().name !== "deno" || !platform().jupyter()) return false; // no Stop button to watch for
  try {
    const script = new Blob(["setInterval(() => postMessage(0), 200);"], { type: "text/javascript" });
    waker = new Worker(URL.createObjectURL(script), { type: "module" });
    waker.onmessage = () => {
      for (const check of watching) check();
    };
    return true;
  } catch {
    return false;
  }
}

let gcFunction: (() => void) | null | undefined;

/**
 * A function that runs a full garbage collection, where the runtime allows one
 * (Deno: through `node:v8` and `node:vm`); null elsewhere (a browser).
 * @returns the function, or null.
 */
async function collector(): Promise<(() => void) | null> {
  if (gcFunction !== undefined) return gcFunction;
  gcFunction = null;
  try {
    // Specifiers built at run time: a browser bundle must not try to resolve them.
    const node = (name: string) => import(["node", name].join(":"));
    const [v8, vm] = await Promise.all([node("v8"), node("vm")]);
    v8.setFlagsFromString("--expose-gc");
    const gc = vm.runInNewContext("gc");
    if (typeof gc === "function") gcFunction = gc;
  } catch { /* no collector: deaths inside nested calls wait for V8's own collections */ }
  return gcFunction ?? null;
}

/** How far some watched code has got: the awaits it is at, and a count of every step it took. */
interface Progress {
  /** Awaits of its own that it is at now. */
  waiting: number;
  /** Awaits entered and left, and beats: a live loop that runs at all changes it. */
  moves: number;
}

/** Marks an await of watched code (see {@link LoopGuard.wait}). */
async function awaitFor<T>(progress: Progress, p: T | PromiseLike<T>): Promise<T> {
  progress.waiting++;
  progress.moves++;
  try {
    return await p;
  } finally {
    progress.waiting--;
    progress.moves++;
  }
}

/**
 * Whether watched code is dead: at none of its awaits now, and still at none,
 * without a move, a task later. (At none of its awaits, live code is either
 * running, and nothing else can, or its continuation is queued behind the
 * code asking, which a message handler can be; a task later it has moved.)
 */
async function stoppedBetweenAwaits(progress: Progress): Promise<boolean> {
  if (progress.waiting !== 0) return false;
  const moves = progress.moves;
  await nextTask();
  return progress.waiting === 0 && progress.moves === moves;
}

/** Options of {@link LoopGuard}. */
export interface LoopGuardOptions {
  /**
   * Puts things right once the loop is found dead (after the engine's open
   * scopes are closed) and returns the message of the {@link InterruptedError}
   * (where the loop stopped, what was kept). It may be stopped in turn (a
   * second Stop): it then runs again from the start, so it must be safe to
   * repeat, and it marks each of its awaits with `wait`, as the loop does
   * with {@link LoopGuard.wait}.
   */
  repair: (wait: <T>(p: T | PromiseLike<T>) => Promise<T>) => string | Promise<string>;
  /**
   * Check every this many milliseconds with a timer of its own (for tests). By
   * default the guard checks only in Deno's Jupyter kernel, the one place a
   * Stop button ends code, and there with its worker's messages (see the
   * module's notes), never a timer.
   */
  everyMs?: number;
  /**
   * Milliseconds without a {@link LoopGuard.beat} after which a loop waiting
   * in code it called is checked by a garbage collection (default 1000).
   */
  quietMs?: number;
}

/**
 * Watches one run of a long loop for Jupyter's Stop (chapter 3; see the
 * module's notes): create it when the loop starts, mark every `await` of the
 * loop's own code with {@link LoopGuard.wait}, call {@link LoopGuard.beat}
 * as it progresses, and return {@link LoopGuard.watch} of the loop's promise.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { LoopGuard } from "./interrupt.ts";
 * const guard = new LoopGuard({ repair: () => "stopped" });
 * const loop = async () => {
 *   let sum = 0;
 *   for (let i = 0; i < 3; i++) {
 *     sum += i;
 *     guard.beat();
 *     await guard.wait(new Promise((r) => setTimeout(r, 0)));
 *   }
 *   return sum;
 * };
 * assertEquals(await guard.watch(loop()), 3); // a loop that ends is untouched
 * ```
 */
export class LoopGuard {
  #options: LoopGuardOptions & { quietMs: number };
  #mark = engineMark();
  #progress: Progress = { waiting: 0, moves: 0 };
  #seenMoves = -1;
  #quietSince = performance.now();
  #loop: WeakRef<Promise<unknown>> | null = null;
  #settled = false;
  #repair: (Progress & { done: boolean }) | null = null;
  #resolve: ((value: unknown) => void) | null = null;
  #reject: ((e: Error) => void) | null = null;
  #checkingSince = -Infinity;
  #out: Promise<unknown> | null = null;
  #tick = () => void this.#check();
  #timer: ReturnType<typeof setInterval> | undefined;

  /**
   * Starts watching (until the loop settles).
   * @param options the repair and the checks' clock.
   */
  constructor(options: LoopGuardOptions) {
    this.#options = { quietMs: 1000, ...options };
    const everyMs = options.everyMs ?? testTimerMs;
    if (everyMs !== undefined) this.#timer = setInterval(this.#tick, everyMs);
    else if (startWaker()) watching.add(this.#tick);
  }

  /** Whether the loop was found dead (its repair has started). */
  get interrupted(): boolean {
    return this.#repair !== null;
  }

  /**
   * Marks an `await` of the loop's own code: `await guard.wait(p)`.
   * @param p what the loop awaits.
   * @returns p's value.
   */
  wait<T>(p: T | PromiseLike<T>): Promise<T> {
    return awaitFor(this.#progress, p);
  }

  /** Says the loop made progress (a step, a chunk). */
  beat(): void {
    this.#progress.moves++;
  }

  /**
   * The promise to hand to the caller: the loop's own result, or an
   * {@link InterruptedError} once the loop was found dead and repaired.
   * @param loop the loop's promise.
   * @returns a promise that settles as the loop does, or with the interruption.
   */
  watch<T>(loop: Promise<T>): Promise<T> {
    // Held weakly, and by no closure made here: a dead loop's promise must stay collectable.
    this.#loop = new WeakRef(loop);
    const out = new Promise<T>((resolve, reject) => {
      this.#resolve = resolve as (value: unknown) => void;
      this.#reject = reject;
    });
    follow(loop, this);
    this.#out = out;
    return out;
  }

  /** The loop ended by itself (see {@link follow}). */
  settle(value: unknown, error?: unknown, failed = false): void {
    if (this.#settled) return;
    this.#stop();
    if (failed) this.#reject?.(error as Error);
    else this.#resolve?.(value);
  }

  #stop(): void {
    this.#settled = true;
    clearInterval(this.#timer);
    watching.delete(this.#tick);
  }

  async #check(): Promise<void> {
    if (this.#settled) return this.#stop();
    // (a check whose continuation a stop dropped never ends: after a while, check anew)
    if (performance.now() - this.#checkingSince < 10_000) return;
    this.#checkingSince = performance.now();
    try {
      await this.#checkOnce();
    } finally {
      this.#checkingSince = -Infinity;
    }
  }

  async #checkOnce(): Promise<void> {
    const repair = this.#repair;
    if (repair) {
      // A repair stopped by a second Stop is at none of its awaits for good: start it again.
      if (!repair.done && await stoppedBetweenAwaits(repair) && this.#repair === repair) this.#startRepair();
      return;
    }
    const progress = this.#progress;
    if (progress.moves !== this.#seenMoves) {
      this.#seenMoves = progress.moves;
      this.#quietSince = performance.now();
    }
    let dead = await stoppedBetweenAwaits(progress);
    if (!dead && this.#loop && performance.now() - this.#quietSince >= this.#options.quietMs) {
      this.#quietSince = performance.now();
      const gc = await collector();
      if (gc && !this.#settled) {
        gc();
        dead = this.#loop.deref() === undefined; // collected: nothing can resume the loop any more
      }
    }
    if (dead && !this.#settled && !this.#repair) this.#startRepair();
  }

  /** Starts the repair in a task of its own, not in the timer's (see {@link nextTask}). */
  #startRepair(): void {
    const state = { waiting: 0, moves: 0, done: false }, loopMoves = this.#progress.moves;
    this.#repair = state;
    awaitFor(state, nextTask()).then(() => this.#runRepair(state, loopMoves));
  }

  async #runRepair(state: Progress & { done: boolean }, loopMoves: number): Promise<void> {
    // Nothing is undone for a loop that moved since it was found dead (a third look, a task later still).
    if (this.#progress.moves !== loopMoves || this.#settled) {
      if (this.#repair === state) this.#repair = null;
      return;
    }
    restoreEngine(this.#mark);
    let message: string;
    try {
      message = await this.#options.repair((p) => awaitFor(state, p));
    } catch (e) {
      message = `stopped; putting things back failed: ${e instanceof Error ? e.message : e}`;
    }
    if (this.#repair !== state) return; // (a newer attempt took over)
    state.done = true;
    // A cell killed before it could await the loop must not see an unhandled interruption (other errors still are).
    this.#out?.catch(() => {});
    this.settle(undefined, new InterruptedError(message), true);
  }
}

/** Hands a loop's outcome to its guard (a function of its own, so no closure of `watch` holds the loop). */
function follow(loop: Promise<unknown>, guard: LoopGuard): void {
  loop.then((value) => guard.settle(value), (error) => guard.settle(undefined, error, true));
}

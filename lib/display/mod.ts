/**
 * The display layer (chapter 0): rich notebook outputs (`display.ts`), plots
 * with plotly.js (`plot.ts`, with the width fit of `plot_fit.ts`) and progress
 * bars (`progress.ts`).
 *
 * It sits just above core, below everything that computes: it imports nothing
 * from the other layers, and the layers that run long loops use it (evaluation
 * in `lm/` shows a progress bar, the trainer in `train/` a progress bar and a
 * loss curve). Putting it at the top would make those imports run back up.
 *
 * @module
 */
export * from "./display.ts";
export * from "./plot.ts";
export * from "./progress.ts";

/**
 * Training curves (chapter 3): the train and validation losses of a
 * {@link TrainHistory} as one line chart.
 *
 * @module
 */
import { type ChartOptions, type Figure, lineChart } from "../display/plot.ts";
import type { TrainHistory } from "./train.ts";

/** Options of {@link trainingCurves}. */
export interface TrainingCurvesOptions extends ChartOptions {
  /** Plot `"perplexity"` (default, on a log axis) or `"loss"` (nats). */
  metric?: "perplexity" | "loss";
  /** The x axis: `"epoch"` (default) or `"step"`. */
  x?: "epoch" | "step";
}

/**
 * The training and validation curves of one or more runs, as a line chart to
 * pass to `show` (chapter 3).
 *
 * @param runs one history, or several by label (e.g. `{ rnn: h1, lstm: h2 }`).
 * @param options the metric, the x axis, and any chart option (title, size...).
 * @returns the figure: for each run, its training curve (running means) and
 * its validation curve.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { trainingCurves } from "./curves.ts";
 * import { type TrainHistory } from "./train.ts";
 * const h = { train: [{ step: 10, epoch: 0.5, loss: 2, perplexity: 7.4, lr: 1e-3, gradNorm: 1, seconds: 1 }],
 *   val: [], steps: 10, examples: 640, stopReason: "steps", restoredBest: false, seconds: 1,
 *   examplesPerSecond: 640, workers: 1, workersReason: "one worker was requested" } as TrainHistory;
 * assertEquals(trainingCurves(h).data.length, 2);
 * ```
 */
export function trainingCurves(
  runs: TrainHistory | Record<string, TrainHistory>,
  options: TrainingCurvesOptions = {},
): Figure {
  const metric = options.metric ?? "perplexity", xKey = options.x ?? "epoch";
  const named: Record<string, TrainHistory> = "train" in runs && Array.isArray(runs.train)
    ? { "": runs as TrainHistory }
    : runs as Record<string, TrainHistory>;
  const series = Object.entries(named).flatMap(([label, h]) => {
    const prefix = label ? `${label}: ` : "";
    return [
      {
        x: h.train.map((r) => r[xKey]),
        y: h.train.map((r) => r[metric]),
        name: `${prefix}training`,
      },
      { x: h.val.map((r) => r[xKey]), y: h.val.map((r) => r[metric]), name: `${prefix}validation` },
    ];
  });
  return lineChart(series, {
    title: metric === "perplexity" ? "Perplexity during training" : "Loss during training",
    xTitle: xKey === "epoch" ? "epochs (passes over the training data)" : "step",
    yTitle: metric === "perplexity" ? "perplexity" : "loss (nats per token)",
    logY: metric === "perplexity",
    ...options,
  });
}

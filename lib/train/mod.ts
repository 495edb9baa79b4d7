/**
 * The training layer (chapter 3, shared with chapters 4-6): the trainer loop
 * (`train.ts`), its datasets (`dataset.ts`), AdamW (`adamw.ts`) and SGD (`sgd.ts`),
 * learning-rate schedules and gradient clipping (`schedule.ts`), checkpoints
 * (`checkpoint.ts`), model files (`model_file.ts`), runs that resume after a stop (`resume.ts`), loss curves
 * (`curves.ts`) and data parallelism over several cores (`shards.ts`, `data_parallel.ts`, `choose_workers.ts`), for any model that
 * implements {@link TrainableModel}.
 *
 * @module
 */
export * from "./dataset.ts";
export * from "./adamw.ts";
export * from "./sgd.ts";
export * from "./optimizer.ts";
export * from "./schedule.ts";
export * from "./train.ts";
export * from "./checkpoint.ts";
export {
  type CheckpointOptions,
  fingerprintDiff,
  type KeptRun,
  type KeptTrainer,
  loadRun,
  runFingerprint,
  RunKeeper,
  type RunPosition,
  type SavedRun,
  saveRun,
  type StepAt,
} from "./resume.ts";
export * from "./curves.ts";
export * from "./model_file.ts";
export { DataParallel, type DataParallelOptions, type ModelSpec } from "./data_parallel.ts";
export { chooseWorkers, type ChooseWorkersOptions, type WorkersChoice } from "./choose_workers.ts";
export { defaultShards, type ShardResult, shardSizes } from "./shards.ts";

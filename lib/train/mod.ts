/**
 * The training layer (chapter 3, shared with chapters 4-6): the trainer loop,
 * AdamW, learning-rate schedules, gradient clipping, checkpoints and loss
 * curves, for any model that implements {@link TrainableModel}.
 *
 * @module
 */
export * from "./train.ts";

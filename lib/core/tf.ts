/**
 * TensorFlow.js, pinned: the one place lib names the package and its
 * version, with a full `npm:` specifier, so that lib imports from any file on
 * disk with no configuration of its own (chapter 0).
 *
 * @module
 */
export * from "npm:@tensorflow/tfjs@4.22.0";

/**
 * The checked claims of the notebooks' prose (tools/notebooks/prose_claims.ts): for each chapter, each sentence marked
 * `<!--claim:ID-->`, the check of what it says against the executed notebook's outputs. A check reads what the reader
 * sees (tables as shown, printed lines, computed prose, plotted series) and names the numbers it read. The checks
 * live by part of the book: tools/notebooks/prose_claims_ngram.ts (chapters 0 to 2) and tools/notebooks/prose_claims_neural.ts
 * (chapters 3 to 8; a new chapter adds its entry there, under its notebook's name).
 *
 * @module
 */
import type { ClaimBook } from "./prose_claims.ts";
import { NEURAL_CLAIMS } from "./prose_claims_neural.ts";
import { NGRAM_CLAIMS } from "./prose_claims_ngram.ts";

/** Every chapter's checked claims, by notebook name (`02_perplexity`) and claim id. */
export const CLAIM_BOOK: ClaimBook = { ...NGRAM_CLAIMS, ...NEURAL_CLAIMS };

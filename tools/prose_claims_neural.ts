/**
 * The checked claims of chapters 3 to 8 (neural models, attention, transformers, decoding, scale): see
 * tools/prose_claims.ts and tools/prose_claims_book.ts.
 *
 * @module
 */
import type { ClaimBook } from "./prose_claims.ts";

/** The checked claims of chapters 3 to 8. */
export const NEURAL_CLAIMS: ClaimBook = {};

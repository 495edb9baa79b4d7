/**
 * The noisy channel (chapter 2): a language model at work in spelling
 * correction.
 *
 * Shannon's picture of communication: an intended message y goes through a
 * noisy channel and comes out as x. To recover y from x, pick the y with the
 * highest posterior, which by Bayes' rule is
 *
 *     argmax_y p(y | x) = argmax_y p(x | y) p(y)
 *
 * a **channel model** p(x | y) (how likely is this typing of that sentence?)
 * times a **language model** p(y), the prior. Kernighan, Church and Gale
 * (1990), "A spelling correction program based on a noisy channel model",
 * applied it to typos with candidates within one edit of the typed word.
 *
 * The channel here is the simple one of {@link channelLogProb}: a word is
 * typed right with probability 1 - rate, and every single edit of it is
 * equally likely otherwise (not a confusion matrix per letter as in
 * Kernighan et al.). The decoder ({@link decodeLattice}) takes, for every
 * position of the sentence, the candidates with their channel scores, and
 * finds the sentence with the best channel + prior score, by a beam search
 * over the lattice of candidates that merges hypotheses ending in the same
 * n - 1 words (exact Viterbi with an unbounded beam).
 *
 * @module
 */
import type { LanguageModel } from "../lm/lm.ts";
import { EOS_ID, UNK_ID, type Vocabulary } from "../data/vocab.ts";
import { CandidateIndex, editDistance, isCorrectable } from "./spelling.ts";

/** Options of {@link channelLogProb}. */
export interface ChannelOptions {
  /** The probability that a word is typed wrong, in (0, 1) (default 0.1). */
  rate?: number;
  /** The number of letters an insertion or substitution chooses from (default 26). */
  alphabetSize?: number;
}

function checkChannel(options: ChannelOptions): { rate: number; alphabetSize: number } {
  const rate = options.rate ?? 0.1, alphabetSize = options.alphabetSize ?? 26;
  if (!(rate > 0 && rate < 1)) throw new RangeError(`rate must be a number in (0, 1): rate=${rate}`);
  if (!Number.isInteger(alphabetSize) || alphabetSize < 2) {
    throw new RangeError(`alphabetSize must be an integer >= 2: alphabetSize=${alphabetSize}`);
  }
  return { rate, alphabetSize };
}

/**
 * How many different single edits a word of `length` letters has, over an
 * alphabet of `a` letters: `length` deletions, `length - 1` transpositions,
 * `length (a - 1)` substitutions and `(length + 1) a` insertions.
 */
function singleEdits(length: number, a: number): number {
  return length + Math.max(length - 1, 0) + length * (a - 1) + (length + 1) * a;
}

/**
 * The channel model's log-probability of typing `observed` when `intended`
 * was meant (chapter 2). The model: a word is typed right with probability
 * 1 - rate; otherwise each of its E single edits (deletions, transpositions,
 * substitutions, insertions: E = 2La + L + a - 1 for L letters over an
 * alphabet of a) is equally likely, and a string d edits away costs d times
 * ln(rate / E):
 *
 *     ln p(x | y) = ln(1 - rate)          when x = y
 *                 = d(x, y) ln(rate / E)   otherwise
 *
 * with d the {@link editDistance}. It ignores which letters were confused
 * (Kernighan, Church and Gale used confusion matrices for that), so all
 * candidates at the same distance from the typed word tie, and the prior
 * decides between them.
 *
 * @param observed the word as typed.
 * @param intended the word meant.
 * @param options the error rate and the alphabet size.
 * @returns ln p(observed | intended), a number < 0.
 * @throws {RangeError} when `rate` is not in (0, 1) or `alphabetSize` is not an integer >= 2.
 *
 * @example
 * ```ts
 * import { assertAlmostEquals } from "@std/assert";
 * import { channelLogProb } from "./noisy_channel.ts";
 * assertAlmostEquals(channelLogProb("the", "the", { rate: 0.1 }), Math.log(0.9));
 * // "teh" is one of the 2·3·26 + 3 + 25 = 184 single edits of "the"
 * assertAlmostEquals(channelLogProb("teh", "the", { rate: 0.1 }), Math.log(0.1 / 184));
 * ```
 */
export function channelLogProb(observed: string, intended: string, options: ChannelOptions = {}): number {
  const { rate, alphabetSize } = checkChannel(options);
  return channelScore(editDistance(observed, intended), intended.length, rate, alphabetSize);
}

function channelScore(distance: number, length: number, rate: number, a: number): number {
  return distance === 0 ? Math.log(1 - rate) : distance * Math.log(rate / singleEdits(length, a));
}

/** One candidate at one position of a lattice: a token id and its channel log-probability. */
export interface LatticeNode {
  /** The candidate's token id (in the prior's vocabulary). */
  id: number;
  /** ln p(observed | this candidate). */
  logChannel: number;
}

/** Options of {@link decodeLattice}. */
export interface DecodeOptions {
  /**
   * How many hypotheses survive each position (default 16); `Infinity` keeps them all, which with the merging of
   * hypotheses that end in the same n - 1 words is exact Viterbi.
   */
  beamWidth?: number;
  /** Whether the prior also scores `</s>` after the last word (default true). */
  endOfSentence?: boolean;
}

/** The best path through a lattice. */
export interface Decoded {
  /** For each position, the index of the chosen candidate in its list. */
  choice: number[];
  /** The chosen token ids. */
  ids: number[];
  /** The sum of the chosen candidates' channel log-probabilities. */
  logChannel: number;
  /** The prior's log-probability of the chosen sentence (0 without a prior). */
  logPrior: number;
}

/** A partial path: its score, its last ids (the prior's context) and a link to its previous step. */
interface Hypothesis {
  score: number;
  logChannel: number;
  context: number[];
  choice: number;
  prev: Hypothesis | null;
}

function checkLattice(lattice: readonly (readonly LatticeNode[])[], prior: LanguageModel | null): void {
  if (!Array.isArray(lattice)) throw new TypeError(`lattice must be an array of candidate lists: lattice=${lattice}`);
  lattice.forEach((nodes, t) => {
    if (!Array.isArray(nodes) || nodes.length === 0) {
      throw new RangeError(
        `lattice[${t}] must be a non-empty list of candidates: lattice[${t}]=${JSON.stringify(nodes)}`,
      );
    }
    nodes.forEach((node, i) => {
      if (Number.isNaN(node.logChannel) || !(node.logChannel <= 0)) {
        throw new RangeError(`lattice[${t}][${i}].logChannel must be a log-probability <= 0: ${node.logChannel}`);
      }
      const size = prior ? prior.vocabSize : Infinity;
      if (!Number.isInteger(node.id) || node.id < 0 || node.id >= size) {
        throw new RangeError(`lattice[${t}][${i}].id must be a token id in [0, ${size}): ${node.id}`);
      }
    });
  });
}

/**
 * The sentence through a lattice of candidates with the highest
 * log channel + log prior (chapter 2): the noisy channel's decision,
 * argmax over sentences y of ln p(x | y) + ln p(y), with
 * ln p(x | y) the sum of the chosen candidates' channel scores.
 *
 * With no prior each position takes its best channel score; with a unigram
 * prior (`contextSize` 0) each position is decided alone; with an n-gram
 * prior the choice of one word depends on its neighbours, so the search keeps
 * up to `beamWidth` partial sentences, extends each by every candidate of the
 * next position, and merges those that end in the same n - 1 words (only the
 * better can win). Ties go to the path found first: earlier candidates first.
 *
 * @param lattice for each position, its candidates (non-empty lists); not modified.
 * @param prior the language model p(y), or null for none (the channel alone).
 * @param options the beam width and whether `</s>` is scored.
 * @returns the chosen candidate per position, their ids, and the two scores.
 * @throws {RangeError} for an empty candidate list, a channel score that is NaN or > 0, an id outside the prior's
 * vocabulary, or a beam width that is not a positive integer or Infinity.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { countNgrams } from "./counts.ts";
 * import { KneserNeyModel } from "./kneser_ney.ts";
 * import { decodeLattice } from "./noisy_channel.ts";
 * // ids: </s>=2, "a"=3, "b"=4, "c"=5. Training text: "a b c", twice.
 * const prior = new KneserNeyModel(countNgrams(Int32Array.from([3, 4, 5, 2, 3, 4, 5, 2]), 2, { vocabSize: 6 }));
 * // The middle word was typed so that "c" looks a little likelier than "b".
 * const lattice = [[{ id: 3, logChannel: 0 }], [{ id: 5, logChannel: -1 }, { id: 4, logChannel: -1.5 }], [{ id: 5, logChannel: 0 }]];
 * assertEquals(decodeLattice(lattice, null).ids, [3, 5, 5]);
 * assertEquals(decodeLattice(lattice, prior).ids, [3, 4, 5]);
 * ```
 */
export function decodeLattice(
  lattice: readonly (readonly LatticeNode[])[],
  prior: LanguageModel | null,
  options: DecodeOptions = {},
): Decoded {
  const beamWidth = options.beamWidth ?? 16;
  if (!(beamWidth === Infinity || (Number.isInteger(beamWidth) && beamWidth >= 1))) {
    throw new RangeError(`beamWidth must be a positive integer or Infinity: beamWidth=${beamWidth}`);
  }
  checkLattice(lattice, prior);
  const k = prior ? prior.contextSize : 0; // how many previous ids the prior reads
  let beam: Hypothesis[] = [{ score: 0, logChannel: 0, context: [], choice: -1, prev: null }];
  for (const nodes of lattice) {
    const merged = new Map<string, Hypothesis>();
    for (const h of beam) {
      nodes.forEach((node, i) => {
        const lp = prior ? prior.logProb(node.id, h.context) : 0;
        const score = h.score + node.logChannel + lp;
        const context = k === 0 ? [] : [...h.context, node.id].slice(-k);
        const key = context.join(",");
        const old = merged.get(key);
        if (old === undefined || score > old.score) {
          merged.set(key, { score, logChannel: h.logChannel + node.logChannel, context, choice: i, prev: h });
        }
      });
    }
    // a stable sort keeps the earlier-found hypothesis first among equals
    beam = [...merged.values()].sort((a, b) => b.score - a.score || 0);
    if (beam.length > beamWidth) beam.length = beamWidth;
  }
  const scoreEnd = prior !== null && (options.endOfSentence ?? true);
  const final = (h: Hypothesis) => h.score + (scoreEnd ? prior.logProb(EOS_ID, h.context) : 0);
  let best = beam[0], bestScore = final(best);
  for (const h of beam.slice(1)) {
    const s = final(h);
    if (s > bestScore) [best, bestScore] = [h, s];
  }
  const choice: number[] = [];
  for (let h: Hypothesis | null = best; h && h.prev; h = h.prev) choice.push(h.choice);
  choice.reverse();
  return {
    choice,
    ids: choice.map((c, t) => lattice[t][c].id),
    logChannel: best.logChannel,
    logPrior: bestScore - best.logChannel,
  };
}

/** One candidate correction of a typed word: the word, its id and its distance and channel score. */
export interface Correction {
  /** The candidate word (the typed string itself when nothing in the vocabulary is near). */
  word: string;
  /** Its token id (`<unk>` for a typed string kept as it is). */
  id: number;
  /** Its edit distance from the typed string. */
  distance: number;
  /** ln p(typed | word) under {@link channelLogProb}. */
  logChannel: number;
}

/** Options of {@link SpellingCorrector}. */
export interface SpellingCorrectorOptions extends ChannelOptions {
  /** Candidates are the vocabulary words within this edit distance: 1 or 2 (default 1). */
  maxDistance?: number;
}

/** What {@link SpellingCorrector.correct} returns. */
export interface CorrectedSentence extends Decoded {
  /** The corrected words. */
  words: string[];
}

/**
 * A spelling corrector on the noisy channel (chapter 2): candidates within
 * `maxDistance` edits from the vocabulary's words of two letters or more
 * (found with a {@link CandidateIndex}), scored by {@link channelLogProb},
 * and the best sentence under a prior chosen per call ({@link decodeLattice}).
 *
 * A typed token that is not a word ({@link isCorrectable}: punctuation,
 * numbers, one letter, `<unk>`) is its own only candidate, with channel score
 * 0; so is a word with no vocabulary word near it (kept as typed, as `<unk>`
 * for the prior).
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { Vocabulary } from "../data/vocab.ts";
 * import { countNgrams } from "./counts.ts";
 * import { KneserNeyModel } from "./kneser_ney.ts";
 * import { SpellingCorrector } from "./noisy_channel.ts";
 * const text = "he came from the city . she sent the form .".split(" ");
 * const vocab = Vocabulary.fromWords(text);
 * const ids = vocab.encode(text.flatMap((w) => (w === "." ? [w, "</s>"] : [w])));
 * const trigram = new KneserNeyModel(countNgrams(ids, 3, { vocabSize: vocab.vocabSize }));
 * const corrector = new SpellingCorrector(vocab);
 * assertEquals(corrector.candidates("frm").map((c) => c.word), ["form", "from"]); // both one edit away
 * // the same typo, corrected two ways by its neighbours
 * assertEquals(corrector.correct(["he", "came", "frm", "the", "city", "."], trigram).words[2], "from");
 * assertEquals(corrector.correct(["she", "sent", "the", "frm", "."], trigram).words[3], "form");
 * ```
 */
export class SpellingCorrector {
  /** The vocabulary of the candidates and of the priors. */
  readonly vocab: Vocabulary;
  /** The index of its words of two letters or more. */
  readonly index: CandidateIndex;
  #rate: number;
  #alphabetSize: number;

  /**
   * Indexes a vocabulary.
   * @param vocab the words that can be candidates (those of two letters or more).
   * @param options the channel's error rate and alphabet, and the largest edit distance.
   * @throws {RangeError} on a bad rate, alphabet size or distance.
   */
  constructor(vocab: Vocabulary, options: SpellingCorrectorOptions = {}) {
    const { rate, alphabetSize } = checkChannel(options);
    this.#rate = rate;
    this.#alphabetSize = alphabetSize;
    this.vocab = vocab;
    this.index = new CandidateIndex(vocab.words.filter(isCorrectable), { maxDistance: options.maxDistance });
  }

  /**
   * The candidate corrections of one typed token.
   * @param typed the token as typed.
   * @returns the candidates, by distance, then alphabetically.
   */
  candidates(typed: string): Correction[] {
    const found = isCorrectable(typed) ? this.index.candidates(typed) : [];
    if (found.length === 0) {
      return [{ word: typed, id: this.vocab.has(typed) ? this.vocab.id(typed) : UNK_ID, distance: 0, logChannel: 0 }];
    }
    return found.map(({ word, distance }) => ({
      word,
      id: this.vocab.id(word),
      distance,
      logChannel: channelScore(distance, word.length, this.#rate, this.#alphabetSize),
    }));
  }

  /**
   * The candidates of every token of a typed sentence: the lattice {@link decodeLattice} searches (build it once to
   * decode it under several priors).
   * @param typed the sentence as typed, one token per entry (no `</s>`).
   * @returns one candidate list per token.
   */
  lattice(typed: readonly string[]): Correction[][] {
    return typed.map((w) => this.candidates(w));
  }

  /**
   * Corrects a typed sentence.
   * @param typed the sentence as typed, one token per entry (no `</s>`), or its {@link SpellingCorrector.lattice}.
   * @param prior the language model, or null for the channel alone.
   * @param options the beam width and whether `</s>` is scored.
   * @returns the corrected words, with the path and its scores.
   */
  correct(
    typed: readonly string[] | readonly (readonly Correction[])[],
    prior: LanguageModel | null,
    options: DecodeOptions = {},
  ): CorrectedSentence {
    const lattice = typed.map((w) => typeof w === "string" ? this.candidates(w) : w);
    const decoded = decodeLattice(lattice, prior, options);
    return { ...decoded, words: decoded.choice.map((c, t) => lattice[t][c].word) };
  }
}

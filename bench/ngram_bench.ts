/**
 * n-gram speed on the Brown training split (chapters 1-2).
 *
 * Run: `deno bench -A bench/ngram_bench.ts` (reads the corpus; the first run
 * also writes the `.cache/` copy of the splits).
 *
 * Targets on a 2-core machine: counting 1- to 5-grams of the 800,000-word
 * training split and fitting interpolated Kneser-Ney under 2 s; scoring the
 * test split with it under 1 s.
 * @module
 */
import {
  countNgrams,
  evaluate,
  InterpolatedModel,
  KneserNeyModel,
  loadBrown,
  loadBrownDocuments,
  splitCorpus,
} from "../lib/mod.ts";

const brown = await loadBrown();
const vocabSize = brown.vocab.vocabSize;
const train = brown.train.tokens, test = brown.test.tokens;
const counts5 = countNgrams(train, 5, { vocabSize });
const kn5 = new KneserNeyModel(counts5);

Deno.bench({
  name: "count 1-5-grams of train (835k tokens) + fit modified Kneser-Ney 5-gram",
  group: "fit",
  baseline: true,
  fn() {
    const counts = countNgrams(train, 5, { vocabSize });
    new KneserNeyModel(counts);
  },
});

Deno.bench({
  name: "count 1-3-grams of train + fit modified Kneser-Ney 3-gram",
  group: "fit",
  fn() {
    new KneserNeyModel(countNgrams(train, 3, { vocabSize }));
  },
});

Deno.bench({
  name: "count 1-5-grams of train only",
  group: "fit",
  fn() {
    countNgrams(train, 5, { vocabSize });
  },
});

Deno.bench({
  name: "score the test split (171k tokens) with Kneser-Ney 5-gram",
  group: "score",
  baseline: true,
  async fn() {
    await evaluate(kn5, test);
  },
});

const interp3 = new InterpolatedModel(counts5, { order: 3 });
interp3.tune(brown.valid.tokens);
Deno.bench({
  name: "score the test split with the interpolated 3-gram",
  group: "score",
  async fn() {
    await evaluate(interp3, test);
  },
});

Deno.bench({
  name: "EM-tune interpolation weights of a 3-gram on the validation split (212k tokens)",
  group: "tune",
  fn() {
    new InterpolatedModel(counts5, { order: 3 }).tune(brown.valid.tokens);
  },
});

const documents = await loadBrownDocuments();
Deno.bench({
  name: "split the parsed corpus and build the vocabulary (what the disk cache saves)",
  group: "load",
  fn() {
    splitCorpus(documents, { trainWords: 800_000, validWords: 200_000, minCount: 4 });
  },
});

// Run: deno test -A --import-map tests/offline_import_map.json lib/ngram/noisy_channel_test.ts
import { assert, assertAlmostEquals, assertEquals, assertThrows } from "@std/assert";
import { Rng } from "../core/random.ts";
import { EOS_ID, Vocabulary } from "../data/vocab.ts";
import type { LanguageModel } from "../lm/lm.ts";
import { countNgrams } from "./counts.ts";
import { KneserNeyModel } from "./kneser_ney.ts";
import { MleModel } from "./ngram.ts";
import { channelLogProb, decodeLattice, type LatticeNode, SpellingCorrector } from "./noisy_channel.ts";

/** A random corpus over ids 3..7 with sentence ends, and its Kneser-Ney model of the given order. */
function randomPrior(rng: Rng, order: number): KneserNeyModel {
  const ids: number[] = [];
  for (let s = 0; s < 40; s++) {
    for (let i = 0, n = 1 + rng.int(6); i < n; i++) ids.push(3 + rng.int(5));
    ids.push(EOS_ID);
  }
  return new KneserNeyModel(countNgrams(Int32Array.from(ids), order, { vocabSize: 8 }), { order });
}

/** Every path through a lattice, scored from scratch: the best by plain enumeration (first found wins ties). */
function bestByEnumeration(lattice: LatticeNode[][], prior: LanguageModel | null): { ids: number[]; score: number } {
  let best = { ids: [] as number[], score: -Infinity }, first = true;
  const walk = (t: number, ids: number[], channel: number) => {
    if (t === lattice.length) {
      let lp = 0;
      if (prior) {
        for (let i = 0; i < ids.length; i++) lp += prior.logProb(ids[i], ids.slice(0, i));
        lp += prior.logProb(EOS_ID, ids);
      }
      if (first || channel + lp > best.score) best = { ids: [...ids], score: channel + lp };
      first = false;
      return;
    }
    for (const node of lattice[t]) walk(t + 1, [...ids, node.id], channel + node.logChannel);
  };
  walk(0, [], 0);
  return best;
}

function randomLattice(rng: Rng, length: number): LatticeNode[][] {
  return Array.from(
    { length },
    () => Array.from({ length: 1 + rng.int(3) }, () => ({ id: 3 + rng.int(5), logChannel: -4 * rng.next() })),
  );
}

Deno.test("channelLogProb: ln(1 - rate) for the word itself, d ln(rate / E) otherwise", () => {
  assertAlmostEquals(channelLogProb("cat", "cat", { rate: 0.2 }), Math.log(0.8));
  // E for 3 letters over 26: 3 deletions, 2 transpositions, 75 substitutions, 104 insertions = 184
  assertAlmostEquals(channelLogProb("act", "cat", { rate: 0.2 }), Math.log(0.2 / 184));
  assertAlmostEquals(channelLogProb("ct", "cat"), Math.log(0.1 / 184));
  assertAlmostEquals(channelLogProb("cta", "cat", { alphabetSize: 2 }), Math.log(0.1 / (12 + 3 + 2 - 1)));
  assertAlmostEquals(channelLogProb("dog", "cat"), 3 * Math.log(0.1 / 184));
  assertThrows(() => channelLogProb("a", "a", { rate: 0 }), RangeError, "rate=0");
  assertThrows(() => channelLogProb("a", "a", { rate: 1 }), RangeError, "rate=1");
  assertThrows(() => channelLogProb("a", "a", { alphabetSize: 1.5 }), RangeError, "alphabetSize=1.5");
});

Deno.test("decodeLattice: exact with an unbounded beam, for no prior, unigram, bigram and trigram", () => {
  const rng = new Rng(4);
  for (let t = 0; t < 60; t++) {
    const order = 1 + (t % 3);
    const prior = t % 4 === 3 ? null : randomPrior(rng, order);
    const lattice = randomLattice(rng, 1 + rng.int(5));
    const copy = structuredClone(lattice);
    const got = decodeLattice(lattice, prior, { beamWidth: Infinity });
    const want = bestByEnumeration(lattice, prior);
    assertEquals(lattice, copy);
    assertAlmostEquals(got.logChannel + got.logPrior, want.score, 1e-9);
    assertEquals(got.ids, got.choice.map((c, i) => lattice[i][c].id));
    const channel = got.choice.reduce((s, c, i) => s + lattice[i][c].logChannel, 0);
    assertAlmostEquals(got.logChannel, channel, 1e-9);
  }
});

Deno.test("decodeLattice: a narrow beam never beats the exact search, and one candidate per place is taken", () => {
  const rng = new Rng(8);
  for (let t = 0; t < 30; t++) {
    const prior = randomPrior(rng, 3), lattice = randomLattice(rng, 6);
    const exact = decodeLattice(lattice, prior, { beamWidth: Infinity });
    const narrow = decodeLattice(lattice, prior, { beamWidth: 1 });
    assert(narrow.logChannel + narrow.logPrior <= exact.logChannel + exact.logPrior + 1e-9);
  }
  const single = [[{ id: 3, logChannel: -1 }], [{ id: 4, logChannel: 0 }]];
  assertEquals(decodeLattice(single, randomPrior(rng, 2)).choice, [0, 0]);
  assertEquals(decodeLattice([], null).choice, []);
});

Deno.test("decodeLattice: ties go to the earlier candidate; -Infinity is handled", () => {
  const tie = [[{ id: 4, logChannel: -1 }, { id: 3, logChannel: -1 }]];
  assertEquals(decodeLattice(tie, null).choice, [0]);
  // a unigram prior that never saw id 5: a candidate it calls impossible loses to any possible one
  const prior = new MleModel(countNgrams(Int32Array.from([3, 4, 2]), 1, { vocabSize: 6 }));
  assertEquals(decodeLattice([[{ id: 5, logChannel: 0 }, { id: 4, logChannel: -9 }]], prior).ids, [4]);
  const impossible = decodeLattice([[{ id: 5, logChannel: 0 }]], prior);
  assertEquals([impossible.ids, impossible.logPrior], [[5], -Infinity]);
});

Deno.test("decodeLattice: bad input names the argument and the value", () => {
  assertThrows(() => decodeLattice([[{ id: 3, logChannel: 0 }], []], null), RangeError, "lattice[1]");
  assertThrows(() => decodeLattice([[{ id: 3, logChannel: NaN }]], null), RangeError, "lattice[0][0].logChannel");
  assertThrows(() => decodeLattice([[{ id: 3, logChannel: 0.5 }]], null), RangeError, "0.5");
  const prior = randomPrior(new Rng(1), 2);
  assertThrows(
    () => decodeLattice([[{ id: 3, logChannel: 0 }, { id: 8, logChannel: 0 }]], prior),
    RangeError,
    "lattice[0][1].id",
  );
  assertThrows(() => decodeLattice([[{ id: 3, logChannel: 0 }]], null, { beamWidth: 0 }), RangeError, "beamWidth=0");
  assertThrows(
    () => decodeLattice([[{ id: 3, logChannel: 0 }]], null, { beamWidth: 2.5 }),
    RangeError,
    "beamWidth=2.5",
  );
});

Deno.test("SpellingCorrector: candidates, non-words kept, context decides", () => {
  const text = "he came from the city . she sent the form . they came from the farm .".split(" ");
  const vocab = Vocabulary.fromWords(text);
  const ids = vocab.encode(text.flatMap((w) => (w === "." ? [w, "</s>"] : [w])));
  const trigram = new KneserNeyModel(countNgrams(ids, 3, { vocabSize: vocab.vocabSize }));
  const corrector = new SpellingCorrector(vocab, { rate: 0.1 });
  const form = corrector.candidates("form");
  assertEquals(form.map((c) => [c.word, c.distance]), [["form", 0], ["farm", 1], ["from", 1]]);
  assertAlmostEquals(form[0].logChannel, Math.log(0.9));
  assertAlmostEquals(form[2].logChannel, channelLogProb("form", "from"));
  assertEquals(corrector.candidates("."), [{ word: ".", id: vocab.id("."), distance: 0, logChannel: 0 }]);
  assertEquals(corrector.candidates("zzzz"), [{ word: "zzzz", id: 0, distance: 0, logChannel: 0 }]);
  const typed = ["they", "came", "frm", "the", "frm", "."];
  const lattice = corrector.lattice(typed);
  assertEquals(corrector.correct(lattice, trigram).words, corrector.correct(typed, trigram).words);
  assertEquals(corrector.correct(typed, trigram).words, ["they", "came", "from", "the", "farm", "."]);
  // without a prior, the channel alone cannot choose between words one edit away: the first alphabetically
  assertEquals(corrector.correct(typed, null).words[2], "farm");
  assertThrows(() => new SpellingCorrector(vocab, { maxDistance: 0 }), RangeError, "maxDistance=0");
  assertThrows(() => new SpellingCorrector(vocab, { rate: -1 }), RangeError, "rate=-1");
});

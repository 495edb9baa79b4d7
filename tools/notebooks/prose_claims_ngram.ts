/**
 * The checked claims of chapters 0 to 2 (the tour, counting, perplexity and smoothing): see tools/notebooks/prose_claims.ts and
 * tools/notebooks/prose_claims_book.ts.
 *
 * @module
 */
import { type ClaimBook, monotone, type RunOutputs, verdict } from "./prose_claims.ts";

const list = (xs: number[]) => xs.join(", ");

/** The sparsity table of chapter 1, by n. */
const sparsity = (run: RunOutputs) => run.table("Sparsity against n");

/** Chapter 2's test-perplexity table: the perplexities of one method, orders 1 to 5. */
const perplexities = (run: RunOutputs, method: string) => {
  const t = run.table("Test perplexity (");
  return [1, 2, 3, 4, 5].map((n) => t.value(method, `${n}-gram`));
};

/** Chapter 2's methods that give probabilities, and smooth (all but MLE, add-one, add-k and stupid back-off). */
const COMBINING = ["interpolated (EM)", "interpolated, 10 buckets", "absolute discounting", "Kneser-Ney (D = 0.75)"];
const PROBABILISTIC = ["add-one", "add-k (k tuned)", ...COMBINING, "modified Kneser-Ney"];

/** Chapter 2's one Kneser-Ney trigram under four preparations: its test perplexity under each. */
const preparations = (run: RunOutputs) => {
  const t = run.table("One model (Kneser-Ney 3-gram)"), col = "KN 3-gram test perplexity";
  return {
    paper: t.value(`the paper's ("bengio2003")`, col),
    trainVocab: t.value("the paper's, vocabulary from the training split", col),
    eos: t.value("the paper's, </s> scored", col),
    ours: t.value("this workbook's", col),
  };
};

/** The checked claims of chapters 0 to 2. */
export const NGRAM_CLAIMS: ClaimBook = {
  "00_tour": {
    "wasm-fastest-on-cpu": {
      says: "wasm is the faster CPU backend",
      check: (run) => {
        const t = run.table("One matrix product on each backend");
        const wasm = t.value("wasm", /^ms per/), cpu = t.value("cpu", /^ms per/);
        return verdict(wasm < cpu, `${wasm} ms per product on wasm, ${cpu} ms on cpu`);
      },
    },
    "frequencies-near-probabilities": {
      says: "10,000 draws give frequencies close to the probabilities (within 0.01)",
      check: (run) => {
        const t = run.table("10,000 draws of rng.categorical");
        const p = t.column("probability"), f = t.column("observed frequency");
        return verdict(
          p.every((x, i) => Math.abs(f[i] - x) <= 0.01),
          `probabilities ${list(p)}, frequencies ${list(f)}`,
        );
      },
    },
  },
  "01_counting": {
    "zipf-exponent-near-1": {
      says: "the frequencies follow Zipf's law (a fitted exponent within 0.2 of 1)",
      check: (run) => {
        const s = run.number(/fitted exponent s = ([\d.]+)/);
        return verdict(Math.abs(s - 1) < 0.2, `s = ${s}`);
      },
    },
    "hapax-nearly-half": {
      says: "nearly half of the types (40% to 50%) occur once",
      check: (run) => {
        const share = run.number(/types \(([\d.]+)%\) occur exactly once/);
        return verdict(share >= 40 && share < 50, `${share}% of the types occur once`);
      },
    },
    "vocabulary-smaller-than-paper": {
      says: "our vocabulary is smaller than Bengio et al.'s",
      check: (run) => {
        const row = run.table("The Bengio et al. (2003) split").rows.find((r) => r[0].startsWith("vocabulary"))!;
        const ours = Number(/= ([\d,]+)$/.exec(row[2])?.[1].replace(/,/g, "")),
          theirs = Number(row[1].replace(/,/g, ""));
        return verdict(ours < theirs, `|V| = ${ours} here, ${theirs} in the paper`);
      },
    },
    "more-types-than-paper": {
      says: "this copy has more types than the paper reports",
      check: (run) => {
        const t = run.table("The Bengio et al. (2003) split");
        const ours = t.value("distinct words", "this workbook"),
          theirs = t.value("distinct words", "Bengio et al. (2003)");
        return verdict(ours > theirs, `${ours} types here, ${theirs} in the paper`);
      },
    },
    "unseen-grows-with-n": {
      says: "the share of test n-grams never seen in training grows with n",
      check: (run) => {
        const unseen = sparsity(run).column(/^test n-grams unseen/);
        return verdict(monotone(unseen, "up"), `unseen % by n: ${list(unseen)}`);
      },
    },
    "long-ngrams-seen-once": {
      says: "counts of 3-grams and longer are mostly 0 or 1 (most distinct ones seen once)",
      check: (run) => {
        const once = sparsity(run).column("seen once %");
        return verdict(once.slice(2).every((x) => x > 50), `seen once % by n: ${list(once)}`);
      },
    },
    "most-test-trigrams-unseen": {
      says: "most test trigrams never occur in training",
      check: (run) => {
        const t = sparsity(run), n = t.column("n"), unseen = t.column(/^test n-grams unseen/);
        const tri = unseen[n.indexOf(3)];
        return verdict(tri > 50, `${tri}% of the test trigrams unseen`);
      },
    },
    "copying-grows-with-order": {
      says: "the higher the order, the more of the samples is copied, and the 4-gram's mostly is",
      check: (run) => {
        const copied = run.table("How much of 60 sampled sentences").column(/found in training/);
        return verdict(monotone(copied, "up") && copied.at(-1)! > 50, `copied % by order 1 to 4: ${list(copied)}`);
      },
    },
  },
  "02_perplexity": {
    "mle-train-falls": {
      says: "on their training text, longer MLE contexts look better and better",
      check: (run) => {
        const train = run.table("Maximum-likelihood n-grams").column("train perplexity");
        return verdict(monotone(train, "down"), `training perplexity by n: ${list(train)}`);
      },
    },
    "mle5-nearly-certain": {
      says: "the MLE 5-gram is nearly certain of every training token (perplexity under 2)",
      check: (run) => {
        const ppl = run.table("Maximum-likelihood n-grams").value("5", "train perplexity");
        return verdict(ppl < 2, `training perplexity ${ppl}`);
      },
    },
    "bigram-fails-a-fifth": {
      says: "the MLE bigram gives probability 0 to about a fifth (18% to 22%) of the test tokens",
      check: (run) => {
        const zero = run.table("Maximum-likelihood n-grams").value("2", /^test tokens with P = 0/);
        return verdict(zero >= 18 && zero <= 22, `${zero}% of the test tokens`);
      },
    },
    "unigram-finite": {
      says: "the MLE unigram has a finite test perplexity",
      check: (run) => {
        const ppl = run.table("Maximum-likelihood n-grams").value("1", "test perplexity");
        return verdict(Number.isFinite(ppl), `test perplexity ${ppl}`);
      },
    },
    "addk-bigram-best": {
      says: "with add-k, every order above the bigram is worse than the bigram, whatever k",
      check: (run) => {
        const series = run.plot("Add-k smoothing");
        const bigram = series.find((s) => s.name === "2-gram")!.y;
        const worse = series.filter((s) => /^[345]-gram$/.test(s.name)).every((s) =>
          s.y.every((y, i) => y > bigram[i])
        );
        return verdict(worse, series.map((s) => `${s.name}: ${s.y.map((y) => y.toFixed(0)).join(" ")}`).join("; "));
      },
    },
    "weights-fall-after-bigram": {
      says: "the bigram gets the most interpolation weight and each longer context less",
      check: (run) => {
        const t = run.table("Interpolation weights");
        const rows = t.rows.map((_, r) =>
          t.columns.slice(2).map((c) => t.column(c)[r]).filter((x) => !Number.isNaN(x))
        );
        const ok = rows.filter((w) => w.length >= 3).every((w) =>
          w[2] === Math.max(...w) && (w.length === 3 || monotone(w.slice(2), "down"))
        );
        return verdict(ok, rows.map((w) => w.join(" ")).join("; "));
      },
    },
    "stupid-backoff-sums-above-1": {
      says: "stupid back-off's scores sum to more than 1",
      check: (run) => {
        const sum = run.number(/sum over the vocabulary of S\(w \| "of the"\) = ([\d.]+)/);
        return verdict(sum > 1, `the scores after "of the" sum to ${sum}`);
      },
    },
    "heldout-discount-grows-slowly": {
      says: "a bigram seen c times shows up fewer than c times in held-out text, about c - D, with D < 1 at c = 1 " +
        "and D growing slowly with c (by less than 0.35 a count)",
      check: (run) => {
        const d = run.table("Held-out counts of bigrams").column("c minus that");
        const ok = d.every((x) => x > 0) && d[0] < 1 && monotone(d, "up") &&
          d.every((x, i) => i === 0 || x - d[i - 1] < 0.35);
        return verdict(ok, `D for c = 1 to 7: ${list(d)}`);
      },
    },
    "heldout-discount-above-0.75": {
      says: "here D is above Church and Gale's 0.75 for c >= 2 (a little: under 2)",
      check: (run) => {
        const d = run.table("Held-out counts of bigrams").column("c minus that").slice(1);
        return verdict(d.every((x) => x > 0.75 && x < 2), `D for c = 2 to 7: ${list(d)}`);
      },
    },
    "addone-worse-than-addk": {
      says: "add-one is worse than tuned add-k at every order",
      check: (run) => {
        const one = perplexities(run, "add-one"), k = perplexities(run, "add-k (k tuned)");
        return verdict(one.every((x, i) => x > k[i]), `add-one ${list(one)}; add-k ${list(k)}`);
      },
    },
    "combining-gains-at-bigram": {
      says: "interpolation and the discounting methods more than halve the unigram's perplexity at the bigram",
      check: (run) => {
        const rows = [...COMBINING, "modified Kneser-Ney"].map((m) => perplexities(run, m));
        return verdict(rows.every((p) => p[1] < 0.5 * p[0]), rows.map((p) => `${p[0]} -> ${p[1]}`).join("; "));
      },
    },
    "combining-gains-small-beyond-bigram": {
      says: "beyond the bigram, interpolation and discounting gain little (under 10%) or lose",
      check: (run) => {
        const rows = [...COMBINING, "modified Kneser-Ney"].map((m) => perplexities(run, m));
        return verdict(rows.every((p) => Math.min(...p.slice(2)) >= 0.9 * p[1]), rows.map((p) => list(p)).join("; "));
      },
    },
    "fixed-discount-worse-at-high-orders": {
      says: "a fixed discount of 0.75 does worse at the 5-gram than at the trigram, and falls further behind " +
        "modified Kneser-Ney with every order from the bigram",
      check: (run) => {
        const m = perplexities(run, "modified Kneser-Ney");
        const rows = ["absolute discounting", "Kneser-Ney (D = 0.75)"].map((name) => perplexities(run, name));
        const ok = rows.every((p) => p[4] > p[2] && monotone(p.slice(1).map((x, i) => x - m[i + 1]), "up"));
        return verdict(ok, `${rows.map((p) => list(p)).join("; ")}; modified Kneser-Ney ${list(m)}`);
      },
    },
    "d1-near-1-at-high-orders": {
      says: "the modified Kneser-Ney discount for a count of 1 is close to 1 (0.85 or more) from order 3",
      check: (run) => {
        const d1 = run.table("Modified Kneser-Ney discounts").column("D1");
        return verdict(d1.slice(2).every((d) => d >= 0.85), `D1 by order: ${list(d1)}`);
      },
    },
    "kneser-ney-best": {
      says: "modified Kneser-Ney has the lowest test perplexity of the probabilistic methods at every order from 2",
      check: (run) => {
        const rows = PROBABILISTIC.map((m) => perplexities(run, m)), best = perplexities(run, "modified Kneser-Ney");
        const ok = [1, 2, 3, 4].every((n) => rows.every((p) => best[n] <= p[n]));
        return verdict(ok, PROBABILISTIC.map((m, i) => `${m}: ${list(rows[i])}`).join("; "));
      },
    },
    "stupid-backoff-worse-with-order": {
      says: 'stupid back-off\'s "perplexity" gets worse with every order above 2',
      check: (run) => {
        const p = perplexities(run, "stupid back-off *");
        return verdict(monotone(p.slice(1), "up"), `stupid back-off: ${list(p)}`);
      },
    },
    "wsj-steeper": {
      says: "Jurafsky and Martin's WSJ figures fall from unigram to trigram like ours, more steeply",
      check: (run) => {
        const t = run.table("Unigram, bigram and trigram test perplexity");
        const rows = t.rows.map((_, r) => ["unigram", "bigram", "trigram"].map((c) => t.column(c)[r]));
        const [wsj, brown] = rows;
        const ok = rows.every((p) => monotone(p, "down")) && wsj[0] / wsj[2] > brown[0] / brown[2];
        return verdict(ok, `WSJ ${list(wsj)}; Brown ${list(brown)}`);
      },
    },
    "far-below-paper": {
      says: "this chapter's Kneser-Ney trigram is far below the paper's (under 60% of it)",
      check: (run) => {
        const ours = perplexities(run, "modified Kneser-Ney")[2];
        const paper = run.table("Bengio et al. (2003), Table 1").value(
          "Kneser-Ney 3-gram, back-off",
          "Bengio et al. (2003)",
        );
        return verdict(ours < 0.6 * paper, `${ours} here, ${paper} in the paper`);
      },
    },
    "two-choices-account": {
      says: "the two choices of preparation account for nearly all the gap (their factors' product within 10% of " +
        "the whole factor, in logarithms)",
      check: (run) => {
        const p = preparations(run);
        const [whole, vocab, ends] = [p.paper / p.ours, p.paper / p.trainVocab, p.paper / p.eos];
        return verdict(
          Math.abs(Math.log(vocab * ends) / Math.log(whole) - 1) < 0.1,
          `factors ${vocab.toFixed(2)} and ${ends.toFixed(2)}, whole ${whole.toFixed(2)}`,
        );
      },
    },
    "train-vocabulary-more-unk": {
      says: "with the vocabulary of the training split, more of the test words are <unk>",
      check: (run) => {
        const t = run.table("One model (Kneser-Ney 3-gram)");
        const [paper, train] = [t.value("the paper's (", /^<unk> %/), t.value("the paper's, vocabulary", /^<unk> %/)];
        return verdict(train > paper, `${train}% against ${paper}%`);
      },
    },
    "train-vocabulary-easier": {
      says: "the vocabulary of the training split makes the test easier (a lower perplexity)",
      check: (run) => {
        const p = preparations(run);
        return verdict(p.trainVocab < p.paper, `${p.trainVocab} against ${p.paper}`);
      },
    },
    "sentence-ends-cheap": {
      says: "scored sentence ends cost almost nothing (under a tenth of another token) and lower the perplexity",
      check: (run) => {
        const t = run.table("One model (Kneser-Ney 3-gram)"), p = preparations(run);
        const [eos, other] = [
          t.value("the paper's, </s>", "nats per </s>"),
          t.value("the paper's, </s>", "nats per other token"),
        ];
        return verdict(
          eos < 0.1 * other && p.eos < p.paper,
          `${eos} against ${other} nats; perplexity ${p.eos}, ${p.paper}`,
        );
      },
    },
    "factor-of-two": {
      says: "the paper's preparation gives about twice this chapter's perplexity (a factor of 1.7 to 2.5)",
      check: (run) => {
        const p = preparations(run), f = p.paper / p.ours;
        return verdict(f >= 1.7 && f <= 2.5, `${p.paper} / ${p.ours} = ${f.toFixed(2)}`);
      },
    },
    "counts-differ-perplexities-close": {
      says: "this copy has more types and a larger |V| at nearly the same number of tokens (within 2%), and the " +
        "interpolated and deleted-interpolation rows stay within a few percent (5%) of the paper",
      check: (run) => {
        const m = run.find(
          /has ([\d,]+) tokens \(the paper: ([\d,]+)\), ([\d,]+) types \(([\d,]+)\) and \|V\| = ([\d,]+) \(([\d,]+)\)/,
        );
        const [tok, tokP, types, typesP, v, vP] = m.slice(1).map((x) => Number(x.replace(/,/g, "")));
        const t = run.table("Bengio et al. (2003), Table 1");
        const diffs = t.rows.filter((r) => !r[0].endsWith("back-off")).map((r) => Math.abs(Number(r[3])));
        const ok = types > typesP && v > vP && Math.abs(tok / tokP - 1) < 0.02 && diffs.every((d) => d < 5);
        return verdict(
          ok,
          `tokens ${tok} (${tokP}), types ${types} (${typesP}), |V| ${v} (${vP}); differences ${list(diffs)}%`,
        );
      },
    },
    "summary-ranking": {
      says: "from the bigram on, add-k beats add-one, and every method that combines orders beats add-k by 25% or more",
      check: (run) => {
        const one = perplexities(run, "add-one"), k = perplexities(run, "add-k (k tuned)");
        const rows = [...COMBINING, "modified Kneser-Ney"].map((m) => perplexities(run, m));
        const ok = [1, 2, 3, 4].every((n) => k[n] < one[n] && rows.every((p) => p[n] <= 0.75 * k[n]));
        return verdict(ok, `add-one ${list(one)}; add-k ${list(k)}; ${rows.map((p) => list(p)).join("; ")}`);
      },
    },
    "kneser-ney-matches-paper": {
      says: "prepared the paper's way, the interpolated Kneser-Ney models are within 1% of the paper's figures",
      check: (run) => {
        const t = run.table("Bengio et al. (2003), Table 1");
        const diffs = t.rows.filter((r) => r[0].endsWith("interpolated")).map((r) => Number(r[3]));
        return verdict(diffs.length === 3 && diffs.every((d) => Math.abs(d) < 1), `differences ${list(diffs)}%`);
      },
    },
  },
};

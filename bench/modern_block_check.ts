/**
 * The modern block against its PyTorch peer (chapter 6): for RMSNorm, SwiGLU,
 * RoPE, grouped-query and multi-query attention alone and for the full modern
 * block, an lmbook `TransformerLM` with random weights (gains and biases
 * included) exports its weights and a batch to JSON; `bench/modern_block_torch.py`
 * builds the same model with torch.nn and returns its logits, loss and the
 * gradient of the loss for every weight; this script compares them.
 *
 * Run (on demand, never in CI; needs /usr/bin/python3 with torch):
 *
 *   deno run -A bench/modern_block_check.ts [--backends cpu,wasm]
 *
 * Tolerances (float32, both sides): logits within 1e-4 of PyTorch's relative
 * to the largest |logit| (max |a - b| / max(1, max |b|)), the loss within
 * 1e-5 relative, every gradient within 1e-4 relative to its largest entry.
 * For RoPE the peer also runs the split-halves convention (GPT-NeoX, Hugging
 * Face Llama) on weights with the q/k channels permuted per head, which must
 * give the same logits within 1e-4. It exits with status 1 if any check fails.
 *
 * @module
 */
import * as lm from "../lib/mod.ts";
const { tf } = lm;

/** The configurations compared: each change alone, then together. */
export const PEER_CASES: Record<string, Partial<lm.TransformerConfig>> = {
  "RMSNorm": { normKind: "rms" },
  "SwiGLU": { mlp: "swiglu" },
  "RoPE": { positions: "rope" },
  "GQA (4 heads, 2 kv)": { nHead: 4, nKVHead: 2 },
  "MQA (4 heads, 1 kv)": { nHead: 4, nKVHead: 1 },
  "modern block": { ...lm.MODERN_BLOCK, nHead: 4 },
  "modern block, biases, post-norm": { ...lm.MODERN_BLOCK, nHead: 4, nKVHead: 1, bias: true, normPlacement: "post" },
};

const LOGIT_TOL = 1e-4, LOSS_TOL = 1e-5, GRAD_TOL = 1e-4, HALVES_TOL = 1e-4;

function maxRelDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let d = 0, m = 0;
  for (let i = 0; i < a.length; i++) {
    d = Math.max(d, Math.abs(a[i] - b[i]));
    m = Math.max(m, Math.abs(b[i]));
  }
  return d / Math.max(1, m);
}

async function compare(name: string, over: Partial<lm.TransformerConfig>): Promise<Record<string, unknown>> {
  const config = lm.transformerConfig({ nLayer: 2, nHead: 2, nEmbd: 32, blockSize: 16 }, { vocabSize: 29, ...over });
  const model = new lm.TransformerLM(config, { seed: 1 });
  const rng = new lm.Rng(2);
  for (const v of Object.values(model.variables())) {
    const isGain = /\.g_\d+$/.test(v.name);
    const data = Float32Array.from({ length: v.size }, () => rng.normal(isGain ? 1 : 0, 0.2));
    tf.tidy(() => v.assign(tf.tensor(data, v.shape)));
  }
  const B = 2, T = 12;
  const ids = Array.from({ length: B }, () => Array.from({ length: T + 1 }, () => rng.int(29)));
  const x = ids.map((r) => r.slice(0, T)), y = ids.map((r) => r.slice(1));
  const weights: Record<string, { shape: number[]; data: number[] }> = {};
  for (const [k, v] of Object.entries(model.variables())) {
    weights[k] = { shape: v.shape, data: Array.from(await v.data()) };
  }
  const xt = tf.tensor2d(x, [B, T], "int32"), yt = tf.tensor2d(y, [B, T], "int32");
  const { value, grads } = tf.variableGrads(() => model.forward(xt, yt).loss!, Object.values(model.variables()));
  const logits = tf.tidy(() => model.forward(xt).logits);
  const mine = { logits: Array.from(await logits.data()), loss: (await value.data())[0] };
  const myGrads: Record<string, Float32Array> = {};
  for (const [k, v] of Object.entries(model.variables())) myGrads[k] = (await grads[v.name].data()) as Float32Array;
  tf.dispose([xt, yt, value, logits, ...Object.values(grads)]);
  model.dispose();

  const dir = await Deno.makeTempDir();
  await Deno.writeTextFile(`${dir}/in.json`, JSON.stringify({ config, weights, x, y }));
  const out = await new Deno.Command("/usr/bin/python3", {
    args: [new URL("./modern_block_torch.py", import.meta.url).pathname, `${dir}/in.json`, `${dir}/out.json`],
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!out.success) throw new Error(`the PyTorch peer failed: ${new TextDecoder().decode(out.stderr)}`);
  const peer = JSON.parse(await Deno.readTextFile(`${dir}/out.json`));
  await Deno.remove(dir, { recursive: true });

  const logitDiff = maxRelDiff(mine.logits, peer.logits);
  const lossDiff = Math.abs(mine.loss - peer.loss) / Math.abs(peer.loss);
  let gradDiff = 0, worst = "";
  const missing = Object.keys(myGrads).filter((k) => !(k in peer.grads));
  for (const [k, g] of Object.entries(myGrads)) {
    if (!(k in peer.grads)) continue;
    const d = maxRelDiff(g, peer.grads[k]);
    if (d > gradDiff) [gradDiff, worst] = [d, k];
  }
  const halves = peer.splitHalvesMaxDiff as number | undefined;
  const ok = logitDiff < LOGIT_TOL && lossDiff < LOSS_TOL && gradDiff < GRAD_TOL && missing.length === 0 &&
    (halves === undefined || halves < HALVES_TOL);
  return {
    case: name,
    backend: tf.getBackend(),
    "logits (rel.)": +logitDiff.toExponential(1),
    "loss (rel.)": +lossDiff.toExponential(1),
    "worst gradient (rel.)": +gradDiff.toExponential(1),
    "worst weight": worst,
    "split halves": halves === undefined ? "" : +halves.toExponential(1),
    result: ok ? "ok" : `FAIL${missing.length ? ` (no peer gradient for ${missing.join(", ")})` : ""}`,
  };
}

if (import.meta.main) {
  const i = Deno.args.indexOf("--backends");
  const backends = (i >= 0 ? Deno.args[i + 1] : "cpu,wasm").split(",");
  const rows: Record<string, unknown>[] = [];
  for (const backend of backends) {
    await lm.initBackend(backend);
    for (const [name, over] of Object.entries(PEER_CASES)) rows.push(await compare(name, over));
  }
  console.log(lm.formatTable(rows));
  console.log(
    `tolerances: logits ${LOGIT_TOL} and gradients ${GRAD_TOL} relative to the largest entry, loss ${LOSS_TOL} relative, ` +
      `split-halves RoPE ${HALVES_TOL} absolute`,
  );
  if (rows.some((r) => r.result !== "ok")) Deno.exit(1);
}

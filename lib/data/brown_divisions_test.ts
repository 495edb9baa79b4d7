// Run: deno test -A --import-map tests/offline_import_map.json lib/data/brown_divisions_test.ts
import { assert, assertEquals, assertThrows } from "@std/assert";
import { brownDivisions, divisionOf, divisionPassages, documentRoles, roleStream } from "./brown_divisions.ts";
import { EOS_ID, UNK_ID } from "./vocab.ts";
import { loadBrownDocuments } from "./brown.ts";

Deno.test("divisionOf: informative ca-cj, imaginative ck-cr, a clear error otherwise", () => {
  assertEquals(["ca01", "cj80", "ck01", "cp29", "cr09"].map(divisionOf), [0, 0, 1, 1, 1]);
  assertThrows(() => divisionOf("cs01"), RangeError, 'id="cs01"');
  assertThrows(() => divisionOf("CK01"), RangeError, "not a Brown file name");
});

Deno.test("documentRoles: within each genre, documents 1, 6, 11 ... test and 4, 9 ... validation", () => {
  const docs = [..."abcdefgh"].map((c, i) => ({ id: `ca0${i}`, category: c < "f" ? "news" : "humor" }));
  const roles = documentRoles(docs);
  assertEquals(docs.map((d) => roles.get(d.id)), [
    "test",
    "train",
    "train",
    "valid",
    "train",
    "test",
    "train",
    "train",
  ]);
});

Deno.test("brownDivisions: every genre in every set, whole documents, the vocabulary never chosen by test words", async () => {
  const { vocab, documents } = await brownDivisions({ maxWords: 500 });
  assertEquals(documents.length, 500);
  const genres = new Set(documents.map((d) => d.category));
  assertEquals(genres.size, 15);
  for (const g of genres) {
    for (const role of ["train", "valid", "test"]) {
      assert(documents.some((d) => d.category === g && d.role === role), `${g} has no ${role} document`);
    }
  }
  assertEquals(documents.filter((d) => d.label === 1).map((d) => d.id[1]).every((c) => c >= "k"), true);
  // The vocabulary is the 500 most frequent lower-cased words of the training and validation documents.
  const raw = await loadBrownDocuments();
  const counts = new Map<string, number>();
  for (const d of raw) {
    if (documents.find((x) => x.id === d.id)!.role === "test") continue;
    for (const w of d.paragraphs.flat(2)) counts.set(w.toLowerCase(), (counts.get(w.toLowerCase()) ?? 0) + 1);
  }
  const top = [...counts].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).slice(0, 500).map(([w]) => w);
  assertEquals(vocab.words.slice(3), top);
  // A document's stream: its sentences' words, each sentence ended by </s>.
  const ck01 = raw.find((d) => d.id === "ck01")!, stream = documents.find((d) => d.id === "ck01")!.ids;
  const first = ck01.paragraphs[0][0].map((w) => w.toLowerCase());
  assertEquals(Array.from(stream.subarray(0, first.length + 1)), [...vocab.encode(first), EOS_ID]);
  assert(stream.includes(UNK_ID));
});

Deno.test("divisionPassages and roleStream: non-overlapping passages of the chosen roles, streams in corpus order", () => {
  const doc = (id: string, role: "train" | "test", n: number) => ({
    id,
    category: "x",
    label: divisionOf(id),
    role,
    ids: Int32Array.from({ length: n }, (_, i) => 10 * Number(id.slice(2)) + i),
  });
  const docs = [doc("ca01", "train", 7), doc("ck02", "test", 4), doc("cb03", "train", 3)];
  const ps = divisionPassages(docs, { length: 3, roles: ["train"] });
  assertEquals(ps.map((p) => [Array.from(p.ids), p.label, p.doc]), [
    [[10, 11, 12], 0, "ca01"],
    [[13, 14, 15], 0, "ca01"],
    [[30, 31, 32], 0, "cb03"],
  ]);
  assertEquals(divisionPassages(docs, { length: 4, roles: ["test"] })[0].label, 1);
  assertEquals(Array.from(roleStream(docs, ["test", "train"])), [
    10,
    11,
    12,
    13,
    14,
    15,
    16,
    20,
    21,
    22,
    23,
    30,
    31,
    32,
  ]);
  assertThrows(() => divisionPassages(docs, { length: 0, roles: ["train"] }), RangeError, "length=0");
});

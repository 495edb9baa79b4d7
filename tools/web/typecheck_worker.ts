/// <reference lib="webworker" />
/**
 * The page's type-check worker (issue 18): started when Grade is pressed,
 * beside the grading worker, so the page never waits on the compiler. It
 * loads the TypeScript compiler (bundled into this script) and the recorded
 * file set `typecheck_files.json` (beside this script) once, then answers
 * each {@link TypeCheckRequest} with the diagnostics of the files asked
 * about ({@link typeCheck}), parsed lib files kept between checks. It also
 * says which pieces of code have balanced brackets ({@link BracketsRequest},
 * TypeScript's scanner through tools/grade/source_scan.ts), for the page to place a
 * syntax error in one exercise function, so that no other bundle of the page
 * needs a second copy of the compiler.
 *
 * @module
 */
import ts from "typescript";
import { type RecordedFiles, recordedView, typeCheck, type TypeDiagnostic } from "./typecheck.ts";
import { bracketsBalance } from "../grade/source_scan.ts";

/** What the page asks: check these files. */
export interface TypeCheckRequest {
  type: "check";
  /** Matches the answer to the question. */
  id: number;
  /** Root-relative path → text: the student's exercise files and the graded test files. */
  overlay: Record<string, string>;
  /** The graded test files to start from. */
  roots: string[];
  /** The files whose diagnostics are wanted, in order. */
  report: string[];
}

/** What the page asks: whether the brackets of each piece of code balance (see `bracketsBalance`). */
export interface BracketsRequest {
  type: "brackets";
  /** Matches the answer to the question. */
  id: number;
  /** The pieces of code, e.g. exercise functions. */
  codes: string[];
}

/** What the worker answers. */
export type TypeCheckAnswer =
  | { type: "result"; id: number; diagnostics: TypeDiagnostic[]; seconds: number }
  | { type: "brackets"; id: number; balanced: boolean[] }
  | { type: "error"; id: number; message: string };

let view: Promise<ReturnType<typeof recordedView>> | undefined;
const cache = new Map<string, ts.SourceFile>();

async function load(): Promise<ReturnType<typeof recordedView>> {
  const url = new URL("typecheck_files.json", self.location.href);
  const res = await fetch(url);
  if (!res.ok) throw new Error(`${url.pathname}: HTTP ${res.status}`);
  return recordedView(await res.json() as RecordedFiles);
}

const post = (a: TypeCheckAnswer) => (self as unknown as Worker).postMessage(a);

self.onmessage = async (e: MessageEvent<TypeCheckRequest | BracketsRequest>) => {
  const req = e.data;
  if (req?.type !== "check" && req?.type !== "brackets") return;
  try {
    if (req.type === "brackets") {
      post({ type: "brackets", id: req.id, balanced: req.codes.map((code) => bracketsBalance(code, ts)) });
      return;
    }
    view ??= load();
    const fs = await view.catch((err) => {
      view = undefined;
      throw err;
    });
    const t0 = performance.now();
    const diagnostics = typeCheck(ts, fs, { roots: req.roots, overlay: req.overlay, report: req.report, cache });
    post({ type: "result", id: req.id, diagnostics, seconds: (performance.now() - t0) / 1000 });
  } catch (err) {
    post({ type: "error", id: req.id, message: err instanceof Error ? err.message : String(err) });
  }
};

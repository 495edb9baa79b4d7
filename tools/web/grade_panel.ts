/// <reference lib="dom" />
/**
 * The "Exercises in the page" panel of a chapter page (issue 18, item 3): one
 * CodeMirror editor per exercise file of the chapter, prefilled with the
 * stub or with the work saved in this browser, a Grade button that runs the
 * chapter's graded tests in a Web Worker ({@link gradeInWorker}), and the
 * results as `deno task grade` prints them (its `formatReport`), with every
 * test's status, points and message below. The first Grade also starts the
 * type-check worker (`typecheck_worker.js`, the TypeScript compiler and the
 * files it checks against, fetched only then and kept for later runs): a type
 * error costs its exercise as on the command line.
 *
 * Work is saved in `localStorage` under `lmbook:exercise:<path>` on every
 * edit. Download saves a file under its own name (`ch00_tour.ts`); "Download
 * all" saves a zip with every exercise file edited in this browser under
 * `exercises/`: `deno task grade --submission DIR` accepts either unchanged.
 *
 * The page loads this script lazily (`grade_build.ts` writes the loader);
 * `window.lmbookGrade` lets tests and instructors drive it.
 *
 * @module
 */
import { basicSetup, EditorView } from "codemirror";
import { javascript } from "@codemirror/lang-javascript";
import { zipSync } from "fflate";
import { formatReport, type GradeReport } from "../grade/grade.ts";
import { gradeInWorker, reportOf, type TestFileData, type TypeChecker } from "./grade_run.ts";
import type { BracketsRequest, TypeCheckAnswer, TypeCheckRequest } from "./typecheck_worker.ts";
import type { PointsSpec } from "../grade/grade.ts";

/** What the page embeds for its panel (see `grade_build.ts`). */
export interface PanelData {
  /** e.g. `ch00`. */
  chapter: string;
  /** Folder of the grading assets, relative to the page (`grade/`). */
  base: string;
  /** The chapter's exercise files with their stubs. */
  files: { path: string; stub: string }[];
  /** The chapter's graded test files (their text is fetched when grading). */
  tests: TestFileData[];
  /** The points of the chapter's exercises (from exercises/points.json). */
  points: Record<string, number | PointsSpec>;
}

/** The panel's programmatic face, on `window.lmbookGrade`. */
export interface GradePanelApi {
  /** The exercise files' paths. */
  files(): string[];
  /** The text in a file's editor. */
  getSource(path: string): string;
  /** Replaces the text in a file's editor (saved as if typed). */
  setSource(path: string, text: string): void;
  /** Grades what is in the editors; resolves with the report shown. */
  grade(): Promise<GradeReport>;
  /** The last report. */
  report: GradeReport | null;
  /** Seconds each type check took in its worker (the first includes parsing the libs), in order. */
  typeCheckSeconds: number[];
}

const STORE = "lmbook:exercise:";

function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, string> = {},
  text?: string,
): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

function load(path: string): string | null {
  try {
    return localStorage.getItem(STORE + path);
  } catch {
    return null;
  }
}

function save(path: string, text: string, stub: string): void {
  try {
    if (text === stub) localStorage.removeItem(STORE + path);
    else localStorage.setItem(STORE + path, text);
  } catch { /* storage full or disabled: the editor still works */ }
}

function download(name: string, data: BlobPart, type: string): void {
  const url = URL.createObjectURL(new Blob([data], { type }));
  const a = el("a", { href: url, download: name });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

/** Every exercise file saved in this browser (any chapter), by root-relative path. */
function savedFiles(): Record<string, string> {
  const out: Record<string, string> = {};
  try {
    for (let i = 0; i < localStorage.length; i++) {
      const k = localStorage.key(i)!;
      if (k.startsWith(STORE)) out[k.slice(STORE.length)] = localStorage.getItem(k) ?? "";
    }
  } catch { /* no storage */ }
  return out;
}

/**
 * Mounts the panel in its section.
 * @param section the `[data-lmbook-grade]` element the page rendered.
 * @returns the panel's API.
 */
export function mountPanel(section: HTMLElement): GradePanelApi {
  const data = JSON.parse(section.querySelector("script[type='application/json']")!.textContent!) as PanelData;
  const mount = section.querySelector(".lmbook-grade-mount") as HTMLElement;
  mount.replaceChildren();
  const editors = new Map<string, EditorView>();
  const served = location.protocol === "http:" || location.protocol === "https:";

  for (const f of data.files) {
    const name = f.path.split("/").pop()!;
    const box = el("div", { class: "lmbook-grade-file", "data-path": f.path });
    const head = el("div", { class: "lmbook-grade-filehead" });
    const status = el("span", { class: "lmbook-grade-saved" });
    const reset = el("button", { type: "button", class: "lmbook-grade-reset" }, "Reset to the stub");
    const dl = el("button", { type: "button", class: "lmbook-grade-download" }, `Download ${name}`);
    head.append(el("code", {}, f.path), status, reset, dl);
    const host = el("div", { class: "lmbook-grade-editor" });
    box.append(head, host);
    mount.append(box);
    const saved = load(f.path);
    status.textContent = saved !== null ? "your saved work" : "the stub";
    const view = new EditorView({
      doc: saved ?? f.stub,
      parent: host,
      extensions: [
        basicSetup,
        javascript({ typescript: true }),
        EditorView.updateListener.of((u) => {
          if (!u.docChanged) return;
          const text = u.state.doc.toString();
          save(f.path, text, f.stub);
          status.textContent = text === f.stub ? "the stub" : "saved in this browser";
        }),
      ],
    });
    editors.set(f.path, view);
    reset.addEventListener("click", () => {
      if (!confirm(`Replace your ${name} with the original stub? Your changes will be lost.`)) return;
      setSource(f.path, f.stub);
    });
    dl.addEventListener("click", () => download(name, view.state.doc.toString(), "text/typescript"));
  }

  const bar = el("div", { class: "lmbook-grade-bar" });
  const gradeBtn = el("button", { type: "button", class: "lmbook-grade-run" }, "Grade");
  const zipBtn = el("button", { type: "button", class: "lmbook-grade-zip" }, "Download all my exercises (.zip)");
  const progress = el("span", { class: "lmbook-grade-progress", role: "status" });
  bar.append(gradeBtn, zipBtn, progress);
  const summary = el("p", { class: "lmbook-grade-summary" });
  const out = el("pre", { class: "lmbook-grade-report" });
  const details = el("details", { class: "lmbook-grade-tests" });
  mount.append(bar, summary, out, details);
  if (!served) {
    gradeBtn.disabled = true;
    progress.textContent = "Grading runs in a Web Worker, which needs the site served over http " +
      "(deno task serve), not opened as a file.";
  }

  function setSource(path: string, text: string): void {
    const view = editors.get(path);
    if (!view) throw new RangeError(`no editor for this file on the page: path=${path}`);
    view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: text } });
  }

  let worker: Worker | undefined;
  let running: Promise<GradeReport> | null = null;
  // The type-check worker: started on the first Grade (the compiler and its files load only then), kept after.
  let checker: Worker | undefined;
  let checkId = 0;
  /** Asks the type-check worker; `seconds` come back with a type check's result. */
  const askChecker = (msg: TypeCheckRequest | BracketsRequest): Promise<TypeCheckAnswer> => {
    checker ??= new Worker(new URL(`${data.base}typecheck_worker.js`, location.href).href, { type: "module" });
    const w = checker;
    return new Promise((resolve, reject) => {
      // The compiler always finishes; a worker that never answers (its files did not arrive) is given up.
      const timer = setTimeout(() => {
        w.removeEventListener("message", onMessage);
        w.terminate();
        checker = undefined;
        reject(new Error("the type check did not answer within 120 s"));
      }, 120_000);
      const onMessage = (e: MessageEvent<TypeCheckAnswer>) => {
        if (e.data?.id !== msg.id) return;
        clearTimeout(timer);
        w.removeEventListener("message", onMessage);
        if (e.data.type === "error") reject(new Error(e.data.message));
        else resolve(e.data);
      };
      w.addEventListener("message", onMessage);
      w.addEventListener("error", (e) => {
        clearTimeout(timer);
        checker = undefined;
        reject(new Error(`the type-check worker failed: ${e.message}`));
      }, { once: true });
      w.postMessage(msg);
    });
  };
  const typeCheck: TypeChecker = async (req) => {
    const answer = await askChecker({ type: "check", id: ++checkId, ...req });
    if (answer.type !== "result") throw new Error(`the type-check worker answered ${answer.type}`);
    api.typeCheckSeconds.push(answer.seconds);
    return answer.diagnostics;
  };
  // The same worker's TypeScript scanner places a syntax error in one exercise function (tools/grade/source_scan.ts).
  typeCheck.brackets = async (codes) => {
    const answer = await askChecker({ type: "brackets", id: ++checkId, codes });
    if (answer.type !== "brackets") throw new Error(`the type-check worker answered ${answer.type}`);
    return answer.balanced;
  };
  const api: GradePanelApi = {
    files: () => data.files.map((f) => f.path),
    getSource: (path) => {
      const view = editors.get(path);
      if (!view) throw new RangeError(`no editor for this file on the page: path=${path}`);
      return view.state.doc.toString();
    },
    setSource,
    report: null,
    typeCheckSeconds: [],
    grade: () => running ??= runGrade().finally(() => running = null),
  };

  async function runGrade(): Promise<GradeReport> {
    gradeBtn.disabled = true;
    section.setAttribute("data-lmbook-grade", "running");
    const t0 = performance.now();
    try {
      progress.textContent = "loading the graded tests …";
      const tests = await Promise.all(data.tests.map(async (t) => {
        const res = await fetch(new URL(`${data.base}${t.file}`, location.href));
        if (!res.ok) throw new Error(`cannot load ${t.file}: HTTP ${res.status}`);
        return { ...t, source: await res.text() };
      }));
      const files = Object.fromEntries(data.files.map((f) => [f.path, api.getSource(f.path)]));
      const total = data.tests.reduce((s, t) => s + t.names.length, 0);
      let done = 0;
      progress.textContent = worker ? "grading …" : "starting the grader …";
      const run = await gradeInWorker(files, tests, {
        workerUrl: new URL(`${data.base}grade_worker.js`, location.href).href,
        worker,
        onEvent: (e) => {
          if (e.type === "start") progress.textContent = `grading ${done + 1}/${total}: ${e.name}`;
        },
        onResult: () => done++,
        typeCheck,
      });
      worker = run.worker;
      const seconds = (performance.now() - t0) / 1000;
      const report = reportOf(run.results, data.points, `${data.chapter} in the page`, seconds, run.warnings);
      show(report);
      api.report = report;
      progress.textContent = `graded in ${seconds.toFixed(1)} s${
        run.restarts ? ` (the grader was restarted ${run.restarts}× after a time limit)` : ""
      }`;
      section.setAttribute("data-lmbook-grade", "done");
      return report;
    } catch (err) {
      progress.textContent = `grading failed: ${(err as Error).message}`;
      section.setAttribute("data-lmbook-grade", "failed");
      throw err;
    } finally {
      gradeBtn.disabled = !served;
    }
  }

  function show(report: GradeReport): void {
    const pct = report.maxScore ? Math.round((100 * report.score) / report.maxScore) : 0;
    summary.textContent = `${report.score.toFixed(2)} / ${report.maxScore} points (${pct}%)`;
    summary.setAttribute("data-score", String(report.score));
    summary.setAttribute("data-max-score", String(report.maxScore));
    out.textContent = formatReport(report, { color: false });
    details.replaceChildren(el("summary", {}, "Every test"));
    const table = el("table", { class: "lmbook-grade-table" });
    const head = el("tr");
    for (const h of ["Test", "Status", "Points", "Message"]) head.append(el("th", {}, h));
    table.append(head);
    for (const e of report.exercises) {
      for (const t of e.tests) {
        const row = el("tr", { "data-status": t.status });
        row.append(
          el("td", {}, t.name),
          el("td", { class: `st-${t.status.replace(/ /g, "-")}` }, t.status),
          el("td", {}, `${t.score} / ${t.maxScore}`),
        );
        const msg = el("td");
        msg.append(el("pre", {}, t.message));
        row.append(msg);
        table.append(row);
      }
    }
    details.append(table);
  }

  gradeBtn.addEventListener("click", () => void api.grade().catch(() => {}));
  zipBtn.addEventListener("click", () => {
    const all = { ...savedFiles() };
    for (const f of data.files) all[f.path] = api.getSource(f.path);
    const enc = new TextEncoder();
    const zip = zipSync(Object.fromEntries(Object.entries(all).map(([p, t]) => [p, enc.encode(t)])));
    download("lmbook-exercises.zip", zip, "application/zip");
  });
  section.setAttribute("data-lmbook-grade", "ready");
  return api;
}

const section = document.querySelector<HTMLElement>("[data-lmbook-grade]");
if (section) {
  (globalThis as unknown as { lmbookGrade: GradePanelApi }).lmbookGrade = mountPanel(section);
}

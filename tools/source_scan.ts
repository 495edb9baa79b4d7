/**
 * A small lexer for the grading tools: it finds comments, strings, template
 * literals and regular expressions in TypeScript source, so that brackets,
 * commas and names can then be found by plain scanning. Used by the grader
 * (`bracketsBalance` in graded_runner.ts, to place a syntax error inside one
 * exercise function) and by tests/hints_test.ts (to read every check's
 * options). Works on files that do not parse.
 * @module
 */

/**
 * The source with the insides of comments, strings, template literals and
 * regular expressions blanked out (newlines kept), so that brackets, commas
 * and names can be found by plain scanning. Offsets and lines are unchanged.
 * @param src TypeScript source.
 * @returns the masked source (the same length as `src`), and whether every
 * comment, string, template literal and regular expression was closed.
 */
export function scanLiterals(src: string): { masked: string; closed: boolean } {
  const out = src.split("");
  const blank = (from: number, to: number) => {
    for (let k = from; k < to; k++) if (out[k] !== "\n") out[k] = " ";
  };
  // Where a template literal's `${…}` expressions are open: the brace depth each started at.
  const templates: number[] = [];
  let depth = 0, i = 0, closed = true;
  /** Scans a template literal's text from `i` up to its end or its next `${`; returns where it stopped. */
  const templateText = (start: number): number => {
    let j = start;
    while (j < src.length) {
      if (src[j] === "\\") j += 2;
      else if (src[j] === "`") return j + 1;
      else if (src[j] === "$" && src[j + 1] === "{") {
        templates.push(depth);
        depth++;
        return j + 2;
      } else j++;
    }
    closed = false; // the text ended inside the template literal
    return j;
  };
  let lastSignificant = "";
  while (i < src.length) {
    const ch = src[i], next = src[i + 1];
    if (ch === "/" && next === "/") {
      const end = src.indexOf("\n", i);
      const stop = end < 0 ? src.length : end;
      blank(i, stop);
      i = stop;
    } else if (ch === "/" && next === "*") {
      const end = src.indexOf("*/", i + 2);
      if (end < 0) closed = false;
      const stop = end < 0 ? src.length : end + 2;
      blank(i, stop);
      i = stop;
    } else if (ch === '"' || ch === "'") {
      let j = i + 1;
      while (j < src.length && src[j] !== ch && src[j] !== "\n") j += src[j] === "\\" ? 2 : 1;
      if (src[j] !== ch) closed = false;
      blank(i + 1, j);
      i = j + 1;
      lastSignificant = ch;
    } else if (ch === "`") {
      const j = templateText(i + 1);
      blank(i + 1, src[j - 1] === "`" ? j - 1 : j - 2);
      i = j;
      lastSignificant = "`";
    } else if (ch === "}" && templates.length && templates.at(-1) === depth - 1) {
      // The end of a `${…}`: the template's text goes on.
      templates.pop();
      depth--;
      const j = templateText(i + 1);
      blank(i + 1, src[j - 1] === "`" ? j - 1 : j - 2);
      i = j;
      lastSignificant = "`";
    } else if (ch === "/" && (lastSignificant === "" || "(,=:[!&|?{};+-*%<>~^".includes(lastSignificant))) {
      // A regular expression literal (a `/` where a value starts, not a division).
      let j = i + 1, inClass = false;
      while (j < src.length && src[j] !== "\n" && (src[j] !== "/" || inClass)) {
        if (src[j] === "\\") j++;
        else if (src[j] === "[") inClass = true;
        else if (src[j] === "]") inClass = false;
        j++;
      }
      if (src[j] !== "/") closed = false;
      blank(i + 1, j);
      i = j + 1;
      lastSignificant = "/";
    } else {
      if (ch === "{") depth++;
      else if (ch === "}") depth--;
      if (!/\s/.test(ch)) lastSignificant = /[\w$]/.test(ch) ? "a" : ch;
      i++;
    }
  }
  if (templates.length) closed = false; // a `${…}` still open at the end
  return { masked: out.join(""), closed };
}

/**
 * {@link scanLiterals}'s masked source alone.
 * @param src TypeScript source.
 * @returns the masked source, the same length as `src`.
 */
export function maskLiterals(src: string): string {
  return scanLiterals(src).masked;
}

/**
 * Splits a bracketed list at its top-level commas.
 * @param masked masked source (see {@link maskLiterals}).
 * @param open the offset of the opening `(` or `{`.
 * @returns each item's offsets (empty items left out) and the offset of the closing bracket.
 */
export function splitItems(masked: string, open: number): { items: [number, number][]; close: number } {
  const items: [number, number][] = [];
  let depth = 0, start = open + 1;
  for (let i = open; i < masked.length; i++) {
    const ch = masked[i];
    if ("([{".includes(ch)) depth++;
    else if (")]}".includes(ch)) {
      depth--;
      if (depth === 0) {
        if (masked.slice(start, i).trim()) items.push([start, i]);
        return { items, close: i };
      }
    } else if (ch === "," && depth === 1) {
      items.push([start, i]);
      start = i + 1;
    }
  }
  throw new SyntaxError(`unbalanced brackets from offset ${open}`);
}

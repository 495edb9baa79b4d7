/**
 * Literals and brackets in TypeScript source for the grading tools, through
 * TypeScript's own scanner (`ts.createScanner`), which tokenises files that
 * do not parse. Used by the grader (`bracketsBalance`, to place a syntax
 * error inside one exercise function: in Deno by tools/grade/graded_runner.ts, in
 * the page by the type-check worker, tools/web/typecheck_worker.ts, which
 * already holds the compiler) and by tests/hints_test.ts (to read every
 * check's options).
 *
 * The TypeScript module is passed in rather than imported, so that the page's
 * bundles that reach this file hold no second copy of the compiler.
 * @module
 */
import type ts from "typescript";

/** The TypeScript module (`import ts from "typescript"`). */
export type TS = typeof ts;

/**
 * The source with the insides of comments, strings, template literals and
 * regular expressions blanked out (newlines kept), so that brackets, commas
 * and names can be found by plain scanning. Offsets and lines are unchanged;
 * a template literal's `${` and the `}` that ends its expression stay, as code.
 * @param src TypeScript source.
 * @param t the TypeScript module.
 * @returns the masked source (the same length as `src`), and whether every
 * comment, string, template literal and regular expression was closed.
 *
 * @example
 * ```ts
 * import ts from "typescript";
 * import { scanLiterals } from "./source_scan.ts";
 * const { masked, closed } = scanLiterals('f(")", /[)]/) // (', ts);
 * if (masked.replace(/[^()]/g, "") !== "()" || !closed) throw new Error(masked);
 * ```
 */
export function scanLiterals(src: string, t: TS): { masked: string; closed: boolean } {
  const K = t.SyntaxKind;
  // After these a `/` divides; elsewhere it starts a regular expression (the rule of TypeScript's own classifier).
  const endsValue = new Set([
    K.Identifier,
    K.StringLiteral,
    K.NumericLiteral,
    K.BigIntLiteral,
    K.RegularExpressionLiteral,
    K.NoSubstitutionTemplateLiteral,
    K.TemplateTail,
    K.ThisKeyword,
    K.SuperKeyword,
    K.TrueKeyword,
    K.FalseKeyword,
    K.NullKeyword,
    K.PlusPlusToken,
    K.MinusMinusToken,
    K.CloseParenToken,
    K.CloseBracketToken,
    K.CloseBraceToken,
  ]);
  const scanner = t.createScanner(t.ScriptTarget.Latest, false, t.LanguageVariant.Standard, src);
  const out = src.split("");
  const blank = (from: number, to: number) => {
    for (let k = from; k < to; k++) if (out[k] !== "\n" && out[k] !== "\r") out[k] = " ";
  };
  // Open template literals and the plain braces opened inside their `${…}`: the `}` that ends one resumes its text.
  const templates: ("${" | "{")[] = [];
  let closed = true, last = K.Unknown as ts.SyntaxKind;
  for (let kind = scanner.scan(); kind !== K.EndOfFileToken; kind = scanner.scan()) {
    if (kind === K.SlashToken || kind === K.SlashEqualsToken) {
      if (!endsValue.has(last)) kind = scanner.reScanSlashToken();
    } else if (kind === K.OpenBraceToken && templates.length) templates.push("{");
    else if (kind === K.CloseBraceToken && templates.length) {
      if (templates.pop() === "${") kind = scanner.reScanTemplateToken(false);
    }
    if (kind === K.TemplateHead || kind === K.TemplateMiddle) templates.push("${");
    const start = scanner.getTokenStart(), end = scanner.getTokenEnd(), text = scanner.getTokenText();
    switch (kind) {
      case K.SingleLineCommentTrivia:
      case K.MultiLineCommentTrivia:
        blank(start, end);
        break;
      case K.StringLiteral:
      case K.NoSubstitutionTemplateLiteral:
      case K.TemplateHead:
      case K.TemplateMiddle:
      case K.TemplateTail:
      case K.RegularExpressionLiteral: {
        // Keep the delimiters: the quotes, the template's backquote, `${` and `}`, the regular expression's slashes.
        const close = scanner.isUnterminated()
          ? 0
          : kind === K.TemplateHead || kind === K.TemplateMiddle
          ? 2
          : kind === K.RegularExpressionLiteral
          ? text.length - text.lastIndexOf("/")
          : 1;
        blank(start + 1, end - close);
        break;
      }
    }
    if (scanner.isUnterminated()) closed = false;
    if (kind < K.FirstTriviaToken || kind > K.LastTriviaToken) {
      // A keyword after a dot is a property name (`a.default / 2`).
      last = kind >= K.FirstKeyword && kind <= K.LastKeyword && last === K.DotToken ? K.Identifier : kind;
    }
  }
  if (templates.includes("${")) closed = false; // a `${…}` still open at the end
  return { masked: out.join(""), closed };
}

/**
 * {@link scanLiterals}'s masked source alone.
 * @param src TypeScript source.
 * @param t the TypeScript module.
 * @returns the masked source, the same length as `src`.
 */
export function maskLiterals(src: string, t: TS): string {
  return scanLiterals(src, t).masked;
}

/**
 * Whether the brackets of a piece of code balance, skipping comments, strings,
 * template literals and regular expressions ({@link scanLiterals}); false
 * when one of those is left open.
 * @param code TypeScript source, e.g. one function.
 * @param t the TypeScript module.
 * @returns true when every `(`, `[` and `{` is closed in order.
 *
 * @example
 * ```ts
 * import ts from "typescript";
 * import { bracketsBalance } from "./source_scan.ts";
 * if (!bracketsBalance("f(`}`, [1]);", ts) || bracketsBalance("f((1);", ts)) throw new Error("wrong");
 * ```
 */
export function bracketsBalance(code: string, t: TS): boolean {
  const { masked, closed } = scanLiterals(code, t);
  if (!closed) return false;
  const stack: string[] = [];
  const open: Record<string, string> = { ")": "(", "]": "[", "}": "{" };
  for (const c of masked) {
    if (c === "(" || c === "[" || c === "{") stack.push(c);
    else if (c in open && stack.pop() !== open[c]) return false;
  }
  return stack.length === 0;
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

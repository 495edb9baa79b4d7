/**
 * How the live pages' kernel (tools/web/kernel.ts) runs a notebook cell so that cells share state as in the Deno
 * Jupyter kernel: sucrase removes the TypeScript types (nothing else changes), acorn finds the cell's top-level
 * statements, and each top-level declaration becomes an assignment to a shared scope object:
 *
 * - `const`/`let`/`var` declarations become assignments (destructuring kept: `({ a, b } = (expr))`);
 * - function declarations are assigned first (they are hoisted in a module too), class declarations in place;
 * - `import x from "..."` becomes `x = (await __lmImportModule("..."))...`;
 * - a final expression statement is returned, so its value can be shown (as the Deno kernel shows it).
 *
 * The kernel runs the result as the body of an async function inside `with (scope)`, so top-level `await` works
 * and later cells, and closures from earlier ones, see every name.
 *
 * @module
 */
import { transform } from "sucrase";
import * as acorn from "acorn";

type Node = acorn.Node & Record<string, unknown>;

function patternNames(p: Node | null, out: string[]): string[] {
  if (!p) return out;
  switch (p.type) {
    case "Identifier":
      out.push(p.name as string);
      break;
    case "ObjectPattern":
      for (const prop of p.properties as Node[]) {
        patternNames(prop.type === "RestElement" ? prop : prop.value as Node, out);
      }
      break;
    case "ArrayPattern":
      for (const e of p.elements as (Node | null)[]) patternNames(e, out);
      break;
    case "RestElement":
      patternNames(p.argument as Node, out);
      break;
    case "AssignmentPattern":
      patternNames(p.left as Node, out);
      break;
  }
  return out;
}

/**
 * A cell's source as the body of an async function run inside `with (scope)`.
 * @param source the cell's TypeScript.
 * @returns the JavaScript body and the names it declares at top level.
 */
export function compileCell(source: string): { body: string; names: string[] } {
  const js = transform(source, { transforms: ["typescript"], disableESTransforms: true, keepUnusedImports: true }).code;
  const program = acorn.parse(js, {
    ecmaVersion: "latest",
    sourceType: "module",
    allowAwaitOutsideFunction: true,
    allowReturnOutsideFunction: true,
  }) as unknown as { body: Node[] };
  const names: string[] = [];
  const hoisted: string[] = [];
  const edits: { start: number; end: number; text: string }[] = [];
  const src = (n: Node) => js.slice(n.start, n.end);
  let imports = 0;
  const statements = program.body;
  statements.forEach((stmt0, i) => {
    let stmt = stmt0;
    if (stmt.type === "ExportNamedDeclaration" && stmt.declaration) stmt = stmt.declaration as Node;
    if (stmt.type === "ImportDeclaration") {
      const m = `__lmImport${imports++}`;
      const parts = [`const ${m} = await __lmImportModule(${JSON.stringify((stmt.source as Node).value)});`];
      for (const s of stmt.specifiers as Node[]) {
        const local = (s.local as Node).name as string;
        names.push(local);
        const from = s.type === "ImportNamespaceSpecifier"
          ? m
          : s.type === "ImportDefaultSpecifier"
          ? `${m}.default`
          : `${m}[${JSON.stringify((s.imported as Node).name ?? (s.imported as Node).value)}]`;
        parts.push(`${local} = ${from};`);
      }
      edits.push({ start: stmt0.start, end: stmt0.end, text: parts.join(" ") });
    } else if (stmt.type === "VariableDeclaration") {
      const decls = (stmt.declarations as Node[]).map((d) => {
        patternNames(d.id as Node, names);
        return `${src(d.id as Node)} = ${d.init ? `(${src(d.init as Node)})` : "undefined"}`;
      });
      edits.push({ start: stmt0.start, end: stmt0.end, text: `;(${decls.join(", ")});` });
    } else if (stmt.type === "FunctionDeclaration") {
      const name = (stmt.id as Node).name as string;
      names.push(name);
      hoisted.push(`${name} = (${src(stmt)});`); // hoisted, as a declaration is
      edits.push({ start: stmt0.start, end: stmt0.end, text: "" });
    } else if (stmt.type === "ClassDeclaration") {
      const name = (stmt.id as Node).name as string;
      names.push(name);
      edits.push({ start: stmt0.start, end: stmt0.end, text: `${name} = (${src(stmt)});` });
    } else if (i === statements.length - 1 && stmt.type === "ExpressionStatement" && !stmt.directive) {
      edits.push({ start: stmt0.start, end: stmt0.end, text: `return (${src(stmt.expression as Node)});` });
    }
  });
  let body = js;
  for (const e of edits.sort((a, b) => b.start - a.start)) body = body.slice(0, e.start) + e.text + body.slice(e.end);
  return { body: hoisted.join("\n") + "\n" + body, names };
}

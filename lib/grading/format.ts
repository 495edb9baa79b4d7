/**
 * How failure messages of the graded tests show values (chapter 0).
 * @module
 */
import * as tf from "../core/tf.ts";

/** How long a rendered object may get before it is cut with "…". */
const MAX_OBJECT_CHARS = 300;

/** How deep nested objects are shown before "…" stands in for the rest. */
const MAX_DEPTH = 6;

/**
 * A compact, readable rendering of a value for failure messages: numbers as
 * JavaScript writes them (so `-Infinity`, `Infinity` and `NaN` appear as
 * themselves, also inside objects, where JSON would write `null`), long
 * arrays cut after `maxItems` items, tensors with their shape.
 * @param value a number, array, typed array, tensor, Map, Set, object or anything else.
 * @param maxItems how many items of a long array (or fields of an object) to show.
 * @returns a one-line string.
 *
 * @example
 * ```ts
 * import { formatValue } from "./format.ts";
 * console.log(formatValue({ word: "teh", logPrior: -Infinity })); // { word: "teh", logPrior: -Infinity }
 * console.log(formatValue([1 / 3, NaN])); // [0.333333, NaN]
 * ```
 */
export function formatValue(value: unknown, maxItems = 12): string {
  return render(value, maxItems, 0, new Set());
}

function render(value: unknown, maxItems: number, depth: number, seen: Set<unknown>): string {
  const inner = (v: unknown) => render(v, maxItems, depth + 1, seen);
  if (value instanceof tf.Tensor) {
    if (value.isDisposed) return `Tensor(shape [${value.shape}], ${value.dtype}, disposed)`;
    return `Tensor(shape [${value.shape}], ${value.dtype}) ${render(value.arraySync(), maxItems, depth, seen)}`;
  }
  if (typeof value === "function") return `[function ${value.name || "(anonymous)"}]`;
  if (value != null && typeof (value as { then?: unknown }).then === "function") return "Promise { … }";
  if (typeof value === "number") {
    return Number.isInteger(value) || !Number.isFinite(value) ? String(value) : String(+value.toPrecision(6));
  }
  if (typeof value === "string") return JSON.stringify(value);
  if (typeof value === "bigint") return `${value}n`;
  if (value === null || typeof value !== "object") return String(value);
  if (seen.has(value)) return "[circular]";
  if (depth > MAX_DEPTH) return Array.isArray(value) ? "[…]" : "{…}";
  seen.add(value);
  try {
    if (ArrayBuffer.isView(value) && !(value instanceof DataView)) {
      return render(Array.from(value as unknown as ArrayLike<number>), maxItems, depth, seen);
    }
    if (Array.isArray(value)) {
      const items = value.slice(0, maxItems).map(inner);
      return `[${items.join(", ")}${value.length > maxItems ? `, … (${value.length} items)` : ""}]`;
    }
    if (value instanceof Map) return `Map(${value.size}) ${inner([...value.entries()].slice(0, maxItems))}`;
    if (value instanceof Set) return `Set(${value.size}) ${inner([...value].slice(0, maxItems))}`;
    if (value instanceof Error) return `${value.name}: ${value.message}`;
    const keys = Object.keys(value);
    const fields = keys.slice(0, maxItems).map((k) =>
      `${/^[A-Za-z_$][\w$]*$/.test(k) ? k : JSON.stringify(k)}: ${inner((value as Record<string, unknown>)[k])}`
    );
    const more = keys.length > maxItems ? `, … (${keys.length} fields)` : "";
    const proto = Object.getPrototypeOf(value);
    const name = proto === null || proto === Object.prototype ? "" : `${proto.constructor?.name ?? "Object"} `;
    const text = fields.length ? `${name}{ ${fields.join(", ")}${more} }` : `${name}{}`;
    return text.length > MAX_OBJECT_CHARS ? text.slice(0, MAX_OBJECT_CHARS) + "…" : text;
  } finally {
    seen.delete(value);
  }
}

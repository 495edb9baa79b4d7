/**
 * Runs first in the grading worker: the npm port of `node:assert` (through
 * npm's `util`) reads `process.env` when it loads. A bare `process` with an
 * empty environment and no `versions.node` keeps tfjs seeing a browser.
 *
 * @module
 */
const g = globalThis as unknown as { process?: unknown };
g.process ??= { env: {}, versions: {}, browser: true, platform: "browser" };

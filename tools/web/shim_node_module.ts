/**
 * `node:module` for lib's browser bundle (tools/web/build.ts maps it here): lib/display/plot.ts finds plotly.js on disk
 * with `createRequire`, which only its Deno code path calls; a live page loads plotly.js by URL instead.
 *
 * @module
 */

/**
 * A `require` that cannot load anything: there are no node_modules on disk in a browser.
 * @param _from the module the require would be relative to.
 * @returns an object whose `resolve` throws, saying so.
 */
export function createRequire(_from: string | URL): { resolve(id: string): string } {
  return {
    resolve(id: string): string {
      throw new Error(`cannot resolve ${JSON.stringify(id)} on disk: lib runs in a browser here`);
    },
  };
}

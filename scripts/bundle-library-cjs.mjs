// The library entry for `require("wh")`: dist/index.cjs, one CommonJS file bundled by esbuild from
// src/index.ts, with its packages (zod, undici) left to node_modules, where both have CommonJS
// builds. Why not require(esm) of dist/index.js: Node 20.18, inside `engines`, loads an ES module
// with require() only under --experimental-require-module (20.19 and 22.12 need no flag). The
// measures are in docs/library.md ("The library for import and require").
//
// Its types are dist/**/*.d.cts beside tsc's .d.ts, for what index.d.ts reaches: the same
// declarations, with relative imports of `./x.js` as `./x.cjs`, so TypeScript reads them as
// CommonJS declarations all the way down (a .d.cts that re-exported the .d.ts would be a CommonJS
// file importing an ES module: an error under `module: node16`, and masquerading under the rest).
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { build } from "esbuild";

await build({
  entryPoints: ["src/index.ts"],
  outfile: "dist/index.cjs",
  bundle: true,
  format: "cjs",
  platform: "node",
  target: "node20",
  packages: "external",
  logLevel: "warning",
  // The one module that reads import.meta.url (adapters/segment-engines.ts requires Segment's
  // engines beside it) gets this file's URL, as the CLI bundle does.
  define: { "import.meta.url": "__whModuleUrl" },
  banner: { js: 'const __whModuleUrl = require("node:url").pathToFileURL(__filename).href;' },
  plugins: [
    {
      // zod's exports map `zod/v4/locales/*` to the very file named, for require too: the .js is
      // its ES module, the .cjs beside it the CommonJS one.
      name: "zod-locale-cjs",
      setup: (bundle) =>
        bundle.onResolve({ filter: /^zod\/v4\/locales\/[\w-]+\.js$/ }, (args) => ({ path: args.path.replace(/\.js$/, ".cjs"), external: true })),
    },
  ],
});

const RELATIVE = /((?:from|import)\s*\(?\s*["'])(\.\.?\/[^"']+)\.js(["'])/g;
const seen = new Set();
const visit = (file) => {
  if (seen.has(file)) return;
  seen.add(file);
  const text = readFileSync(file, "utf8");
  writeFileSync(file.replace(/\.d\.ts$/, ".d.cts"), text.replace(RELATIVE, "$1$2.cjs$3"));
  for (const [, , specifier] of text.matchAll(RELATIVE)) visit(resolve(dirname(file), `${specifier}.d.ts`));
};
visit(resolve(join("dist", "index.d.ts")));

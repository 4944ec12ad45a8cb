// Bundles the CLI with esbuild into dist/cli-bundle/: one file for main and one chunk per lazily
// imported command (code splitting keeps `wh verify` from loading what `wh replay` needs), so
// Node's ESM loader reads a handful of files instead of hundreds. The library entry
// (dist/index.js, with its types) is tsc's output and is not bundled.
import { build } from "esbuild";

await build({
  entryPoints: ["src/cli/main.ts"],
  outdir: "dist/cli-bundle",
  bundle: true,
  splitting: true,
  format: "esm",
  platform: "node",
  target: "node20",
  // Loaded at run time by path (undici's agent alone, commander's CommonJS entry), or CommonJS that
  // finds files from its own __filename (cosmiconfig): kept external, loaded from node_modules.
  external: ["undici", "undici/*", "cosmiconfig", "redis", "@redis/*"],
  // Bundled CommonJS (commander) calls require() for Node's built-in modules.
  banner: { js: 'import { createRequire as __whRequire } from "node:module"; const require = __whRequire(import.meta.url);' },
  logLevel: "warning",
});

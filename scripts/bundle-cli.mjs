// Bundles the CLI with esbuild into dist/cli-bundle/, as CommonJS: on Node 20 a program whose
// entry is an ES module pays about 5 ms to start Node's ESM loader, half of what `wh sign` may add
// to a bare `node -e 0` (bench/cold-start.js). esbuild splits code only for ES modules, so the
// lazy loading the source declares is kept here: whatever the source loads with a literal
// `import("…")` (a module of its own, or a bundled package such as ora) is a file of its
// own, dist/cli-bundle/<name>.cjs, and that import becomes `require("./<name>.cjs")`. A static
// import is bundled in: what one command needs is read from one file, and its libraries (zod) are
// set up once. core/errors lives in main.cjs, which exports it to the other files: main's
// `instanceof WhError` must see the classes the commands throw. The library entry (dist/index.js,
// with its types) is tsc's output and is not bundled.
import { readdirSync, readFileSync } from "node:fs";
import { basename, join, resolve } from "node:path";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const SRC = resolve("src");
const MAIN = join(SRC, "cli/wiring/main.ts");
const ERRORS = join(SRC, "core/errors.ts");
// Kept external, loaded from node_modules: @redis/client (`wh serve --queue` only), and Segment's engines
// (@segment/actions-core, @segment/destination-subscriptions: only with subscriptions, required by
// adapters/segment-engines.ts, whose CommonJS builds load their own dependencies). A name is the
// package itself, not its files. cosmiconfig is a file of its own (cosmiconfigFile).
const EXTERNAL = ["@redis/client", "@redis/client/*", "@segment/actions-core", "@segment/actions-core/*", "@segment/destination-subscriptions"];
// Packages that are a file of their own however the source imports them: undici, whose public
// entry loads all of it (fetch, WebSocket, caches: 1 MB), is read only by the commands that
// deliver, once, and never by `wh sign` or `wh verify`. From one bundled file it starts about
// 10 ms sooner than from node_modules' 150 files (bench/cold-start.js, `wh send`).
const OWN_FILE_PACKAGES = ["undici"];
const isExternal = (specifier) => EXTERNAL.some((pattern) => pattern === specifier || (pattern.endsWith("/*") && specifier.startsWith(pattern.slice(0, -1))));

const packageFile = (specifier) => ({ file: fileURLToPath(import.meta.resolve(specifier)), name: specifier.replace(/[@/]/g, "-").replace(/^-/, "") });

/**
 * What is a file of its own, by what it is imported as: its file and its name here. That is what
 * the source loads with a literal `import("…")` (not a type's `typeof import`), and OWN_FILE_PACKAGES.
 */
function lazilyImported() {
  const found = new Map(OWN_FILE_PACKAGES.map((specifier) => [specifier, packageFile(specifier)]));
  const visit = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) visit(path);
      else if (entry.name.endsWith(".ts") && !entry.name.endsWith(".d.ts")) {
        for (const [, specifier] of readFileSync(path, "utf8").matchAll(/(?<!typeof )\bimport\("([^"]+)"\)/g)) {
          if (specifier.startsWith(".")) {
            const file = resolve(dir, specifier.replace(/\.js$/, ".ts"));
            found.set(file, { file, name: basename(file, ".ts") });
          } else if (!specifier.startsWith("node:") && !isExternal(specifier)) {
            found.set(specifier, packageFile(specifier));
          }
        }
      }
    }
  };
  visit(SRC);
  return found;
}

const lazy = lazilyImported();

/**
 * A dynamic import of what is loaded lazily, and any import of OWN_FILE_PACKAGES, becomes a
 * require of its file; in the lazy files, core/errors comes from main.cjs. The import goes through
 * a small ES module that re-exports the file: esbuild gives a .ts file of this "type": "module"
 * package Node's interop for a required file (its `default` is the whole module.exports), but each
 * file here is an ES module compiled to CommonJS (it sets __esModule), whose `default` is its
 * default export (ora's function).
 */
function requireSeparateFiles(inMain) {
  return {
    name: "require-separate-files",
    setup(build) {
      build.onResolve({ filter: /.*/ }, (args) => {
        if (args.kind === "entry-point") return undefined;
        if (args.namespace === "wh-lazy" || isExternal(args.path)) return { path: args.path, external: true };
        if (args.path === "cosmiconfig") return { path: "./cosmiconfig.cjs", external: true };
        const relative = args.path.startsWith(".");
        const key = relative ? resolve(args.resolveDir, args.path.replace(/\.js$/, ".ts")) : args.path;
        if (!inMain && key === ERRORS) return { path: "./main.cjs", external: true };
        const target = args.kind === "dynamic-import" || OWN_FILE_PACKAGES.includes(key) ? lazy.get(key) : undefined;
        return target === undefined ? undefined : { path: target.name, namespace: "wh-lazy" };
      });
      build.onLoad({ filter: /.*/, namespace: "wh-lazy" }, (args) => {
        const file = JSON.stringify(`./${args.path}.cjs`);
        return { contents: `export * from ${file};\nexport { default } from ${file};\n`, loader: "js" };
      });
    },
  };
}

/** main.cjs is cli/wiring/main.ts, and exports core/errors for the lazily loaded files. */
const mainWithErrors = {
  name: "main-with-errors",
  setup(build) {
    build.onResolve({ filter: /^wh:main$/ }, () => ({ path: "main", namespace: "wh-main" }));
    build.onLoad({ filter: /.*/, namespace: "wh-main" }, () => ({
      contents: `export * from ${JSON.stringify(ERRORS)};\nimport ${JSON.stringify(MAIN)};\n`,
      resolveDir: SRC,
      loader: "js",
    }));
  },
};

const options = {
  outdir: "dist/cli-bundle",
  // One flat directory: two lazily loaded modules with the same name fail the build.
  outExtension: { ".js": ".cjs" },
  bundle: true,
  format: "cjs",
  platform: "node",
  target: "node20",
  // An `import()` left (of an external package) becomes require(): no ESM loader at start-up.
  supported: { "dynamic-import": false },
  // import.meta.url (two modules use it) is worked out when read, not at every start.
  define: { "import.meta.url": "__whModule.url" },
  banner: { js: 'const __whModule = { get url() { return require("node:url").pathToFileURL(__filename).href; } };' },
  logLevel: "warning",
};

const plugins = (inMain) => [requireSeparateFiles(inMain)];

/**
 * cosmiconfig, which nearly every command loads to find the config, as one file: from node_modules
 * it is about 25 files (with parse-json, which it uses on every search for its own settings in the
 * working directory's package.json). Built apart from the CLI, because its `import()` of a
 * JavaScript config must stay an `import()` (an ES module config is not `require`d on Node 20).
 * js-yaml, which it requires only to read a YAML config, is a file of its own beside it (100 KB
 * that every other start would compile); TypeScript, for a TypeScript config, is the user's.
 */
const COSMICONFIG_ENTRY = fileURLToPath(import.meta.resolve("cosmiconfig"));
const cosmiconfigFile = {
  ...options,
  entryPoints: [{ in: COSMICONFIG_ENTRY, out: "cosmiconfig" }],
  supported: {},
  define: {},
  banner: {},
  external: ["typescript"],
  plugins: [{ name: "js-yaml-apart", setup: (build) => build.onResolve({ filter: /^js-yaml$/ }, () => ({ path: "./js-yaml.cjs", external: true })) }],
};
/**
 * A package of OWN_FILE_PACKAGES (undici), built alone without whitespace and comments (esbuild's
 * minifyWhitespace: the code is left as it is). undici's file goes from 1.09 to 0.76 MB, and its
 * comments' typographic quotes go with them: `wh send` reads, hashes (the code cache's name) and
 * compiles it at every start, 3.4 ms of CPU less (bench/cold-start.js). A stack trace's frames in
 * it point into long lines: into the bundle, not undici's own files, as they already did. wh's own
 * files are left readable: minified they started no sooner.
 */
const ownFilePackage = (specifier) => {
  const { file, name } = packageFile(specifier);
  return { ...options, entryPoints: [{ in: file, out: name }], minifyWhitespace: true, define: {}, banner: {} };
};
/** The js-yaml cosmiconfig itself would require. */
const jsYamlFile = { ...options, entryPoints: [{ in: createRequire(COSMICONFIG_ENTRY).resolve("js-yaml"), out: "js-yaml" }], define: {}, banner: {} };

await Promise.all([
  build({ ...options, entryPoints: [{ in: "wh:main", out: "main" }], plugins: [mainWithErrors, ...plugins(true)] }),
  build({
    ...options,
    entryPoints: [...lazy].filter(([key]) => !OWN_FILE_PACKAGES.includes(key)).map(([, { file, name }]) => ({ in: file, out: name })),
    plugins: plugins(false),
  }),
  ...OWN_FILE_PACKAGES.map((specifier) => build(ownFilePackage(specifier))),
  build(cosmiconfigFile),
  build(jsYamlFile),
]);

// The layering of src/ (docs/development.md, "The shape of the code"), checked on the source's
// import lines: a file imports from its own layer or one further in, never one further out, and no
// circle runs through static imports. A dynamic import() counts for the layers but not for
// circles (it loads lazily, after both modules have run); a type-only import counts for the
// layers too, and vanishes at run time, so not for circles either.
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, posix, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");

/** Innermost first. A path belongs to the layer of its longest matching entry. */
const LAYERS: readonly (readonly [layer: string, paths: readonly string[]])[] = [
  ["core", ["src/core", "src/version.ts"]],
  ["adapters", ["src/adapters"]],
  ["config", ["src/config"]],
  ["library: the Analytics client", ["src/library/analytics", "src/library/settings.ts"]],
  ["engine", ["src/engine"]],
  ["library: the webhook sender", ["src/library/sender"]],
  ["library: the receiver middleware", ["src/library/receiver"]],
  ["browser: the inspector page", ["src/browser"]],
  ["cli", ["src/cli"]],
  ["library entry", ["src/index.ts"]],
];

function sourceFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = posix.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith(".ts") ? [path] : [];
  });
}

function layerOf(file: string): number | undefined {
  let best: { index: number; length: number } | undefined;
  LAYERS.forEach(([, paths], index) => {
    for (const path of paths) {
      if ((file === path || file.startsWith(`${path}/`)) && (best === undefined || path.length > best.length)) best = { index, length: path.length };
    }
  });
  return best?.index;
}

interface Import {
  target: string;
  /** Run when the importing module runs: a static import of at least one value. */
  eager: boolean;
}

const STATIC = /^\s*(?:import|export)\s+(type\s+)?(?:([^;]*?)\s+from\s+)?"(\.{1,2}\/[^"]+)"/gm;
const DYNAMIC = /\bimport\(\s*"(\.{1,2}\/[^"]+)"\s*\)/g;

function importsOf(file: string): Import[] {
  const text = readFileSync(join(ROOT, file), "utf8");
  const target = (specifier: string) => posix.join(posix.dirname(file), specifier).replace(/\.js$/, ".ts");
  const found: Import[] = [];
  for (const [, typeKeyword, clause, specifier] of text.matchAll(STATIC)) {
    const names = clause?.trim().match(/^\{([^}]*)\}$/)?.[1];
    const allTypes = names?.split(",").every((name) => name.trim() === "" || /^type\s/.test(name.trim()));
    found.push({ target: target(specifier as string), eager: typeKeyword === undefined && allTypes !== true });
  }
  for (const [, specifier] of text.matchAll(DYNAMIC)) found.push({ target: target(specifier as string), eager: false });
  return found;
}

const files = sourceFiles("src");
const graph = new Map(files.map((file) => [file, importsOf(file)]));

describe("the layers of src/", () => {
  it("puts every source file in exactly one layer", () => {
    expect(files.filter((file) => layerOf(file) === undefined)).toEqual([]);
  });

  it("names only folders and files that exist", () => {
    const exists = (path: string) => files.some((file) => file === path || file.startsWith(`${path}/`));
    expect(LAYERS.flatMap(([, paths]) => paths).filter((path) => !exists(path))).toEqual([]);
  });

  it("resolves every relative import to a source file", () => {
    const missing = [...graph].flatMap(([file, imports]) => imports.filter(({ target }) => !graph.has(target)).map(({ target }) => `${file} → ${target}`));
    expect(missing).toEqual([]);
  });

  it("imports from its own layer or one further in, never one further out", () => {
    const outward = [...graph].flatMap(([file, imports]) =>
      imports
        .filter(({ target }) => (layerOf(target) ?? -1) > (layerOf(file) ?? -1))
        .map(({ target }) => `${file} (${LAYERS[layerOf(file) ?? 0]?.[0]}) → ${target} (${LAYERS[layerOf(target) ?? 0]?.[0]})`),
    );
    expect(outward).toEqual([]);
  });

  it("has no circle of static imports", () => {
    const circles: string[] = [];
    const state = new Map<string, "open" | "done">();
    const path: string[] = [];
    const visit = (file: string) => {
      state.set(file, "open");
      path.push(file);
      for (const { target, eager } of graph.get(file) ?? []) {
        if (!eager) continue;
        if (state.get(target) === "open") circles.push([...path.slice(path.indexOf(target)), target].map((step) => relative("src", step)).join(" → "));
        else if (!state.has(target)) visit(target);
      }
      path.pop();
      state.set(file, "done");
    };
    for (const file of files) if (!state.has(file)) visit(file);
    expect(circles).toEqual([]);
  });
});

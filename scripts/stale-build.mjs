// Whether dist/ holds a build of the source as it is: `npm start` builds only when it does not,
// and the tests that spawn bin/wh.cjs refuse a stale one (test/helpers/run-wh.ts).
import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../", import.meta.url));
/** The bundle every command runs, written last by `npm run build`. */
const BUNDLE = join(ROOT, "dist", "cli-bundle", "main.cjs");
/** What the build is made from: a change to any of these makes dist/ stale. */
const BUILD_SOURCES = ["src", "scripts", "package.json", "tsconfig.json", "tsconfig.build.json"].map((name) => join(ROOT, name));

/** Why `bundle` cannot be trusted to hold what `sources` say (missing, or older than one of them), or undefined when it can. */
export function staleBuild(bundle = BUNDLE, sources = BUILD_SOURCES) {
  const built = statSync(bundle, { throwIfNoEntry: false })?.mtimeMs;
  if (built === undefined) return "dist/ is not built";
  return built < Math.max(...sources.map(newestMtime)) ? "dist/ is older than the source" : undefined;
}

function newestMtime(path) {
  const stat = statSync(path, { throwIfNoEntry: false });
  if (stat === undefined) return 0;
  if (!stat.isDirectory()) return stat.mtimeMs;
  return readdirSync(path, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile())
    .reduce((newest, entry) => Math.max(newest, statSync(join(entry.parentPath, entry.name)).mtimeMs), 0);
}

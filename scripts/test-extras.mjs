// The test package of the web frameworks and of Segment's action-destinations (test-packages/
// frameworks, installed by `npm run test:install-extras`, never by the root `npm ci`): its tests run
// and are type-checked only where it is installed. Run as a script (the last step of `npm run
// typecheck`): type-checks them, or says in one line why not.
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

export const EXTRAS = "test-packages/frameworks";

/** Whether `npm ci` ran in the package (npm writes node_modules/.package-lock.json). */
export function extrasInstalled() {
  return existsSync(fileURLToPath(new URL(`../${EXTRAS}/node_modules/.package-lock.json`, import.meta.url)));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  if (extrasInstalled()) {
    try {
      execFileSync("tsc", ["-p", fileURLToPath(new URL(`../${EXTRAS}`, import.meta.url))], { stdio: "inherit" });
    } catch {
      // tsc printed what is wrong.
      process.exitCode = 1;
    }
  } else process.stdout.write(`${EXTRAS} is not installed: its tests are not type-checked (npm run test:install-extras)\n`);
}

// `npm start`: builds only when dist/ is older than the source (a build takes seconds, the demo
// well under one), then runs the demo.
import { execFileSync } from "node:child_process";
import { staleBuild } from "./stale-build.mjs";

const stale = staleBuild();
if (stale !== undefined) {
  process.stderr.write(`${stale}: building first (npm run build)\n`);
  execFileSync("npm", ["run", "--silent", "build"], { stdio: "inherit" });
}

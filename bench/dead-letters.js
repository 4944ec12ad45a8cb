// wh serve dead-letters list, list --json and replay over a spool's dead-letter file of 50,000 and
// of 1,000,000 letters (BENCH_DEAD_LETTERS=50000,1000000): each one's peak RSS, beside the floor,
// a bare streaming read of the same file (bench/bare-line-read.js). They stream: peak RSS stays
// flat whatever the file's size.
import { createWriteStream, mkdirSync, rmSync, statSync } from "node:fs";
import { once } from "node:events";
import { fileURLToPath } from "node:url";
import { sampleBody } from "./generate.js";
import { runMeasured, runWh } from "./wh-process.js";

const COUNTS = (process.env.BENCH_DEAD_LETTERS ?? "50000,1000000").split(",").map(Number);
const bareRead = fileURLToPath(new URL("./bare-line-read.js", import.meta.url));

/** A data directory whose dead-letter file holds `count` letters of wh serve (failed deliveries). */
async function deadLetters(count) {
  const dataDir = fileURLToPath(new URL(`./.data/dead-letters-${count}/`, import.meta.url));
  rmSync(dataDir, { recursive: true, force: true });
  mkdirSync(dataDir, { recursive: true });
  const file = `${dataDir}dead-letters.ndjson`;
  const out = createWriteStream(file);
  const event = JSON.parse(sampleBody());
  for (let index = 0; index < count; index += 1) {
    const original = JSON.stringify({ ...event, messageId: `dead-${index}` });
    const line = JSON.stringify({ line: index, outcome: "failed", reason: "HTTP 500", at: "2026-11-21T09:30:09.000Z", original });
    if (!out.write(`${line}\n`)) await once(out, "drain");
  }
  out.end();
  await once(out, "finish");
  return { dataDir, file };
}

const mb = (run) => {
  if (run.code !== 0) throw new Error(`exited ${run.code}`);
  return `${run.peakMb.toFixed(0)} MB`;
};

for (const count of COUNTS) {
  const { dataDir, file } = await deadLetters(count);
  const fileMb = statSync(file).size / 1024 / 1024;
  const floor = await runMeasured([bareRead, file]);
  const list = await runWh(["serve", "dead-letters", "list", "--data-dir", dataDir]);
  const json = await runWh(["--json", "serve", "dead-letters", "list", "--data-dir", dataDir]);
  const replay = await runWh(["--json", "serve", "dead-letters", "replay", "--data-dir", dataDir]);
  console.log(
    `dead letters (node bench/dead-letters.js; BENCH_DEAD_LETTERS=${count}): ${count} letters, a ${fileMb.toFixed(0)} MB file: peak RSS list ${mb(list)}, list --json ${mb(json)}, replay ${mb(replay)} (${(replay.wallMs / 1000).toFixed(1)} s); the floor, a bare streaming read of the file: ${mb(floor)}`,
  );
  rmSync(dataDir, { recursive: true, force: true });
}

// `wh samples generate` at 10,000, 100,000 and 1,000,000 events (1,000 users), written to a file:
// peak RSS of the wh process beside a floor, a bare Node loop writing as many fixed lines of the
// same size. Flat memory: wh's peak stays near the same figure as the events grow a hundredfold.
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { runMeasured, runWh } from "./wh-process.js";

const dir = mkdtempSync(join(tmpdir(), "wh-bench-samples-"));
const floorScript = fileURLToPath(new URL("./fixed-lines.js", import.meta.url));
const rows = [];
try {
  for (const events of [10_000, 100_000, 1_000_000]) {
    const out = join(dir, "traffic.ndjson");
    const wh = await runWh(["--quiet", "samples", "generate", "--users", "1000", "--events", String(events), "--seed", "1", "--out", out]);
    if (wh.code !== 0) throw new Error(`wh samples generate exited ${wh.code}`);
    const lineBytes = Math.round(statSync(out).size / events);
    rmSync(out);
    const floor = await runMeasured([floorScript, String(events), out, String(lineBytes)]);
    if (floor.code !== 0) throw new Error(`bench/fixed-lines.js exited ${floor.code}`);
    rmSync(out);
    rows.push({
      events: events.toLocaleString("en"),
      "bytes/line": lineBytes,
      "wh peak MB": wh.peakMb.toFixed(1),
      "floor peak MB": floor.peakMb.toFixed(1),
      "wh events/s": Math.round(events / (wh.wallMs / 1000)),
      "wh s": (wh.wallMs / 1000).toFixed(1),
    });
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
console.table(rows);

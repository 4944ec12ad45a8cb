// Memory of wh serve's duplicate window (--dedup-window, one per source): bytes per messageId held,
// at 100,000 and 1,000,000 ids, each in a fresh process (node --expose-gc), as the growth of the
// heap plus the typed arrays' memory (process.memoryUsage: heapUsed + external) after a full
// collection, the ids themselves dropped. Beside it, for scale, a Set of the same id strings, the
// least a window that keeps the strings holds. Ids are UUIDs, as Segment's libraries make them.
// Needs `npm run build` first (it imports dist/).
import { spawnSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { fileURLToPath } from "node:url";

const TARGET = 40;

async function measureHere(kind, count) {
  const { RecentIds } = await import("../dist/core/message/recent-ids.js");
  // A typed array's memory is given back a moment after the collection that frees it: settle first.
  const used = async () => {
    for (let pass = 0; pass < 3; pass += 1) {
      globalThis.gc();
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const { heapUsed, external } = process.memoryUsage();
    return heapUsed + external;
  };
  // A flat string, as JSON.parse makes a request's messageId (randomUUID's own is built of pieces).
  const id = () => JSON.parse(`"${randomUUID()}"`);
  const before = await used();
  let window;
  if (kind === "RecentIds") {
    window = new RecentIds(count);
    for (let index = 0; index < count; index += 1) window.add(id());
  } else {
    window = new Set();
    for (let index = 0; index < count; index += 1) window.add(id());
  }
  const after = await used();
  if (kind === "RecentIds" && window.has(id())) throw new Error("a new id found in the window");
  console.log(JSON.stringify({ bytesPerId: (after - before) / count }));
}

if (process.argv[2] === "--child") await measureHere(process.argv[3], Number(process.argv[4]));
else {
  const self = fileURLToPath(import.meta.url);
  console.log(`Node ${process.version}; bytes per id held (heap + typed arrays, after a full GC); target <= ${TARGET} for RecentIds`);
  for (const count of [100_000, 1_000_000]) {
    const figures = ["RecentIds", "Set of the strings"].map((kind) => {
      const result = spawnSync(process.execPath, ["--expose-gc", self, "--child", kind, String(count)], { encoding: "utf8" });
      if (result.status !== 0) throw new Error(result.stderr);
      return `${kind} ${JSON.parse(result.stdout).bytesPerId.toFixed(1)}`;
    });
    console.log(`  ${count.toLocaleString("en")} ids: ${figures.join(", ")}`);
  }
}

// Where accepting's CPU goes, in-process (no HTTP), beside what the bare spool server does with the
// same batches (bench/bare-spool-server.js: JSON.parse, one JSON.stringify per event, a group write
// and fdatasync). Each step runs over the same batch texts, timed by process.cpuUsage (every
// thread: the fdatasyncs too), in µs per event: the parse (one scan for the nesting and the numbers
// worth checking, then JSON.parse), the exact-numbers check of the texts that hold such a number,
// expandRequest (enrich, serialise each event once, the 32 KiB rule), checkMessage (the allocation-
// free validation), the stored record, the duplicates check (each messageId looked for in a
// window of the default 100,000, then remembered), and the spool's append (its write and
// fdatasync, group-committed as wh serve commits: GROUP requests a commit); medians of ROUNDS
// rounds in which the steps take turns. Reads wh's modules from dist/ (npm run build).
import { fdatasyncSync, mkdtempSync, openSync, rmSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Spool } from "../dist/adapters/spool/spool.js";
import { inexactNumberProblem } from "../dist/core/message/exact-numbers.js";
import { parseJsonNumbers } from "../dist/core/message/parse-json.js";
import { checkMessage } from "../dist/core/message/prepare.js";
import { RecentBatch, RecentIds } from "../dist/core/message/recent-ids.js";
import { expandRequest } from "../dist/core/message/tracking.js";
import { eventRecordText, sourceTag } from "../dist/engine/serve/stored-event.js";
import { trackingBatch } from "./generate.js";

const BATCH = 100;
const REQUESTS = 500;
/** Each step runs once a round, the steps taking turns, so that a busy moment of the shared machine falls on all of them alike. */
const ROUNDS = Number(process.env.BENCH_SPLIT_ROUNDS ?? 5);
/** Requests whose events share one commit: the 16 connections of the load. */
const GROUP = 16;
const parts = JSON.stringify(trackingBatch(BATCH, "@id@")).split("@id@");
const texts = Array.from({ length: REQUESTS }, (_, index) => parts.join(`q${index.toString(36)}`));
let ids = 0;
const stamps = {
  now: () => new Date(),
  newId: () => {
    ids += 1;
    return `id-${ids}`;
  },
};

/** CPU µs per event of one run of `step` over every request. */
async function perEvent(step) {
  const before = process.cpuUsage();
  await step();
  const { user, system } = process.cpuUsage(before);
  return (user + system) / (REQUESTS * BATCH);
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

const bodies = texts.map((text) => JSON.parse(text));
const expand = (body) => expandRequest("batch", body, { receivedAt: new Date(), ip: "127.0.0.1", stamps });
const expanded = bodies.map((body) => expand(body).events);
/** The records' first bytes, as accepting works them out once a request (sourceTag). */
const tag = sourceTag(null);

/**
 * Each request's messageIds through a window of 100,000 (--dedup-window's default) as accepting
 * takes them: looked for, then remembered. Every run has ids of its own (built beforehand), so
 * none is found: the window turns over as it does under a stream of new events.
 */
function duplicatesCheck() {
  const window = new RecentIds(100_000);
  // One set of ids for the warm-up and one a round; JSON.parse's strings, as accepting's are.
  const runs = Array.from({ length: ROUNDS + 1 }, (_, run) =>
    expanded.map((events) => events.map(({ event }) => JSON.parse(JSON.stringify(`${event.messageId}-${run}`)))),
  );
  let run = 0;
  return () => {
    for (const ids of runs[run]) {
      const batch = new RecentBatch();
      for (const id of ids) window.fresh(id, batch);
      window.remember(batch);
    }
    run += 1;
  };
}

/** Appends the lines of GROUP requests at a time and syncs them, as the bare server does. */
function bareAppend(dir) {
  const fd = openSync(join(dir, "bare.ndjson"), "w");
  return () => {
    for (let start = 0; start < REQUESTS; start += GROUP) {
      writeSync(fd, texts.slice(start, start + GROUP).join("\n"));
      fdatasyncSync(fd);
    }
  };
}

/** wh's spool, GROUP requests' records a commit (their appends start together, as concurrent requests' do). */
async function spoolAppend(dir) {
  const { spool } = await Spool.open(join(dir, "spool"), { maxBytes: 1e12, quarantinePath: join(dir, "quarantine.ndjson") });
  const records = expanded.map((events) => events.map(({ text }) => eventRecordText(tag, text)));
  return {
    step: async () => {
      for (let start = 0; start < REQUESTS; start += GROUP) await Promise.all(records.slice(start, start + GROUP).map((group) => spool.append(group)));
    },
    close: () => spool.close(),
  };
}

export async function acceptSplit() {
  const dir = mkdtempSync(join(tmpdir(), "wh-bench-split-"));
  try {
    const spool = await spoolAppend(dir);
    /** A step over every item of `list`: `work` on each, its result dropped. */
    const over = (list, work) => () => {
      for (const item of list) work(item);
    };
    const events = expanded.flat();
    const flagged = texts.filter((text) => parseJsonNumbers(text).numbersToCheck);
    const figures = [
      ["bare: JSON.parse", over(texts, JSON.parse)],
      [
        "bare: JSON.stringify each event",
        over(
          bodies.flatMap(({ batch }) => batch),
          JSON.stringify,
        ),
      ],
      ["bare: write + fdatasync", bareAppend(dir)],
      ["wh: parseJsonNumbers (one scan + JSON.parse)", over(texts, parseJsonNumbers)],
      ["wh: exact-numbers check (texts the scan flags)", over(flagged, inexactNumberProblem)],
      ["wh: expandRequest (enrich, serialise, size)", over(bodies, expand)],
      ["wh: checkMessage (validate)", over(events, ({ event }) => checkMessage(event, stamps, "classic"))],
      ["wh: stored record", over(events, ({ text }) => eventRecordText(tag, text))],
      ["wh: duplicates (RecentIds.fresh, remember)", duplicatesCheck()],
      ["wh: spool append (write + fdatasync)", spool.step],
    ];
    for (const [, step] of figures) await step(); // warm-up, untimed
    const rounds = figures.map(() => []);
    for (let round = 0; round < ROUNDS; round += 1) for (const [index, [, step]] of figures.entries()) rounds[index].push(await perEvent(step));
    spool.close();
    /** Per round, the sum of the steps whose names start with `prefix`. */
    const sums = (prefix) =>
      Array.from({ length: ROUNDS }, (_, round) => figures.reduce((total, [name], index) => total + (name.startsWith(prefix) ? rounds[index][round] : 0), 0));
    const ratios = sums("wh:").map((wh, round) => wh / sums("bare:")[round]);
    console.log(`  in-process split (bench/accept-split.js), ${REQUESTS} batches of ${BATCH}, µs CPU per event, medians of ${ROUNDS} rounds taking turns:`);
    for (const [index, [name]] of figures.entries()) console.log(`    ${name.padEnd(46)} ${median(rounds[index]).toFixed(2).padStart(6)}`);
    console.log(
      `    wh / bare: ${median(ratios).toFixed(2)} (rounds ${ratios.map((ratio) => ratio.toFixed(2)).join(" ")}; ${median(sums("wh:")).toFixed(2)} / ${median(sums("bare:")).toFixed(2)})`,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

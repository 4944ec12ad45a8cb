// What Linux says of a running process (/proc/<pid>): its CPU so far and its peak resident set,
// read from outside, so the same figures come from wh and from a bare server without touching either.
import { spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";

/** Clock ticks per second, the unit of utime and stime in /proc/<pid>/stat (100 on Linux). */
const TICKS_PER_SECOND = Number(spawnSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).stdout) || 100;

/** CPU used so far (user + system, every thread of the process: libuv's fdatasyncs and V8's GC too), in µs. */
export function cpuUs(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  // The command name, field 2, is in parentheses and may hold spaces: count fields after it.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const ticks = Number(fields[11]) + Number(fields[12]);
  return (ticks * 1e6) / TICKS_PER_SECOND;
}

/** The resident set now (VmRSS), in MB. */
export const rssMb = (pid) => statusMb(pid, "VmRSS");

/** The peak resident set since the process started, or since the last resetPeakRss (VmHWM), in MB. */
export const peakRssMb = (pid) => statusMb(pid, "VmHWM");

function statusMb(pid, field) {
  const kb = Number(new RegExp(`^${field}:\\s+(\\d+) kB$`, "m").exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1]);
  return kb / 1024;
}

/** Starts the peak over from the current resident set (Linux 4.0+), so a later phase has its own peak. */
export function resetPeakRss(pid) {
  writeFileSync(`/proc/${pid}/clear_refs`, "5");
}

import { readLineBatches } from "../../adapters/line-reader.js";
import { userOf } from "../../core/shard.js";
import { openInputStream } from "../../adapters/read-input.js";
import { requireSecret } from "../../config/secret.js";
import { asCaptureRecord, verifyCapture } from "../../core/capture.js";
import { parseJson } from "../../core/message/parse-json.js";
import { neutralize } from "../../core/untrusted.js";
import type { CliIo, GlobalFlags } from "../wiring/io.js";
import { Output } from "../output/render.js";
import type { VerifyFlags } from "./verify.js";

/** One line per record of a capture, in a table (or one JSON record each): exit 0 when every signature holds. */
export async function runVerifyCapture(file: string, flags: VerifyFlags, globals: GlobalFlags, io: CliIo): Promise<number> {
  const secret = await requireSecret(flags, io.env, io.cwd);
  const stream = await openInputStream(file, io.cwd, io);
  const output = new Output(io, globals);
  const rows: string[][] = [["line", "method", "path", "type", "user", "verdict"]];
  let bad = 0;
  let checked = 0;
  for await (const batch of readLineBatches(stream)) {
    for (const line of batch) {
      if (line.text.trim() === "" && line.problem === undefined) continue;
      checked += 1;
      const parsed = line.problem === undefined ? parseJson(line.text) : undefined;
      const record = parsed?.ok === true ? asCaptureRecord(parsed.value) : undefined;
      if (record === undefined) {
        bad += 1;
        const reason = line.problem ?? (parsed?.ok === false ? `not JSON: ${parsed.error}` : "not a capture record of wh listen --out");
        output.record({ line: line.number, verdict: "unreadable", reason });
        rows.push([String(line.number), "", "", "", "", `unreadable: ${reason}`]);
        continue;
      }
      const { verdict, reason } = verifyCapture(secret, record, flags.scheme === "standard" ? { toleranceSeconds: flags.tolerance / 1000 } : undefined);
      if (verdict === "invalid" || verdict === "missing") bad += 1;
      const message = parseJson(record.body);
      const fields = message.ok && typeof message.value === "object" && message.value !== null ? (message.value as Record<string, unknown>) : {};
      const user = userOf(fields) ?? "";
      output.record({
        line: line.number,
        method: record.method,
        path: record.path,
        receivedAt: record.receivedAt,
        type: fields.type ?? null,
        verdict,
        ...(reason === undefined ? {} : { reason }),
      });
      rows.push(
        [String(line.number), record.method, record.path, String(fields.type ?? ""), user, reason === undefined ? verdict : `${verdict}: ${reason}`].map(
          (cell) => neutralize(cell),
        ),
      );
    }
  }
  if (!output.json) {
    const widths = rows[0]?.map((_, column) => Math.min(40, Math.max(...rows.map((row) => (row[column] ?? "").length)))) ?? [];
    for (const row of rows) output.result(row.map((cell, column) => (column === row.length - 1 ? cell : cell.padEnd(widths[column] ?? 0))).join("  "));
    output.log(`${checked - bad} of ${checked} records verified${bad === 0 ? "" : `; ${bad} did not`}`);
  }
  return bad === 0 && checked > 0 ? 0 : 1;
}

import { parse } from "csv-parse";
import { Readable } from "node:stream";
const text = process.argv[2]
  .replace(/\\n/g, "\n")
  .replace(/\\r/g, "\r")
  .replace(/\\ufeff/g, "\ufeff");
let last = 0;
const parser = Readable.from([Buffer.from(text)]).pipe(
  parse({
    relax_column_count: true,
    relax_quotes: true,
    bom: true,
    encoding: null,
    max_record_size: 50,
    on_record: (record, info) => {
      const start = last + 1;
      last = info.lines;
      return { start, end: info.lines, record };
    },
  }),
);
try {
  for await (const r of parser) console.log(r.start, r.end, JSON.stringify(r.record.map(String)));
} catch (e) {
  console.log("ERR", e.code, "lines", e.lines, "start", last + 1);
}

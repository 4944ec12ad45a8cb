// The floor under wh serve's accepting (bench/serve-accept.js): a node:http server that reads each
// POST body, parses the batch ({"batch": [...]}), serialises each event once as a line, appends
// the lines to the file named by argv[2] with the same group commit as wh's spool (the requests
// that arrive while an fdatasync runs share the next one; positional writes), and answers 200
// {"success":true} only after the fdatasync. Nothing else: no validation, enrichment, duplicates,
// delivery or log. Prints {"port":N} on stdout once listening; exits on SIGTERM.
import { fdatasync, openSync, write } from "node:fs";
import { createServer } from "node:http";
import { promisify } from "node:util";

const writeAsync = promisify(write);
const fdatasyncAsync = promisify(fdatasync);
const fd = openSync(process.argv[2], "w");
let position = 0;
let pending = [];
let committing = false;

function append(text) {
  return new Promise((resolve, reject) => {
    pending.push({ text, resolve, reject });
    if (!committing) void commit();
  });
}

async function commit() {
  committing = true;
  while (pending.length > 0) {
    const group = pending;
    pending = [];
    const bytes = Buffer.from(group.map((entry) => entry.text).join(""));
    try {
      let offset = 0;
      while (offset < bytes.length) offset += (await writeAsync(fd, bytes, offset, bytes.length - offset, position + offset)).bytesWritten;
      await fdatasyncAsync(fd);
      position += bytes.length;
      for (const entry of group) entry.resolve();
    } catch (error) {
      for (const entry of group) entry.reject(error);
    }
  }
  committing = false;
}

const server = createServer((request, response) => {
  const chunks = [];
  request.on("data", (chunk) => chunks.push(chunk));
  request.on("end", () => {
    const { batch } = JSON.parse(Buffer.concat(chunks).toString("utf8"));
    append(batch.map((event) => `${JSON.stringify(event)}\n`).join("")).then(
      () => response.writeHead(200, { "content-type": "application/json" }).end('{"success":true}'),
      () => response.writeHead(503).end(),
    );
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, "127.0.0.1", () => process.stdout.write(`${JSON.stringify({ port: server.address().port })}\n`));
process.on("SIGTERM", () => {
  server.closeAllConnections();
  server.close(() => process.exit(0));
});

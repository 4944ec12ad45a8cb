// A minimal webhook receiver for the benchmarks, run in its own process: reads each body and
// answers 200, after DELAY_MS (argv[2], default 0). Prints {"port":N} on stdout once listening;
// prints its request count on SIGTERM.
import { createServer } from "node:http";

const DELAY_MS = Number(process.argv[2] ?? 0);
let requests = 0;
const server = createServer((request, response) => {
  request.on("data", () => {});
  request.on("end", () => {
    requests += 1;
    const answer = () => response.writeHead(200, { "content-length": "0" }).end();
    if (DELAY_MS > 0) setTimeout(answer, DELAY_MS);
    else answer();
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, "127.0.0.1", () => {
  process.stdout.write(`${JSON.stringify({ port: server.address().port })}\n`);
});
process.on("SIGTERM", () => {
  process.stdout.write(`${JSON.stringify({ requests })}\n`);
  server.closeAllConnections();
  server.close(() => process.exit(0));
});

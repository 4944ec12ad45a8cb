// A minimal webhook receiver for the benchmarks, run in its own process: reads each body and
// answers STATUS (argv[3], default 200; any other with Retry-After: 1, a webhook that is down and
// says when to come back) after DELAY_MS (argv[2], default 0); on SIGHUP it answers 200 from then
// on, the webhook coming back. Prints {"port":N} on stdout once listening;
// on SIGUSR2 prints {"perSecond":[…]}, the requests it answered in each second since its first
// answer after the last SIGUSR2 (the last second cut short), and counts afresh; prints its
// request count on SIGTERM.
import { createServer } from "node:http";

const DELAY_MS = Number(process.argv[2] ?? 0);
let status = Number(process.argv[3] ?? 200);
let requests = 0;
let firstAnswerMs;
let perSecond = [];
const server = createServer((request, response) => {
  request.on("data", () => {});
  request.on("end", () => {
    requests += 1;
    const answer = () => {
      response.writeHead(status, status === 200 ? { "content-length": "0" } : { "content-length": "0", "retry-after": "1" }).end();
      const now = performance.now();
      firstAnswerMs ??= now;
      const second = Math.floor((now - firstAnswerMs) / 1000);
      perSecond[second] = (perSecond[second] ?? 0) + 1;
    };
    if (DELAY_MS > 0) setTimeout(answer, DELAY_MS);
    else answer();
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, "127.0.0.1", () => {
  process.stdout.write(`${JSON.stringify({ port: server.address().port })}\n`);
});
process.on("SIGUSR2", () => {
  process.stdout.write(`${JSON.stringify({ perSecond: Array.from(perSecond, (count) => count ?? 0) })}\n`);
  firstAnswerMs = undefined;
  perSecond = [];
});
process.on("SIGHUP", () => {
  status = 200;
});
process.on("SIGTERM", () => {
  process.stdout.write(`${JSON.stringify({ requests })}\n`);
  server.closeAllConnections();
  server.close(() => process.exit(0));
});

// The floor under `wh send` in bench/cold-start.js: the least a Node program does to deliver one
// signed body with undici, the HTTP client wh uses. It loads undici's Agent from node_modules (not
// its index, which also loads fetch, WebSocket and caches), POSTs the file with its X-Signature,
// reads the answer and exits: no CLI, no config, no message built or validated, no retries.
// Like `wh send` it keeps undici's WebAssembly parser out of V8's optimizing compiler (see
// src/adapters/v8-flags.ts); without that, Node 20 waits for that compile before it exits.
// Usage: node bench/post-file.cjs FILE URL   (the secret is WH_SHARED_SECRET)
"use strict";
const { createHmac } = require("node:crypto");
const { readFileSync } = require("node:fs");
const { setFlagsFromString } = require("node:v8");
const Agent = require("undici/lib/dispatcher/agent.js");

setFlagsFromString(`--wasm-tiering-budget=${2 ** 31 - 1}`);
const body = readFileSync(process.argv[2]);
const url = new URL(process.argv[3]);
const agent = new Agent();
const headers = {
  "content-type": "application/json",
  "x-signature": createHmac("sha1", process.env.WH_SHARED_SECRET ?? "")
    .update(body)
    .digest("hex"),
};
agent.dispatch(
  { origin: url.origin, path: url.pathname, method: "POST", body, headers },
  {
    onRequestStart() {},
    onResponseStart(_controller, statusCode) {
      process.exitCode = statusCode >= 200 && statusCode < 300 ? 0 : 1;
    },
    onResponseData() {},
    onResponseEnd() {
      void agent.close();
    },
    onResponseError(_controller, error) {
      process.stderr.write(`${error.message}\n`);
      process.exitCode = 1;
      void agent.close();
    },
  },
);

// The floor under `wh sign` in bench/cold-start.js: the least a Node program can do for the same
// job, that is load node:crypto, read the file and write its HMAC-SHA1 to stdout, with no CLI, no
// options and no messages. CommonJS, as the CLI is (an ES module entry costs Node 20 its ESM loader).
// Usage: node bench/hmac-file.cjs FILE   (the secret is WH_SHARED_SECRET)
"use strict";
const { createHmac } = require("node:crypto");
const { readFileSync } = require("node:fs");

process.stdout.write(
  `${createHmac("sha1", process.env.WH_SHARED_SECRET ?? "")
    .update(readFileSync(process.argv[2]))
    .digest("hex")}\n`,
);

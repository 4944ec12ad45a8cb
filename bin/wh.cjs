#!/usr/bin/env node
// CommonJS, as is the bundled CLI it loads: on Node 20 an ES module entry alone costs about 5 ms of
// every start (scripts/bundle-cli.mjs). Node 22.8+ keeps the compiled CLI on disk between runs
// (module.enableCompileCache); Node 20 has no such thing, and does not load node:module for it.
"use strict";
if (Number(process.versions.node.split(".")[0]) >= 22) require("node:module").enableCompileCache?.();
require("../dist/cli-bundle/main.cjs");

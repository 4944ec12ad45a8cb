#!/usr/bin/env node
// Node 22+ keeps the compiled CLI on disk between runs (module.enableCompileCache): most of a
// short command's start-up is compiling the bundle. On Node 20 it does not exist, and nothing changes.
import module from "node:module";

module.enableCompileCache?.();
await import("../dist/cli-bundle/main.js");

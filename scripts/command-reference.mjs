// Writes docs/commands.md from the command registry and the flag tables, through tsc's output of
// src/cli/output/command-reference.ts (so `npm run docs` builds first). test/cli/output/command-reference.test.ts
// makes the same text from src and fails when the file in git differs.
import { writeFileSync } from "node:fs";

const { commandReference } = await import("../dist/cli/output/command-reference.js");
writeFileSync(new URL("../docs/commands.md", import.meta.url), commandReference());

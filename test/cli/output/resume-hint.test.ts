import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ingestFlags, replayFlags } from "../../../src/cli/flags/tables.js";
import { resumeCommand } from "../../../src/cli/output/resume-hint.js";
import { closedAfterEach } from "../../helpers/recording-server.js";
import { manyEvents, spawnSigned } from "../commands/replay-helpers.js";
import { runInProcess } from "../../helpers/in-process.js";
import { makeTempDir, removeTempDirs, type WhProcess } from "../../helpers/run-wh.js";

// The command printed to resume a run repeats every flag that decides what it reads, where and
// how it delivers, and where it records. In-process (runMain against src/).

const server = closedAfterEach();
afterAll(removeTempDirs);

/** Flags a resume command leaves out, on purpose. */
const NOT_REPEATED = new Set([
  "--secret", // never printed: the hint asks for it again
  "--resume", // added at the end
  "--dry-run", // a dry run writes no journal: there is nothing to resume
  "--help",
]);

/** The long flags a command's --help lists under Options, and whether each takes a value. */
async function optionsOf(command: string): Promise<{ flag: string; takesValue: boolean }[]> {
  const help = (await runInProcess([command, "--help"])).stdout;
  const section = help.slice(help.indexOf("Options:"), help.indexOf("\n\n", help.indexOf("Options:")));
  return [...section.matchAll(/^\s+(?:-\w, )?(--[a-z][a-z-]*)( <[^>]+>)?/gm)].map((match) => ({
    flag: match[1] as string,
    takesValue: match[2] !== undefined,
  }));
}

const camel = (flag: string): string => flag.slice(2).replace(/-([a-z])/g, (_, letter: string) => letter.toUpperCase());

describe("the resume command", () => {
  it.each(["replay", "ingest"])("of wh %s repeats every flag given but --secret, --resume, --dry-run and --help", async (command) => {
    const options = await optionsOf(command);
    expect(options.length).toBeGreaterThan(8);

    for (const { flag, takesValue } of options.filter((option) => !NOT_REPEATED.has(option.flag))) {
      const words = resumeCommand(command, "events.ndjson", { [camel(flag)]: takesValue ? "7" : true }, command === "replay" ? replayFlags : ingestFlags).split(
        " ",
      );
      expect(words, flag).toContain(flag);
      // The write key is a secret: masked, to be typed again.
      if (takesValue) expect(words[words.indexOf(flag) + 1], flag).toBe(flag === "--write-key" ? "'***'" : "7");
    }
  });

  it("printed by an interrupted replay keeps --max-attempts, --timeout and --retry-window", async () => {
    const dir = await makeTempDir();
    await writeFile(
      join(dir, "events.ndjson"),
      manyEvents(200, 7)
        .map((event) => `${event.line}\n`)
        .join(""),
    );
    let running: WhProcess | undefined;
    const receiver = await server({
      replies: (_request, index) => {
        if (index === 20) running?.child.kill("SIGINT");
        return { status: 200, delayMs: 5 };
      },
    });
    running = spawnSigned(
      ["replay", "events.ndjson", "--url", receiver.url, "--max-attempts", "3", "--timeout", "2s", "--retry-window", "1h", "--concurrency", "4"],
      { cwd: dir },
    );

    const result = await running.exited;

    expect(result.code, result.stderr).toBe(130);
    expect(result.stderr).toMatch(/resume with {2}wh replay events\.ndjson --url \S+ --timeout 2s --retry-window 1h --max-attempts 3 --concurrency 4 --resume/);
  });
});

import { Option } from "commander";
import { describe, expect, expectTypeOf, it } from "vitest";
import { completionScript } from "../../../src/cli/wiring/completion.js";
import { duration, host, oneOf, queueUrl, rate, shard, size, wholeNumber } from "../../../src/cli/flags/parsers.js";
import { type FlagValues, longName, parseFlags } from "../../../src/cli/flags/spec.js";
import * as checkTables from "../../../src/cli/flags/check-tables.js";
import * as serverTables from "../../../src/cli/flags/server-tables.js";
import * as tables from "../../../src/cli/flags/tables.js";
import { COMMANDS } from "../../../src/cli/registry/index.js";
import type { WhConfig } from "../../../src/config/schema.js";
import { MESSAGE_TYPES } from "../../../src/core/message/types.js";

// The flag tables are the one declaration of every flag: commander's options, the commands' flag
// types, completion and the resume command are made from them.

describe("the flag tables", () => {
  const everyTable = Object.entries({ ...tables, ...serverTables, ...checkTables }).filter(([, value]) => typeof value === "object" && !("syntax" in value));

  it.each(everyTable)("%s: each key is the name commander gives its flag's value", (_name, table) => {
    for (const [key, spec] of Object.entries(table)) expect(new Option(spec.syntax, spec.description).attributeName(), spec.syntax).toBe(key);
  });

  it("every command's flags have distinct long names", () => {
    for (const command of COMMANDS) {
      const names = Object.values(command.flags ?? {}).map(longName);
      expect(new Set(names).size, command.path.join(" ")).toBe(names.length);
    }
  });

  it("parse the user's text, fill in defaults, and keep repeated values in order", () => {
    const flags = parseFlags(tables.replayFlags, { url: ["http://a/", "http://b/"], timeout: "2s", mode: "actions", method: "put", shard: "1/4" });
    expect(flags).toMatchObject({
      url: ["http://a/", "http://b/"],
      timeout: 2_000,
      retryWindow: 4 * 3_600_000,
      concurrency: 32,
      ordered: "user",
      mode: "actions",
      method: "PUT",
      shard: { index: 1, count: 4 },
    });
    expect(flags.maxAttempts).toBeUndefined();
  });

  it("type each command's flags from the table: parsed values, defaults always present", () => {
    expectTypeOf<FlagValues<typeof tables.replayFlags>["concurrency"]>().toEqualTypeOf<number>();
    expectTypeOf<FlagValues<typeof tables.replayFlags>["url"]>().toEqualTypeOf<string[] | undefined>();
    expectTypeOf<FlagValues<typeof tables.replayFlags>["dryRun"]>().toEqualTypeOf<boolean | undefined>();
    expectTypeOf<FlagValues<typeof serverTables.serveFlags>["role"]>().toEqualTypeOf<"accept" | "forward" | "both" | undefined>();
    // The flags that name a config key parse to what that key holds.
    expectTypeOf<NonNullable<FlagValues<typeof tables.deliveryFlags>["mode"]>>().toEqualTypeOf<NonNullable<WhConfig["mode"]>>();
    expectTypeOf<NonNullable<FlagValues<typeof tables.deliveryFlags>["method"]>>().toEqualTypeOf<NonNullable<WhConfig["method"]>>();
  });
});

describe("the flag parsers", () => {
  it("whole numbers within bounds", () => {
    expect(wholeNumber(1, 10)("7", "--n")).toBe(7);
    for (const bad of ["", " ", "0", "11", "1.5", "x"])
      expect(() => wholeNumber(1, 10)(bad, "--n")).toThrow(`--n ${JSON.stringify(bad)}: expected a whole number from 1 to 10`);
  });

  it("durations need a unit, and stay within what a timer can wait", () => {
    expect(duration()("1.5m", "--timeout")).toBe(90_000);
    expect(() => duration()("5", "--timeout")).toThrow('--timeout "5": a duration needs a unit: did you mean 5s (or 5ms)?');
    expect(() => duration()("25d", "--timeout")).toThrow("at most 24d");
    expect(() => duration({ positive: true })("0s", "--timeout")).toThrow("--timeout must be more than 0");
    expect(duration()("0s", "--retry-window")).toBe(0);
  });

  it("sizes with units, refusing the rest by name", () => {
    expect(size()("500kb", "--max-body")).toBe(500_000);
    expect(size()("1.5MB", "--max-body")).toBe(1_500_000);
    expect(size()("2MiB", "--max-body")).toBe(2_097_152);
    expect(size()("1024", "--max-body")).toBe(1024);
    for (const bad of ["", "lots", "5 parsecs", "-1kb", "0"]) expect(() => size()(bad, "--max-body")).toThrow(/--max-body .*expected a size/);
  });

  it("one of a list, in any case where asked", () => {
    expect(oneOf(["POST", "PUT"], { upperCase: true })("put", "--method")).toBe("PUT");
    expect(() => oneOf(["user", "none"])("all", "--ordered")).toThrow('--ordered "all": expected user or none');
    expect(() => oneOf(["a", "b", "c"])("d", "--x")).toThrow('--x "d": expected a, b or c');
  });

  it("shards, rates, hosts and queue URLs", () => {
    expect(shard("0/4", "--shard")).toEqual({ index: 0, count: 4 });
    expect(() => shard("4/4", "--shard")).toThrow("expected i/n with 0 <= i < n");
    expect(rate("100/s", "--rate")).toBe(100);
    expect(() => rate("0", "--rate")).toThrow("expected events per second");
    expect(host("::1", "--host")).toBe("::1");
    expect(() => host("999.1.1.1", "--host")).toThrow("not a valid IPv4 address");
    expect(() => host("[::1]", "--host")).toThrow("not an IP address or a host name");
    expect(() => queueUrl("redis://user:hunter2@h:1/x", "--queue")).toThrow('--queue "redis://***:***@h:1/x": the database "x" is not a number');
  });
});

describe("shell completion made from the registry", () => {
  it("offers every command, the message types after send, and flag values", () => {
    const bash = completionScript("bash");
    expect(bash).toContain(`"send") words="${MESSAGE_TYPES.join(" ")} --url`);
    expect(bash).toContain('--mode) COMPREPLY=( $(compgen -W "classic actions" -- "$cur") )');
    expect(bash).toContain('--source) COMPREPLY=( $(compgen -W "$(wh completion --sources 2>/dev/null)" -- "$cur") )');
    expect(bash).toContain('"serve dead-letters replay") path="serve dead-letters replay"');
    const fish = completionScript("fish");
    expect(fish).toContain("complete -c wh -n '__fish_seen_subcommand_from send' -a delete");
    expect(fish).toContain("complete -c wh -n '__fish_seen_subcommand_from replay' -l ordered -r -a 'user none'");
  });
});

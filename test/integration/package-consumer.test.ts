import { execFileSync } from "node:child_process";
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";

// The library entry still imports and type-checks from a consumer project, built against the
// packed package (npm pack of dist/, as a registry would serve it). Needs `npm run build` first.

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
let dir: string | undefined;

afterAll(async () => {
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
});

describe("the packed package", () => {
  it("type-checks and runs a TypeScript consumer of its library entry, and its CLI runs where it is installed", async () => {
    dir = await mkdtemp(join(tmpdir(), "wh-consumer-"));
    const packed = JSON.parse(execFileSync("npm", ["pack", "--ignore-scripts", "--json", "--pack-destination", dir], { cwd: ROOT, encoding: "utf8" })) as {
      filename: string;
      files: { path: string }[];
    }[];
    const tarball = join(dir, packed[0]?.filename as string);
    const installed = join(dir, "node_modules", "wh");
    await mkdir(installed, { recursive: true });
    execFileSync("tar", ["-xzf", tarball, "-C", installed, "--strip-components=1"]);
    // Its dependencies as an install would provide them (the project's own copies).
    const manifest = JSON.parse(await readFile(join(ROOT, "package.json"), "utf8")) as { dependencies: Record<string, string> };
    for (const name of [...Object.keys(manifest.dependencies), "@types/node"]) {
      await mkdir(join(dir, "node_modules", name, ".."), { recursive: true });
      await symlink(join(ROOT, "node_modules", name), join(dir, "node_modules", name));
    }
    await writeFile(join(dir, "package.json"), JSON.stringify({ name: "consumer", private: true, type: "module" }));
    await writeFile(
      join(dir, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          module: "NodeNext",
          moduleResolution: "NodeNext",
          target: "ES2022",
          outDir: "out",
          types: ["node"],
          skipLibCheck: false,
        },
      }),
    );
    await writeFile(
      join(dir, "consumer.ts"),
      `import { Analytics, prepareMessage, signBody, verifyBody, type DeliveryReport, type PrepareResult } from "wh";
const prepared: PrepareResult = prepareMessage({ type: "track", userId: "u1", event: "E" }, { now: () => new Date(0), newId: () => "id-1" }, { mode: "actions" });
if (!prepared.ok) throw new Error(prepared.error);
const signature: string = signBody("s3cret", prepared.message.body);
const verdict = verifyBody("s3cret", prepared.message.body, signature);
const client = new Analytics({ writeKey: "wk", endpoint: "http://127.0.0.1:9" });
const report: DeliveryReport | undefined = undefined;
void client.close({ timeoutMs: 10 }).then(({ unsent }) => console.log(JSON.stringify({ ok: verdict.ok, unsent: unsent.length, report: report ?? null })));
`,
    );

    execFileSync(join(ROOT, "node_modules", ".bin", "tsc"), ["-p", "."], { cwd: dir, encoding: "utf8" });
    const output = execFileSync(process.execPath, [join(dir, "out", "consumer.js")], { cwd: dir, encoding: "utf8" });

    expect(JSON.parse(output)).toEqual({ ok: true, unsent: 0, report: null });

    // The bundled CLI, from the installed package, with only wh's own dependencies beside it:
    // it finds and reads a YAML config (its config loader is a file of the bundle).
    await writeFile(join(dir, ".whrc.yaml"), "webhooks:\n  - url: https://installed.example.com/wh\n");
    const shown = JSON.parse(
      execFileSync(process.execPath, [join(installed, "bin", "wh.cjs"), "--json", "config", "show"], { cwd: dir, encoding: "utf8" }),
    ) as { configFile: string; destinations: { webhooks: { url: string }[] }[] };
    expect(shown.configFile).toBe(join(dir, ".whrc.yaml"));
    expect(shown.destinations[0]?.webhooks[0]?.url).toBe("https://installed.example.com/wh");
    expect(packed[0]?.files.map((file) => file.path)).toEqual(expect.arrayContaining(["dist/index.d.ts", "dist/cli-bundle/main.cjs", "bin/wh.cjs"]));
  });
});

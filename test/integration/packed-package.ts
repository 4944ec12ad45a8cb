import { execFile, execFileSync } from "node:child_process";
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { tracked } from "../helpers/children.js";

const run = promisify(execFile);

// wh as a consumer gets it: `npm pack` of the built package (as a registry would serve it),
// unpacked into node_modules/wh of a temporary directory, with its dependencies and @types/node
// linked from this project's node_modules (and what a consumer project brings, a framework, from
// the test package that has it).
// Consumer projects are folders of it, each with its own package.json and tsconfig. Needs
// `npm run build` first.

export const ROOT = fileURLToPath(new URL("../../", import.meta.url));

export interface PackedPackage {
  /** The temporary directory: node_modules/ with wh, and the projects. */
  dir: string;
  /** Where wh is installed. */
  installed: string;
  /** The paths npm packed. */
  files: string[];
  /** A consumer project in `dir/<name>`: its files written, strict TypeScript, built to out/. */
  project(name: string, options: ProjectOptions): Promise<ConsumerProject>;
  remove(): Promise<void>;
}

export interface ProjectOptions {
  /** package.json's "type". */
  type: "module" | "commonjs";
  files: Record<string, string>;
  /** tsconfig's module and moduleResolution (default NodeNext). */
  module?: "NodeNext" | "Node16";
  /** Default false: wh's declarations are checked too. (Next's need @types/react: a Next app skips them.) */
  skipLibCheck?: boolean;
}

export interface ConsumerProject {
  dir: string;
  /** Runs tsc on the project; returns the files it read (--listFiles). */
  compile(): string[];
  /** Runs a built file (out/<name>.js) with node, its stdout: asynchronously, so that servers of the test process can answer it. */
  run(file: string, env?: Record<string, string>): Promise<string>;
}

/** Packs and installs wh, with `extra` packages (besides its dependencies and @types/node) linked in from `extraFrom`. */
export async function installPacked(extra: string[] = [], extraFrom = join(ROOT, "node_modules")): Promise<PackedPackage> {
  const dir = await mkdtemp(join(tmpdir(), "wh-consumer-"));
  const packed = JSON.parse(execFileSync("npm", ["pack", "--ignore-scripts", "--json", "--pack-destination", dir], { cwd: ROOT, encoding: "utf8" })) as {
    filename: string;
    files: { path: string }[];
  }[];
  const installed = join(dir, "node_modules", "wh");
  await mkdir(installed, { recursive: true });
  execFileSync("tar", ["-xzf", join(dir, packed[0]?.filename as string), "-C", installed, "--strip-components=1"]);
  const manifest = JSON.parse(await readFile(join(ROOT, "package.json"), "utf8")) as { dependencies: Record<string, string> };
  const links = [
    ...[...Object.keys(manifest.dependencies), "@types/node"].map((name) => ({ name, from: join(ROOT, "node_modules") })),
    ...extra.map((name) => ({ name, from: extraFrom })),
  ];
  for (const { name, from } of links) {
    await mkdir(join(dir, "node_modules", name, ".."), { recursive: true });
    await symlink(join(from, name), join(dir, "node_modules", name));
  }
  return {
    dir,
    installed,
    files: packed[0]?.files.map((file) => file.path) ?? [],
    project: (name, options) => createProject(join(dir, name), options),
    remove: () => rm(dir, { recursive: true, force: true }),
  };
}

async function createProject(dir: string, options: ProjectOptions): Promise<ConsumerProject> {
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, "package.json"), JSON.stringify({ name: "consumer", private: true, type: options.type }));
  const module = options.module ?? "NodeNext";
  const compilerOptions = {
    strict: true,
    module,
    moduleResolution: module,
    target: "ES2022",
    outDir: "out",
    types: ["node"],
    skipLibCheck: options.skipLibCheck ?? false,
  };
  await writeFile(join(dir, "tsconfig.json"), JSON.stringify({ compilerOptions, include: ["*.ts", "*.tsx"] }));
  for (const [file, text] of Object.entries(options.files)) await writeFile(join(dir, file), text);
  return {
    dir,
    compile: () => {
      try {
        return execFileSync(join(ROOT, "node_modules", ".bin", "tsc"), ["-p", ".", "--listFiles"], { cwd: dir, encoding: "utf8" }).split("\n");
      } catch (error) {
        // tsc's diagnostics are on its stdout, among the files it read.
        const output = String((error as { stdout?: string }).stdout ?? "");
        throw new Error(
          `tsc failed in ${dir}:\n${output
            .split("\n")
            .filter((line) => line.includes("error TS"))
            .join("\n")}`,
        );
      }
    },
    run: async (file, env = {}) => {
      const running = run(process.execPath, [join(dir, "out", file)], { cwd: dir, encoding: "utf8", env: { ...process.env, ...env } });
      tracked(running.child);
      return (await running).stdout;
    },
  };
}

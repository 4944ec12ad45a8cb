import { spawnSync, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { createConnection, createServer, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort, REDIS_SERVER, spawnRedis } from "./redis-servers.mjs";
import { tracked } from "../helpers/children.js";

/**
 * A real redis-server (the Debian package) for the tests of wh serve's Redis queue. CI
 * (WH_REQUIRE_SERVICES=1) makes a missing one a failure; elsewhere the tests are skipped with
 * one line saying so.
 */
export const redisAvailable = spawnSync(REDIS_SERVER, ["--version"]).status === 0;
if (!redisAvailable && process.env.WH_REQUIRE_SERVICES === "1")
  throw new Error(`WH_REQUIRE_SERVICES=1 but ${REDIS_SERVER} cannot be run (apt-get install redis-server)`);
if (!redisAvailable)
  process.stderr.write(`Redis queue tests skipped: ${REDIS_SERVER} cannot be run here (apt-get install redis-server, or set WH_REDIS_SERVER)\n`);

export interface TestRedis {
  url: string;
  port: number;
  /** Stops it as a shutdown does (the append-only file is kept), and starts it again on the same port. */
  restart(downMs?: number): Promise<void>;
  /** Freezes it with SIGSTOP for `ms` (connections stay open, commands wait unanswered), then SIGCONT. */
  freeze(ms: number): Promise<void>;
  stop(): Promise<void>;
}

/** A redis-server on a free port, every write in its append-only file and synced (appendfsync always). */
export async function startRedis(extraArgs: readonly string[] = []): Promise<TestRedis> {
  const dir = mkdtempSync(join(tmpdir(), "wh-redis-"));
  const port = await freePort();
  let child: ChildProcess;
  const launch = async (): Promise<void> => {
    const args = ["--port", String(port), "--bind", "127.0.0.1", "--dir", dir, "--save", "", "--appendonly", "yes", "--appendfsync", "always", ...extraArgs];
    child = await spawnRedis(args, tracked);
  };
  const shutdown = async (): Promise<void> => {
    if (child.exitCode !== null) return;
    child.kill("SIGTERM");
    await once(child, "exit");
  };
  await launch();
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    async freeze(ms) {
      child.kill("SIGSTOP");
      await new Promise((resolve) => setTimeout(resolve, ms));
      child.kill("SIGCONT");
    },
    async restart(downMs = 1_000) {
      await shutdown();
      await new Promise((resolve) => setTimeout(resolve, downMs));
      await launch();
    },
    async stop() {
      await shutdown();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A TCP relay in front of a port, to make one client's Redis unreachable while others' is not. */
export interface TestProxy {
  /** redis://127.0.0.1:<the relay's port> */
  url: string;
  /** Connections closed and new ones refused (connection reset), until heal(). */
  cut(): void;
  /** Nothing relayed either way, connections kept open (a Redis that stopped answering), until heal(). */
  hang(): void;
  heal(): void;
  close(): Promise<void>;
}

export async function startProxy(targetPort: number): Promise<TestProxy> {
  let mode: "open" | "cut" | "hang" = "open";
  const pairs = new Set<{ near: Socket; far: Socket; held: [Socket, Buffer][] }>();
  const server = createServer((near) => {
    if (mode === "cut") {
      near.destroy();
      return;
    }
    const far = createConnection(targetPort, "127.0.0.1");
    const pair = { near, far, held: [] as [Socket, Buffer][] };
    pairs.add(pair);
    const relay = (to: Socket) => (chunk: Buffer) => {
      if (mode === "hang") pair.held.push([to, chunk]);
      else to.write(chunk);
    };
    near.on("data", relay(far));
    far.on("data", relay(near));
    const end = (): void => {
      near.destroy();
      far.destroy();
      pairs.delete(pair);
    };
    for (const socket of [near, far]) socket.on("close", end).on("error", end);
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as { port: number };
  const closeAll = (): void => {
    for (const pair of pairs) pair.near.destroy();
  };
  return {
    url: `redis://127.0.0.1:${port}`,
    cut() {
      mode = "cut";
      closeAll();
    },
    hang() {
      mode = "hang";
    },
    heal() {
      mode = "open";
      for (const pair of pairs) for (const [to, chunk] of pair.held.splice(0)) to.write(chunk);
    },
    async close() {
      closeAll();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

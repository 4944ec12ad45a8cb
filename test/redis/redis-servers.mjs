// Real redis-servers (the Debian package) on loopback, for the tests (redis-server.ts
// and redis-cluster.ts, which add the skip-or-fail on a machine without Redis) and the benchmarks
// (bench/serve-redis.js, bench/serve-scaling.js, which read each server's CPU through its pid):
// one server, or a Redis Cluster of 3 masters and 3 replicas made with `redis-cli --cluster create`.
import { execFile, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";

export const REDIS_SERVER = process.env.WH_REDIS_SERVER ?? "redis-server";
export const REDIS_CLI = process.env.WH_REDIS_CLI ?? "redis-cli";

const run = promisify(execFile);

/** redis-cli against one node; its output. */
export async function cli(port, ...args) {
  const { stdout } = await run(REDIS_CLI, ["-h", "127.0.0.1", "-p", String(port), ...args]);
  return stdout;
}

const canListen = (port) =>
  new Promise((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
  });

/** A port free on loopback now. */
export async function freePort() {
  const server = createServer().listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** Six ports below 40000 whose cluster bus ports (port + 10000) are free too. */
async function freePorts() {
  for (;;) {
    const base = 20_000 + Math.floor(Math.random() * 19_000);
    const ports = Array.from({ length: 6 }, (_, index) => base + index);
    const free = await Promise.all(ports.flatMap((port) => [canListen(port), canListen(port + 10_000)]));
    if (free.every(Boolean)) return ports;
  }
}

const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** One redis-server as wh's queue usually has it (the benchmarks'): appendonly yes, appendfsync everysec, no RDB snapshots. */
export function durableRedisArgs(port, dir) {
  return ["--port", String(port), "--bind", "127.0.0.1", "--dir", dir, "--save", "", "--appendonly", "yes", "--appendfsync", "everysec"];
}

/**
 * Starts a redis-server with `args` and resolves with its child process once it accepts
 * connections (its output is read and dropped from then on); `spawned` sees the child first, so
 * that a caller can register it for cleanup before it is ready.
 */
export async function spawnRedis(args, spawned = () => undefined) {
  const child = spawn(REDIS_SERVER, args, { stdio: ["ignore", "pipe", "inherit"] });
  spawned(child);
  let output = "";
  await new Promise((resolve, reject) => {
    child.stdout.on("data", (chunk) => {
      output += chunk.toString();
      if (output.includes("Ready to accept connections")) resolve();
    });
    child.on("exit", (code) => reject(new Error(`redis-server ${args.join(" ")} exited ${code}: ${output}`)));
  });
  child.stdout.removeAllListeners("data");
  child.stdout.resume();
  return child;
}

/**
 * Starts the six nodes and makes them a cluster (the first three masters); `nodeTimeoutMs` is how
 * soon a silent master is failed over; `spawned` sees each node's process first (the tests register
 * them for cleanup, as spawnRedis's callers do), a revived one too.
 */
export async function startCluster(nodeTimeoutMs = 2_000, spawned = () => undefined) {
  const root = mkdtempSync(join(tmpdir(), "wh-redis-cluster-"));
  const ports = await freePorts();
  const children = new Map();
  const running = (port) => children.get(port)?.exitCode === null && children.get(port)?.signalCode === null;
  const launch = async (port) => {
    const dir = join(root, String(port));
    mkdirSync(dir, { recursive: true });
    const args = ["--port", String(port), "--bind", "127.0.0.1", "--dir", dir, "--save", "", "--appendonly", "yes"];
    const cluster = ["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", String(nodeTimeoutMs)];
    await spawnRedis([...args, ...cluster], (child) => {
      children.set(port, child);
      spawned(child);
    });
  };
  const stop = async () => {
    await Promise.all(
      [...children.values()].map(async (child) => {
        if (child.exitCode !== null || child.signalCode !== null) return;
        child.kill("SIGKILL");
        await once(child, "exit");
      }),
    );
    rmSync(root, { recursive: true, force: true });
  };
  const settled = async () => {
    const deadline = Date.now() + 60_000;
    for (;;) {
      const states = await Promise.all(ports.filter(running).map((port) => cli(port, "cluster", "info").catch(() => "")));
      if (states.every((info) => info.includes("cluster_state:ok"))) return;
      if (Date.now() > deadline) throw new Error(`the cluster did not settle: ${states.join(" | ")}`);
      await pause(200);
    }
  };
  /** CLUSTER SHARDS on a live node: each shard's slot ranges and its nodes (port, role, health). */
  const clusterShards = async () => JSON.parse(await cli(ports.find(running), "--json", "cluster", "shards"));
  const shards = async () =>
    (await clusterShards()).map((shard) => ({
      slots: shard.slots,
      master: shard.nodes.find((node) => node.role === "master" && node.health === "online")?.port ?? 0,
    }));
  try {
    await Promise.all(ports.map(launch));
    await run(REDIS_CLI, ["--cluster", "create", ...ports.map((port) => `127.0.0.1:${port}`), "--cluster-replicas", "1", "--cluster-yes"]);
    await settled();
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    nodes: ports.map((port) => ({ port, url: `redis://127.0.0.1:${port}` })),
    pid: (port) => children.get(port)?.pid,
    async masterOf(key) {
      const slot = Number(await cli(ports[0], "cluster", "keyslot", key));
      for (const shard of await shards())
        for (let index = 0; index < shard.slots.length; index += 2) if (slot >= shard.slots[index] && slot <= shard.slots[index + 1]) return shard.master;
      throw new Error(`no master holds slot ${slot}`);
    },
    async masters() {
      return (await shards()).map((shard) => shard.master).filter((port) => port !== 0);
    },
    kill(port) {
      children.get(port)?.kill("SIGKILL");
    },
    signal(port, signal) {
      children.get(port)?.kill(signal);
    },
    async replicaOf(port) {
      const shard = (await clusterShards()).map((each) => each.nodes).find((nodes) => nodes.some((node) => node.port === port && node.role === "master"));
      const replica = shard?.find((node) => node.role === "replica");
      if (replica === undefined) throw new Error(`no replica of ${port}`);
      return replica.port;
    },
    revive: launch,
    settled,
    stop,
  };
}

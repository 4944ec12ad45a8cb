import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { execFile } from "node:child_process";

/**
 * A real Redis Cluster on loopback: 3 masters and 3 replicas of the Debian redis-server, made with
 * `redis-cli --cluster create`. Skipped with one line where redis-server or redis-cli cannot run
 * (a failure under WH_REQUIRE_SERVICES=1), as in redis-server.ts.
 */
const REDIS_SERVER = process.env.WH_REDIS_SERVER ?? "redis-server";
const REDIS_CLI = process.env.WH_REDIS_CLI ?? "redis-cli";
export const clusterAvailable = spawnSync(REDIS_SERVER, ["--version"]).status === 0 && spawnSync(REDIS_CLI, ["--version"]).status === 0;
if (!clusterAvailable && process.env.WH_REQUIRE_SERVICES === "1")
  throw new Error(`WH_REQUIRE_SERVICES=1 but ${REDIS_SERVER} or ${REDIS_CLI} cannot be run (apt-get install redis-server redis-tools)`);
if (!clusterAvailable)
  process.stderr.write(`Redis Cluster tests skipped: ${REDIS_SERVER} or ${REDIS_CLI} cannot be run here (apt-get install redis-server redis-tools)\n`);

const run = promisify(execFile);

/** redis-cli against one node; its output. */
export async function cli(port: number, ...args: string[]): Promise<string> {
  const { stdout } = await run(REDIS_CLI, ["-h", "127.0.0.1", "-p", String(port), ...args]);
  return stdout;
}

export interface ClusterNode {
  port: number;
  url: string;
}

export interface TestCluster {
  nodes: ClusterNode[];
  /** The port of the master that holds `key`'s slot now. */
  masterOf(key: string): Promise<number>;
  /** The ports of the masters now. */
  masters(): Promise<number[]>;
  /** The port of a replica of the master on `port`. */
  replicaOf(port: number): Promise<number>;
  /** kill -9 of one node (its files are kept). */
  kill(port: number): void;
  /** SIGSTOP (connections stay open, commands wait unanswered) or SIGCONT to one node. */
  signal(port: number, signal: "SIGSTOP" | "SIGCONT"): void;
  /** Starts a killed node again, on its port and files: a master that was replaced comes back as a replica. */
  revive(port: number): Promise<void>;
  /** Until every running node says cluster_state:ok. */
  settled(): Promise<void>;
  /** Kills every node (SIGKILL: nothing to keep) and removes their files. */
  stop(): Promise<void>;
}

const canListen = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
  });

/** Six ports below 40000 whose cluster bus ports (port + 10000) are free too. */
async function freePorts(): Promise<number[]> {
  for (;;) {
    const base = 20_000 + Math.floor(Math.random() * 19_000);
    const ports = Array.from({ length: 6 }, (_, index) => base + index);
    const free = await Promise.all(ports.flatMap((port) => [canListen(port), canListen(port + 10_000)]));
    if (free.every(Boolean)) return ports;
  }
}

const pause = (ms: number): Promise<unknown> => new Promise((resolve) => setTimeout(resolve, ms));

/** Starts the six nodes and makes them a cluster (the first three masters); `nodeTimeoutMs` is how soon a silent master is failed over. */
export async function startCluster(nodeTimeoutMs = 2_000): Promise<TestCluster> {
  const root = mkdtempSync(join(tmpdir(), "wh-redis-cluster-"));
  const ports = await freePorts();
  const children = new Map<number, ChildProcess>();
  const launch = async (port: number): Promise<void> => {
    const dir = join(root, String(port));
    mkdirSync(dir, { recursive: true });
    const child = spawn(
      REDIS_SERVER,
      [
        "--port",
        String(port),
        "--bind",
        "127.0.0.1",
        "--dir",
        dir,
        "--save",
        "",
        "--appendonly",
        "yes",
        "--cluster-enabled",
        "yes",
        "--cluster-config-file",
        "nodes.conf",
        "--cluster-node-timeout",
        String(nodeTimeoutMs),
      ],
      { stdio: ["ignore", "pipe", "inherit"] },
    );
    children.set(port, child);
    let output = "";
    await new Promise<void>((resolve, reject) => {
      child.stdout?.on("data", (chunk: Buffer) => {
        output += chunk.toString();
        if (output.includes("Ready to accept connections")) resolve();
      });
      child.on("exit", (code) => reject(new Error(`redis-server on ${port} exited ${code}: ${output}`)));
    });
    child.stdout?.resume();
  };
  const stop = async (): Promise<void> => {
    await Promise.all(
      [...children.values()].map(async (child) => {
        if (child.exitCode !== null || child.signalCode !== null) return;
        child.kill("SIGKILL");
        await once(child, "exit");
      }),
    );
    rmSync(root, { recursive: true, force: true });
  };
  const settled = async (): Promise<void> => {
    const deadline = Date.now() + 60_000;
    for (;;) {
      const live = ports.filter((port) => children.get(port)?.exitCode === null && children.get(port)?.signalCode === null);
      const states = await Promise.all(live.map((port) => cli(port, "cluster", "info").catch(() => "")));
      if (states.every((info) => info.includes("cluster_state:ok"))) return;
      if (Date.now() > deadline) throw new Error(`the cluster did not settle: ${states.join(" | ")}`);
      await pause(200);
    }
  };
  /** CLUSTER SHARDS on a live node: each shard's slot ranges and its master's port. */
  const clusterShards = async (): Promise<{ slots: number[]; nodes: { port: number; role: string; health: string }[] }[]> => {
    const live = ports.find((port) => children.get(port)?.exitCode === null && children.get(port)?.signalCode === null) as number;
    return JSON.parse(await cli(live, "--json", "cluster", "shards"));
  };
  const shardNodes = async () => (await clusterShards()).map((shard) => shard.nodes);
  const shards = async (): Promise<{ slots: number[]; master: number }[]> => {
    const parsed = await clusterShards();
    return parsed.map((shard) => ({
      slots: shard.slots,
      master: shard.nodes.find((node) => node.role === "master" && node.health === "online")?.port ?? 0,
    }));
  };
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
    async masterOf(key) {
      const slot = Number(await cli(ports[0] as number, "cluster", "keyslot", key));
      for (const shard of await shards())
        for (let index = 0; index < shard.slots.length; index += 2)
          if (slot >= (shard.slots[index] as number) && slot <= (shard.slots[index + 1] as number)) return shard.master;
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
      const shard = (await shardNodes()).find((nodes) => nodes.some((node) => node.port === port && node.role === "master"));
      const replica = shard?.find((node) => node.role === "replica");
      if (replica === undefined) throw new Error(`no replica of ${port}`);
      return replica.port;
    },
    revive: launch,
    settled,
    stop,
  };
}

import type { ChildProcess } from "node:child_process";

export declare const REDIS_SERVER: string;
export declare const REDIS_CLI: string;

/** redis-cli against one node; its output. */
export declare function cli(port: number, ...args: string[]): Promise<string>;

/** A port free on loopback now. */
export declare function freePort(): Promise<number>;

/** One redis-server as wh's queue usually has it (the benchmarks'): appendonly yes, appendfsync everysec, no RDB snapshots. */
export declare function durableRedisArgs(port: number, dir: string): string[];

/** Starts a redis-server with `args`; resolves with its process once it accepts connections. `spawned` sees the child first (to register it for cleanup). */
export declare function spawnRedis(args: readonly string[], spawned?: (child: ChildProcess) => void): Promise<ChildProcess>;

export interface ClusterNode {
  port: number;
  url: string;
}

export interface TestCluster {
  nodes: ClusterNode[];
  /** The process id of the node on `port` (for its CPU, read from /proc). */
  pid(port: number): number | undefined;
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

/** Starts the six nodes and makes them a cluster (the first three masters); `nodeTimeoutMs` is how soon a silent master is failed over. */
export declare function startCluster(nodeTimeoutMs?: number, spawned?: (child: ChildProcess) => void): Promise<TestCluster>;

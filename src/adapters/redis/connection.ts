import { createClient, createCluster } from "@redis/client";

/**
 * Connection settings every node's client gets, alone or in a cluster. `answered`: Redis answered
 * this process already (the client is one more connection of a queue that is open), so a first
 * connection that fails is retried like a lost one.
 */
function nodeOptions(answered: boolean) {
  let connected = answered;
  return {
    options: {
      disableOfflineQueue: true,
      socket: {
        connectTimeout: 5_000,
        // Once connected, keep trying (Redis restarts); a first connection that fails is an answer
        // (a wrong URL, no Redis), unless Redis answered this process already.
        reconnectStrategy: (retries: number, cause: Error) => (connected ? Math.min(100 * 2 ** retries, 1_000) : retries < 2 ? 200 : cause),
      },
    },
    ready: () => {
      connected = true;
    },
  };
}

/**
 * A client that fails a command at once while disconnected (accepting must answer 503, not wait)
 * and reconnects by itself. A frozen Redis keeps the connection open and its commands wait (the
 * client's command timeout stops counting once a command is written): leases do not depend on
 * its answers coming (see RedisQueue).
 */
export function newClient(url: string, answered = false) {
  const { options, ready } = nodeOptions(answered);
  const client = createClient({ url, ...options });
  client.on("ready", ready);
  // Errors also reach the commands that were waiting: nothing more to do with them here.
  client.on("error", () => undefined);
  return client;
}

/** The URL without its database (a cluster has database 0 only). */
function withoutDatabase(url: string): string {
  const parsed = new URL(url);
  parsed.pathname = "";
  return parsed.href;
}

/**
 * A Redis Cluster reached through one of its nodes: node-redis learns the slots' masters from it,
 * follows MOVED and ASK, and learns them again after a failover. Every node is reached with the
 * URL's user, password and TLS.
 */
function newClusterClient(url: string, answered: boolean) {
  const { options, ready } = nodeOptions(answered);
  const { username, password, protocol } = new URL(url);
  const cluster = createCluster({
    rootNodes: [{ url: withoutDatabase(url) }],
    defaults: {
      ...options,
      // The nodes it learns of are reached as the one named: over TLS for rediss://.
      socket: { ...options.socket, ...(protocol === "rediss:" ? { tls: true as const } : {}) },
      ...(username === "" ? {} : { username: decodeURIComponent(username) }),
      ...(password === "" ? {} : { password: decodeURIComponent(password) }),
    },
  });
  cluster.on("node-ready", ready);
  cluster.on("error", () => undefined);
  return cluster;
}

/**
 * One Redis server or a cluster: the commands wh uses take the same arguments on both, and a
 * command with keys goes to the master of its first key's slot. What differs is said where it does
 * (`cluster`): a transaction or a multi-key read must stay within one slot, and WAIT must follow the
 * writes it waits for on their master's connection.
 */
export type RedisClient = ReturnType<typeof newClient>;

export interface Redis {
  client: RedisClient;
  cluster: boolean;
}

/** A client of the kind `cluster` says, not yet connected; `answered`: see nodeOptions. */
export function redisFor(url: string, cluster: boolean, answered = false): Redis {
  // Both kinds answer the commands wh sends alike; their types differ only in what wh does not use.
  return { client: (cluster ? newClusterClient(url, answered) : newClient(url, answered)) as unknown as RedisClient, cluster };
}

/** Connects to the server the URL names and asks whether it is a node of a cluster; then connects as that says. */
export async function connectRedis(url: string): Promise<Redis> {
  // A node of a cluster refuses SELECT: RedisQueue says so in its own words.
  const probe = newClient(withoutDatabase(url));
  let info: string;
  try {
    await probe.connect();
    info = await probe.info("cluster");
  } finally {
    await probe.destroy();
  }
  const redis = redisFor(url, /^cluster_enabled:1\b/m.test(info));
  await redis.client.connect();
  return redis;
}

/**
 * WAIT for `replicas` replicas to have the writes sent before it on the connection of `key`'s
 * master; resolves to how many did within `timeoutMs`.
 */
export async function waitForReplicas(redis: Redis, key: string, replicas: number, timeoutMs: number): Promise<number> {
  const args = ["WAIT", String(replicas), String(timeoutMs)];
  const cluster = redis.client as unknown as ReturnType<typeof createCluster>;
  return Number(redis.cluster ? await cluster.sendCommand(key, false, args) : await redis.client.sendCommand(args));
}

/** The consumer group every forwarder reads the partitions' streams in. */
export const GROUP = "forwarders";

/**
 * The names of a queue's keys, all under its prefix. A queue made by this version ("slots") puts
 * every key of a partition (stream, lease, taken mark, dead letters) in one hash slot by a hash
 * tag, `{prefix:partition}`; one made before (a queue whose meta has no `keys` field) keeps its
 * names, with one dead-letter stream for the queue, and works on a single server only.
 */
export class QueueKeys {
  constructor(
    private readonly prefix: string,
    readonly slots = true,
    /** On a cluster, writes to different partitions cannot share a transaction. */
    readonly cluster = false,
  ) {}

  /** The partition count and the key layout, recorded when the queue is created. */
  get meta(): string {
    return `${this.prefix}:meta`;
  }

  /** The live forwarders, scored by their last heartbeat. */
  get forwarders(): string {
    return `${this.prefix}:forwarders`;
  }

  private name(partition: number, slotted: string, flat: string): string {
    return this.slots ? `{${this.prefix}:${partition}}:${slotted}` : `${this.prefix}:${flat}`;
  }

  stream(partition: number): string {
    return this.name(partition, "stream", `p:${partition}`);
  }

  lease(partition: number): string {
    return this.name(partition, "lease", `lease:${partition}`);
  }

  /** Set while a forwarder holds the partition, deleted when it gives it up cleanly. */
  taken(partition: number): string {
    return this.name(partition, "taken", `taken:${partition}`);
  }

  /** Where the partition's dead letters go: written in the same transaction as their acknowledgement. */
  deadLetters(partition: number): string {
    return this.name(partition, "dead-letters", "dead-letters");
  }

  /** Every dead-letter stream, with the partition its letters came from when the stream says it (else each letter does). */
  deadLetterStreams(partitions: number): { key: string; partition: number | undefined }[] {
    if (!this.slots) return [{ key: this.deadLetters(0), partition: undefined }];
    return Array.from({ length: partitions }, (_, partition) => ({ key: this.deadLetters(partition), partition }));
  }

  /** Writes of partitions with the same group may share a transaction: all on one server, one partition's on a cluster. */
  group(partition: number): string {
    return this.cluster ? String(partition) : "";
  }
}

/** Items by the transaction group of their partition (see QueueKeys#group), in their order. */
export function byGroup<T>(keys: QueueKeys, items: Iterable<T>, partitionOf: (item: T) => number): T[][] {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const group = keys.group(partitionOf(item));
    const list = groups.get(group);
    if (list === undefined) groups.set(group, [item]);
    else list.push(item);
  }
  return [...groups.values()];
}

import { createClient } from "@redis/client";

/**
 * A client that fails a command at once while disconnected (accepting must answer 503, not wait)
 * and reconnects by itself. A frozen Redis keeps the connection open and its commands wait (the
 * client's command timeout stops counting once a command is written): leases do not depend on
 * its answers coming (see RedisQueue).
 */
export function newClient(url: string) {
  let connected = false;
  const client = createClient({
    url,
    disableOfflineQueue: true,
    socket: {
      connectTimeout: 5_000,
      // Once connected, keep trying (Redis restarts); a first connection that fails is an answer.
      reconnectStrategy: (retries, cause) => (connected ? Math.min(100 * 2 ** retries, 1_000) : retries < 2 ? 200 : cause),
    },
  });
  client.on("ready", () => {
    connected = true;
  });
  // Errors also reach the commands that were waiting: nothing more to do with them here.
  client.on("error", () => undefined);
  return client;
}
export type RedisClient = ReturnType<typeof newClient>;

/** The consumer group every forwarder reads the partitions' streams in. */
export const GROUP = "forwarders";

/** The names of a queue's keys, all under its prefix. */
export class QueueKeys {
  constructor(private readonly prefix: string) {}

  /** The partition count, recorded when the queue is created. */
  get meta(): string {
    return `${this.prefix}:meta`;
  }

  /** The live forwarders, scored by their last heartbeat. */
  get forwarders(): string {
    return `${this.prefix}:forwarders`;
  }

  get deadLetters(): string {
    return `${this.prefix}:dead-letters`;
  }

  stream(partition: number): string {
    return `${this.prefix}:p:${partition}`;
  }

  lease(partition: number): string {
    return `${this.prefix}:lease:${partition}`;
  }

  /** Set while a forwarder holds the partition, deleted when it gives it up cleanly. */
  taken(partition: number): string {
    return `${this.prefix}:taken:${partition}`;
  }
}

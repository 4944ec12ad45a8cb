// A forwarder's tenure of a partition's lease, and the fence its commands pass in Redis (see leases.ts).

/**
 * The first lines of a script that changes a partition's consumer group (KEYS[1] its stream, KEYS[2]
 * its lease): nothing is done unless the lease is still the tenure's (ARGV[1]). On a cluster a
 * command can run long after it was sent, on another server: one sent to a master that then froze
 * waits in its socket, and when the master wakes demoted it is answered MOVED and sent again to the
 * promoted replica, where a later owner may have taken the partition, swept it and read past it
 * meanwhile. Unfenced, such a read (XREADGROUP ">") or claim moves events into the pending list of
 * a tenure that has ended, and the group's last id past them: the owner's next reads skip them, and
 * they go out only at its next sweep, after the user's later events. The same check refuses the
 * reads of a lease that only a woken, not yet demoted master granted.
 */
export const FENCE = `if redis.call("get", KEYS[2]) ~= ARGV[1] then return false end
`;

/** The forwarder (its consumer name) whose tenure a lease's value is. */
export function leaseOwner(value: string): string {
  const tenure = value.lastIndexOf("/");
  return tenure < 0 ? value : value.slice(0, tenure);
}

/** One lease on a partition: from taking it until it ends. */
export interface Tenure {
  /** The lease's value in Redis while this tenure holds it: the consumer and the tenure's number, so that a command sent under an earlier tenure of the same process is fenced off too. */
  readonly token: string;
  readonly lease: AbortController;
  /** Until when (performance.now()) the lease is surely still this process's; the fence fires then. */
  validUntil: number;
  fence: NodeJS.Timeout | undefined;
  /** When its pending events are claimed next; they are read, and new ones after them, only once claimed. */
  sweepAt: number;
  swept: boolean;
  /** Being given up: nothing more is read from it. */
  draining: boolean;
  /** The ids of the events read and not yet acknowledged. */
  held: Set<string>;
  /** Reads of it waiting for Redis's answer. */
  reads: number;
  /** Acknowledged while a read of it was on its way: they leave `held` once its answer has been handled. */
  acked: string[];
  /** While its pending events are read (after a sweep, or after a read whose answer was lost): the last id read of them. */
  history: string | undefined;
}

/** Nothing this process read from the partition is left unacknowledged, and no read of it is on its way. */
export function idle(tenure: Tenure): boolean {
  return tenure.held.size === 0 && tenure.reads === 0;
}

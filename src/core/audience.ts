/**
 * The trait name of an audience or computed trait: lower case, every run of characters other
 * than letters and digits becomes one `_`, none at either end (`High-Value Users (EU)` →
 * `high_value_users_eu`).
 */
export function toTraitName(name: string): string {
  return name
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, "_")
    .replace(/^_+|_+$/g, "");
}

/** One identify to send: the user and the trait's new value. */
export interface TraitChange {
  userId: string;
  value: unknown;
  /** joined/left for audiences; changed/new for computed traits. */
  change: "joined" | "left" | "new" | "changed";
}

/**
 * Audience membership changes: `true` for members the destination has not been told of, `false`
 * for users it was told were members and no longer are. On the first sync (`known` empty) every
 * member joins. Joins come in the members' order, then leaves in the state's order.
 */
export function diffMembership(members: ReadonlySet<string>, known: ReadonlySet<string>): TraitChange[] {
  const changes: TraitChange[] = [];
  for (const userId of members) if (!known.has(userId)) changes.push({ userId, value: true, change: "joined" });
  for (const userId of known) if (!members.has(userId)) changes.push({ userId, value: false, change: "left" });
  return changes;
}

/**
 * Computed-trait changes: users whose value differs from the last delivered one (compared as
 * JSON), or who have none yet. Users missing from `values` are left as they are.
 */
export function diffTraitValues(values: ReadonlyMap<string, unknown>, known: ReadonlyMap<string, unknown>): TraitChange[] {
  const changes: TraitChange[] = [];
  for (const [userId, value] of values) {
    if (!known.has(userId)) changes.push({ userId, value, change: "new" });
    else if (JSON.stringify(known.get(userId)) !== JSON.stringify(value)) changes.push({ userId, value, change: "changed" });
  }
  return changes;
}

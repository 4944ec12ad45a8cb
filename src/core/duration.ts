const UNIT_MS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** The longest duration a flag takes: Node's timers hold at most 2^31-1 ms (about 24.8 days) and fire at once beyond it. */
export const MAX_DURATION_MS = 2_147_483_647;

/**
 * Parses `500ms`, `5s`, `1.5m`, `4h` or `1d`. Returns undefined when the text is not a
 * non-negative duration with its unit: a bare `5` is ambiguous (5 ms? 5 s?) and refused.
 */
export function parseDurationMs(text: string): number | undefined {
  const match = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)\s*$/.exec(text);
  if (match === null) return undefined;
  const value = Number(match[1]);
  return Math.round(value * (UNIT_MS[match[2] as string] ?? 1));
}

/** Formats a duration for people: `850ms`, `2.4s`, `3m 20s`, `4h`. */
export function formatDurationMs(ms: number): string {
  if (ms < 999.5) return `${Math.round(ms)}ms`;
  if (ms < 9_950) return `${(ms / 1_000).toFixed(1)}s`;
  if (ms < 59_500) return `${Math.round(ms / 1_000)}s`;
  const totalSeconds = Math.round(ms / 1_000);
  const hours = Math.floor(totalSeconds / 3_600);
  const minutes = Math.floor((totalSeconds % 3_600) / 60);
  const seconds = totalSeconds % 60;
  const parts = [hours > 0 ? `${hours}h` : "", minutes > 0 ? `${minutes}m` : "", seconds > 0 ? `${seconds}s` : ""];
  return parts.filter(Boolean).join(" ");
}

/** A moment as people read it on a clock: `15:02:10` (local time). */
export function clockTime(ms: number): string {
  return new Date(ms).toTimeString().slice(0, 8);
}

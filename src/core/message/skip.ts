/**
 * Why a message is not sent, one word for each reason a count and a record name: its
 * `integrations` turn the destination off (or the mode never sends its type), a destination
 * filter dropped it, or it matched no subscription (actions mode).
 */
export type SkipKind = "integrations" | "filtered" | "unmatched";

/** Of the skipped messages, those a filter dropped and those no subscription matched (the rest: integrations). */
export interface SkipCounts {
  filtered: number;
  unmatched: number;
}

export function emptySkipCounts(): SkipCounts {
  return { filtered: 0, unmatched: 0 };
}

/** Counts one skipped message by its kind (integrations is what is left of `skipped`). */
export function countSkip(counts: SkipCounts, kind: SkipKind | undefined): void {
  if (kind === "filtered" || kind === "unmatched") counts[kind] += 1;
}

/** The skipped, as a summary says them: "N skipped by integrations", then the other kinds when there are any. */
export function describeSkipped(counts: SkipCounts & { skipped: number }): string[] {
  return [
    `${counts.skipped - counts.filtered - counts.unmatched} skipped by integrations`,
    ...(counts.filtered > 0 ? [`${counts.filtered} filtered`] : []),
    ...(counts.unmatched > 0 ? [`${counts.unmatched} matched no subscription`] : []),
  ];
}

/**
 * Runs `use` with a signal that aborts as soon as any of `signals` does, and lets go of them
 * once `use` has settled. Not AbortSignal.any: on Node 20 every signal it makes stays reachable
 * from a long-lived source (a run's stop, a sender's close), 7 MB per 100,000 sends.
 */
export async function withAnySignal<T>(signals: readonly AbortSignal[], use: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const only = signals.length === 1 ? signals[0] : undefined;
  if (only !== undefined) return use(only);
  const any = new AbortController();
  const abort = (): void => any.abort();
  for (const signal of signals) {
    if (signal.aborted) any.abort();
    signal.addEventListener("abort", abort, { once: true });
  }
  try {
    return await use(any.signal);
  } finally {
    for (const signal of signals) signal.removeEventListener("abort", abort);
  }
}

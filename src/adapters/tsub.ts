import { buildEventFilter, type EventFilter, type FilterConfig, type TsubEngine } from "../core/destination/filters.js";

/**
 * The filters as one function, @segment/tsub loaded for them: only a config with filters pays
 * for it (a literal import() is a file of its own in the CLI bundle, scripts/bundle-cli.mjs), so
 * `wh sign`, `wh verify` and a `wh send` without filters start as fast as before.
 */
export async function loadEventFilter(filters: readonly FilterConfig[] | undefined): Promise<EventFilter | undefined> {
  if (filters === undefined || filters.every((filter) => filter.enabled === false)) return undefined;
  const loaded = await import("@segment/tsub");
  // Node's import of this CommonJS package finds no named exports: all of it is `default`. The
  // CLI bundle's require gives the named ones (the package marks itself __esModule).
  const tsub: TsubEngine = "matches" in loaded ? loaded : (loaded as { default: TsubEngine }).default;
  return buildEventFilter(filters, tsub);
}

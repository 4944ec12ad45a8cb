import { createHash } from "node:crypto";
import type { DestinationIdentity } from "../adapters/journal.js";
import type { Destination } from "../config/resolve.js";
import { redactUrl } from "../core/redact.js";

/**
 * What identifies where a run delivers, for its journal: a fingerprint of the source, the URLs
 * and their headers (never the shared secret), a description a person can read (passwords
 * masked), and a digest of each header's value. A resume whose destination has another
 * fingerprint is refused, naming the URLs or the headers that changed.
 */
export function destinationIdentity(destination: Destination): DestinationIdentity {
  const canonical = JSON.stringify({
    source: destination.source ?? null,
    mode: destination.mode,
    method: destination.method,
    batchSize: destination.batchSize,
    targets: destination.targets.map((target) => ({ url: target.url.href, headers: Object.entries(target.headers).sort(([a], [b]) => a.localeCompare(b)) })),
    // What decides where each event goes and what is sent: a resume with other subscriptions is refused.
    ...(destination.subscriptions === undefined
      ? {}
      : {
          subscriptions: destination.subscriptions.subscriptions.map(({ name, enabled, trigger, mapping, batchSize }) => ({
            name,
            enabled,
            trigger,
            mapping,
            batchSize,
          })),
        }),
    // Filters decide what is sent: a resume under other filters is another run (none: the fingerprint of before).
    ...(destination.filters === undefined ? {} : { filters: destination.filters }),
  });
  const urls =
    destination.subscriptions === undefined
      ? destination.targets.map((target) => redactUrl(target.url)).join(", ")
      : `subscriptions ${destination.subscriptions.subscriptions.map((subscription) => JSON.stringify(subscription.name)).join(", ")}`;
  const how = [
    destination.source === undefined ? "" : `source ${destination.source}`,
    // Subscriptions say their methods and batching themselves.
    destination.mode === "classic" || destination.subscriptions !== undefined
      ? ""
      : `${destination.mode} mode, ${destination.method}${destination.batchSize > 1 ? `, batches of ${destination.batchSize}` : ""}`,
    destination.filters === undefined ? "" : `filters ${sha256(JSON.stringify(destination.filters)).slice(0, 8)}`,
  ].filter(Boolean);
  const hidden: [string, string][] = destination.targets.flatMap((target) => {
    const where = destination.targets.length === 1 ? "" : ` for ${redactUrl(target.url)}`;
    // The URL itself, for what its description masks (a password, a token in the query).
    return [
      [`the URL ${redactUrl(target.url)}`, target.url.href],
      ...Object.entries(target.headers).map(([name, value]): [string, string] => [`header ${name}${where}`, value]),
    ];
  });
  return identity(canonical, how.length === 0 ? urls : `${urls} (${how.join("; ")})`, hidden);
}

/** The same for an ingestion endpoint: its URL and the write key (in the fingerprint only). */
export function endpointIdentity(endpoint: URL, writeKey: string): DestinationIdentity {
  return identity(JSON.stringify({ endpoint: endpoint.href, writeKey }), redactUrl(endpoint), [
    [`the URL ${redactUrl(endpoint)}`, endpoint.href],
    ["the write key", writeKey],
  ]);
}

function identity(canonical: string, description: string, hidden: readonly [setting: string, value: string][]): DestinationIdentity {
  // Each digest is keyed by its setting's name, and cut to 64 bits: enough to tell a change.
  const parts = Object.fromEntries(hidden.map(([setting, value]) => [setting, sha256(`${setting}\0${value}`).slice(0, 16)]));
  return { fingerprint: sha256(canonical), description, parts };
}

function sha256(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}

import { createHash } from "node:crypto";
import type { Destination } from "../config/resolve.js";
import { redactUrl } from "../core/redact.js";

/**
 * What identifies where a run delivers, for its journal: a fingerprint of the source, the URLs
 * and their headers (never the shared secret), and a description a person can read (passwords
 * masked). A resume whose destination has another fingerprint is refused.
 */
export function destinationIdentity(destination: Destination): { fingerprint: string; description: string } {
  const canonical = JSON.stringify({
    source: destination.source ?? null,
    mode: destination.mode,
    method: destination.method,
    batchSize: destination.batchSize,
    targets: destination.targets.map((target) => ({ url: target.url.href, headers: Object.entries(target.headers).sort(([a], [b]) => a.localeCompare(b)) })),
  });
  const urls = destination.targets.map((target) => redactUrl(target.url)).join(", ");
  const how = [destination.source === undefined ? "" : `source ${destination.source}`, destination.mode === "classic" ? "" : `${destination.mode} mode, ${destination.method}${destination.batchSize > 1 ? `, batches of ${destination.batchSize}` : ""}`].filter(Boolean);
  return identity(canonical, how.length === 0 ? urls : `${urls} (${how.join("; ")})`);
}

/** The same for an ingestion endpoint: its URL and the write key (in the fingerprint only). */
export function endpointIdentity(endpoint: URL, writeKey: string): { fingerprint: string; description: string } {
  return identity(JSON.stringify({ endpoint: endpoint.href, writeKey }), redactUrl(endpoint));
}

function identity(canonical: string, description: string): { fingerprint: string; description: string } {
  return { fingerprint: createHash("sha256").update(canonical).digest("hex"), description };
}

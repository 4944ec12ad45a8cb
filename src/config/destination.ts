import type { WebhookTarget } from "../core/deliver.js";
import { ConfigError, UsageError } from "../core/errors.js";
import type { DestinationMode } from "../core/message/prepare.js";
import { redactUrl } from "../core/redact.js";
import { standardSecretProblem } from "../core/standard-webhooks.js";
import type { Destination } from "./resolve.js";

// The parts of a destination that the CLI's settings (resolve.ts) and the library's sender share,
// apart from resolve.ts, which loads the config file: the library does not load cosmiconfig.

export type HttpMethod = "POST" | "PUT" | "PATCH";

/** Segment's retry window; the timeout of one attempt is core's destinationTimeoutMs. */
export const DEFAULT_RETRY_WINDOW_MS = 4 * 3_600_000;

const FLAG_NAMES = { mode: "--mode", method: "--method", batchSize: "--batch-size" };

/**
 * The classic destination posts one event per request: PUT, PATCH and batches are Actions'. The
 * error names the options as the caller knows them (the flags, or the library's settings).
 */
export function checkDeliveryShape(
  shape: { mode: DestinationMode; method: HttpMethod; batchSize: number },
  names: Record<keyof typeof shape, string> = FLAG_NAMES,
): void {
  if (shape.mode !== "classic") return;
  if (shape.method !== "POST") throw new UsageError(`${names.method} ${shape.method} needs ${names.mode} actions (the classic destination only POSTs)`);
  if (shape.batchSize > 1)
    throw new UsageError(`${names.batchSize} ${shape.batchSize} needs ${names.mode} actions (the classic destination sends one event per request)`);
}

/**
 * A Standard Webhooks destination's secret must be one (whsec_ and base64): refused before
 * anything is sent, naming where it came from (a flag, the variable, the config's or the
 * library's setting), never showing it.
 */
export function checkSchemeSecret<D extends Pick<Destination, "scheme" | "sharedSecret" | "secretOrigin" | "source">>(destination: D): D {
  if (destination.scheme !== "standard" || destination.sharedSecret === undefined) return destination;
  const problem = standardSecretProblem(destination.sharedSecret);
  if (problem === undefined) return destination;
  const { secretOrigin: origin, source } = destination;
  const setting = origin !== undefined && origin !== "config file" ? origin : `${source === undefined ? "" : `sources.${source}.`}sharedSecret`;
  throw new UsageError(`${setting} does not fit scheme standard: ${problem}`, {
    hint: "give the whsec_ secret of the Standard Webhooks endpoint, or keep scheme segment for Segment's X-Signature",
  });
}

/**
 * A URL with `user:password@` is sent with HTTP basic auth, as curl does (the URL on the wire has
 * no credentials; reports show the password masked). A static Authorization header as well is
 * a conflict, refused.
 */
export function webhookTarget(url: URL, headers: Record<string, string>): WebhookTarget {
  if (url.username === "" && url.password === "") return { url, headers };
  if (Object.keys(headers).some((name) => name.toLowerCase() === "authorization")) {
    throw new ConfigError([`${redactUrl(url)}: the URL carries credentials and an Authorization header is set too; keep one`]);
  }
  const credentials = `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`;
  return { url, headers: { ...headers, Authorization: `Basic ${Buffer.from(credentials).toString("base64")}` } };
}

import type { Destination } from "../config/resolve.js";
import { buildRequestHeaders } from "../core/deliver.js";
import { redactHeaderValue, redactUrl } from "../core/redact.js";
import { SIGNATURE_HEADER } from "../core/sign.js";
import { USER_AGENT } from "../version.js";
import type { Output } from "./render.js";

/**
 * Prints what would be sent, without sending: for each URL the headers (credential-like static
 * header values masked, never the secret) and the exact body bytes with the signature over them.
 */
export function printDryRun(output: Output, body: string, destination: Destination, context: Record<string, unknown> = {}): void {
  const headers = buildRequestHeaders(body, USER_AGENT, destination.sharedSecret);
  for (const target of destination.targets) {
    const shown: Record<string, string> = { ...headers };
    for (const [name, value] of Object.entries(target.headers)) shown[name] = redactHeaderValue(name, value);
    const url = redactUrl(target.url);
    output.record({ ...context, dryRun: true, url, headers: shown, signature: headers[SIGNATURE_HEADER] ?? null, body });
    if (output.json) continue;
    const lines = [`POST ${url}`, ...Object.entries(shown).map(([name, value]) => `${name}: ${value}`), "", body, ""];
    output.result(lines.join("\n"));
  }
}

/**
 * The one place that decides what of a setting, a URL or a request may be shown to a person or
 * written to a file: every output, record and capture goes through it.
 */
export const MASK = "***";

/**
 * Header names whose values are credentials. Not X-Signature nor Standard Webhooks'
 * webhook-signature: each is an HMAC of its own request, which reveals nothing of the secret, and
 * a capture needs it to be verified again.
 */
const CREDENTIAL_HEADER = /^(authorization|proxy-authorization|cookie|set-cookie)$|token|secret|key|auth|pass|signature/i;

/** Query parameters whose names look like credentials: their values are masked in output. */
const SECRET_PARAMETER = /token|key|secret|signature|sig$|password|passwd|auth|credential/i;

/**
 * A URL for output: its user name (often a token: `https://sk_live_…@host/`), its password and the
 * values of secret-looking query parameters are masked.
 */
export function redactUrl(url: URL): string {
  const search = redactQuery(url.search);
  if (url.username === "" && url.password === "" && search === url.search) return url.href;
  const copy = new URL(url.href);
  if (copy.username !== "") copy.username = MASK;
  if (copy.password !== "") copy.password = MASK;
  copy.search = search;
  return copy.href;
}

/** Text that should be a URL but may not parse, for an error message: the same masking, best effort. */
export function redactUrlText(text: string): string {
  try {
    return redactUrl(new URL(text));
  } catch {
    const userInfo = text.replace(/\/\/([^/@\s]*)@/, (_match, info: string) => `//${info.includes(":") ? `${MASK}:${MASK}` : MASK}@`);
    return redactRequestTarget(userInfo);
  }
}

/** A request's target (`/hook?token=…`) for output or a capture: secret-looking query values masked, the rest as sent. */
export function redactRequestTarget(target: string): string {
  const query = target.indexOf("?");
  return query === -1 ? target : `${target.slice(0, query)}${redactQuery(target.slice(query))}`;
}

const SIGNATURES = new Set(["x-signature", "webhook-signature"]);

/** Whether a header's value is a credential (see CREDENTIAL_HEADER). */
function isCredentialHeader(name: string): boolean {
  return !SIGNATURES.has(name.toLowerCase()) && CREDENTIAL_HEADER.test(name);
}

/** A header's value for output: credentials are masked. */
export function redactHeaderValue(name: string, value: string): string {
  return isCredentialHeader(name) ? MASK : value;
}

/** A request's or an answer's headers for output, the inspector page or a capture: one value per name, credentials masked. */
export function redactHeaders(headers: Readonly<Record<string, string | readonly string[] | undefined>>): Record<string, string> {
  const shown: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined) shown[name] = redactHeaderValue(name, typeof value === "string" ? value : value.join(", "));
  }
  return shown;
}

/**
 * A query string (`?a=1&token=…`) with the values of secret-looking parameters masked, rebuilt by
 * hand (URLSearchParams would percent-encode the mask and re-encode the rest).
 */
function redactQuery(search: string): string {
  const pairs = search.slice(1).split("&");
  const secret = (pair: string): boolean => pair.includes("=") && SECRET_PARAMETER.test(parameterName(pair));
  if (!pairs.some(secret)) return search;
  return `?${pairs.map((pair) => (secret(pair) ? `${pair.slice(0, pair.indexOf("="))}=${MASK}` : pair)).join("&")}`;
}

/** A query pair's name as a server reads it: `+` is a space, and a malformed `%` escape stays as it is (never a throw). */
function parameterName(pair: string): string {
  return new URLSearchParams(pair).keys().next().value ?? "";
}

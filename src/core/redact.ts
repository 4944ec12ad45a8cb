/** The one place that decides what of a setting may be shown to a person. */
export const MASK = "***";

const CREDENTIAL_HEADER = /^(authorization|proxy-authorization|cookie)$|token|secret|key|auth|pass|signature/i;

/** A URL for output: a password in it is masked. */
export function redactUrl(url: URL): string {
  if (url.password === "") return url.href;
  const copy = new URL(url.href);
  copy.password = MASK;
  return copy.href;
}

/** A static header's value for output: credentials-like headers are masked. */
export function redactHeaderValue(name: string, value: string): string {
  return CREDENTIAL_HEADER.test(name) ? MASK : value;
}

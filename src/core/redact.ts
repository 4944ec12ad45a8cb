/** The one place that decides what of a setting may be shown to a person. */
export const MASK = "***";

const CREDENTIAL_HEADER = /^(authorization|proxy-authorization|cookie)$|token|secret|key|auth|pass|signature/i;

/** Query parameters whose names look like credentials: their values are masked in output. */
const SECRET_PARAMETER = /token|key|secret|signature|sig$|password|passwd|auth|credential/i;

/** A URL for output: a password in it, and the values of secret-looking query parameters, are masked. */
export function redactUrl(url: URL): string {
  const secretParameters = url.search !== "" && [...url.searchParams.keys()].some((name) => SECRET_PARAMETER.test(name));
  if (url.password === "" && !secretParameters) return url.href;
  const copy = new URL(url.href);
  if (copy.password !== "") copy.password = MASK;
  if (secretParameters) {
    // Rebuilt by hand: URLSearchParams would percent-encode the mask.
    copy.search = url.search
      .slice(1)
      .split("&")
      .map((pair) => {
        const equals = pair.indexOf("=");
        const name = decodeURIComponent((equals === -1 ? pair : pair.slice(0, equals)).replace(/\+/g, " "));
        return equals !== -1 && SECRET_PARAMETER.test(name) ? `${pair.slice(0, equals)}=${MASK}` : pair;
      })
      .join("&");
  }
  return copy.href;
}

/** Text that should be a URL but may not parse, for an error message: the same masking, best effort. */
export function redactUrlText(text: string): string {
  try {
    return redactUrl(new URL(text));
  } catch {
    return text.replace(/(\/\/[^/:@\s]*:)[^@/\s]*@/, `$1${MASK}@`);
  }
}

/** A static header's value for output: credentials-like headers are masked. */
export function redactHeaderValue(name: string, value: string): string {
  return CREDENTIAL_HEADER.test(name) ? MASK : value;
}

/** A host name (letters, digits, dots and hyphens), or an IPv4 address. */
const NAME = /^[a-z0-9](?:[a-z0-9.-]*[a-z0-9])?$/i;
/** An IPv6 address, with or without its brackets. */
const IPV6 = /^\[?[0-9a-f]*:[0-9a-f:.]*\]?$/i;

/**
 * Why a text is not a name `wh serve --allow-host` can add (a host name or an IP address, as a
 * Host header names it, without a port: the name is allowed with any), or undefined when it is.
 */
export function hostNameProblem(text: string): string | undefined {
  if (NAME.test(text) || IPV6.test(text)) return undefined;
  return /:\d+$/.test(text)
    ? "give the name without its port (it is allowed with any port), such as wh.example.com"
    : "not a host name or an IP address (such as wh.example.com or 10.0.0.5)";
}

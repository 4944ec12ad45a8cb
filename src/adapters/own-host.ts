import { isIP } from "node:net";

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|::1|localhost)$/;
const EVERY_ADDRESS = /^(0\.0\.0\.0|::)$/;
/** A Host header: a name or IPv4 address, or an IPv6 address in brackets; then the port, if not 80. */
const HOST_HEADER = /^(\[[0-9a-f:.]+\]|[a-z0-9.-]+)(?::(\d{1,5}))?$/i;

/** Whether a server bound to `bound` is reachable from this machine only. */
export function isLoopback(bound: string): boolean {
  return LOOPBACK.test(bound);
}

/**
 * Whether a Host header names this server. A page of another site whose name was rebound to
 * this address (DNS rebinding) sends its own name, so any other name is refused, as
 * webpack-dev-server and Vite do. Bound to loopback: 127.0.0.1, localhost, [::1] or the address
 * given; bound to every address (0.0.0.0, ::): localhost or any IP address (an address cannot be
 * rebound, and which of the machine's a browser uses is not known here); bound to one other
 * address or name: that one. Always with the server's port, but for the `allowed` names the
 * operator gave (a proxy's, a DNS name of a deliberate deployment; lowercase, IPv6 in brackets),
 * with any port: a proxy in front answers on its own.
 */
export function acceptsHost(bound: string, port: number, host: string | undefined, allowed: readonly string[] = []): boolean {
  const match = HOST_HEADER.exec(host ?? "");
  if (match === null) return false;
  const name = (match[1] as string).toLowerCase();
  if (allowed.includes(name)) return true;
  if (Number(match[2] ?? 80) !== port) return false;
  const own = bound.includes(":") ? `[${bound.toLowerCase()}]` : bound.toLowerCase();
  if (name === own) return true;
  if (isLoopback(bound)) return name === "127.0.0.1" || name === "localhost" || name === "[::1]";
  return EVERY_ADDRESS.test(bound) && (name === "localhost" || isIP(name.replace(/^\[|\]$/g, "")) !== 0);
}

/** An allowed name as a Host header names it: lowercase, an IPv6 address in brackets. */
export function hostKey(name: string): string {
  return (name.includes(":") && !name.startsWith("[") ? `[${name}]` : name).toLowerCase();
}

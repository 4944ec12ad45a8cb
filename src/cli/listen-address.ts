import { isIP } from "node:net";
import { UsageError } from "../core/errors.js";

/**
 * `--host`: the address a server listens on. An empty one is refused (Node would listen on every
 * interface); so is a dotted number that is no IPv4 address (`999.1.1.1`), which Node would
 * otherwise look up as a host name.
 */
export function parseHostFlag(value: string | undefined): string {
  if (value === undefined) return "127.0.0.1";
  if (value === "") throw new UsageError(`--host "": give an address, such as 127.0.0.1 (or 0.0.0.0 for every interface)`);
  if (!/^[\w.:%-]+$/.test(value)) throw new UsageError(`--host ${JSON.stringify(value)}: not an IP address or a host name`, { hint: /^\[.*\]$/.test(value) ? "give an IPv6 address without the brackets: --host ::1" : undefined });
  if (/^[\d.]+$/.test(value) && isIP(value) === 0) throw new UsageError(`--host ${value}: not a valid IPv4 address (four numbers from 0 to 255, such as 127.0.0.1)`);
  return value;
}

/**
 * Why a server could not listen on `host:port`, as a usage error naming the flag to change; an
 * error of another kind is thrown as it is.
 */
export function listenFailure(port: number, host: string): (error: unknown) => never {
  return (error) => {
    const reason = LISTEN_ERRORS[(error as NodeJS.ErrnoException).code ?? ""];
    if (reason === undefined) throw error;
    throw new UsageError(`${reason.flag === "--port" ? `--port ${port}` : `--host ${host}`}: ${reason.text}`, { cause: error, hint: reason.hint });
  };
}

const LISTEN_ERRORS: Record<string, { flag: "--port" | "--host"; text: string; hint?: string }> = {
  EADDRINUSE: { flag: "--port", text: "the port is in use", hint: "pick another with --port, or --port 0 for any free one" },
  EACCES: { flag: "--port", text: "permission denied", hint: "ports below 1024 need privileges: pick a higher one" },
  EADDRNOTAVAIL: { flag: "--host", text: "no network interface of this machine has that address", hint: "use 127.0.0.1 (this machine only) or 0.0.0.0 (every interface)" },
  ENOTFOUND: { flag: "--host", text: "not an IP address or a host name that resolves" },
  EAI_AGAIN: { flag: "--host", text: "the host name could not be resolved (DNS did not answer)" },
  EAI_NONAME: { flag: "--host", text: "not an IP address or a host name that resolves" },
  EAFNOSUPPORT: { flag: "--host", text: "this machine does not support that kind of address (IPv6?)" },
};

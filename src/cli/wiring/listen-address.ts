import { UsageError } from "../../core/errors.js";

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
  EADDRNOTAVAIL: {
    flag: "--host",
    text: "no network interface of this machine has that address",
    hint: "use 127.0.0.1 (this machine only) or 0.0.0.0 (every interface)",
  },
  ENOTFOUND: { flag: "--host", text: "not an IP address or a host name that resolves" },
  EAI_AGAIN: { flag: "--host", text: "the host name could not be resolved (DNS did not answer)" },
  EAI_NONAME: { flag: "--host", text: "not an IP address or a host name that resolves" },
  EAFNOSUPPORT: { flag: "--host", text: "this machine does not support that kind of address (IPv6?)" },
};

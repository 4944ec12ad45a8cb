import * as nodeTls from "node:tls";
import { isObject, requireArgument } from "../core/arguments.js";
import { Agent, type Dispatcher, EnvHttpProxyAgent } from "undici";
import type { HttpTransport, TransportResult } from "../core/deliver.js";
import { InFlightRequests } from "./in-flight-requests.js";
import { PostHandler } from "./post-handler.js";
import { ABORTED } from "./transport-errors.js";

export interface UndiciTransportOptions {
  /** Extra trusted CA certificates (PEM), added to Node's own roots. */
  ca?: readonly string[] | undefined;
  /** HTTPS_PROXY, HTTP_PROXY and NO_PROXY are read from here (default: none, no proxy). */
  env?: NodeJS.ProcessEnv | undefined;
  /** Keep the start of every answer's body, 2xx included (for --verbose); default only of the others. */
  keepEveryBody?: boolean | undefined;
  /**
   * How long a TCP connect and TLS handshake may take (default: undici's 10 s). Give it the
   * attempt's timeout: a connection still not made by then is of no use, and while it is being
   * made it keeps the agent from closing and the process from exiting.
   */
  connectTimeoutMs?: number | undefined;
}

const PROXY_VARIABLES = ["HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy"];

export interface ClosableTransport extends HttpTransport {
  close(): Promise<void>;
}

/** Certificates are always checked: set here, NODE_TLS_REJECT_UNAUTHORIZED=0 in the environment cannot turn the check off. */
type TlsOptions = { rejectUnauthorized: true; ca?: string[] };

/**
 * Posts with undici: no redirects followed, the whole response within the timeout, certificates
 * always verified. Expected failures come back as values with a code, never as throws.
 *
 * Built for replay's hot path, after profiling: `dispatch` with a handler of undici's own (the
 * interface its request() implements: no body stream), one handler object per request, and one
 * deadline sweeper and one abort listener per transport (InFlightRequests).
 */
export function createUndiciTransport(options: UndiciTransportOptions = {}): ClosableTransport {
  requireArgument(isObject(options), "options", "an object", options);
  requireArgument(
    options.ca === undefined || (Array.isArray(options.ca) && options.ca.every((pem) => typeof pem === "string")),
    "ca",
    "a list of PEM strings",
    options.ca,
  );
  const ca = options.ca === undefined || options.ca.length === 0 ? undefined : [...defaultCertificates(), ...options.ca];
  const tls: TlsOptions = { rejectUnauthorized: true, ...(ca === undefined ? {} : { ca }) };
  const connect = options.connectTimeoutMs === undefined ? tls : { ...tls, timeout: options.connectTimeoutMs };
  const env = options.env ?? {};
  const proxied = PROXY_VARIABLES.some((name) => (env[name] ?? "") !== "");
  const agent: Dispatcher = proxied ? createProxyAgent(env, tls, connect) : new Agent({ connect });
  const keepEveryBody = options.keepEveryBody === true;
  const inFlight = new InFlightRequests();
  const targets = new WeakMap<URL, { origin: string; path: string }>();
  return {
    post(url, headers, body, { signal, timeoutMs, method = "POST" }): Promise<TransportResult> {
      if (signal.aborted) return Promise.resolve(ABORTED);
      let target = targets.get(url);
      if (target === undefined) {
        target = { origin: url.origin, path: `${url.pathname}${url.search}` };
        targets.set(url, target);
      }
      const { origin, path } = target;
      return new Promise<TransportResult>((resolve) => {
        const handler = new PostHandler(resolve, inFlight, signal, timeoutMs, keepEveryBody);
        inFlight.add(handler);
        agent.dispatch({ origin, path, method, headers, body }, handler);
      });
    },
    close: () => agent.close(),
  };
}

/**
 * What Node trusts by default, to which --ca adds: a `ca` list replaces Node's own. Node 22.15 and
 * later tell it whole, NODE_EXTRA_CA_CERTS included; Node 20 has only its bundled roots, so
 * there the extra certificates are not trusted alongside --ca (as the README says).
 */
function defaultCertificates(): readonly string[] {
  const tls = nodeTls as typeof nodeTls & { getCACertificates?: (type: "default") => string[] };
  return typeof tls.getCACertificates === "function" ? tls.getCACertificates("default") : tls.rootCertificates;
}

/** HTTPS_PROXY / HTTP_PROXY / NO_PROXY as undici reads them, with the same certificate rules to the target and the proxy. */
function createProxyAgent(env: NodeJS.ProcessEnv, tls: TlsOptions, connect: TlsOptions & { timeout?: number }): Dispatcher {
  const pick = (...names: string[]): string | undefined => names.map((name) => env[name]).find((value) => value !== undefined && value !== "");
  return new EnvHttpProxyAgent({
    httpProxy: pick("HTTP_PROXY", "http_proxy"),
    httpsProxy: pick("HTTPS_PROXY", "https_proxy"),
    noProxy: pick("NO_PROXY", "no_proxy") ?? "",
    connect,
    requestTls: tls,
    proxyTls: tls,
  });
}

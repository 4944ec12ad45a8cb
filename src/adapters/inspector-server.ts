import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { isIP, type AddressInfo } from "node:net";
import { BoundedMap } from "../core/bounded-map.js";
import { parseJsonOrThrow } from "../core/message/parse-json.js";
import { INSPECTOR_PAGE } from "./inspector-page.generated.js";
import type { InspectorEntry, InspectorFailure, InspectorHello, InspectorResendBody } from "./inspector-protocol.js";

export type { InspectorEntry } from "./inspector-protocol.js";

export interface ResendRequest {
  /** Where to: absent, the URL the request came to. */
  url?: string | undefined;
  /** Sign again with the secret in effect (the original X-Signature is dropped). */
  resign: boolean;
}

export interface InspectorOptions {
  host: string;
  port?: number | undefined;
  /** Acts on an entry: resends it through the delivery engine; the result is added to the entry. */
  resend?: ((id: number, request: ResendRequest) => Promise<unknown>) | undefined;
  /** The URL a request came to, for "resend to the same URL" and "copy as curl". */
  origin: string;
}

export interface Inspector {
  /** The page's address (with its token when bound beyond loopback). */
  url: string;
  add(entry: InspectorEntry): void;
  /** Changes an entry (an answer, a delivery, a resend) and shows the change on open pages. */
  update(id: number, change: (entry: InspectorEntry) => void): void;
  close(): Promise<void>;
}

/** The most entries kept: older ones leave the page. */
const MAX_ENTRIES = 1_000;

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|::1|localhost)$/;
const EVERY_ADDRESS = /^(0\.0\.0\.0|::)$/;
/** A Host header: a name or IPv4 address, or an IPv6 address in brackets; then the port, if not 80. */
const HOST_HEADER = /^(\[[0-9a-f:.]+\]|[a-z0-9.-]+)(?::(\d{1,5}))?$/i;

/**
 * The inspector: one self-contained page (no CDN, nothing fetched from elsewhere), a server-sent
 * events stream of entries, and the resend action. It answers only requests whose Host is one of
 * its own names (see acceptsHost) and whose Origin, when sent, is one of them too. Bound to
 * loopback it needs nothing more; bound to any other address every URL carries a random token.
 * Actions take a custom header and a same-origin request, so another site open in the same
 * browser cannot trigger them.
 */
export async function startInspector(options: InspectorOptions): Promise<Inspector> {
  const token = LOOPBACK.test(options.host) ? undefined : randomBytes(18).toString("base64url");
  const entries = new BoundedMap<number, InspectorEntry>(MAX_ENTRIES);
  const streams = new Set<ServerResponse>();
  const send = (entry: InspectorEntry): void => {
    const frame = `event: entry\ndata: ${JSON.stringify(entry)}\n\n`;
    for (const stream of streams) stream.write(frame);
  };
  const server = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      if (!response.headersSent) response.writeHead(500, { "content-type": "application/json" }).end(failureJson((error as Error).message));
    });
  });
  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const url = new URL(request.url ?? "/", "http://inspector");
    if (!fromOwnSite(options.host, request)) {
      response
        .writeHead(403, { ...SECURITY_HEADERS, "content-type": "text/plain" })
        .end("wh inspector: refused: the request names another host or comes from another site (open the URL wh printed)\n");
      return;
    }
    if (token !== undefined && url.searchParams.get("token") !== token) {
      response.writeHead(403, { "content-type": "text/plain" }).end("wh inspector: the URL's token is missing or wrong (use the URL wh printed)\n");
      return;
    }
    if (request.method === "GET" && url.pathname === "/") {
      servePage(response);
      return;
    }
    if (request.method === "GET" && url.pathname === "/events") {
      response.writeHead(200, { ...SECURITY_HEADERS, "content-type": "text/event-stream", connection: "keep-alive" });
      response.write(`event: hello\ndata: ${JSON.stringify({ origin: options.origin, resend: options.resend !== undefined } satisfies InspectorHello)}\n\n`);
      for (const entry of entries.values()) response.write(`event: entry\ndata: ${JSON.stringify(entry)}\n\n`);
      streams.add(response);
      request.on("close", () => streams.delete(response));
      return;
    }
    const resend = /^\/api\/entries\/(\d+)\/resend$/.exec(url.pathname);
    if (request.method === "POST" && resend !== null) {
      await handleResend(request, response, entries.has(Number(resend[1])) ? Number(resend[1]) : undefined, options.resend);
      return;
    }
    response.writeHead(404, { "content-type": "text/plain" }).end("not found\n");
  }

  server.listen(options.port ?? 0, options.host);
  await Promise.race([once(server, "listening"), once(server, "error").then(([error]) => Promise.reject(error))]);
  const { port } = server.address() as AddressInfo;
  const host = options.host.includes(":") ? `[${options.host}]` : options.host;
  return {
    url: `http://${host}:${port}/${token === undefined ? "" : `?token=${token}`}`,
    add(entry) {
      entries.set(entry.id, entry);
      send(entry);
    },
    update(id, change) {
      const entry = entries.get(id);
      if (entry === undefined) return;
      change(entry);
      send(entry);
    },
    async close() {
      for (const stream of streams) stream.end();
      const closed = new Promise((resolve) => server.close(resolve));
      server.closeAllConnections();
      await closed;
    },
  };
}

const SECURITY_HEADERS = {
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "cache-control": "no-store",
};

/** The page, allowed to run only its own script and style: a fresh nonce for each load. */
function servePage(response: ServerResponse): void {
  const nonce = randomBytes(16).toString("base64");
  const policy = `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'nonce-${nonce}'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`;
  response
    .writeHead(200, { ...SECURITY_HEADERS, "content-security-policy": policy, "content-type": "text/html; charset=utf-8" })
    .end(INSPECTOR_PAGE.replaceAll("__NONCE__", nonce));
}

/** POST /api/entries/<id>/resend, from the page only (it sends X-WH-Inspector); `id` is undefined when no such entry is kept. */
async function handleResend(request: IncomingMessage, response: ServerResponse, id: number | undefined, resend: InspectorOptions["resend"]): Promise<void> {
  if (request.headers["x-wh-inspector"] !== "1") {
    response.writeHead(403, { "content-type": "application/json" }).end(failureJson("not from the inspector page"));
    return;
  }
  const body = parseJsonOrThrow((await readAll(request)) || "{}") as { [K in keyof InspectorResendBody]?: unknown };
  if (id === undefined || resend === undefined) {
    response.writeHead(404, { "content-type": "application/json" }).end(failureJson("no such request"));
    return;
  }
  const result = await resend(id, { url: typeof body.url === "string" && body.url !== "" ? body.url : undefined, resign: body.resign === true });
  response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(result));
}

/** Whether a request names this inspector as its Host and, if it says where it comes from, comes from its page. */
function fromOwnSite(bound: string, request: IncomingMessage): boolean {
  const port = request.socket.localPort ?? 0;
  const origin = request.headers.origin;
  return acceptsHost(bound, port, request.headers.host) && (origin === undefined || acceptsOrigin(bound, port, origin));
}

/**
 * Whether a Host header names this inspector. A page of another site whose name was rebound to
 * this address (DNS rebinding) sends its own name, so any other name is refused, as
 * webpack-dev-server and Vite do. Bound to loopback: 127.0.0.1, localhost, [::1] or the address
 * given; bound to every address (0.0.0.0, ::): localhost or any IP address (an address cannot be
 * rebound, and which of the machine's a browser uses is not known here); bound to one other
 * address or name: that one. Always with the inspector's port.
 */
function acceptsHost(bound: string, port: number, host: string | undefined): boolean {
  const match = HOST_HEADER.exec(host ?? "");
  if (match === null || Number(match[2] ?? 80) !== port) return false;
  const name = (match[1] as string).toLowerCase();
  const own = bound.includes(":") ? `[${bound.toLowerCase()}]` : bound.toLowerCase();
  if (name === own) return true;
  if (LOOPBACK.test(bound)) return name === "127.0.0.1" || name === "localhost" || name === "[::1]";
  return EVERY_ADDRESS.test(bound) && (name === "localhost" || isIP(name.replace(/^\[|\]$/g, "")) !== 0);
}

/** Whether an Origin header is a page of this inspector: http, and a Host it accepts. */
function acceptsOrigin(bound: string, port: number, origin: string): boolean {
  if (!URL.canParse(origin)) return false;
  const url = new URL(origin);
  return url.protocol === "http:" && acceptsHost(bound, port, url.host);
}

/** An action's failure, as the page reads it. */
function failureJson(error: string): string {
  return JSON.stringify({ error } satisfies InspectorFailure);
}

async function readAll(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { BoundedMap } from "../../core/bounded-map.js";
import { isJsonObject, parseJsonOrThrow } from "../../core/message/parse-json.js";
import { INSPECTOR_PAGE } from "./page.generated.js";
import { acceptsHost, isLoopback } from "../own-host.js";
import type { InspectorCleared, InspectorEntry, InspectorFailure, InspectorHello, InspectorMissed, InspectorRetried } from "./protocol.js";

export type { InspectorEntry } from "./protocol.js";

export interface ResendRequest {
  /** Where to: absent, the URL the request came to. */
  url?: string | undefined;
  /** Sign again with the secret in effect (the original X-Signature is dropped). */
  resign: boolean;
  /** An edited body to send instead of the one received, byte for byte as UTF-8 (always with `resign`). */
  body?: string | undefined;
}

export interface InspectorOptions {
  host: string;
  port?: number | undefined;
  /** Acts on an entry: resends it through the delivery engine; the result is added to the entry. */
  resend?: ((id: number, request: ResendRequest) => Promise<unknown>) | undefined;
  /** The URL a request came to, for "resend to the same URL" and "copy as curl". */
  origin: string;
  /** Retries the deliveries waiting to (wh serve): the page's "retry now"; answers how many. */
  retryNow?: (() => number) | undefined;
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

/**
 * The inspector: one self-contained page (no CDN, nothing fetched from elsewhere), a server-sent
 * events stream of entries, and the resend action. It answers only requests whose Host is one of
 * its own names (see acceptsHost) and whose Origin, when sent, is one of them too. Bound to
 * loopback it needs nothing more; bound to any other address every URL carries a random token.
 * Actions take a custom header and a same-origin request, so another site open in the same
 * browser cannot trigger them.
 */
export async function startInspector(options: InspectorOptions): Promise<Inspector> {
  const inspector = new InspectorServer(options);
  await inspector.listen();
  return inspector;
}

class InspectorServer implements Inspector {
  url = "";
  /** Bound beyond loopback, every URL carries it. */
  private readonly token: string | undefined;
  private readonly entries = new BoundedMap<number, InspectorEntry>(MAX_ENTRIES);
  private readonly streams = new Set<PageStream>();
  private readonly server = createServer((request, response) => {
    this.handle(request, response).catch((error: unknown) => {
      if (!response.headersSent) response.writeHead(500, { "content-type": "application/json" }).end(JSON.stringify(failure((error as Error).message)));
    });
  });

  constructor(private readonly options: InspectorOptions) {
    this.token = isLoopback(options.host) ? undefined : randomBytes(18).toString("base64url");
  }

  async listen(): Promise<void> {
    this.server.listen(this.options.port ?? 0, this.options.host);
    await Promise.race([once(this.server, "listening"), once(this.server, "error").then(([error]) => Promise.reject(error))]);
    const { port } = this.server.address() as AddressInfo;
    const host = this.options.host.includes(":") ? `[${this.options.host}]` : this.options.host;
    this.url = `http://${host}:${port}/${this.token === undefined ? "" : `?token=${this.token}`}`;
  }

  add(entry: InspectorEntry): void {
    this.entries.set(entry.id, entry);
    for (const stream of this.streams) stream.entry(entry, true);
  }

  update(id: number, change: (entry: InspectorEntry) => void): void {
    const entry = this.entries.get(id);
    if (entry === undefined) return;
    change(entry);
    for (const stream of this.streams) stream.entry(entry, false);
  }

  async close(): Promise<void> {
    for (const stream of this.streams) stream.response.end();
    const closed = new Promise((resolve) => this.server.close(resolve));
    this.server.closeAllConnections();
    await closed;
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const url = new URL(request.url ?? "/", "http://inspector");
    if (!fromOwnSite(this.options.host, request)) {
      response
        .writeHead(403, { ...SECURITY_HEADERS, "content-type": "text/plain" })
        .end("wh inspector: refused: the request names another host or comes from another site (open the URL wh printed)\n");
      return;
    }
    if (this.token !== undefined && url.searchParams.get("token") !== this.token) {
      response.writeHead(403, { "content-type": "text/plain" }).end("wh inspector: the URL's token is missing or wrong (use the URL wh printed)\n");
      return;
    }
    if (request.method === "GET" && url.pathname === "/") servePage(response);
    else if (request.method === "GET" && url.pathname === "/events") this.follow(request, response);
    else if (request.method === "POST" && url.pathname.startsWith("/api/")) {
      const [status, answer] = await this.action(request, url.pathname);
      response.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(answer));
    } else response.writeHead(404, { "content-type": "text/plain" }).end("not found\n");
  }

  /** The event stream: the hello, every entry kept, then each entry as it is added or changed. */
  private follow(request: IncomingMessage, response: ServerResponse): void {
    response.writeHead(200, { ...SECURITY_HEADERS, "content-type": "text/event-stream", connection: "keep-alive" });
    const hello: InspectorHello = { origin: this.options.origin, resend: this.options.resend !== undefined, retryNow: this.options.retryNow !== undefined };
    response.write(`event: hello\ndata: ${JSON.stringify(hello)}\n\n`);
    const stream = new PageStream(response, this.entries);
    // Each kept entry is new to this page: one it has not read when it is forgotten is missed.
    for (const entry of this.entries.values()) stream.entry(entry, true);
    this.streams.add(stream);
    request.on("close", () => this.streams.delete(stream));
  }

  /** An action the page asks for: resend an entry, clear the list, retry now. Only from the page itself (it sends X-WH-Inspector). */
  private async action(request: IncomingMessage, path: string): Promise<[number, unknown]> {
    // A form or a script of another site cannot send a custom header without the browser asking first (and the inspector never says yes).
    if (request.headers["x-wh-inspector"] !== "1") return [403, failure("not from the inspector page")];
    const text = (await readAll(request)) || "{}";
    let body: unknown;
    try {
      body = parseJsonOrThrow(text);
    } catch (error) {
      return [400, failure(`the request's body is not JSON: ${(error as Error).message}`)];
    }
    const resend = /^\/api\/entries\/(\d+)\/resend$/.exec(path);
    if (resend !== null) return this.resend(Number(resend[1]), body);
    if (path === "/api/clear") {
      const cleared = this.entries.size;
      this.entries.clear();
      for (const stream of this.streams) stream.cleared();
      return [200, { cleared } satisfies InspectorCleared];
    }
    if (path === "/api/retry-now" && this.options.retryNow !== undefined) return [200, { retried: this.options.retryNow() } satisfies InspectorRetried];
    return [404, failure("no such action")];
  }

  private async resend(id: number, body: unknown): Promise<[number, unknown]> {
    const entry = this.entries.get(id);
    if (entry === undefined || this.options.resend === undefined) return [404, failure("no such request (cleared, or no longer kept)")];
    const asked = resendOf(body, entry);
    return typeof asked === "string" ? [400, failure(asked)] : [200, await this.options.resend(entry.id, asked)];
  }
}

const entryFrame = (entry: InspectorEntry): string => `event: entry\ndata: ${JSON.stringify(entry)}\n\n`;

/**
 * One page's event stream, written only as fast as the page reads. A page that stops reading (a
 * background tab, a sleeping laptop) would otherwise have every entry buffered for it without
 * end: ~0.9 KB a request, 169 MB after 60,000. Once a write fills the socket's buffer, what
 * changes waits as entry ids (the newest state is read from the kept entries when the page reads
 * again, so an entry changed ten times is sent once); when the buffer drains, the page is told
 * how many requests it missed (added, then gone from the kept MAX_ENTRIES before it read) and
 * sent what is still kept. Bounded: at most 2 * MAX_ENTRIES ids wait.
 */
class PageStream {
  /** While the page is behind: the ids changed since, in order, each true when added meanwhile (never sent). */
  private waiting: Map<number, boolean> | undefined;
  /** Requests added while behind and forgotten before the page read them. */
  private missed = 0;

  constructor(
    readonly response: ServerResponse,
    private readonly kept: ReadonlyMap<number, InspectorEntry>,
  ) {
    response.on("drain", () => this.catchUp());
  }

  entry(entry: InspectorEntry, added: boolean): void {
    if (this.waiting === undefined) {
      if (!this.response.write(entryFrame(entry))) this.waiting = new Map();
      return;
    }
    this.waiting.set(entry.id, this.waiting.get(entry.id) ?? added);
    if (this.waiting.size > 2 * MAX_ENTRIES) this.forgetGone();
  }

  /** The list was cleared: nothing waiting matters any more, and the page must clear its own. */
  cleared(): void {
    this.waiting?.clear();
    this.missed = 0;
    this.response.write("event: clear\ndata: {}\n\n");
  }

  private forgetGone(): void {
    for (const [id, added] of this.waiting ?? []) {
      if (this.kept.has(id)) continue;
      this.waiting?.delete(id);
      if (added) this.missed += 1;
    }
  }

  private catchUp(): void {
    this.forgetGone();
    const waiting = this.waiting;
    if (waiting === undefined) return;
    this.waiting = undefined;
    if (this.missed > 0) this.response.write(`event: missed\ndata: ${JSON.stringify({ missed: this.missed } satisfies InspectorMissed)}\n\n`);
    this.missed = 0;
    for (const id of waiting.keys()) this.response.write(entryFrame(this.kept.get(id) as InspectorEntry));
    if (this.response.writableNeedDrain) this.waiting = new Map();
  }
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

/**
 * What a resend asks for (InspectorResendBody), or why it cannot be done. An edited body is sent
 * only re-signed: sent "as it came" it would carry the X-Signature of other bytes.
 */
function resendOf(body: unknown, entry: InspectorEntry): ResendRequest | string {
  const fields = isJsonObject(body) ? body : {};
  if (fields.body !== undefined && typeof fields.body !== "string") return "body: expected the text to send";
  if (fields.url !== undefined && typeof fields.url !== "string") return "url: expected a URL or an empty string";
  const edited = typeof fields.body === "string" && fields.body !== entry.body ? fields.body : undefined;
  const resign = fields.resign === true;
  if (edited !== undefined && !resign) return "an edited body cannot be sent as it came: its X-Signature is of the bytes received; re-sign it (resign: true)";
  return { url: fields.url === "" ? undefined : fields.url, resign, body: edited };
}

/** Whether a request names this inspector as its Host and, if it says where it comes from, comes from its page. */
function fromOwnSite(bound: string, request: IncomingMessage): boolean {
  const port = request.socket.localPort ?? 0;
  const origin = request.headers.origin;
  return acceptsHost(bound, port, request.headers.host) && (origin === undefined || acceptsOrigin(bound, port, origin));
}

/** Whether an Origin header is a page of this inspector: http, and a Host it accepts. */
function acceptsOrigin(bound: string, port: number, origin: string): boolean {
  if (!URL.canParse(origin)) return false;
  const url = new URL(origin);
  return url.protocol === "http:" && acceptsHost(bound, port, url.host);
}

/** An action's failure, as the page reads it. */
function failure(error: string): InspectorFailure {
  return { error };
}

async function readAll(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

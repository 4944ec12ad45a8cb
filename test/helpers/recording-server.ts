import { once } from "node:events";
import { createServer as createHttpServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import { afterEach, beforeEach } from "vitest";
import { createServer as createNetServer, type AddressInfo, type Socket } from "node:net";

export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  /** The raw body bytes as they arrived. */
  body: Buffer;
  at: number;
}

/** What to do with one request: answer a status (with headers), hang, or reset the connection. */
export type Reply = number | { status: number; headers?: Record<string, string>; delayMs?: number; body?: string } | "hang" | "reset";

export interface RecordingServer {
  url: string;
  port: number;
  requests: RecordedRequest[];
  /** How many connections clients have opened to it. */
  readonly connections: number;
  close(): Promise<void>;
}

export interface RecordingServerOptions {
  /** Replies in order; the last one repeats. Or a function of the request. Default 200. */
  replies?: Reply[] | ((request: RecordedRequest, index: number) => Reply);
  /** Serve HTTPS with this key and certificate (PEM). */
  tls?: { key: string | Buffer; cert: string | Buffer };
}

/** A real node:http(s) server on 127.0.0.1 that records method, headers and raw body bytes. */
export async function startRecordingServer(options: RecordingServerOptions = {}): Promise<RecordingServer> {
  const requests: RecordedRequest[] = [];
  const handler = (request: IncomingMessage, response: ServerResponse): void => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      const recorded: RecordedRequest = {
        method: request.method ?? "",
        path: request.url ?? "",
        headers: request.headers,
        body: Buffer.concat(chunks),
        at: Date.now(),
      };
      const index = requests.push(recorded) - 1;
      const replies = options.replies ?? [200];
      const reply = typeof replies === "function" ? replies(recorded, index) : (replies[Math.min(index, replies.length - 1)] ?? 200);
      if (reply === "hang") return;
      if (reply === "reset") {
        request.socket.destroy();
        return;
      }
      const { status, headers = {}, delayMs = 0, body = "" } = typeof reply === "number" ? { status: reply } : reply;
      const send = (): void => {
        if (!response.destroyed) response.writeHead(status, headers).end(body);
      };
      if (delayMs > 0) setTimeout(send, delayMs);
      else send();
    });
  };
  const server: Server = options.tls === undefined ? createHttpServer(handler) : createHttpsServer(options.tls, handler);
  let connections = 0;
  server.on(options.tls === undefined ? "connection" : "secureConnection", () => (connections += 1));
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  return {
    url: `${options.tls === undefined ? "http" : "https"}://127.0.0.1:${port}/hook`,
    port,
    requests,
    get connections() {
      return connections;
    },
    async close() {
      const closed = new Promise((resolve) => server.close(resolve));
      server.closeAllConnections();
      await closed;
    },
  };
}

/**
 * Registers an afterEach that closes every server the returned function started: call it at
 * the top of a test file (or describe block) and start servers with it in the tests.
 */
export function closedAfterEach(): (options?: RecordingServerOptions) => Promise<RecordingServer> {
  const servers: RecordingServer[] = [];
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((server) => server.close()));
  });
  return async (options = {}) => {
    const server = await startRecordingServer(options);
    servers.push(server);
    return server;
  };
}

/** A fresh recording server before each test (handed to `use`), closed after it. */
export function serverForEachTest(use: (server: RecordingServer) => void): void {
  let current: RecordingServer | undefined;
  beforeEach(async () => {
    current = await startRecordingServer();
    use(current);
  });
  afterEach(async () => {
    await current?.close();
  });
}

/** A TCP server on 127.0.0.1 that accepts connections and never answers (a TLS handshake to it never finishes). */
export async function startSilentServer(): Promise<{ port: number; close(): void }> {
  const sockets = new Set<Socket>();
  const server = createNetServer((socket) => {
    sockets.add(socket);
    socket.resume();
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return {
    port: (server.address() as AddressInfo).port,
    close() {
      for (const socket of sockets) socket.destroy();
      server.close();
    },
  };
}

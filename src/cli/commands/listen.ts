import { resolve } from "node:path";
import { once } from "node:events";
import { BoundedMap } from "../../core/bounded-map.js";
import { startInspector, type Inspector, type InspectorEntry, type ResendRequest } from "../../adapters/inspector/server.js";
import { startReceiver, type ForwardResult, type ReceivedRequest } from "../../adapters/listen-server.js";
import { redactHeaders, redactRequestTarget, redactUrlText } from "../../core/redact.js";
import { resendRequest } from "../../engine/resend.js";
import { secretFromFlagsOrEnv } from "../../config/secret.js";
import { compileRouting, type ListenRouting, requireHttpUrl } from "../../core/listen-routes.js";
import type { Untrusted } from "../../core/untrusted.js";
import { BATCH_VERDICT } from "../../core/sign.js";
import type { FlagValues } from "../flags/spec.js";
import type { listenFlags } from "../flags/server-tables.js";
import type { CliIo, GlobalFlags } from "../wiring/io.js";
import { listenFailure } from "../wiring/listen-address.js";
import { earlierEntries, eventColumns } from "../wiring/listen-earlier.js";
import { Output, summarizeMessage } from "../output/render.js";
import type { SigningScheme } from "../../core/standard-webhooks.js";

type ListenFlags = FlagValues<typeof listenFlags>;

/** `wh listen`: a local receiver that verifies each request and prints it, until Ctrl-C. */
export async function runListen(flags: ListenFlags, globals: GlobalFlags, io: CliIo): Promise<number> {
  const { port = 0, host, status } = flags;
  const secret = (await secretFromFlagsOrEnv(flags, io.env, io.cwd))?.value;
  const routing = await listenRouting(flags);
  const output = new Output(io, globals);
  let filteredOut = 0;
  const out = flags.out === undefined ? undefined : resolve(io.cwd, flags.out);
  // Read before the receiver appends to the file: the page shows them first, numbered before this run's.
  const earlier = flags.ui === true && out !== undefined ? await earlierEntries(out, secret, routing.filter) : [];
  // The requests the page can act on, by the page's id (as many as the page keeps).
  const kept = new BoundedMap<number, ReceivedRequest>(1_000);
  let inspector: Inspector | undefined;
  const receiver = await startReceiver({
    host,
    port,
    secret,
    scheme: flags.scheme,
    toleranceSeconds: flags.tolerance / 1000,
    status,
    out,
    ...routing,
    onRequest: (request) => {
      if (request.filtered) {
        filteredOut += 1;
        return;
      }
      printRequest(output, request);
      if (inspector === undefined) return;
      const id = request.id + earlier.length;
      kept.set(id, request);
      inspector.add({ ...requestEntry(request), id });
    },
  }).catch(listenFailure(port, host));
  if (flags.ui === true) {
    inspector = await startInspector({
      host,
      origin: receiver.url,
      resend: (id, request) => {
        if (id <= earlier.length)
          return Promise.resolve({ error: `captured before this wh listen started: wh replay ${flags.out} --message-id ID sends it again` });
        return resendKept(id, kept.get(id), request, { secret, scheme: flags.scheme, origin: receiver.url, env: io.env, inspector, output });
      },
    }).catch(listenFailure(0, host));
    for (const entry of earlier) inspector.add(entry);
  }
  output.log(
    `listening on ${receiver.url} (${secret === undefined ? "signatures not checked: no secret" : `checking ${flags.scheme === "standard" ? "Standard Webhooks signatures" : "X-Signature"}`}; ${answering(routing, status)}${flags.out === undefined ? "" : `; capturing to ${flags.out}`})`,
  );
  if (inspector !== undefined)
    output.log(`inspector: ${inspector.url}${earlier.length === 0 ? "" : ` (with the last ${earlier.length} requests of ${flags.out}, marked earlier)`}`);
  output.log("press Ctrl-C to stop");
  output.record({ listening: receiver.url, port: receiver.port, ...(inspector === undefined ? {} : { inspector: inspector.url }) });
  // Ctrl-C, or a capture file that cannot be written any more (exit 74, naming it).
  const failure = io.signal.aborted ? undefined : await Promise.race([once(io.signal, "abort").then(() => undefined), receiver.captureStopped]);
  await inspector?.close();
  await receiver.close();
  if (failure !== undefined) throw failure;
  output.log(
    routing.filter === undefined
      ? "stopped"
      : `stopped (${filteredOut} request${filteredOut === 1 ? "" : "s"} not matching --filter: answered${flags.out === undefined ? "" : " and captured"}, not shown)`,
  );
  return 0;
}

/** The page's resend of a request this run received: sent through the delivery engine, the outcome added to its entry and logged. */
async function resendKept(
  id: number,
  original: ReceivedRequest | undefined,
  request: ResendRequest,
  {
    secret,
    scheme,
    origin,
    env,
    inspector,
    output,
  }: { secret: string | undefined; scheme: SigningScheme | undefined; origin: string; env: CliIo["env"]; inspector: Inspector | undefined; output: Output },
): Promise<unknown> {
  if (original === undefined) return { error: "that request is no longer kept" };
  if (request.resign && secret === undefined) return { error: "no secret to sign with: start wh listen with --secret-file or WH_SHARED_SECRET" };
  const result = await resendRequest(
    request.body === undefined ? original : { ...original, body: Buffer.from(request.body) },
    { url: request.url ?? new URL(original.path.unsafeRaw(), origin).href, resignWith: request.resign ? secret : undefined, scheme },
    env,
  ).catch((error: Error) => ({
    text: `resend failed: ${error.message}`,
    outcome: "failed" as const,
  }));
  inspector?.update(id, (entry) => entry.resends.push({ text: result.text, outcome: result.outcome }));
  output.log(`${result.outcome === "delivered" ? output.err.green("↻") : output.err.red("↻")} request ${id}: ${result.text}`);
  return { text: result.text, outcome: result.outcome };
}

/**
 * --forward-to, --filter and --route as the receiver takes them. Segment's FQL engine is loaded
 * only for a --filter or a --route: a plain wh listen never pays for it.
 */
async function listenRouting(flags: ListenFlags): Promise<ListenRouting> {
  const forwardTo = flags.forwardTo === undefined ? undefined : requireHttpUrl(flags.forwardTo, "--forward-to");
  const routes = flags.route ?? [];
  if (flags.filter === undefined && routes.length === 0) return { routes: [], forwardTo };
  const { loadFqlEngine } = await import("../../adapters/segment-engines.js");
  return compileRouting({ filter: flags.filter, routes, forwardTo }, loadFqlEngine());
}

/** What the start line says listen does with a request that passes: forwards it (where), or answers it. */
function answering(routing: ListenRouting, status: number): string {
  const rest = routing.forwardTo === undefined ? `answering ${status}` : `forwarding to ${redactUrlText(routing.forwardTo)}`;
  const routes = routing.routes.map((route) => `${route.fql} => ${redactUrlText(route.url)}`);
  const filtered = routing.filter === undefined ? "" : "only --filter's events; ";
  return routes.length === 0 ? `${filtered}${rest}` : `${filtered}routing ${routes.join(", ")}; the rest: ${rest}`;
}

/** What the inspector page shows of a received request. */
function requestEntry(request: ReceivedRequest): InspectorEntry {
  return {
    id: request.id,
    kind: "request",
    receivedAt: request.receivedAt.toISOString(),
    method: request.method,
    // The page shows it as text, never as markup.
    path: shownPath(request).unsafeRaw(),
    ...eventColumns(request.json),
    size: request.body.length,
    verdict: request.signature,
    reason: request.reason,
    headers: redactHeaders(request.headers),
    body: request.body.toString("utf8"),
    status: request.status,
    answer: request.answer,
    forwarded: shownForward(request.forwarded),
    durationMs: request.forwarded?.durationMs,
    resends: [],
  };
}

/** One line per request: what it was, whether its signature held, and the answer. */
export function printRequest(output: Output, request: ReceivedRequest): void {
  const path = shownPath(request);
  output.record({
    receivedAt: request.receivedAt.toISOString(),
    method: request.method,
    path,
    signature: request.signature,
    ...(request.reason === undefined ? {} : { reason: request.reason }),
    status: request.status,
    captured: request.captured,
    ...(request.captureError === undefined ? {} : { captureError: request.captureError }),
    ...(request.forwarded === undefined ? {} : { forwarded: shownForward(request.forwarded) }),
    ...(request.unrouted ? { unrouted: true } : {}),
    body: request.json ?? request.body.toString("utf8"),
  });
  const c = output.out;
  const mark = request.status < 300 ? c.green("✔") : c.red("✖");
  const signature =
    request.signature === "valid"
      ? c.green("signature verified")
      : request.signature === "valid-batch"
        ? c.green(`signature verified: ${BATCH_VERDICT}`)
        : request.signature === "unchecked"
          ? c.dim("signature not checked")
          : c.red(`signature ${request.signature}${request.reason === undefined ? "" : `: ${request.reason}`}`);
  const forwarded =
    request.forwarded === undefined
      ? ""
      : "error" in request.forwarded
        ? ` → ${c.red(`app unreachable: ${request.forwarded.error}`)}`
        : ` → ${request.forwarded.url} answered ${request.forwarded.status} (${request.forwarded.durationMs} ms)`;
  const unrouted = request.unrouted ? ` → ${c.yellow("not forwarded: matched no --route")}` : "";
  const notCaptured = request.captureError === undefined ? "" : ` — ${c.red(`not captured: ${request.captureError}`)}`;
  output.result(`${mark} ${request.status} ${request.method} ${path} ${summarizeMessage(request.json)} — ${signature}${forwarded}${unrouted}${notCaptured}`);
}

/** A request's path as output and the page show it: secret-looking query values masked. */
function shownPath(request: ReceivedRequest): Untrusted {
  return request.path.map(redactRequestTarget);
}

/** What the app answered, as output and the page show it: credentials in its headers (Set-Cookie) masked. */
function shownForward(forwarded: ForwardResult | undefined): ForwardResult | undefined {
  return forwarded === undefined || "error" in forwarded ? forwarded : { ...forwarded, headers: redactHeaders(forwarded.headers) };
}

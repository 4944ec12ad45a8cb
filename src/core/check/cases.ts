import { actionsBatch } from "../batch.js";
import { type DestinationMode, type MessageStamps, prepareMessage, type PreparedMessage } from "../message/prepare.js";
import { MESSAGE_TYPES, type MessageType } from "../message/types.js";
import { REPARSED, WHOLE_BATCH } from "./advice.js";
import { type CaseName, CASE_NAMES } from "./case-names.js";
import { otherSecret, signatureHeaders, signed, type SigningSettings, type Tampering, tamperedRequest } from "./signing.js";
import { escapeLikeOtherEncoders, FULL_CONTEXT_SAMPLE, LARGE_EVENT_BYTES, largeSample, TYPE_SAMPLES, UNICODE_SAMPLE } from "./samples.js";

/**
 * The battery of `wh check`, as data: each case says what it sends, what passes, and whether a
 * failure fails the check (required) or only warns (advisory). docs/check.md's table lists them.
 */

export type Expectation = "accept" | "refuse";

/** What the cases are built with: the scheme, secret (absent: nothing signed, the signature cases skipped) and time they sign with, and: */
export interface CheckSettings extends SigningSettings {
  mode: DestinationMode;
  /** Events in the Actions batch. */
  batchSize: number;
  /** Requests of the burst in flight at once. */
  concurrency: number;
  stamps: MessageStamps;
}

/** One request of a case: the exact bytes and headers. */
export interface CheckRequest {
  body: string;
  headers: Record<string, string>;
  /** A subscription's mapped method; absent, POST. */
  method?: "POST" | "PUT" | "PATCH" | undefined;
}

export interface CaseDefinition {
  readonly name: string;
  readonly required: boolean;
  /** accept: 2xx within the time allowed; refuse: a 4xx. */
  readonly expect: Expectation;
  /** For docs/check.md and --dry-run: what is sent, what passes. */
  readonly sends: string;
  readonly passes: string;
  /** What it means when a receiver accepts a request it must refuse. */
  readonly acceptedMeans?: string;
  /** About signatures: skipped without a secret, since nothing is signed then. */
  readonly aboutSignatures?: boolean;
  /** Sent after the others, by itself: it measures latency under its own load. */
  readonly alone?: boolean;
}

/**
 * A request sent only when a case's first request is refused with a 4xx: the same content signed
 * another way. Accepted, it shows what the receiver verifies instead of Segment's signature.
 */
export interface Probe {
  readonly request: CheckRequest;
  /** What it is, for --dry-run. */
  readonly sends: string;
  /** Why the case failed or warned, when it is accepted: follows "refused the exact bytes (HTTP 401) but accepted". */
  readonly acceptedMeans: string;
}

/** A case made ready: its requests, or why it is not sent. */
export interface BuiltCase {
  readonly definition: CaseDefinition;
  readonly requests: readonly CheckRequest[];
  /** How many of the requests may be in flight at once; absent, one after the other. Its p99 is reported. */
  readonly concurrency?: number | undefined;
  /** What the developer should look at on their side, whatever the answers. */
  readonly note?: string | undefined;
  readonly messageIds: readonly string[];
  readonly skip?: string | undefined;
  readonly probe?: Probe | undefined;
}

type Builder = (settings: CheckSettings) => Omit<BuiltCase, "definition">;

/** What an event Segment sends must get: the destination's timeout is destinationTimeoutMs. */
const IN_TIME = "2xx within 5 s (10 s in actions mode)";

/** Requests in the burst: enough for a p99 that means something, few enough to stay short. */
const BURST_SIZE = 20;

const NO_SECRET = "no shared secret given (--secret-file, --secret or WH_SHARED_SECRET): the signature cases need one";

function typeCase(type: MessageType): Definition {
  const special = type === "alias" ? " with the literal keys `Previous ID` and `User ID`" : type === "delete" ? " with only type, userId and timestamp" : "";
  return {
    required: true,
    expect: "accept",
    sends: `a signed ${type}${special}, in the mode's shape`,
    passes: IN_TIME,
    build: (settings) => {
      const message = typeMessage(type, settings);
      if (!message.enabled) return { requests: [], messageIds: [], skip: message.skipReason ?? "not sent in this mode" };
      return { requests: [signed(message.body, settings)], messageIds: ids(message) };
    },
  };
}

/** The sample track, freshly stamped: what the signature, retry and burst cases send. */
function trackBody(settings: CheckSettings): PreparedMessage {
  return prepare(TYPE_SAMPLES.track, settings);
}

type Definition = Omit<CaseDefinition, "name"> & { build: Builder };

/** Keyed by name: the compiler holds every name of CASE_NAMES to exactly one definition. */
const DEFINITIONS: Readonly<Record<CaseName, Definition>> = {
  ...(Object.fromEntries(MESSAGE_TYPES.map((type) => [type, typeCase(type)])) as Record<MessageType, Definition>),
  "signature-wrong": {
    required: true,
    expect: "refuse",
    sends: "a track signed with another secret",
    passes: "a 4xx",
    acceptedMeans: "accepted a request signed with another secret: your receiver does not verify signatures",
    aboutSignatures: true,
    build: (settings) => tampered(settings, (body, sign, secret) => ({ body, headers: sign(otherSecret(settings, secret), body) })),
  },
  "signature-missing": {
    required: true,
    expect: "refuse",
    sends: "a track without X-Signature",
    passes: "a 4xx",
    acceptedMeans: "accepted a request without X-Signature: your receiver lets unsigned requests through",
    aboutSignatures: true,
    build: (settings) => tampered(settings, (body) => ({ body, headers: {} })),
  },
  "signature-reserialized": {
    required: true,
    expect: "refuse",
    sends: "a track whose X-Signature was computed over the same JSON re-serialised (other spacing): equal JSON, other bytes",
    passes: "a 4xx",
    acceptedMeans:
      "accepted a body whose X-Signature was computed over different bytes (the same JSON, spaced otherwise): your receiver does not verify the exact bytes it received",
    aboutSignatures: true,
    build: (settings) => tampered(settings, (body, sign, secret) => ({ body, headers: sign(secret, JSON.stringify(JSON.parse(body), null, 2)) })),
  },
  "signature-body-changed": {
    required: true,
    expect: "refuse",
    sends: "a track with a valid X-Signature of its body, and then the body changed (total 99.5 became 9950)",
    passes: "a 4xx",
    acceptedMeans: "accepted a body changed after it was signed: your receiver does not compare the signature with the body it received",
    aboutSignatures: true,
    build: (settings) => tampered(settings, (body, sign, secret) => ({ body: body.replace('"total":99.5', '"total":9950'), headers: sign(secret, body) })),
  },
  "signature-replayed": {
    required: true,
    expect: "refuse",
    sends: "scheme standard: a track signed 10 minutes ago (webhook-timestamp past the usual 5-minute tolerance), as a replay comes",
    passes: "a 4xx",
    acceptedMeans: "accepted a request signed 10 minutes ago: your receiver does not hold webhook-timestamp to a tolerance, so requests can be replayed",
    aboutSignatures: true,
    build: (settings) =>
      settings.scheme === "standard"
        ? tampered(settings, (body, _sign, secret) => ({ body, headers: signatureHeaders(settings, secret, body, body, settings.nowMs - 600_000) }))
        : { requests: [], messageIds: [], skip: "Segment's X-Signature carries no timestamp (--scheme standard signs one)" },
  },
  // Segment's bodies are JSON.stringify's bytes (action-destinations' webhook signs
  // JSON.stringify(payload.data)): the required case sends those, and other encoders' escapes are
  // an advisory, which a receiver verifying JSON.stringify(req.body) passes only with Segment.
  unicode: {
    required: true,
    expect: "accept",
    sends: "a signed track with accents, CJK, an emoji, a URL and markup, in the bytes Segment writes (JSON.stringify's: UTF-8, no escapes)",
    passes: IN_TIME,
    build: (settings) => {
      const message = prepare(UNICODE_SAMPLE, settings);
      return { requests: [signed(message.body, settings)], messageIds: ids(message) };
    },
  },
  "unicode-escaped": {
    required: false,
    expect: "accept",
    sends: "the same track with the escapes other encoders write and Segment never does (`\\/`, `\\u00e9`, `\\u003c`), signed over those exact bytes",
    passes: `${IN_TIME}: a receiver that verifies the raw bytes accepts any body signed over them`,
    aboutSignatures: true,
    build: (settings) => {
      const message = prepare(UNICODE_SAMPLE, settings);
      const probe = { request: signed(message.body, settings), sends: "the same event as JSON.stringify writes it", acceptedMeans: REPARSED };
      return { requests: [signed(escapeLikeOtherEncoders(message.body), settings)], messageIds: ids(message), probe };
    },
  },
  "large-event": {
    required: true,
    expect: "accept",
    sends: `a signed track of ${LARGE_EVENT_BYTES.toLocaleString("en")} bytes, just under the 32 KB limit`,
    passes: IN_TIME,
    build: (settings) => {
      const short = prepare(largeSample(0), settings).body.length;
      const message = prepare(largeSample(LARGE_EVENT_BYTES - short), settings);
      return { requests: [signed(message.body, settings)], messageIds: ids(message) };
    },
  },
  "full-context": {
    required: true,
    expect: "accept",
    sends: "a signed track as Segment holds it: version 2, full context, receivedAt, sentAt, _metadata (classic: its classic shape, context kept)",
    passes: IN_TIME,
    build: (settings) => {
      const message = prepare({ ...FULL_CONTEXT_SAMPLE, messageId: settings.stamps.newId() }, settings);
      return { requests: [signed(message.body, settings)], messageIds: ids(message) };
    },
  },
  batch: {
    required: true,
    expect: "accept",
    sends: "actions mode: a JSON array of --batch-size events (default 3), X-Signature over the first event, as Segment signs batches",
    passes: IN_TIME,
    build: (settings) => {
      if (settings.mode !== "actions") return { requests: [], messageIds: [], skip: "the classic destination never sends batches (--mode actions)" };
      const messages = batchMessages(settings);
      const batch = actionsBatch(messages.map((message) => message.body));
      const probe =
        settings.secret === undefined
          ? undefined
          : { request: signed(batch.body, settings), sends: "the same batch signed over its whole body", acceptedMeans: WHOLE_BATCH };
      return { requests: [signed(batch.body, settings, batch.signedText)], messageIds: messages.flatMap(ids), probe };
    },
  },
  retry: {
    required: true,
    expect: "accept",
    sends: "a signed track twice, the same bytes (a retry), then the same event with a new messageId",
    passes: "all three 2xx; whether the retry was processed once cannot be seen from outside: look up the messageIds",
    build: (settings) => {
      const message = trackBody(settings);
      const again = trackBody(settings);
      const request = signed(message.body, settings);
      const messageIds = [...ids(message), ...ids(again)];
      return { requests: [request, request, signed(again.body, settings)], messageIds, note: retryNote(messageIds) };
    },
  },
  burst: {
    required: false,
    expect: "accept",
    sends: `${BURST_SIZE} signed tracks, --concurrency at once (default 10)`,
    passes: `all ${IN_TIME}; the p50 and p99 latencies are reported`,
    alone: true,
    build: (settings) => {
      const messages = Array.from({ length: BURST_SIZE }, () => trackBody(settings));
      const requests = messages.map((message) => signed(message.body, settings));
      return { requests, concurrency: settings.concurrency, messageIds: messages.flatMap(ids) };
    },
  },
};

/** Every case, in the order they run and are listed. */
export const CHECK_CASES: readonly CaseDefinition[] = CASE_NAMES.map((name) => {
  const { build: _build, ...definition } = DEFINITIONS[name];
  return { name, ...definition };
});

/** The chosen cases, in the order they run, built (or skipped with the reason). */
export function buildCases(names: ReadonlySet<CaseName>, settings: CheckSettings): BuiltCase[] {
  return CASE_NAMES.filter((name) => names.has(name)).map((name) => {
    const { build, ...rest } = DEFINITIONS[name];
    const definition = { name, ...rest };
    const needsSecret = definition.aboutSignatures === true && settings.secret === undefined;
    return needsSecret ? { definition, requests: [], messageIds: [], skip: NO_SECRET } : { definition, ...build(settings) };
  });
}

function retryNote(messageIds: readonly string[]): string {
  const [retried, fresh] = messageIds;
  return `idempotency cannot be seen from outside: on your side, messageId ${retried} (sent twice, the same bytes: a retry) must have been processed once, and messageId ${fresh} (the same event, a new messageId) once too`;
}

/** The type case's event, freshly stamped. */
export function typeMessage(type: MessageType, settings: CheckSettings): PreparedMessage {
  return prepare(TYPE_SAMPLES[type], settings);
}

/** The batch case's events: identify, track and page in turn, --batch-size of them. */
export function batchMessages(settings: CheckSettings): PreparedMessage[] {
  const kinds: MessageType[] = ["identify", "track", "page"];
  return Array.from({ length: settings.batchSize }, (_, index) => prepare(TYPE_SAMPLES[kinds[index % kinds.length] as MessageType], settings));
}

function prepare(input: Record<string, unknown>, settings: CheckSettings): PreparedMessage {
  const prepared = prepareMessage(input, settings.stamps, { mode: settings.mode });
  // The samples are wh's own: a refusal is a bug here, not the user's input.
  if (!prepared.ok) throw new Error(`wh check's own ${String(input.type)} sample is invalid: ${prepared.error}`);
  return prepared.message;
}

export function ids(message: PreparedMessage): string[] {
  return message.messageId === undefined ? [] : [message.messageId];
}

/** A signed track with its body or signature tampered with (only built with a secret). */
function tampered(settings: CheckSettings, change: Tampering): Omit<BuiltCase, "definition"> {
  const message = trackBody(settings);
  return { requests: [tamperedRequest(settings, message.body, change)], messageIds: ids(message) };
}

import type {
  AsJson,
  InspectorCleared,
  InspectorEntry,
  InspectorFailure,
  InspectorHello,
  InspectorMissed,
  InspectorResendBody,
  InspectorRetried,
} from "../../adapters/inspector/protocol.js";

// What the page reads from its server and sends to it, typed as the server writes it.

export type Entry = AsJson<InspectorEntry>;
export type Hello = AsJson<InspectorHello>;

// Bound beyond loopback, every URL of the inspector carries its token: the page passes its own on.
const token = new URLSearchParams(location.search).get("token");

function withToken(path: string): string {
  return token === null ? path : `${path}${path.includes("?") ? "&" : "?"}token=${encodeURIComponent(token)}`;
}

export interface StreamHandlers {
  /** The stream's first frame, again on each reconnection (the entries follow it again). */
  hello(hello: Hello): void;
  /** A new entry, or a changed one (same id). */
  entry(entry: Entry): void;
  /** The list was cleared (by this page or another one). */
  cleared(): void;
  /** The page fell behind and the server dropped requests it never showed: how many. */
  missed(missed: InspectorMissed): void;
  /** The stream broke: the browser reconnects by itself. */
  lost(): void;
}

/** Follows the inspector's event stream. */
export function follow(handlers: StreamHandlers): void {
  const source = new EventSource(withToken("/events"));
  source.addEventListener("hello", (event) => handlers.hello(JSON.parse(event.data) as Hello));
  source.addEventListener("entry", (event) => handlers.entry(JSON.parse(event.data) as Entry));
  source.addEventListener("clear", () => handlers.cleared());
  source.addEventListener("missed", (event) => handlers.missed(JSON.parse(event.data) as InspectorMissed));
  source.addEventListener("error", () => handlers.lost());
}

/** Asks the inspector for an action; throws what it answers when it refuses. */
async function act<T>(path: string, body: object = {}): Promise<T> {
  const response = await fetch(withToken(path), {
    method: "POST",
    // The custom header is what the server takes as coming from this page (a form of another site cannot set it).
    headers: { "content-type": "application/json", "x-wh-inspector": "1" },
    body: JSON.stringify(body),
  });
  const answer = (await response.json()) as T | InspectorFailure;
  if (!response.ok) throw new Error((answer as InspectorFailure).error);
  return answer as T;
}

/** Asks the inspector to resend an entry (its outcome comes on the stream). */
export async function resend(id: number, body: InspectorResendBody): Promise<void> {
  await act(`/api/entries/${id}/resend`, body);
}

/** Empties the inspector's list, the server's and every open page's. */
export function clearAll(): Promise<InspectorCleared> {
  return act("/api/clear");
}

/** Asks wh serve to retry the deliveries waiting to, now. */
export function retryNow(): Promise<InspectorRetried> {
  return act("/api/retry-now");
}

import { commandBuilders } from "../../adapters/inspector/commands.js";
import { MESSAGE_TYPES } from "../../core/message/types.js";
import type { Entry } from "./api.js";
import { resendForm } from "./resend-form.js";
import { dateTime, deliveryShown, duration, VERDICT_TEXT } from "./format.js";
import { el, tested } from "./dom.js";

// The selected entry in full: verdict, headers, body, answer, deliveries, and what to do with it.

// The tested builders (every value shell-quoted), bundled in.
const { curlCommand, whSendCommand } = commandBuilders(MESSAGE_TYPES);

export interface DetailContext {
  /** Where requests came to: the URL of the copied commands (and of a resend, for wh listen). */
  origin: string;
  canResend: boolean;
}

type Line = Entry["resends"][number];

/**
 * The detail pane. The entry it shows changes while it is open (a delivery, a resend): what it
 * says is written again then, but its actions are made once per entry, so that a body being
 * edited, a URL being typed, stay as they are.
 */
export class DetailPane {
  private readonly info = el("div");
  private readonly actions = el("div");
  private readonly after = el("div");
  private shown: { entry: Entry; failures: Line[]; placeholder(entry: Entry): void } | undefined;

  constructor(
    private readonly root: HTMLElement,
    private readonly context: () => DetailContext,
  ) {}

  /** Shows `entry`: from its top when it is another one than shown. */
  show(entry: Entry): void {
    if (this.shown?.entry.id !== entry.id) this.open(entry);
    const shown = this.shown as NonNullable<typeof this.shown>;
    shown.entry = entry;
    shown.placeholder(entry);
    this.info.replaceChildren(...infoOf(entry));
    const lines = [...entry.resends, ...shown.failures];
    const resends = tested(el("div"), "resends");
    for (const line of lines) resends.append(el("div", line.text, line.outcome));
    this.after.replaceChildren(...(lines.length === 0 ? [] : [resends]));
  }

  /** The entry shown, if any. */
  get id(): number | undefined {
    return this.shown?.entry.id;
  }

  /** Shows nothing (the list was cleared). */
  close(): void {
    this.shown = undefined;
    this.root.replaceChildren(el("div", "Select a request to see its headers, body and answer.", "empty"));
  }

  private open(entry: Entry): void {
    const { origin, canResend } = this.context();
    const failures: Line[] = [];
    const copied = tested(el("pre"), "copied");
    copied.style.display = "none";
    const buttons = copyButtons(entry, origin, copied);
    // An earlier capture was not kept to be resent: wh replay FILE --message-id sends it again.
    const form =
      canResend && entry.earlier !== true
        ? resendForm(entry, origin, (text) => {
            failures.push({ text, outcome: "failed" });
            if (this.shown !== undefined) this.show(this.shown.entry);
          })
        : undefined;
    this.shown = { entry, failures, placeholder: form?.placeholder ?? (() => {}) };
    this.actions.replaceChildren(el("h3", "Act on it"), buttons, ...(form === undefined ? [] : [form.element]), copied);
    this.root.replaceChildren(this.info, this.actions, this.after);
    this.root.scrollTop = 0;
  }
}

/** An earlier capture's answer, which the capture file does not record. */
const EARLIER_ANSWER = "not recorded: captured to --out before this wh listen started (wh replay FILE --message-id ID sends it again)";

/** What the detail says of an entry, above its actions. */
function infoOf(entry: Entry): HTMLElement[] {
  const verdictText = entry.verdict === "valid-batch" ? "valid: a batch, signed over its first event" : VERDICT_TEXT[entry.verdict];
  const event = entry.event === "" ? "" : ` “${entry.event}”`;
  const took = duration(entry);
  const tookText = took === "" ? "" : entry.kind === "event" ? `; the last delivery attempt took ${took}` : `; the app answered in ${took}`;
  const parts: HTMLElement[] = [
    tested(el("h2", `${entry.method} ${entry.path} — ${entry.type || "?"}${event}${entry.user ? ` ${entry.user}` : ""}`), "detail-title"),
    tested(el("div", `received ${dateTime(entry.receivedAt)} (${entry.receivedAt})${tookText}`, "when"), "detail-when"),
    tested(el("div", verdictText + (entry.reason ? `: ${entry.reason}` : ""), `badge ${entry.verdict}`), "detail-verdict"),
    // wh serve's: where the event went is what its detail is opened for.
    ...(entry.deliveries === undefined ? [] : deliveriesSection(entry, entry.deliveries)),
    el("h3", "Headers"),
    tested(keyValueTable(entry.headers), "detail-headers"),
    ...bodySection(entry),
    el("h3", "Answer"),
    tested(el("pre", entry.earlier === true ? EARLIER_ANSWER : `${entry.status}  ${entry.answer}`), "detail-answer"),
  ];
  const forwarded = entry.forwarded;
  if (forwarded !== undefined) {
    parts.push(
      el(
        "div",
        "error" in forwarded
          ? `forwarding to ${forwarded.url} failed: ${forwarded.error}`
          : `forwarded to ${forwarded.url}: the app answered ${forwarded.status} in ${forwarded.durationMs} ms`,
      ),
    );
  }
  return parts;
}

/** wh serve's: where the delivery stands, then each attempt. */
function deliveriesSection(entry: Entry, deliveries: NonNullable<Entry["deliveries"]>): HTMLElement[] {
  const state = deliveryShown(entry);
  const list = tested(el("div"), "detail-deliveries");
  if (deliveries.length === 0) list.append(el("div", "not delivered yet", "unchecked"));
  for (const attempt of deliveries) list.append(deliveryLine(attempt));
  return [el("h3", "Deliveries"), ...(state === undefined ? [] : [tested(el("div", state.full, `badge ${state.className}`), "detail-delivery")]), list];
}

/** One delivery line; with subscriptions, led by the subscription it is of. */
function deliveryLine(line: NonNullable<Entry["deliveries"]>[number]): HTMLElement {
  const row = el("div", undefined, line.outcome);
  if (line.subscription !== undefined) row.append(tested(el("span", line.subscription, "subscription"), "delivery-subscription"), " ");
  row.append(line.text);
  return row;
}

function keyValueTable(object: Record<string, string>): HTMLTableElement {
  const table = el("table", undefined, "kv");
  for (const [name, value] of Object.entries(object)) {
    const tr = el("tr");
    tr.append(el("td", name), el("td", value));
    table.append(tr);
  }
  return table;
}

function pretty(text: string): string {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

/** The body's heading, with its toggle between pretty JSON and the bytes as they came, and the body. */
function bodySection(entry: Entry): HTMLElement[] {
  const title = el("h3", `Body (${entry.size} bytes)`);
  const toggle = tested(el("button", "raw bytes"), "toggle-raw");
  title.append(" ", toggle);
  const body = tested(el("pre", pretty(entry.body)), "detail-body");
  let raw = false;
  toggle.addEventListener("click", () => {
    raw = !raw;
    body.textContent = raw ? entry.body : pretty(entry.body);
    toggle.textContent = raw ? "pretty" : "raw bytes";
  });
  return [title, body];
}

/** "copy as curl" and "copy as wh send --data": the command shown in `copied`, and put on the clipboard. */
function copyButtons(entry: Entry, origin: string, copied: HTMLElement): HTMLElement {
  const copy = (text: string): void => {
    copied.textContent = text;
    copied.style.display = "";
    // The page shows the command either way: the clipboard is only there in a secure context (loopback, https).
    navigator.clipboard?.writeText(text).catch(() => {});
  };
  const copyCurl = tested(el("button", "copy as curl"), "copy-curl");
  copyCurl.addEventListener("click", () => copy(curlCommand(entry, origin)));
  const copyWh = tested(el("button", "copy as wh send --data"), "copy-wh");
  copyWh.addEventListener("click", () => copy(whSendCommand(entry, origin)));
  const buttons = el("div", undefined, "actions");
  buttons.append(copyCurl, copyWh);
  return buttons;
}

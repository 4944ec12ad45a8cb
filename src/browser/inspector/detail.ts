import { commandBuilders } from "../../adapters/inspector-commands.js";
import type { InspectorVerdict } from "../../adapters/inspector-protocol.js";
import { MESSAGE_TYPES } from "../../core/message/types.js";
import { resend, type Entry } from "./api.js";
import { el, tested } from "./dom.js";

// The selected entry in full: verdict, headers, body, answer, deliveries, and what to do with it.

/** How the list and the filter name a verdict. */
export const VERDICT_TEXT: Record<InspectorVerdict, string> = {
  valid: "valid",
  "valid-batch": "valid (batch)",
  invalid: "invalid",
  missing: "unsigned",
  unchecked: "not checked",
  accepted: "accepted",
  rejected: "rejected",
};

// The tested builders (every value shell-quoted), bundled in.
const { curlCommand, whSendCommand } = commandBuilders(MESSAGE_TYPES);

export interface DetailView {
  entry: Entry;
  /** Where requests came to: the URL of "resend to the same URL" and of the copied commands. */
  origin: string;
  canResend: boolean;
  /** Shows the entry again (a failed resend adds a line to it). */
  rerender(): void;
}

/** The elements that show `view.entry`. */
export function detailOf(view: DetailView): HTMLElement[] {
  const { entry } = view;
  const verdictText = entry.verdict === "valid-batch" ? "valid: a batch, signed over its first event" : VERDICT_TEXT[entry.verdict];
  const parts: HTMLElement[] = [
    el("h2", `${entry.method} ${entry.path} — ${entry.type || "?"}${entry.user ? ` ${entry.user}` : ""}`),
    tested(el("div", verdictText + (entry.reason ? `: ${entry.reason}` : ""), `badge ${entry.verdict}`), "detail-verdict"),
    el("h3", "Headers"),
    tested(keyValueTable(entry.headers), "detail-headers"),
    ...bodySection(entry),
    el("h3", "Answer"),
    tested(el("pre", `${entry.status}  ${entry.answer}`), "detail-answer"),
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
  if (entry.deliveries !== undefined) {
    parts.push(el("h3", "Deliveries"));
    const list = tested(el("div"), "detail-deliveries");
    if (entry.deliveries.length === 0) list.append(el("div", "not delivered yet", "unchecked"));
    for (const attempt of entry.deliveries) list.append(el("div", attempt.text, attempt.outcome));
    parts.push(list);
  }
  parts.push(el("h3", "Act on it"), ...actions(view));
  if (entry.resends.length > 0) {
    const list = tested(el("div"), "resends");
    for (const line of entry.resends) list.append(el("div", line.text, line.outcome));
    parts.push(list);
  }
  return parts;
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

/** The copy buttons, the resend form when the inspector can resend, and what was copied. */
function actions(view: DetailView): HTMLElement[] {
  const { entry, origin } = view;
  const copied = tested(el("pre"), "copied");
  copied.style.display = "none";
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
  return view.canResend ? [buttons, resendForm(view), copied] : [buttons, copied];
}

/** Where to resend to (empty: the same URL), whether to sign again, and the button. */
function resendForm(view: DetailView): HTMLElement {
  const { entry } = view;
  const form = el("div", undefined, "actions");
  form.style.marginTop = "8px";
  const url = tested(el("input"), "resend-url");
  url.placeholder = `same URL (${view.origin.replace(/\/$/, "")}${entry.path})`;
  url.size = 40;
  const resign = tested(el("input"), "resend-resign");
  resign.type = "checkbox";
  const resignLabel = el("label", " re-sign");
  resignLabel.prepend(resign);
  const button = tested(el("button", "resend"), "resend");
  button.addEventListener("click", async () => {
    button.disabled = true;
    try {
      await resend(entry.id, { url: url.value.trim(), resign: resign.checked });
    } catch (error) {
      entry.resends.push({ text: `resend failed: ${(error as Error).message}`, outcome: "failed" });
      view.rerender();
    } finally {
      button.disabled = false;
    }
  });
  form.append(url, resignLabel, button);
  return form;
}

import { resend, type Entry } from "./api.js";
import { el, tested } from "./dom.js";

// The detail's resend form: where to (empty: the URL it came to, or serve's webhook), whether to
// sign again, and the body, which can be edited first.

export interface ResendForm {
  element: HTMLElement;
  /** Writes where an empty URL resends to (wh serve learns its webhook at the first attempt). */
  placeholder(entry: Entry): void;
}

/** `failed` is told why a resend was refused (its outcome otherwise comes on the stream). */
export function resendForm(entry: Entry, origin: string, failed: (text: string) => void): ResendForm {
  const form = el("div", undefined, "resend");
  const url = tested(el("input"), "resend-url");
  url.size = 48;
  const resign = tested(el("input"), "resend-resign");
  resign.type = "checkbox";
  const resignLabel = el("label", " re-sign");
  resignLabel.prepend(resign);
  const editButton = tested(el("button", "edit body"), "edit-body");
  const body = tested(el("textarea"), "resend-body");
  body.value = entry.body;
  body.rows = 8;
  body.spellcheck = false;
  body.hidden = true;
  const note = tested(el("div", "", "note"), "resend-note");
  editButton.addEventListener("click", () => {
    body.hidden = !body.hidden;
  });
  const edited = (): boolean => body.value !== entry.body;
  // An edited body sent "as it came" would carry the X-Signature of other bytes: it is re-signed, always (the server refuses it otherwise).
  body.addEventListener("input", () => {
    resign.disabled = edited();
    if (edited()) resign.checked = true;
    note.textContent = edited() ? "edited: it is sent as typed, re-signed with the secret in effect" : "";
  });
  const button = tested(el("button", "resend"), "resend");
  button.addEventListener("click", async () => {
    button.disabled = true;
    try {
      await resend(entry.id, { url: url.value.trim(), resign: resign.checked, body: edited() ? body.value : undefined });
    } catch (error) {
      failed(`resend failed: ${(error as Error).message}`);
    } finally {
      button.disabled = false;
    }
  });
  const row = el("div", undefined, "actions");
  row.append(url, resignLabel, editButton, button);
  form.append(row, body, note);
  return {
    element: form,
    placeholder(current) {
      const to = current.resendTo ?? (current.kind === "event" ? "the event's webhook" : `${origin.replace(/\/$/, "")}${current.path}`);
      url.placeholder = `same URL (${to})`;
    },
  };
}

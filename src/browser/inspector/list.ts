import type { Entry } from "./api.js";
import { dateTime, deliveryShown, duration, VERDICT_TEXT } from "./format.js";
import { el } from "./dom.js";

// The list of entries, newest first. Under volume (thousands of requests a second) the DOM is
// the cost: so each entry's row is made once and replaced only when that entry changes, new rows
// go in at the top once per animation frame however many came in it, the oldest leave past 1,000
// (what the server keeps), and a filter shows or hides the rows there are instead of making them again.

/** The most rows kept, as the server keeps 1,000 entries. */
const MAX_ROWS = 1_000;

interface Row {
  entry: Entry;
  tr: HTMLTableRowElement;
}

export class EntryList {
  /** Oldest first: the server numbers entries in the order they came. */
  private readonly rows = new Map<number, Row>();
  /** What came since the last frame, by id (a change replaces the one before it). */
  private readonly pending = new Map<number, Entry>();
  private frame: number | undefined;
  /** Entries up to this id left the list: a late change to one of them does not bring it back. */
  private droppedUpTo = 0;
  private selectedId: number | undefined;

  constructor(
    private readonly body: HTMLTableSectionElement,
    private readonly shown: (entry: Entry) => boolean,
    /** Told of the rows' changes once they are on the page: the entries that changed. */
    private readonly changed: (entries: Entry[]) => void,
  ) {}

  get size(): number {
    return this.rows.size;
  }

  get selected(): Entry | undefined {
    return this.selectedId === undefined ? undefined : this.rows.get(this.selectedId)?.entry;
  }

  /** Takes an entry from the stream: on the page at the next frame. */
  receive(entry: Entry): void {
    this.pending.set(entry.id, entry);
    // A page in the background gets no frames: what waits for one stays bounded.
    if (this.pending.size >= MAX_ROWS) this.flush();
    else this.frame ??= requestAnimationFrame(() => this.flush());
  }

  /** Selects the row of `id` (a click); the entry it shows. */
  select(id: number): Entry | undefined {
    this.flush();
    if (this.selectedId !== undefined) this.rows.get(this.selectedId)?.tr.classList.remove("selected");
    const row = this.rows.get(id);
    this.selectedId = row === undefined ? undefined : id;
    row?.tr.classList.add("selected");
    return row?.entry;
  }

  /** Shows the rows the filters let through and hides the others (after a filter changed). */
  refilter(): void {
    for (const { entry, tr } of this.rows.values()) tr.hidden = !this.shown(entry);
  }

  /** Empties the list. */
  clear(): void {
    this.droppedUpTo = Math.max(this.droppedUpTo, ...this.rows.keys(), ...this.pending.keys());
    this.pending.clear();
    this.rows.clear();
    this.selectedId = undefined;
    this.body.replaceChildren();
  }

  /** Starts again from nothing (a reconnection: the server sends what it keeps again). */
  reset(): void {
    this.clear();
    this.droppedUpTo = 0;
  }

  /** Puts what came since the last frame on the page. */
  private flush(): void {
    if (this.frame !== undefined) cancelAnimationFrame(this.frame);
    this.frame = undefined;
    if (this.pending.size === 0) return;
    const added: HTMLTableRowElement[] = [];
    const changed: Entry[] = [];
    for (const entry of this.pending.values()) {
      const kept = this.rows.get(entry.id);
      if (kept === undefined && entry.id <= this.droppedUpTo) continue;
      const tr = rowOf(entry, entry.id === this.selectedId);
      tr.hidden = !this.shown(entry);
      if (kept === undefined) added.push(tr);
      else kept.tr.replaceWith(tr);
      this.rows.set(entry.id, { entry, tr });
      changed.push(entry);
    }
    this.pending.clear();
    this.body.prepend(...added.reverse());
    for (const [id, row] of this.rows) {
      if (this.rows.size <= MAX_ROWS) break;
      row.tr.remove();
      this.rows.delete(id);
      this.droppedUpTo = id;
      if (id === this.selectedId) this.selectedId = undefined;
    }
    this.changed(changed);
  }
}

/** An entry's row; its id in data-id, which a click on the list reads. */
function rowOf(entry: Entry, selected: boolean): HTMLTableRowElement {
  const tr = el("tr");
  tr.dataset.id = String(entry.id);
  tr.dataset.testid = "row";
  if (selected) tr.classList.add("selected");
  const answer = entry.forwarded !== undefined && "status" in entry.forwarded ? `${entry.status} (app)` : String(entry.status);
  const delivery = deliveryShown(entry);
  const cells: [string, string, string?][] = [
    [dateTime(entry.receivedAt), "time"],
    [`${entry.method} ${entry.path}`, "request"],
    [entry.type, "type"],
    [entry.event, "event"],
    [entry.user, "user"],
    [`${entry.size} B`, "size"],
    [VERDICT_TEXT[entry.verdict], `badge ${entry.verdict}`],
    [answer, "answer"],
    [duration(entry), "duration"],
    [delivery?.text ?? "", `delivery ${delivery?.className ?? ""}`, delivery?.full],
  ];
  for (const [text, className, title] of cells) {
    const td = el("td", text, className);
    td.title = title ?? text;
    tr.append(td);
  }
  return tr;
}

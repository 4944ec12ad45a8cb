import type { Entry } from "./api.js";
import { dateTime, dayAndTime, deliveryShown, duration, VERDICT_TEXT } from "./format.js";
import { el } from "./dom.js";

// The list of entries, newest first. Under volume (thousands of requests a second) the DOM is
// the cost: so each entry's row is made once and replaced only when that entry changes, new rows
// go in at the top once per animation frame however many came in it, the oldest leave past 1,000
// (what the server keeps), and a filter shows or hides the rows there are instead of making them
// again. Rows are of one height and drawn only in view (page.html): measured with 20,000 requests
// streaming in (test/browser/inspector-volume.test.ts), a table of 1,000 rows spent 50-150 ms of
// each frame laying itself out again, these rows a few.

/** The most rows kept, as the server keeps 1,000 entries. */
const MAX_ROWS = 1_000;
/** Every row's height, border included (page.html's --row): what the list scrolls by per row added above. */
const ROW_PX = 31;

interface Row {
  entry: Entry;
  element: HTMLElement;
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
    /** What scrolls the list: scrolled down, the rows in view stay in place while new ones come in above. */
    private readonly scroller: HTMLElement,
    private readonly body: HTMLElement,
    private readonly shown: (entry: Entry) => boolean,
    /** Told of the rows' changes once they are on the page: the entries that changed. */
    private readonly changed: (entries: Entry[]) => void,
  ) {
    scroller.style.setProperty("--row", `${ROW_PX}px`);
  }

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
    if (this.selectedId !== undefined) this.rows.get(this.selectedId)?.element.classList.remove("selected");
    const row = this.rows.get(id);
    this.selectedId = row === undefined ? undefined : id;
    row?.element.classList.add("selected");
    return row?.entry;
  }

  /** Shows the rows the filters let through and hides the others (after a filter changed). */
  refilter(): void {
    for (const { entry, element } of this.rows.values()) element.hidden = !this.shown(entry);
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
    const added: HTMLElement[] = [];
    const changed: Entry[] = [];
    for (const entry of this.pending.values()) {
      const kept = this.rows.get(entry.id);
      if (kept === undefined && entry.id <= this.droppedUpTo) continue;
      const element = rowOf(entry, entry.id === this.selectedId);
      element.hidden = !this.shown(entry);
      if (kept === undefined) added.push(element);
      else kept.element.replaceWith(element);
      this.rows.set(entry.id, { entry, element });
      changed.push(entry);
    }
    this.pending.clear();
    // At the top, new rows push the others down (the newest in view); scrolled down, a person is
    // reading or about to click a row: the list scrolls by what came in above, so that it stays put.
    // Computed, not measured: measuring would make the browser lay the list out here and again after.
    if (this.scroller.scrollTop > 0) this.scroller.scrollTop += added.filter((row) => !row.hidden).length * ROW_PX;
    this.body.prepend(...added.reverse());
    for (const [id, row] of this.rows) {
      if (this.rows.size <= MAX_ROWS) break;
      row.element.remove();
      this.rows.delete(id);
      this.droppedUpTo = id;
      if (id === this.selectedId) this.selectedId = undefined;
    }
    this.changed(changed);
  }
}

/** An entry's row; its id in data-id, which a click on the list reads. */
function rowOf(entry: Entry, selected: boolean): HTMLElement {
  const row = el("div", undefined, "row");
  row.dataset.id = String(entry.id);
  row.dataset.testid = "row";
  if (selected) row.classList.add("selected");
  // Captured before this run (wh listen --ui --out): its answer is not known, and the row says so.
  if (entry.earlier === true) row.classList.add("earlier");
  const answer =
    entry.earlier === true ? "earlier" : entry.forwarded !== undefined && "status" in entry.forwarded ? `${entry.status} (app)` : String(entry.status);
  const delivery = deliveryShown(entry);
  const cells: [string, string, string?][] = [
    [dayAndTime(entry.receivedAt), "time", dateTime(entry.receivedAt)],
    // Webhooks are POSTs: another method is worth seeing.
    [entry.method === "POST" ? entry.path : `${entry.method} ${entry.path}`, "path"],
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
    const cell = el("span", text, className);
    cell.title = title ?? text;
    row.append(cell);
  }
  return row;
}

import { clearAll, follow, retryNow, type Entry } from "./api.js";
import { DetailPane } from "./detail.js";
import { duration, VERDICT_TEXT } from "./format.js";
import { EntryList } from "./list.js";
import { byId, el } from "./dom.js";

// The inspector page's script (page.html around it): the list of entries as the server streams
// them, newest first, filtered by type, user, verdict and body text; the selected one in full
// beside it; clear, and (wh serve) retry now.

let context = { origin: "", canResend: false };

const filterType = byId("filter-type", HTMLSelectElement);
const filterUser = byId("filter-user", HTMLInputElement);
const filterVerdict = byId("filter-verdict", HTMLSelectElement);
const filterBody = byId("filter-body", HTMLInputElement);
const status = byId("status", HTMLElement);
const table = byId("table", HTMLElement);
const rows = byId("rows", HTMLElement);
const empty = byId("empty", HTMLElement);
const clearButton = byId("clear", HTMLButtonElement);
const retryButton = byId("retry-now", HTMLButtonElement);
const detail = new DetailPane(byId("detail", HTMLElement), () => context);

/** The filters, read once per input rather than once per row. */
let filters = readFilters();

function readFilters() {
  return { type: filterType.value, user: filterUser.value.trim(), verdict: filterVerdict.value, body: filterBody.value.trim().toLowerCase() };
}

function matches(entry: Entry): boolean {
  return (
    (filters.type === "" || entry.type === filters.type) &&
    (filters.user === "" || entry.user.includes(filters.user)) &&
    (filters.verdict === "" || entry.verdict === filters.verdict) &&
    (filters.body === "" || entry.body.toLowerCase().includes(filters.body))
  );
}

/** Adds a choice to a filter the first time an entry has it. */
function addOption(select: HTMLSelectElement, value: string, label = value): void {
  if ([...select.options].some((option) => option.value === value)) return;
  const option = el("option", label);
  option.value = value;
  select.append(option);
}

const list = new EntryList(byId("list", HTMLElement), rows, matches, (changed) => {
  empty.style.display = list.size === 0 ? "" : "none";
  for (const entry of changed) {
    if (entry.type) addOption(filterType, entry.type);
    addOption(filterVerdict, entry.verdict, VERDICT_TEXT[entry.verdict]);
    // wh serve's entries have a delivery: the column shows from the first one.
    if (entry.delivery !== undefined) table.classList.add("with-delivery");
    // wh listen times only what --forward-to's app answered: the column shows from the first one.
    if (duration(entry) !== "") table.classList.add("with-duration");
    if (entry.id === detail.id) detail.show(entry);
  }
});

// One listener for every row: a click shows its entry at once, whatever is streaming in.
rows.addEventListener("click", (event) => {
  const row = (event.target as Element).closest<HTMLElement>(".row");
  const entry = row === null ? undefined : list.select(Number(row.dataset.id));
  if (entry !== undefined) detail.show(entry);
});

for (const filter of [filterType, filterUser, filterVerdict, filterBody])
  filter.addEventListener("input", () => {
    filters = readFilters();
    list.refilter();
  });

/** Runs an action of the header's, its outcome (or why it failed) in the status line. */
function headerAction(button: HTMLButtonElement, run: () => Promise<string>): void {
  button.addEventListener("click", async () => {
    button.disabled = true;
    try {
      status.textContent = `live · ${await run()}`;
    } catch (error) {
      status.textContent = `live · ${button.textContent} failed: ${(error as Error).message}`;
    } finally {
      button.disabled = false;
    }
  });
}
headerAction(clearButton, async () => `cleared ${(await clearAll()).cleared}`);
headerAction(retryButton, async () => {
  const { retried } = await retryNow();
  return retried === 0 ? "no delivery was waiting to retry" : `retrying ${retried} deliver${retried === 1 ? "y" : "ies"} now`;
});

follow({
  hello(hello) {
    context = { origin: hello.origin, canResend: hello.resend };
    retryButton.hidden = !hello.retryNow;
    list.reset();
    status.textContent = "live";
  },
  entry(entry) {
    list.receive(entry);
  },
  cleared() {
    list.clear();
    detail.close();
    empty.style.display = "";
  },
  missed({ missed }) {
    // The list shows the newest requests again; the status keeps the gap until the next message replaces it.
    status.textContent = `live · ${missed.toLocaleString("en")} request${missed === 1 ? "" : "s"} not shown: the page fell behind`;
  },
  lost() {
    status.textContent = "disconnected: retrying…";
  },
});

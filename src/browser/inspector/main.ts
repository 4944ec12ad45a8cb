import { follow, type Entry } from "./api.js";
import { detailOf, VERDICT_TEXT } from "./detail.js";
import { byId, el } from "./dom.js";

// The inspector page's script (page.html around it): the list of entries as the server streams
// them, newest first, filtered by type, user and verdict; the selected one in full beside it.

const entries = new Map<number, Entry>();
let selected: number | undefined;
let origin = "";
let canResend = false;

const filterType = byId("filter-type", HTMLSelectElement);
const filterUser = byId("filter-user", HTMLInputElement);
const filterVerdict = byId("filter-verdict", HTMLSelectElement);
const status = byId("status", HTMLElement);
const detail = byId("detail", HTMLElement);

function matches(entry: Entry): boolean {
  const user = filterUser.value.trim();
  return (
    (filterType.value === "" || entry.type === filterType.value) &&
    (user === "" || entry.user.includes(user)) &&
    (filterVerdict.value === "" || entry.verdict === filterVerdict.value)
  );
}

/** Adds a choice to a filter the first time an entry has it. */
function addOption(select: HTMLSelectElement, value: string, label = value): void {
  if ([...select.options].some((option) => option.value === value)) return;
  const option = el("option", label);
  option.value = value;
  select.append(option);
}

function row(entry: Entry): HTMLTableRowElement {
  const tr = el("tr");
  tr.dataset.id = String(entry.id);
  tr.dataset.testid = "row";
  const time = new Date(entry.receivedAt).toLocaleTimeString();
  const answer = entry.forwarded !== undefined && "status" in entry.forwarded ? `${entry.status} (app)` : String(entry.status);
  const cells: [string, string?][] = [
    [time],
    [entry.method],
    [entry.path],
    [entry.type],
    [entry.user],
    [`${entry.size} B`],
    [VERDICT_TEXT[entry.verdict], `badge ${entry.verdict}`],
    [answer],
  ];
  for (const [text, className] of cells) {
    const td = el("td", text, className);
    td.title = text;
    tr.append(td);
  }
  tr.addEventListener("click", () => {
    selected = entry.id;
    render();
    detail.scrollTop = 0;
  });
  if (entry.id === selected) tr.classList.add("selected");
  return tr;
}

function render(): void {
  const shown = [...entries.values()].filter(matches).sort((a, b) => b.id - a.id);
  byId("rows", HTMLTableSectionElement).replaceChildren(...shown.map(row));
  byId("empty", HTMLElement).style.display = entries.size === 0 ? "" : "none";
  renderDetail();
}

function renderDetail(): void {
  const entry = selected === undefined ? undefined : entries.get(selected);
  if (entry !== undefined) detail.replaceChildren(...detailOf({ entry, origin, canResend, rerender: renderDetail }));
}

follow({
  hello(hello) {
    origin = hello.origin;
    canResend = hello.resend;
    entries.clear();
    status.textContent = "live";
  },
  entry(entry) {
    entries.set(entry.id, entry);
    if (entry.type) addOption(filterType, entry.type);
    addOption(filterVerdict, entry.verdict, VERDICT_TEXT[entry.verdict]);
    render();
  },
  lost() {
    status.textContent = "disconnected: retrying…";
  },
});
for (const filter of [filterType, filterUser, filterVerdict]) filter.addEventListener("input", render);

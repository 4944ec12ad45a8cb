import { MESSAGE_TYPES } from "../core/message/types.js";
import { commandBuilders } from "./inspector-commands.js";

/**
 * The inspector's one page: HTML, CSS and script together, no build step and nothing fetched from
 * anywhere but the inspector itself. Everything that came from a request is put on the page with
 * textContent or as an attribute value, never as HTML. `__NONCE__` is replaced per response (the
 * Content-Security-Policy allows only that script and style).
 */
export const INSPECTOR_PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>wh inspector</title>
<style nonce="__NONCE__">
  :root { --bg: #fff; --fg: #1d2330; --muted: #667085; --line: #e4e7ec; --sel: #eef4ff; --ok: #067647; --bad: #b42318; --warn: #b54708; --mono: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
  @media (prefers-color-scheme: dark) { :root { --bg: #111418; --fg: #e6e8eb; --muted: #98a2b3; --line: #2b3036; --sel: #1c2a44; --ok: #47cd89; --bad: #f97066; --warn: #fdb022; } }
  * { box-sizing: border-box; }
  body { margin: 0; font: 14px/1.4 system-ui, sans-serif; background: var(--bg); color: var(--fg); }
  header { display: flex; gap: 12px; align-items: center; padding: 10px 16px; border-bottom: 1px solid var(--line); flex-wrap: wrap; }
  header h1 { font-size: 16px; margin: 0 12px 0 0; }
  header label { color: var(--muted); font-size: 12px; display: flex; gap: 6px; align-items: center; }
  input, select, button { font: inherit; color: inherit; background: var(--bg); border: 1px solid var(--line); border-radius: 6px; padding: 4px 8px; }
  button { cursor: pointer; }
  #status { margin-left: auto; color: var(--muted); font-size: 12px; }
  main { display: grid; grid-template-columns: minmax(560px, 1.25fr) minmax(380px, 1fr); height: calc(100vh - 50px); }
  #list { overflow: auto; border-right: 1px solid var(--line); }
  table { border-collapse: collapse; width: 100%; }
  th, td { text-align: left; padding: 5px 8px; border-bottom: 1px solid var(--line); white-space: nowrap; overflow: hidden; text-overflow: ellipsis; max-width: 170px; }
  th { position: sticky; top: 0; background: var(--bg); color: var(--muted); font-weight: 500; font-size: 12px; }
  tbody tr { cursor: pointer; }
  tbody tr:hover, tbody tr.selected { background: var(--sel); }
  .badge { font-size: 12px; font-weight: 600; }
  .valid, .valid-batch, .accepted, .delivered { color: var(--ok); }
  .invalid, .missing, .failed, .rejected { color: var(--bad); }
  .unchecked { color: var(--muted); }
  #detail { overflow: auto; padding: 12px 16px; }
  #detail h2 { font-size: 15px; margin: 0 0 8px; }
  #detail h3 { font-size: 13px; color: var(--muted); margin: 16px 0 6px; text-transform: uppercase; letter-spacing: .04em; }
  pre { font-family: var(--mono); font-size: 12px; background: var(--sel); padding: 8px; border-radius: 6px; white-space: pre-wrap; word-break: break-all; margin: 0; }
  .kv td:first-child { color: var(--muted); width: 30%; font-family: var(--mono); font-size: 12px; }
  .kv td { font-family: var(--mono); font-size: 12px; white-space: pre-wrap; word-break: break-all; max-width: none; }
  .actions { display: flex; gap: 8px; flex-wrap: wrap; align-items: center; }
  .empty { color: var(--muted); padding: 24px; }
</style>
</head>
<body>
<header>
  <h1>wh inspector</h1>
  <label>type <select id="filter-type" data-testid="filter-type"><option value="">all</option></select></label>
  <label>user <input id="filter-user" data-testid="filter-user" placeholder="userId" size="14"></label>
  <label>verdict <select id="filter-verdict" data-testid="filter-verdict"><option value="">all</option></select></label>
  <span id="status" data-testid="status">connecting…</span>
</header>
<main>
  <div id="list">
    <table>
      <thead><tr><th>time</th><th>method</th><th>path</th><th>type</th><th>user</th><th>size</th><th>verdict</th><th>answer</th></tr></thead>
      <tbody id="rows" data-testid="rows"></tbody>
    </table>
    <div class="empty" id="empty">Waiting for requests…</div>
  </div>
  <div id="detail" data-testid="detail"><div class="empty">Select a request to see its headers, body and answer.</div></div>
</main>
<script nonce="__NONCE__">
(() => {
  "use strict";
  const token = new URLSearchParams(location.search).get("token");
  const withToken = (path) => token === null ? path : path + (path.includes("?") ? "&" : "?") + "token=" + encodeURIComponent(token);
  const entries = new Map();
  let selected = null;
  let origin = "";
  let canResend = false;
  const $ = (id) => document.getElementById(id);

  /** An element with text content only: nothing from a request is ever parsed as HTML. */
  function el(tag, text, className) {
    const node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = String(text);
    if (className) node.className = className;
    return node;
  }

  const VERDICT_TEXT = { "valid": "valid", "valid-batch": "valid (batch)", "invalid": "invalid", "missing": "unsigned", "unchecked": "not checked", "accepted": "accepted", "rejected": "rejected" };

  function matches(entry) {
    const type = $("filter-type").value;
    const user = $("filter-user").value.trim();
    const verdict = $("filter-verdict").value;
    return (type === "" || entry.type === type) && (user === "" || entry.user.includes(user)) && (verdict === "" || entry.verdict === verdict);
  }

  function addOption(select, value, label) {
    if ([...select.options].some((option) => option.value === value)) return;
    const option = el("option", label ?? value);
    option.value = value;
    select.append(option);
  }

  function row(entry) {
    const tr = document.createElement("tr");
    tr.dataset.id = String(entry.id);
    tr.dataset.testid = "row";
    const time = new Date(entry.receivedAt).toLocaleTimeString();
    const answer = entry.forwarded && entry.forwarded.status !== undefined ? entry.status + " (app)" : String(entry.status);
    for (const [text, cls] of [[time], [entry.method], [entry.path], [entry.type], [entry.user], [entry.size + " B"], [VERDICT_TEXT[entry.verdict] ?? entry.verdict, "badge " + entry.verdict], [answer]]) {
      const td = el("td", text, cls);
      td.title = text;
      tr.append(td);
    }
    tr.addEventListener("click", () => { selected = entry.id; render(); $("detail").scrollTop = 0; });
    if (entry.id === selected) tr.classList.add("selected");
    return tr;
  }

  function render() {
    const rows = $("rows");
    const shown = [...entries.values()].filter(matches).sort((a, b) => b.id - a.id);
    rows.replaceChildren(...shown.map(row));
    $("empty").style.display = entries.size === 0 ? "" : "none";
    renderDetail();
  }

  function kvTable(object) {
    const table = el("table", undefined, "kv");
    for (const [name, value] of Object.entries(object)) {
      const tr = document.createElement("tr");
      tr.append(el("td", name), el("td", typeof value === "string" ? value : JSON.stringify(value)));
      table.append(tr);
    }
    return table;
  }

  function pretty(text) {
    try { return JSON.stringify(JSON.parse(text), null, 2); } catch { return text; }
  }

  // The tested builders of inspector-commands.ts, their source as it is (every value shell-quoted).
  const { curlCommand, whSendCommand } = (${commandBuilders.toString()})(${JSON.stringify(MESSAGE_TYPES)});

  function renderDetail() {
    const detail = $("detail");
    const entry = entries.get(selected);
    if (!entry) return;
    const parts = [];
    const title = el("h2", entry.method + " " + entry.path + " — " + (entry.type || "?") + (entry.user ? " " + entry.user : ""));
    parts.push(title);
    const verdictText = entry.verdict === "valid-batch" ? "valid: a batch, signed over its first event" : (VERDICT_TEXT[entry.verdict] ?? entry.verdict);
    const verdict = el("div", verdictText + (entry.reason ? ": " + entry.reason : ""), "badge " + entry.verdict);
    verdict.dataset.testid = "detail-verdict";
    parts.push(verdict);

    parts.push(el("h3", "Headers"));
    const headers = kvTable(entry.headers);
    headers.dataset.testid = "detail-headers";
    parts.push(headers);

    const bodyTitle = el("h3", "Body (" + entry.size + " bytes)");
    const toggle = el("button", "raw bytes");
    toggle.dataset.testid = "toggle-raw";
    bodyTitle.append(" ", toggle);
    parts.push(bodyTitle);
    const body = el("pre", pretty(entry.body));
    body.dataset.testid = "detail-body";
    let raw = false;
    toggle.addEventListener("click", () => { raw = !raw; body.textContent = raw ? entry.body : pretty(entry.body); toggle.textContent = raw ? "pretty" : "raw bytes"; });
    parts.push(body);

    parts.push(el("h3", "Answer"));
    const answer = el("pre", entry.status + "  " + entry.answer);
    answer.dataset.testid = "detail-answer";
    parts.push(answer);
    if (entry.forwarded) {
      const forwarded = entry.forwarded;
      parts.push(el("div", forwarded.error ? "forwarding to " + forwarded.url + " failed: " + forwarded.error : "forwarded to " + forwarded.url + ": the app answered " + forwarded.status + " in " + forwarded.durationMs + " ms"));
    }

    if (entry.deliveries) {
      parts.push(el("h3", "Deliveries"));
      const list = el("div");
      list.dataset.testid = "detail-deliveries";
      if (entry.deliveries.length === 0) list.append(el("div", "not delivered yet", "unchecked"));
      for (const attempt of entry.deliveries) {
        list.append(el("div", attempt.text, attempt.outcome));
      }
      parts.push(list);
    }

    parts.push(el("h3", "Act on it"));
    const actions = el("div", undefined, "actions");
    const copyCurl = el("button", "copy as curl");
    copyCurl.dataset.testid = "copy-curl";
    const copyWh = el("button", "copy as wh send --data");
    copyWh.dataset.testid = "copy-wh";
    const copied = el("pre");
    copied.dataset.testid = "copied";
    copied.style.display = "none";
    const copy = (text) => { copied.textContent = text; copied.style.display = ""; navigator.clipboard?.writeText(text).catch(() => {}); };
    copyCurl.addEventListener("click", () => copy(curlCommand(entry, origin)));
    copyWh.addEventListener("click", () => copy(whSendCommand(entry, origin)));
    actions.append(copyCurl, copyWh);
    parts.push(actions);
    if (canResend) {
      const form = el("div", undefined, "actions");
      form.style.marginTop = "8px";
      const url = el("input");
      url.placeholder = "same URL (" + origin.replace(/\\/$/, "") + entry.path + ")";
      url.size = 40;
      url.dataset.testid = "resend-url";
      const resign = el("input");
      resign.type = "checkbox";
      resign.dataset.testid = "resend-resign";
      const resignLabel = el("label", " re-sign");
      resignLabel.prepend(resign);
      const button = el("button", "resend");
      button.dataset.testid = "resend";
      button.addEventListener("click", async () => {
        button.disabled = true;
        try {
          const response = await fetch(withToken("/api/entries/" + entry.id + "/resend"), { method: "POST", headers: { "content-type": "application/json", "x-wh-inspector": "1" }, body: JSON.stringify({ url: url.value.trim(), resign: resign.checked }) });
          if (!response.ok) throw new Error((await response.json()).error);
        } catch (error) {
          entry.resends.push({ text: "resend failed: " + error.message, outcome: "failed" });
          renderDetail();
        } finally {
          button.disabled = false;
        }
      });
      form.append(url, resignLabel, button);
      parts.push(form);
    }
    parts.push(copied);
    if (entry.resends.length > 0) {
      const list = el("div");
      list.dataset.testid = "resends";
      for (const resend of entry.resends) list.append(el("div", resend.text, resend.outcome));
      parts.push(list);
    }
    detail.replaceChildren(...parts);
  }

  function connect() {
    const source = new EventSource(withToken("/events"));
    source.addEventListener("hello", (event) => {
      const hello = JSON.parse(event.data);
      origin = hello.origin;
      canResend = hello.resend;
      entries.clear();
      $("status").textContent = "live";
    });
    source.addEventListener("entry", (event) => {
      const entry = JSON.parse(event.data);
      entries.set(entry.id, entry);
      if (entry.type) addOption($("filter-type"), entry.type);
      addOption($("filter-verdict"), entry.verdict, VERDICT_TEXT[entry.verdict] ?? entry.verdict);
      render();
    });
    source.addEventListener("error", () => { $("status").textContent = "disconnected: retrying…"; });
  }
  for (const id of ["filter-type", "filter-user", "filter-verdict"]) $(id).addEventListener("input", render);
  connect();
})();
</script>
</body>
</html>
`;

/**
 * The call explorer: every call the report covers, in order, with filters and a
 * search by call id; one call opens to its arguments, outcome, attempts with their programs,
 * tools, knowledge, effects and its call tree. The calls are a JSON block in the page (written
 * so that no text in them can end the block), read by the page's own script.
 */
import { MAX_EXPLORER_CALLS, MAX_EXPLORER_CHARS, scriptJson, type ExplorerData } from "../report-calls.ts";
import { EXPLORER_SCRIPT } from "./explorer-script.ts";
import { section } from "./markup.ts";

export function explorerSection(data: ExplorerData): string {
  const payload = scriptJson(data);
  const controls = `<div class="explorer-controls">
<label>role <select id="explorer-role"><option value="">all</option></select></label>
<label>method <select id="explorer-method"><option value="">all</option></select></label>
<label>outcome <select id="explorer-outcome"><option value="">all</option></select></label>
<label>from <input id="explorer-from" type="datetime-local" step="1"></label>
<label>to <input id="explorer-to" type="datetime-local" step="1"></label>
<label>call id <input id="explorer-search" type="search" placeholder="starts with…" size="12"></label>
</div>
<p class="note"><span id="explorer-count"></span> <button type="button" id="explorer-prev">previous</button> <button type="button" id="explorer-next">next</button></p>`;
  const table = `<table class="data calls" id="explorer-table"><thead><tr><th scope="col">call</th><th scope="col">ended (UTC)</th><th scope="col">role.method</th><th class="n" scope="col">ms</th><th scope="col">outcome</th><th class="n" scope="col">attempts</th><th class="n" scope="col">tools</th></tr></thead><tbody id="explorer-rows"></tbody></table>`;
  return section(
    "calls",
    "Calls",
    `Every call the report covers, in the order they ended (the latest ${data.calls.length}${data.leftOut > 0 ? ` of ${data.calls.length + data.leftOut}; ${data.leftOut} older calls left out, as the page keeps at most ${MAX_EXPLORER_CALLS.toLocaleString("en-US")} calls and ${MAX_EXPLORER_CHARS.toLocaleString("en-US")} characters of them` : ""}). Choose one to see its arguments, attempts and programs, tools and call tree.`,
    controls,
    table,
    `<div id="call-detail" class="call-detail"><p class="empty">Choose a call above.</p></div>`,
    `<script type="application/json" id="explorer-data">${payload}</script>`,
    `<script>${EXPLORER_SCRIPT}</script>`,
  );
}

/**
 * The call explorer's code, run by the browser from the page itself: it reads the calls from the
 * page's JSON block and builds every element with `textContent`, so nothing in a call (its
 * arguments, programs, messages) is ever read as HTML. 100 calls a page; filters by role, method,
 * outcome and time; a search by call id; `#call=<id>` opens a call.
 */
export const EXPLORER_SCRIPT = String.raw`
(() => {
  const data = JSON.parse(document.getElementById("explorer-data").textContent);
  const calls = data.calls;
  const PAGE = 100;
  const byId = new Map();
  const children = new Map();
  for (const call of calls) {
    if (!byId.has(call.id)) byId.set(call.id, call);
    if (call.parent !== null) {
      if (!children.has(call.parent)) children.set(call.parent, []);
      children.get(call.parent).push(call);
    }
  }
  const $ = (id) => document.getElementById(id);
  const el = (tag, text, className) => {
    const node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = String(text);
    if (className) node.className = className;
    return node;
  };
  const fill = (select, values) => {
    for (const value of values) select.append(new Option(value, value));
  };
  fill($("explorer-role"), [...new Set(calls.map((call) => call.role))].sort());
  fill($("explorer-method"), [...new Set(calls.map((call) => call.role + "." + call.method))].sort());
  fill($("explorer-outcome"), ["ok", "error", ...[...new Set(calls.map((call) => call.errorType).filter((type) => type !== null))].sort()]);
  let page = 0;
  let shown = calls;

  const when = (id) => {
    const value = $(id).value;
    return value === "" ? null : Date.parse(value + "Z");
  };
  const matches = (call) => {
    const role = $("explorer-role").value, method = $("explorer-method").value, outcome = $("explorer-outcome").value;
    const search = $("explorer-search").value.trim().toLowerCase();
    if (role !== "" && call.role !== role) return false;
    if (method !== "" && call.role + "." + call.method !== method) return false;
    if (outcome === "ok" && call.status !== "ok") return false;
    if (outcome === "error" && call.status === "ok") return false;
    if (outcome !== "" && outcome !== "ok" && outcome !== "error" && call.errorType !== outcome) return false;
    if (search !== "" && !call.id.toLowerCase().startsWith(search)) return false;
    const from = when("explorer-from"), to = when("explorer-to");
    const at = call.time === null ? NaN : Date.parse(call.time);
    if (from !== null && !(at >= from)) return false;
    if (to !== null && !(at <= to)) return false;
    return true;
  };
  const outcomeOf = (call) => (call.status === "ok" ? "ok" : "error " + (call.errorType || ""));
  const ms = (value) => (value === null ? "-" : value < 10 ? value.toFixed(2) : String(Math.round(value)));

  const render = () => {
    const pages = Math.max(1, Math.ceil(shown.length / PAGE));
    page = Math.min(page, pages - 1);
    const body = $("explorer-rows");
    body.replaceChildren();
    for (const call of shown.slice(page * PAGE, page * PAGE + PAGE)) {
      const row = el("tr");
      row.dataset.call = call.id;
      const open = el("button", call.id.slice(0, 8), "call-id");
      open.type = "button";
      open.title = call.id;
      open.addEventListener("click", () => show(call.id));
      const idCell = el("th");
      idCell.scope = "row";
      idCell.append(open);
      row.append(idCell, el("td", call.time === null ? "-" : call.time.replace("T", " ").replace("Z", "")), el("td", "  ".repeat(Math.min(call.depth, 10)) + call.role + "." + call.method), el("td", ms(call.durationMs), "n"), el("td", outcomeOf(call)), el("td", String(call.attempts.length || "-"), "n"), el("td", String(call.tools.count), "n"));
      body.append(row);
    }
    $("explorer-count").textContent = shown.length + " of " + calls.length + " calls" + (data.leftOut > 0 ? " (" + data.leftOut + " older calls left out)" : "") + ", page " + (page + 1) + " of " + pages;
    $("explorer-prev").disabled = page === 0;
    $("explorer-next").disabled = page >= pages - 1;
  };
  const refilter = () => {
    shown = calls.filter(matches);
    page = 0;
    render();
  };
  for (const id of ["explorer-role", "explorer-method", "explorer-outcome", "explorer-from", "explorer-to", "explorer-search"]) $(id).addEventListener("input", refilter);
  $("explorer-prev").addEventListener("click", () => { page -= 1; render(); });
  $("explorer-next").addEventListener("click", () => { page += 1; render(); });

  const field = (list, name, value) => {
    list.append(el("dt", name), el("dd", value));
  };
  const program = (key) => {
    const text = key === null ? undefined : data.programs[key];
    return el("pre", text === undefined ? "(not in the log)" : text, "program");
  };
  const treeOf = (call, current, depth) => {
    const item = el("li");
    const open = el("button", call.role + "." + call.method + " " + outcomeOf(call) + " (" + call.id.slice(0, 8) + ")", call.id === current ? "call-id current" : "call-id");
    open.type = "button";
    open.addEventListener("click", () => show(call.id));
    item.append(open);
    const below = children.get(call.id) || [];
    if (below.length > 0 && depth < 64) {
      const list = el("ul");
      for (const child of below) list.append(treeOf(child, current, depth + 1));
      item.append(list);
    }
    return item;
  };
  const show = (id) => {
    const call = byId.get(id);
    const detail = $("call-detail");
    detail.replaceChildren();
    if (call === undefined) {
      detail.append(el("p", "No call " + id + " in this report.", "empty"));
      return;
    }
    detail.dataset.call = call.id;
    detail.append(el("h3", call.role + "." + call.method + " · " + outcomeOf(call)));
    const facts = el("dl");
    field(facts, "call id", call.id);
    if (call.parent !== null) field(facts, "called by", call.parent);
    if (call.trace !== null) field(facts, "trace", call.trace);
    field(facts, "ended", call.time === null ? "-" : call.time);
    field(facts, "duration", ms(call.durationMs) + " ms");
    field(facts, "args", call.args);
    field(facts, "kwargs", call.kwargs);
    if (call.errorMessage !== null) field(facts, "error", (call.errorType || "") + ": " + call.errorMessage);
    if (call.repairSkipped !== null) field(facts, "not repaired", call.repairSkipped);
    if (call.tokens !== null) field(facts, "tokens", call.tokens.prompt + " prompt + " + call.tokens.completion + " completion");
    field(facts, "tool calls", call.tools.count + (call.tools.names.length ? " (" + call.tools.names.join(", ") + ")" : "") + (call.tools.errors ? ", " + call.tools.errors + " failed" : ""));
    if (call.knowledge.sources.length > 0) field(facts, "knowledge", call.knowledge.sources.join(", ") + ": " + call.knowledge.retrieved + " passages" + (call.knowledge.failed.length ? ", failed: " + call.knowledge.failed.join(", ") : "") + (call.knowledge.empty.length ? ", found nothing: " + call.knowledge.empty.join(", ") : ""));
    if (call.effects !== null) field(facts, "effects", Object.entries(call.effects).map(([state, count]) => count + " " + state).join(", ") + (call.onFailure ? " (onFailure " + call.onFailure + ")" : ""));
    detail.append(facts);
    if (call.toolCalls !== null && call.toolCalls.length > 0) {
      const list = el("ol", undefined, "tool-calls");
      for (const tool of call.toolCalls) {
        list.append(el("li", tool.tool + " " + (tool.ok ? "ok" : "failed") + (tool.state ? " · " + tool.state : "") + (tool.url ? " · " + tool.status + " " + tool.url : "") + " · " + tool.input + (tool.error ? " · " + tool.error : "")));
      }
      detail.append(el("h4", "Tool calls"), list);
    }
    const attempts = el("ol", undefined, "attempts");
    if (call.attempts.length === 0) {
      detail.append(el("h4", "Program"), program(call.program));
    } else {
      detail.append(el("h4", "Attempts"));
      for (const attempt of call.attempts) {
        const item = el("li");
        item.dataset.attempt = String(attempt.n);
        item.append(el("p", "attempt " + attempt.n + " · " + (attempt.source || "no program") + (attempt.model ? " by " + attempt.model : "") + " · " + attempt.toolCalls + " tool calls" + (attempt.errorType ? " · " + attempt.errorType + ": " + (attempt.errorMessage || "") : " · ok")));
        if (attempt.source !== null) item.append(program(attempt.program));
        attempts.append(item);
      }
      detail.append(attempts);
    }
    let root = call;
    for (let steps = 0; root.parent !== null && byId.has(root.parent) && steps < 1000; steps += 1) root = byId.get(root.parent);
    if (root !== call || (children.get(call.id) || []).length > 0) {
      const tree = el("ul", undefined, "tree");
      tree.append(treeOf(root, call.id, 0));
      detail.append(el("h4", "Call tree"), tree);
    }
    if (location.hash !== "#call=" + call.id) history.replaceState(null, "", "#call=" + call.id);
  };
  refilter();
  const wanted = /^#call=(.+)$/.exec(location.hash);
  if (wanted) show(decodeURIComponent(wanted[1]));
})();
`;

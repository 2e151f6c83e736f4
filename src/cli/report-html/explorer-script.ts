/**
 * The call explorer's code, run by the browser from the page itself: it reads the calls from the
 * page's JSON block and builds every element with `textContent`, so nothing in a call (its
 * arguments, programs, messages) is ever read as HTML. 100 calls a page; filters by role, method,
 * outcome and time; a search by call id; `#call=<id>` (percent-encoded) opens a call. Lines that
 * carry the same call id (a call read from its log and its store, or a line claiming another's
 * id) are each listed and opened on their own, and each call's detail names the others. A call
 * tree draws each call id once, cycles cut, at most 2,000 of them.
 */
export const EXPLORER_SCRIPT = String.raw`
(() => {
  const data = JSON.parse(document.getElementById("explorer-data").textContent);
  const calls = data.calls;
  const PAGE = 100;
  const TREE_NODES = 2000;
  const TREE_DEPTH = 64;
  const SHARED_LISTED = 20;
  // The lines carrying each call id, in order, and the ids of the calls each id called.
  const byId = new Map();
  const children = new Map();
  for (const call of calls) {
    if (!byId.has(call.id)) byId.set(call.id, []);
    byId.get(call.id).push(call);
    if (call.parent !== null && call.parent !== call.id) {
      if (!children.has(call.parent)) children.set(call.parent, new Set());
      children.get(call.parent).add(call.id);
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
      open.addEventListener("click", () => show(call));
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
    return el("pre", text === undefined ? "(not in this report: not in the lines read, or past the page's room for programs)" : text, "program");
  };
  // The tree below id, each id drawn once (so a cycle of callers ends), until drawn holds TREE_NODES or TREE_DEPTH levels.
  const treeOf = (id, current, drawn, depth) => {
    drawn.add(id);
    const call = byId.get(id)[0];
    const item = el("li");
    const open = el("button", call.role + "." + call.method + " " + outcomeOf(call) + " (" + call.id.slice(0, 8) + ")", call.id === current ? "call-id current" : "call-id");
    open.type = "button";
    open.addEventListener("click", () => show(call));
    item.append(open);
    const list = el("ul");
    for (const child of children.get(id) || []) {
      if (drawn.has(child) || drawn.size >= TREE_NODES || depth >= TREE_DEPTH) continue;
      list.append(treeOf(child, current, drawn, depth + 1));
    }
    if (list.childElementCount > 0) item.append(list);
    return item;
  };
  const reachable = (root) => {
    const seen = new Set([root]);
    const queue = [root];
    for (let next = 0; next < queue.length; next += 1) {
      for (const child of children.get(queue[next]) || []) {
        if (!seen.has(child)) {
          seen.add(child);
          queue.push(child);
        }
      }
    }
    return seen.size;
  };
  // The lines that carry the same call id as call, each to open, and on what they disagree.
  const sharedWith = (call) => {
    const lines = byId.get(call.id);
    const differ = [["role", (line) => line.role], ["method", (line) => line.method], ["outcome", outcomeOf], ["caller", (line) => line.parent]].filter(([, of]) => lines.some((line) => of(line) !== of(call))).map(([name]) => name);
    const box = el("div", undefined, "shared notice");
    box.append(el("p", lines.length + " lines carry this call id" + (differ.length > 0 ? ", and they disagree on " + differ.join(", ") + ": one may claim another call's id." : ", and they agree on role, method, outcome and caller: the same call read twice (from its log and its store, say).")));
    const list = el("ul");
    for (const line of lines.slice(0, SHARED_LISTED)) {
      const open = el("button", outcomeOf(line) + " · ended " + (line.time === null ? "-" : line.time) + " · read from " + line.source, line === call ? "call-id current" : "call-id");
      open.type = "button";
      open.addEventListener("click", () => show(line));
      const item = el("li");
      item.append(open);
      list.append(item);
    }
    if (lines.length > SHARED_LISTED) list.append(el("li", "… and " + (lines.length - SHARED_LISTED) + " more"));
    box.append(list);
    return box;
  };
  const show = (call) => {
    const detail = $("call-detail");
    detail.replaceChildren();
    detail.dataset.call = call.id;
    detail.append(el("h3", call.role + "." + call.method + " · " + outcomeOf(call)));
    if (byId.get(call.id).length > 1) detail.append(sharedWith(call));
    const facts = el("dl");
    field(facts, "call id", call.id);
    field(facts, "read from", call.source);
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
    // Up the callers to the first, each id once: a cycle of callers ends where it began.
    let root = call.id;
    const above = new Set([root]);
    for (let parent = call.parent; parent !== null && byId.has(parent) && !above.has(parent); parent = byId.get(parent)[0].parent) {
      above.add(parent);
      root = parent;
    }
    if (root !== call.id || children.has(call.id)) {
      const tree = el("ul", undefined, "tree");
      const drawn = new Set();
      tree.append(treeOf(root, call.id, drawn, 0));
      detail.append(el("h4", "Call tree"), tree);
      const more = reachable(root) - drawn.size;
      if (more > 0) detail.append(el("p", "… and " + more + " more calls in this tree, not drawn.", "note tree-more"));
    }
    const address = "#call=" + encodeURIComponent(call.id);
    if (location.hash !== address) history.replaceState(null, "", address);
  };
  refilter();
  const decoded = (text) => {
    try {
      return decodeURIComponent(text);
    } catch {
      return null;
    }
  };
  const wanted = /^#call=(.+)$/.exec(location.hash);
  if (wanted) {
    // The first line that carries the id; its detail names any other.
    const id = decoded(wanted[1]);
    if (id !== null && byId.has(id)) show(byId.get(id)[0]);
    else $("call-detail").replaceChildren(el("p", "No call " + (id ?? wanted[1]) + " in this report.", "empty"));
  }
})();
`;

// kt studio's page: hand-written, no framework, no build step. Routes live in the URL hash:
//   #/                      the runs (and experiments)
//   #/run/ID[/TAB]          a run: live | timeline | kernels | steer
// Data comes from /api/...; a server-sent event says when a run (or the list) changed, and the page fetches
// again. State-changing requests carry the session token from the page's <meta>.
"use strict";

const TOKEN = document.querySelector('meta[name="kt-studio-token"]').content;
const READ_ONLY = document.querySelector('meta[name="kt-studio-read-only"]').content === "true";
const ACCESS = new URLSearchParams(location.search).get("access");
const main = document.getElementById("main");
let source = null; // the EventSource of the current view
let view = null; // what is shown: {kind, id, tab, data, history}

const esc = (s) =>
  String(s ?? "").replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
const fmt = (v, digits = 2) => (v === null || v === undefined ? "–" : Number(v).toFixed(digits));
const duration = (s) => (s === null || s === undefined ? "–" : s < 90 ? `${s.toFixed(1)} s` : `${(s / 60).toFixed(1)} min`);
const $ = (sel, root = document) => root.querySelector(sel);

function withAccess(url) {
  return ACCESS ? url + (url.includes("?") ? "&" : "?") + "access=" + encodeURIComponent(ACCESS) : url;
}

async function api(path, body) {
  const opts = { headers: {} };
  if (ACCESS) opts.headers["x-kt-studio-access"] = ACCESS;
  if (body !== undefined) {
    opts.method = "POST";
    opts.headers["content-type"] = "application/json";
    opts.headers["x-kt-studio-token"] = TOKEN;
    opts.body = JSON.stringify(body);
  }
  const r = await fetch(path, opts);
  const data = await r.json().catch(() => ({ error: `HTTP ${r.status}` }));
  if (!r.ok) throw new Error(data.error || `HTTP ${r.status}`);
  return data;
}

function toast(text, bad) {
  const t = $("#toast");
  t.textContent = text;
  t.className = bad ? "bad" : "";
  t.hidden = false;
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => (t.hidden = true), 6000);
}

function listen(url, onChange) {
  if (source) source.close();
  const mine = new EventSource(withAccess(url));
  source = mine;
  mine.addEventListener("change", onChange);
  mine.onopen = () => $("#live").classList.add("on");
  mine.onerror = () => {
    $("#live").classList.remove("on");
    // the browser gives up on a refused stream (a run opened while it is still starting): try again while
    // this view stands
    if (mine.readyState === EventSource.CLOSED)
      setTimeout(() => source === mine && listen(url, onChange), 250);
  };
}

// ---------------------------------------------------------------- runs

async function showRuns() {
  view = { kind: "runs" };
  $("#crumb").textContent = "runs";
  main.innerHTML = `
    <section><div class="bar">
      <input id="run-filter" type="search" placeholder="search kernel, strategy, model, id…">
      <select id="status-filter"><option value="">any status</option><option>running</option>
        <option>finished</option><option>failed</option><option>interrupted</option></select>
      <span id="run-count" class="muted"></span><span id="runs-dir" class="muted"></span></div>
      <table id="runs"><thead><tr><th>run</th><th>kernel</th><th>strategy</th><th>model</th><th>status</th>
        <th>speedup</th><th>duration</th></tr></thead><tbody></tbody></table></section>
    <section id="experiments"></section>`;
  $("#run-filter").addEventListener("input", filterRuns);
  $("#status-filter").addEventListener("change", filterRuns);
  listen("/api/events", refreshRuns);
}

async function refreshRuns() {
  if (view?.kind !== "runs") return;
  const data = await api("/api/runs");
  // the user may have opened a run while the list was on its way
  if (view?.kind !== "runs") return;
  view.data = data;
  $("#runs-dir").innerHTML = `runs in <code>${esc(data.runs_dir)}</code>`;
  $("#runs tbody").innerHTML = data.runs.length
    ? runRows(data.runs)
    : `<tr id="no-runs"><td colspan="7" class="muted">No runs in <code>${esc(data.runs_dir)}</code>${data.runs_dir_exists ? "" : " (the directory does not exist)"}.
        <code>kt transform FILE</code> writes its runs there; start the studio with <code>--runs-dir DIR</code> (or set <code>$KT_RUNS_DIR</code>) to look elsewhere.</td></tr>`;
  filterRuns();
  $("#experiments").innerHTML = experimentTables(data.experiments);
}

function runRows(runs) {
  return runs
    .slice()
    .reverse()
    .map(
      (r) => `<tr class="run-row" data-run="${esc(r.id)}" data-status="${esc(r.status)}"
        data-text="${esc([r.id, r.kernel, r.strategy, r.model].join(" ").toLowerCase())}">
        <td><a href="#/run/${encodeURIComponent(r.id)}">${esc(r.id)}</a>${r.recorded_id ? ` <span class="muted copy" title="run.json names another run: this directory is a copy or was renamed">(a copy of ${esc(r.recorded_id)})</span>` : ""}</td><td>${esc(r.kernel)}</td>
        <td>${esc(r.strategy)}</td><td>${esc(r.model)}</td>
        <td><span class="status ${esc(r.status)}">${esc(r.status)}</span>${r.waiting_for ? ' <span class="status waiting">waiting for an answer</span>' : ""}</td>
        <td>${r.speedup ? fmt(r.speedup) + "×" : "–"}</td><td>${duration(r.duration_s)}</td></tr>`
    )
    .join("");
}

function experimentTables(experiments) {
  return experiments
    .map(
      (e) => `<h2>experiment ${esc(e.name)}</h2><table class="cells"><thead><tr><th>cell</th><th>kernel</th>
        <th>variant</th><th>model</th><th>repeat</th><th>status</th><th>speedup</th><th>time</th><th>tokens</th></tr></thead><tbody>
        ${e.cells
          .map(
            (c) => `<tr><td>${c.run ? `<a href="#/run/${encodeURIComponent(c.run)}">${esc(c.cell_id)}</a>` : esc(c.cell_id)}</td>
            <td>${esc(c.kernel)}</td><td>${esc(c.variant)}</td><td>${esc(c.model)}</td><td>${c.repeat}</td>
            <td>${esc(c.status)}</td><td>${c.speedup ? fmt(c.speedup) + "×" : "–"}</td><td>${duration(c.elapsed_s)}</td>
            <td>${c.llm_tokens ?? "–"}</td></tr>`
          )
          .join("")}</tbody></table>`
    )
    .join("");
}

function filterRuns() {
  const q = $("#run-filter").value.trim().toLowerCase();
  const st = $("#status-filter").value;
  let shown = 0;
  for (const row of document.querySelectorAll("#runs .run-row")) {
    const ok = (!q || row.dataset.text.includes(q)) && (!st || row.dataset.status === st);
    row.hidden = !ok;
    shown += ok;
  }
  $("#run-count").textContent = `${shown} of ${view.data?.runs.length ?? 0} runs`;
}

// ---------------------------------------------------------------- a run

const TABS = ["live", "timeline", "kernels", "steer"];

async function showRun(id, tab) {
  const same = view?.kind === "run" && view.id === id;
  view = { kind: "run", id, tab, data: same ? view.data : null, sections: same ? view.sections : null, history: null };
  $("#crumb").innerHTML = `<a href="#/">runs</a> / ${esc(id)}`;
  main.innerHTML = `<section id="run-summary"></section>
    <nav class="tabs">${TABS.map((t) => `<a id="tab-${t}" class="${t === tab ? "on" : ""}" href="#/run/${encodeURIComponent(id)}/${t}">${t}</a>`).join("")}</nav>
    <div id="tab"></div>`;
  if (tab === "timeline") renderTimelineShell();
  if (tab === "kernels") {
    if (view.sections) renderKernels(view.sections);
    else $("#tab").innerHTML = '<p class="muted">reading kernel versions, verdicts and tuning…</p>';
  }
  // fetched at once, beside the event stream (whose first event would ask for the same a round trip later)
  refreshRun(id);
  listen(`/api/runs/${encodeURIComponent(id)}/events`, () => refreshRun(id));
}

// One refresh of a run at a time: a change that lands during one asks for another once it is done.
async function refreshRun(id) {
  const v = view;
  if (v?.kind !== "run" || v.id !== id) return;
  if (v.refreshing) {
    v.again = true;
    return;
  }
  v.refreshing = true;
  try {
    await drawRun(v);
  } finally {
    v.refreshing = false;
    if (v.again && view === v) {
      v.again = false;
      refreshRun(id);
    }
  }
}

// The run's graph, summary and recent steps first; then its sections (LLM calls, tuning, kernels, charts),
// which take longer to read on a long run.
async function drawRun(v) {
  const run = encodeURIComponent(v.id);
  let data;
  try {
    data = await api(`/api/runs/${run}`);
  } catch (e) {
    // a run that is just starting (or a store busy with a write) answers later: say so, keep the page,
    // and draw the run at the next event
    if (view === v && $("#run-summary")) {
      $("#run-summary").innerHTML = `<p class="bad">${esc(e.message)}</p>`;
      v.dataText = null;
    }
    return;
  }
  if (view !== v) return;
  // a reconnect of the event stream re-sends "change": draw again only what changed, so that a click
  // or an open prompt is not lost to a redraw of the same page
  const text = JSON.stringify(data);
  if (v.dataText !== text) {
    v.dataText = text;
    v.data = data;
    renderSummary(data);
    speedupSoFar();
    if (v.tab === "live") renderLive(data);
    if (v.tab === "steer") renderSteer(data);
    if (v.tab === "kernels" && v.sections) renderKernels(v.sections);
    if (v.tab === "timeline") {
      refreshTimeline();
      forkBoxState(data);
    }
  }
  let sections;
  try {
    sections = await api(`/api/runs/${run}/sections`);
  } catch (e) {
    if (view === v) toast(`the run's LLM calls, kernels and tuning could not be read: ${e.message}`, true);
    return;
  }
  if (view !== v) return;
  const sectionsText = JSON.stringify(sections);
  if (v.sectionsText === sectionsText && $("#tab").dataset.sections === "loaded") return;
  v.sectionsText = sectionsText;
  v.sections = sections;
  renderSections();
}

// A run without its final speedup yet shows the best accepted step's so far, said as such.
function speedupSoFar() {
  const el = $("#speedup");
  const so = view.sections?.speedup_so_far;
  if (!el || view.data?.summary.speedup || !so) return;
  el.textContent = `${fmt(so)}× so far`;
  el.title = "the best accepted step's time against the original's, as measured while tuning; the run's own speedup is measured apart at its end";
}

// The sections into the tab shown (the live tab's lower half, or the kernels tab).
function renderSections() {
  const s = view.sections;
  if (!s) return;
  speedupSoFar();
  if (view.tab === "live" && $("#live-llm")) {
    $("#live-tuning").innerHTML = tuningProgress(s);
    $("#live-llm").innerHTML = llmCalls(s);
    bindLlmRows();
  }
  if (view.tab === "kernels") renderKernels(s);
  $("#tab").dataset.sections = "loaded";
}

// How long the run took; while it runs, how far into it its newest checkpoint was written (from the run's
// own clock, so a copy of a run's files read later says the same).
function runTime(d) {
  const s = d.summary;
  if (s.duration_s !== null && s.duration_s !== undefined) return duration(s.duration_s);
  const last = d.steps[d.steps.length - 1]?.created_ms;
  const started = Date.parse(s.started);
  if (!last || Number.isNaN(started)) return "–";
  return `started ${esc(s.started.slice(11, 19))} UTC, newest checkpoint <b id="elapsed">${duration(Math.max(0, (last - started) / 1000))}</b> in`;
}

function renderSummary(d) {
  const s = d.summary;
  const el = $("#run-summary");
  el.dataset.head = d.head ?? "";
  el.dataset.steps = d.steps_total;
  el.dataset.status = s.status;
  el.innerHTML = `<div class="facts">
      <span class="status ${esc(s.status)}">${esc(s.status)}</span>
      <b>${esc(s.kernel)}</b> · ${esc(s.strategy)} · ${esc(s.model)}
      · speedup <b id="speedup">${s.speedup ? fmt(s.speedup) + "×" : "–"}</b>
      · ${runTime(d)} · head <b id="head">#${d.head ?? "–"}</b> · ${d.steps_total} steps
      ${d.running.length ? `· running <b id="running">${esc(d.running.join(", "))}</b>` : ""}
    </div>
    ${runState(d)}`;
}

// `text` escaped, with its `backticked` commands as <code>.
function codeSpans(text) {
  return esc(text)
    .split("`")
    .map((part, i) => (i % 2 ? `<code>${part}</code>` : part))
    .join("");
}

// What happened to a run without a final result and what to do next: the command line's own words.
function runState(d) {
  const st = d.state;
  if (!st) return "";
  const steer = d.waiting_for && !READ_ONLY ? ` Or answer it here, in the <a href="#/run/${encodeURIComponent(view.id)}/steer">steer</a> tab.` : "";
  return `<div id="run-state" class="state ${esc(d.summary.status)}"><strong>${codeSpans(st.headline)}</strong> ${codeSpans(st.detail)}${steer}
    ${st.command ? `<div class="bar"><code id="next-command">${esc(st.command)}</code></div>` : ""}</div>`;
}

function stepRows(steps) {
  return steps
    .slice()
    .reverse()
    .map(
      (p) => `<tr data-checkpoint="${p.checkpoint}"><td>#${p.checkpoint}</td><td>b${p.branch}</td>
        <td>${esc(p.nodes.map((n) => n.node + (n.attempts > 1 ? ` (attempt ${n.attempts})` : "")).join(", ") || p.source)}</td>
        <td>${fmt(Math.max(0, ...p.nodes.map((n) => n.seconds)))} s</td><td>${p.tokens_in + p.tokens_out || ""}</td>
        <td>${esc(p.outcome)}</td><td>${esc(p.next.join(", "))}</td></tr>`
    )
    .join("");
}

// The live tab: the graph and the tuning as it happens on the left; the recent steps and the LLM calls on
// the right, each in a box of its own height, so that everything a person watches fits one screen.
function renderLive(d) {
  $("#tab").innerHTML = `<div class="cols">
    <div class="col"><section><h2>graph ${d.stage3 ? "" : `<span class="muted">(${esc(d.graph_run.split("/").pop())}: the run has not reached Stage 3)</span>`}</h2>
      ${d.stage3 ? "" : `<p id="graph-stage" class="muted">The run has no Stage 3 yet, so this is the path it took in ${esc(d.graph_run.split("/").pop())}, drawn from its steps; the strategy's graph is drawn once Stage 3 runs.</p>`}
      <div id="graph">${d.graph_svg}</div>
      <p class="muted">orange: the path taken; pulsing: running now; dashed: routes (hover an edge for its kind)</p></section>
      <section><h2>tuning progress</h2><div id="live-tuning">${view.sections ? tuningProgress(view.sections) : '<p class="muted">reading…</p>'}</div></section></div>
    <div class="col grow"><section><h2>steps <span class="muted">(latest first, ${d.steps.length} of ${d.steps_total}; all of them in the timeline)</span></h2>
      <div class="scroll"><table id="steps"><thead><tr><th>cp</th><th>branch</th><th>nodes</th><th>time</th><th>tokens</th><th>outcome</th><th>next</th></tr></thead>
      <tbody>${stepRows(d.steps)}</tbody></table></div></section>
      <section><div id="live-llm">${view.sections ? llmCalls(view.sections) : '<h2>LLM calls</h2><p class="muted">reading…</p>'}</div>
      <div id="llm-detail"></div></section></div></div>`;
  for (const n of d.running) $(`#graph g[data-node="${CSS.escape(n)}"]`)?.classList.add("running");
  bindLlmRows();
  // the prompt the user opened stays open while the run goes on
  if (view.llmDetail) $("#llm-detail").innerHTML = view.llmDetail;
}

// The live tab's LLM calls, newest first (a page section).
function llmCalls(s) {
  const rows = s.llm
    .slice()
    .reverse()
    .map(
      (c) => `<tr class="llm-row" data-index="${c.index}"><td>${c.index}</td><td>${esc(c.node)}</td><td>${esc(c.time.slice(11, 19))}</td>
        <td>${c.tokens_in}</td><td>${c.tokens_out}</td><td>${fmt(c.elapsed_ms / 1000, 1)} s</td></tr>
        ${c.error ? `<tr><td></td><td colspan="5" class="bad">${esc(c.error)}</td></tr>` : ""}`
    )
    .join("");
  const tokens = s.llm.reduce((t, c) => [t[0] + c.tokens_in, t[1] + c.tokens_out], [0, 0]);
  return `<h2>LLM calls <span class="muted">(newest first${s.llm.length < s.llm_total ? `, the newest ${s.llm.length} of ${s.llm_total}` : ""}; ${tokens[0]} tokens in, ${tokens[1]} out; click one for its prompt and answer)</span></h2>
    <div class="scroll short"><table id="llm" data-calls="${s.llm_total}"><thead><tr><th>#</th><th>node</th><th>time</th><th>tokens in</th><th>tokens out</th><th>took</th></tr></thead>
    <tbody>${rows || '<tr><td colspan="6" class="muted">no LLM call yet</td></tr>'}</tbody></table></div>`;
}

function bindLlmRows() {
  for (const row of document.querySelectorAll(".llm-row")) row.addEventListener("click", () => showLlm(row.dataset.index));
}

// A long run's lists come bounded to their newest items: say so.
function newestOf(shown, total) {
  return shown.length < total ? `<span class="muted">(the newest ${shown.length} of ${total})</span>` : "";
}

// A tuning configuration as `name=value, …` (it comes as [name, value] pairs or an object).
function configText(c) {
  if (c === null || c === undefined) return "";
  const pairs = Array.isArray(c) ? c : typeof c === "object" ? Object.entries(c) : null;
  if (!pairs || !pairs.every((p) => Array.isArray(p) && p.length === 2)) return JSON.stringify(c);
  return pairs.map(([k, v]) => `${k}=${typeof v === "string" ? v : JSON.stringify(v)}`).join(", ");
}

// One row per tuning: those the tuner is writing (per kernel source, as it measures each configuration) and
// those the run's state records as a candidate's; a tuning whose best time is a candidate's is one row, named by
// its candidate.
function tuningProgress(d) {
  if (!d.tuning_progress.length && !d.tuning.length) return `<p class="muted">nothing tuned yet</p>`;
  const taken = new Set();
  const sameTime = (a, b) => a !== null && a !== undefined && b !== null && b !== undefined && Math.abs(a - b) <= 1e-6 * Math.max(1, Math.abs(a));
  const live = d.tuning_progress
    .map((p) => {
      const k = d.tuning.findIndex((t, i) => !taken.has(i) && sameTime(t.time_ms, p.best_ms));
      if (k >= 0) taken.add(k);
      const t = d.tuning[k];
      const what = t
        ? `round ${t.round} · #${t.index}: ${esc(t.verdict)}`
        : `<span class="muted">${view.data?.summary.status === "running" ? "not (yet) a candidate's" : "not a candidate's"}</span>`;
      return `<tr><td>${what}</td><td><code title="the tuner's hash of the kernel source it measures">${esc(p.source.slice(0, 12))}</code></td><td>${p.measured}</td><td>${p.failed}</td><td>${fmt(p.best_ms, 4)}</td><td><code>${esc(configText(p.best_config))}</code></td></tr>`;
    })
    .join("");
  const done = d.tuning
    .filter((_, i) => !taken.has(i))
    .map((t) => `<tr><td>round ${t.round} · #${t.index}: ${esc(t.verdict)}</td><td class="muted">–</td><td>${t.configs_tried ?? "–"}</td><td>${t.configs_failed ?? "–"}</td><td>${fmt(t.time_ms, 4)}</td><td><code>${esc(t.best_params)}</code></td></tr>`)
    .join("");
  return `<table><thead><tr><th>candidate</th><th>kernel</th><th>configs</th><th>failed</th><th>best ms</th><th>best configuration</th></tr></thead><tbody>${live}${done}</tbody></table>`;
}

async function showLlm(index) {
  const id = view.id;
  const c = await api(`/api/runs/${encodeURIComponent(id)}/llm/${index}`);
  if (view?.id !== id || !$("#llm-detail")) return;
  view.llmDetail = $("#llm-detail").innerHTML = `<h3>call ${index}: ${esc(c.node)} · ${esc(c.provider)}:${esc(c.model)} · ${c.elapsed_ms} ms</h3>
    ${c.messages.map((m) => `<h4>${esc(m.role)}</h4><pre class="prompt">${esc(m.content)}</pre>`).join("")}
    <h4>raw answer</h4><pre class="answer">${esc(c.answer ?? c.error ?? "")}</pre>`;
}

// ---------------------------------------------------------------- time travel

function renderTimelineShell() {
  $("#tab").innerHTML = `<section><h2>checkpoints <span id="timeline-count" class="muted"></span></h2>
    <div class="bar"><button id="timeline-earlier" hidden>load earlier checkpoints</button>
      <label>zoom <input id="timeline-zoom" type="range" min="1" max="24" step="0.5"></label>
      <label>jump to # <input id="jump-to" size="7"></label><button id="jump-btn">go</button>
      <label>range # <input id="range-from" size="7"></label><label>to # <input id="range-to" size="7"></label><button id="range-btn">show range</button>
      <button id="timeline-newest" hidden>back to the newest</button></div><div id="timeline"></div>
    <div class="bar"><label>A <input id="cp-a" size="6" placeholder="#"></label>
      <label>B <input id="cp-b" size="6" placeholder="#"></label>
      <button id="show-state">state at A</button><button id="show-diff">diff A → B</button>
      <span class="muted">click a checkpoint for its state (A); shift-click another for the diff from A to it (B); hover one for what ran</span></div></section>
    <section id="fork-box" ${READ_ONLY ? "hidden" : ""}><h2>fork from A with an edited field</h2>
      <p id="fork-note" class="muted">pick checkpoint A on the timeline: its fields are offered here, with their types</p>
      <div class="bar"><select id="fork-field"><option value="">(pick checkpoint A)</option></select>
      <textarea id="fork-value" rows="2" cols="50" placeholder="value (JSON, else text)"></textarea>
      <button id="fork-btn">fork</button></div><div id="fork-result"></div></section>
    <section id="cp-views"><div id="state-view"></div><div id="diff-view"></div></section>`;
  $("#show-state").addEventListener("click", showState);
  $("#show-diff").addEventListener("click", showDiff);
  $("#fork-btn").addEventListener("click", doFork);
  $("#timeline-earlier").addEventListener("click", loadEarlierCheckpoints);
  $("#timeline-zoom").addEventListener("input", (e) => {
    view.zoom = Number(e.target.value);
    drawTimeline(false);
  });
  $("#jump-btn").addEventListener("click", () => jumpTo($("#jump-to").value));
  $("#jump-to").addEventListener("keydown", (e) => e.key === "Enter" && jumpTo($("#jump-to").value));
  $("#range-btn").addEventListener("click", () => showRange($("#range-from").value, $("#range-to").value));
  $("#timeline-newest").addEventListener("click", () => {
    view.history = null;
    refreshTimeline();
  });
  // a shift-click picks B: it must not select the page's text on the way
  $("#timeline").addEventListener("mousedown", (e) => e.shiftKey && e.preventDefault());
  // a click shows the state at that checkpoint; a shift-click the diff from A to it
  $("#timeline").addEventListener("click", (e) => {
    const cp = e.target.closest("[data-cp]")?.dataset.cp;
    if (cp) pickCheckpoint(cp, e.shiftKey);
  });
  // scrolled back to the start of what is loaded: load the page before it
  $("#timeline").addEventListener("scroll", (e) => {
    if (e.target.scrollLeft === 0 && view?.history?.more) loadEarlierCheckpoints();
  });
  refreshTimeline();
}

// The timeline loads the newest page of checkpoints (the server's page size) and older pages on demand, so a
// run of 10,000 checkpoints draws as fast as a short one.
async function refreshTimeline() {
  if (!$("#timeline")) return;
  const id = view.id;
  // a range or a jump the user asked for stays until "back to the newest"
  if (view.history?.window) return;
  const h = await api(`/api/runs/${encodeURIComponent(id)}/history`);
  if (view?.id !== id || !$("#timeline") || view.history?.window) return;
  // the newest page replaces what it covers; older pages the user loaded stay
  const lowest = h.checkpoints.length ? h.checkpoints[0].checkpoint : Infinity;
  const earlier = (view.history?.checkpoints ?? []).filter((c) => c.checkpoint < lowest);
  const more = earlier.length ? view.history.more : h.more;
  view.history = { ...h, checkpoints: earlier.concat(h.checkpoints), more };
  drawTimeline(true);
}

const checkpointNumber = (text) => {
  const n = Number(String(text).replace("#", "").trim());
  return Number.isInteger(n) && n >= 0 ? n : null;
};

// The checkpoints around #N, N picked as A with its state shown.
async function jumpTo(text) {
  const n = checkpointNumber(text);
  if (n === null) return toast("jump to: give a checkpoint number, e.g. 1 or #1", true);
  const around = 100;
  if (!(await loadWindow(n + around + 1, 2 * around + 1))) return;
  if (!view.history.checkpoints.some((c) => c.checkpoint === n)) return toast(`this run has no checkpoint #${n}`, true);
  pickCheckpoint(String(n), false);
  centerOn(n);
}

// Exactly the checkpoints #from to #to (at most the server's page bound).
async function showRange(fromText, toText) {
  const [from, to] = [checkpointNumber(fromText), checkpointNumber(toText)];
  if (from === null || to === null || to < from) return toast("range: give two checkpoint numbers, the first not after the second", true);
  if (await loadWindow(to + 1, to - from + 1)) centerOn(from);
}

async function loadWindow(before, limit) {
  const id = view.id;
  try {
    const page = await api(`/api/runs/${encodeURIComponent(id)}/history?before=${before}&limit=${limit}`);
    if (view?.id !== id) return false;
    view.history = { ...page, window: true };
    drawTimeline(false);
    return true;
  } catch (e) {
    toast(e.message, true);
    return false;
  }
}

function centerOn(n) {
  const el = $("#timeline");
  const c = el.querySelector(`circle[data-cp="${n}"]`);
  if (c) el.scrollLeft = Number(c.getAttribute("cx")) - el.clientWidth / 2;
}

// A click picks A (and shows its state); a shift-click picks B (and shows the diff from A).
function pickCheckpoint(cp, asB) {
  (asB ? $("#cp-b") : $("#cp-a")).value = cp;
  view[asB ? "pickB" : "pickA"] = cp;
  for (const c of document.querySelectorAll("#timeline circle.cp")) {
    c.classList.toggle("picked", c.dataset.cp === view.pickA);
    c.classList.toggle("picked-b", c.dataset.cp === view.pickB);
  }
  if (asB && $("#cp-a").value.trim()) showDiff();
  else if (!asB) showState();
}

async function loadEarlierCheckpoints() {
  const h = view?.history;
  if (!h?.more || view.loadingEarlier) return;
  const id = view.id;
  view.loadingEarlier = true;
  try {
    const page = await api(`/api/runs/${encodeURIComponent(id)}/history?before=${h.checkpoints[0].checkpoint}`);
    // the newest page may have been fetched again meanwhile (a change of the run): add to what is shown now
    const now = view?.id === id ? view.history : null;
    if (!now) return;
    const first = now.checkpoints[0]?.checkpoint ?? Infinity;
    now.checkpoints = page.checkpoints.filter((c) => c.checkpoint < first).concat(now.checkpoints);
    now.more = page.more;
    now.total = page.total;
    drawTimeline(false);
  } finally {
    view.loadingEarlier = false;
  }
}

function drawTimeline(toNewest) {
  const h = view.history;
  const el = $("#timeline");
  const fromRight = el.scrollWidth - el.scrollLeft;
  el.innerHTML = timelineSvg(h);
  el.dataset.checkpoints = h.checkpoints.length;
  el.dataset.total = h.total;
  el.dataset.branches = h.branches.length;
  // the newest checkpoints in view; after loading earlier ones, the same checkpoints stay where they were
  el.scrollLeft = toNewest ? el.scrollWidth : el.scrollWidth - fromRight;
  const [lo, hi] = [h.checkpoints[0]?.checkpoint, h.checkpoints[h.checkpoints.length - 1]?.checkpoint];
  $("#timeline-count").textContent = h.window
    ? `(#${lo} to #${hi}: ${h.checkpoints.length} of ${h.total})`
    : h.more
      ? `(the newest ${h.checkpoints.length} of ${h.total})`
      : `(${h.total})`;
  $("#timeline-earlier").hidden = !h.more;
  $("#timeline-newest").hidden = !h.window;
  $("#timeline-zoom").value = timelineStep(h.checkpoints.length);
}

// Pixels between checkpoints: the user's zoom, else what fits a long run on a screen or two.
function timelineStep(n) {
  return view.zoom ?? (n > 400 ? Math.max(1.2, 1600 / n) : 22);
}

// Lanes per branch, x by checkpoint order; each branch starts under the checkpoint it came from.
function timelineSvg(h) {
  const cps = h.checkpoints;
  const n = cps.length;
  const step = timelineStep(n);
  const lanes = [...new Set(cps.map((c) => c.branch))].sort((a, b) => a - b);
  const laneY = (b) => 24 + lanes.indexOf(b) * 34;
  const xOf = new Map();
  const byId = new Map();
  cps.forEach((c, i) => {
    xOf.set(c.checkpoint, 60 + i * step);
    byId.set(c.checkpoint, c);
  });
  // a short run gets each checkpoint's node written under it; a long one keeps them in the tooltips
  const labelled = step >= 18 && n <= 400;
  const w = 80 + n * step;
  const hgt = 40 + lanes.length * 34 + (labelled ? 70 : 0);
  let s = `<svg id="timeline-svg" xmlns="http://www.w3.org/2000/svg" width="${w}" height="${hgt}">`;
  for (const b of lanes) s += `<text x="4" y="${laneY(b) + 4}" class="lane">b${b}</text>`;
  for (const c of cps) {
    if (c.parent === null || !xOf.has(c.parent)) continue;
    const p = byId.get(c.parent);
    if (!p || (p.branch === c.branch && step < 6)) continue;
    s += `<line x1="${xOf.get(c.parent)}" y1="${laneY(p.branch)}" x2="${xOf.get(c.checkpoint)}" y2="${laneY(c.branch)}" class="link"/>`;
  }
  const span = new Map();
  for (const c of cps) {
    const x = xOf.get(c.checkpoint);
    const [lo, hi] = span.get(c.branch) ?? [x, x];
    span.set(c.branch, [Math.min(lo, x), Math.max(hi, x)]);
  }
  for (const [b, [lo, hi]] of span) s += `<line x1="${lo}" x2="${hi}" y1="${laneY(b)}" y2="${laneY(b)}" class="lane-line"/>`;
  const r = step >= 14 ? 6 : Math.max(2, step / 2.4);
  for (const c of cps) {
    const cls = c.stopped ? "stopped" : c.source === "fork" ? "fork" : c.next.length === 0 ? "end" : "";
    if (labelled) {
      const [x, y] = [xOf.get(c.checkpoint), laneY(c.branch) + 12];
      s += `<text class="cp-label" transform="translate(${x},${y}) rotate(50)">${esc(c.ran.join(",") || c.source)}</text>`;
    }
    s += `<circle data-cp="${c.checkpoint}" class="cp ${cls}${String(c.checkpoint) === view.pickA ? " picked" : ""}${String(c.checkpoint) === view.pickB ? " picked-b" : ""}" cx="${xOf.get(c.checkpoint)}" cy="${laneY(c.branch)}" r="${r}"><title>#${c.checkpoint} b${c.branch} step ${c.step} ${esc(c.source)} ${esc(c.ran.join(","))} → ${esc(c.next.join(","))}${c.stopped ? " (stopped: " + esc(c.stopped) + ")" : ""}</title></circle>`;
  }
  return s + "</svg>";
}

async function showState() {
  const at = $("#cp-a").value.replace("#", "").trim();
  if (!at) return toast("set checkpoint A first", true);
  try {
    const s = await api(`/api/runs/${encodeURIComponent(view.id)}/state?at=${encodeURIComponent(at)}`);
    $("#diff-view").innerHTML = "";
    forkFields(s);
    $("#state-view").innerHTML = `<h2>state at #${s.checkpoint}</h2>${Object.entries(s.state)
      .map(([k, v]) => `<details class="field"><summary><code>${esc(k)}</code> <span class="muted">${esc(preview(v))}</span></summary>${valueHtml(v)}</details>`)
      .join("")}`;
  } catch (e) {
    toast(e.message, true);
  }
}

function preview(v) {
  const t = typeof v === "string" ? v : JSON.stringify(v);
  return t.length > 90 ? t.slice(0, 90) + "…" : t;
}

function valueHtml(v) {
  return `<pre>${esc(typeof v === "string" ? v : JSON.stringify(v, null, 2))}</pre>`;
}

function leafHtml(l) {
  return `<div class="leaf"><code>${esc(l.path)}</code>${l.kind === "text" ? sideBySide(l.diff) : `<div class="value-change"><pre class="old">${esc(JSON.stringify(l.before))}</pre><span>→</span><pre class="new">${esc(JSON.stringify(l.after))}</pre></div>`}</div>`;
}

// An array item that is new (or gone) as a whole: one block with its values, not one "null → value" per leaf.
function itemHtml(g) {
  const side = g.kind === "added" ? "after" : "before";
  const rows = g.leaves.map((l) => `<tr><td><code>${esc(l.path.slice(g.item.length).replace(/^\./, "") || "(value)")}</code></td><td>${l.kind === "text" ? sideBySide(l.diff) : `<code>${esc(JSON.stringify(l[side]))}</code>`}</td></tr>`);
  return `<div class="leaf item ${g.kind}"><code>${esc(g.item)}</code> <span class="status">${g.kind}</span><table>${rows.join("")}</table></div>`;
}

// The leaves of a field, with those of an array item that is added or removed as a whole taken together.
function leafGroups(leaves) {
  const groups = [];
  for (const l of leaves) {
    const item = /^(.*?\[\d+\])/.exec(l.path)?.[1];
    const last = groups[groups.length - 1];
    if (item && last?.item === item) last.leaves.push(l);
    else groups.push({ item, leaves: [l] });
  }
  return groups.flatMap((g) => {
    if (!g.item) return [g];
    const none = (v) => v === null || v === undefined;
    // (a multi-line text inside the item comes as a diff, whichever way it went)
    const values = g.leaves.filter((l) => l.kind !== "text");
    const kind = !values.length
      ? null
      : values.every((l) => none(l.before) && !none(l.after))
        ? "added"
        : values.every((l) => none(l.after) && !none(l.before))
          ? "removed"
          : null;
    return kind ? [{ ...g, kind }] : g.leaves.map((l) => ({ leaves: [l] }));
  });
}

async function showDiff() {
  const a = $("#cp-a").value.replace("#", "").trim();
  const b = $("#cp-b").value.replace("#", "").trim();
  if (!a || !b) return toast("set checkpoints A and B first", true);
  try {
    const d = await api(`/api/runs/${encodeURIComponent(view.id)}/diff?a=${encodeURIComponent(a)}&b=${encodeURIComponent(b)}`);
    $("#state-view").innerHTML = "";
    view.diff = d;
    // A long run's diff holds tens of thousands of changes: each field is collapsible and drawn a page at a
    // time, and the fields open at first are those that fit one page, so the first screen comes at once.
    let budget = DIFF_PAGE;
    const open = d.changes.map((f) => {
      const fits = budget > 0;
      budget -= f.leaves.length;
      return fits;
    });
    $("#diff-view").innerHTML = `<h2>#${d.a} → #${d.b}: ${d.changes.length} field(s) changed
      <button id="diff-open-all">open all</button><button id="diff-close-all">collapse all</button></h2>${d.changes
      .map(
        (f, i) => `<details class="field-change" data-field="${esc(f.field)}" data-index="${i}" ${open[i] ? "open" : ""}>
          <summary><code>${esc(f.field)}</code> <span class="muted">${f.leaves.length} change(s)</span></summary><div class="field-body"></div></details>`
      )
      .join("")}`;
    for (const det of document.querySelectorAll("#diff-view details.field-change")) {
      if (det.open) fillField(det);
      det.addEventListener("toggle", () => det.open && fillField(det));
    }
    const all = (o) => document.querySelectorAll("#diff-view details.field-change").forEach((x) => (x.open = o));
    $("#diff-open-all").addEventListener("click", () => all(true));
    $("#diff-close-all").addEventListener("click", () => all(false));
  } catch (e) {
    toast(e.message, true);
  }
}

// Changes drawn at once per field, and rows of a text diff drawn at once; "show more" draws the rest.
const DIFF_PAGE = 150;
const TEXT_ROWS = 200;

// A field's changes, a page at a time.
function fillField(det) {
  if (det.dataset.filled) return;
  det.dataset.filled = "1";
  const groups = leafGroups(view.diff.changes[det.dataset.index].leaves);
  const body = det.querySelector(".field-body");
  let shown = 0;
  const more = () => {
    const next = groups.slice(shown, shown + DIFF_PAGE);
    shown += next.length;
    body.querySelector(":scope > .more")?.remove();
    const left = groups.length - shown;
    body.insertAdjacentHTML(
      "beforeend",
      next.map((g) => (g.item ? itemHtml(g) : leafHtml(g.leaves[0]))).join("") +
        (left ? `<button class="more">show ${Math.min(DIFF_PAGE, left)} more (${left} left)</button>` : "")
    );
    body.querySelector(":scope > .more")?.addEventListener("click", more);
  };
  more();
}

// A unified diff as two columns: runs of removed and added lines are paired row by row.
function sideBySide(unified, all = false) {
  const rows = [];
  let del = [];
  let add = [];
  const flush = () => {
    for (let i = 0; i < Math.max(del.length, add.length); i++) rows.push([del[i], add[i], "change"]);
    del = [];
    add = [];
  };
  for (const line of unified.split("\n")) {
    if (line.startsWith("---") || line.startsWith("+++")) continue;
    if (line.startsWith("@@")) {
      flush();
      rows.push([line, line, "hunk"]);
    } else if (line.startsWith("-")) del.push(line.slice(1));
    else if (line.startsWith("+")) add.push(line.slice(1));
    else {
      flush();
      rows.push([line.slice(1), line.slice(1), "same"]);
    }
  }
  flush();
  const cell = (t, side, kind) => `<td class="${t === undefined ? "blank" : kind === "change" ? side : kind}">${esc(t ?? "")}</td>`;
  const shown = all ? rows : rows.slice(0, TEXT_ROWS);
  let more = "";
  if (shown.length < rows.length) {
    longTexts.push(unified);
    more = `<button class="more-lines" data-text="${longTexts.length - 1}">show all ${rows.length} lines</button>`;
  }
  return `<table class="side-by-side">${shown.map(([l, r, k]) => `<tr>${cell(l, "old", k)}${cell(r, "new", k)}</tr>`).join("")}</table>${more}`;
}

// Text diffs drawn shortened, kept for their "show all lines".
const longTexts = [];
document.addEventListener("click", (e) => {
  const b = e.target.closest?.(".more-lines");
  if (!b) return;
  b.previousElementSibling.outerHTML = sideBySide(longTexts[b.dataset.text], true).replace(/<button class="more-lines".*$/, "");
  b.remove();
});

// A fork edits the Stage 3 state: a run without Stage 3 has nothing to fork.
function forkBoxState(d) {
  const box = $("#fork-box");
  if (!box || READ_ONLY) return;
  box.dataset.stage3 = d.stage3;
  if (!d.stage3) {
    box.innerHTML = `<h2>fork</h2><p id="fork-none" class="muted">This run stopped before Stage 3 (its history is ${esc(d.graph_run.split("/").pop())}'s):
      a fork edits Stage 3's state, so there is nothing to fork yet. <code>kt resume ${esc(view.id)}</code> continues the run into Stage 3.</p>`;
  }
}

const jsonType = (v) =>
  v === null ? "null" : Array.isArray(v) ? "list" : typeof v === "string" ? "text" : typeof v === "boolean" ? "true/false" : typeof v;

// The fields of the state at A, as the fork box offers them: each with its type; picking one puts its value
// in the box to edit.
function forkFields(s) {
  const sel = $("#fork-field");
  if (!sel) return;
  view.forkState = s;
  sel.innerHTML = `<option value="">field of #${s.checkpoint}…</option>` +
    Object.entries(s.state)
      .map(([k, v]) => `<option value="${esc(k)}">${esc(k)} (${jsonType(v)})</option>`)
      .join("");
  $("#fork-note").textContent = `the fields of checkpoint #${s.checkpoint}'s state; the value is JSON (text without quotes is taken as text)`;
  sel.onchange = () => {
    const v = view.forkState?.state[sel.value];
    if (sel.value) $("#fork-value").value = typeof v === "string" ? v : JSON.stringify(v, null, 2);
  };
}

async function doFork() {
  const at = $("#cp-a").value.replace("#", "").trim();
  const field = $("#fork-field").value.trim();
  if (!at || !field) return toast("pick checkpoint A on the timeline and one of its fields", true);
  try {
    const r = await api(`/api/runs/${encodeURIComponent(view.id)}/fork`, { at, sets: [{ field, value: $("#fork-value").value }] });
    $("#fork-result").innerHTML = `<p id="fork-done" data-checkpoint="${r.checkpoint}" data-branch="${r.branch}">forked #${r.from} to
      checkpoint <b>#${r.checkpoint}</b> on branch <b>b${r.branch}</b> (${r.changed.length} field(s) changed).
      Resume it from the steer tab, or <code>kt resume ${esc(view.id)}</code>.</p>`;
    refreshTimeline();
  } catch (e) {
    toast(e.message, true);
  }
}

// ---------------------------------------------------------------- kernels

function renderKernels(d) {
  const run = view.data;
  if (run && !run.stage3 && !d.kernels.length && !d.verdicts.length) {
    $("#tab").innerHTML = `<section><p id="no-stage3" class="muted">This run has no Stage 3 yet: it stopped in ${esc(run.graph_run.split("/").pop())}.
      Kernel versions, verdicts, tuning and the charts come from Stage 3${run.state?.command ? `; <code>${esc(run.state.command)}</code> continues the run` : ""}.</p></section>`;
    return;
  }
  const open = new Set([...document.querySelectorAll("#kernels details[open]")].map((x) => x.dataset.name));
  $("#tab").innerHTML = `<section><h2>kernel versions ${newestOf(d.kernels, d.kernels_total)}</h2><div id="kernels">${d.kernels
    .map((k) => {
      const m = k.meta || {};
      return `<details class="kernel" data-name="${esc(k.name)}" ${open.has(k.name) ? "open" : ""}><summary><code>${esc(k.name)}</code>
        ${m.verdict ? `<span class="status">${esc(typeof m.verdict === "string" ? m.verdict : JSON.stringify(m.verdict))}</span>` : ""}
        ${m.time_ms ? `${fmt(m.time_ms, 4)} ms` : ""}</summary>
        ${k.diff ? `<h4>against the previous version</h4>${sideBySide(k.diff)}` : `<pre>${esc(k.code)}</pre>`}
        ${k.meta ? `<h4>record</h4>${valueHtml(k.meta)}` : ""}</details>`;
    })
    .join("") || '<p class="muted">no kernel version yet</p>'}</div></section>
    <section><h2>verdicts ${newestOf(d.verdicts, d.verdicts_total)}</h2><table id="verdicts"><thead><tr><th>step</th><th>verdict</th><th>time ms</th><th>why</th></tr></thead><tbody>
      ${d.verdicts.map((v) => `<tr><td>${esc(v.step)}</td><td>${esc(v.status)}</td><td>${fmt(v.time_ms, 4)}</td><td>${esc(v.reason)}</td></tr>`).join("")}</tbody></table></section>
    <section><h2>tuning</h2>${tuningProgress(d)}</section>
    <div class="cols"><section><h2>speedup per step</h2><div id="speedup-chart">${d.speedup_svg}</div></section>
    <section><h2>tuning distribution</h2><div id="tuning-chart">${d.tuning_svg}</div></section></div>
    <section><h2>roofline and profiles</h2><div id="roofline">${d.roofline_svg ?? '<p class="muted">no roofline (needs the device peaks and a profile)</p>'}</div>
      <ul id="profiles">${d.profile_lines.map((l) => `<li>${esc(l)}</li>`).join("")}</ul></section>`;
}

// ---------------------------------------------------------------- steer

function renderSteer(d) {
  if (READ_ONLY) {
    $("#tab").innerHTML = `<p class="muted">kt studio runs read-only (--read-only): steering is off.</p>`;
    return;
  }
  if (!$("#steer")) buildSteer(d); // once: later redraws keep what the user is typing
  renderAnswerBox(d.waiting_for);
  $("#resume-llm").textContent = d.resume_llm;
  refreshJobs();
}

function buildSteer(d) {
  const bp = d.breakpoints;
  $("#tab").innerHTML = `<div id="steer"><div id="answer-box"></div>
    <section><h2>replay</h2><div class="bar"><label>from checkpoint <input id="replay-from" size="8" value="input"></label>
      <button id="replay-btn">replay (recorded answers and tuning)</button></div></section>
    <section><h2>resume</h2><div class="bar"><button id="resume-btn">kt resume</button>
      <span class="muted">continues the run (or its newest branch) from its last checkpoint, with live LLM calls for what is not recorded</span></div>
      <p>it will use: <code id="resume-llm"></code></p></section>
    <section><h2>breakpoints</h2><div class="bar"><label>before <input id="bp-before" size="30" value="${esc(bp.before.join(", "))}"></label>
      <label>after <input id="bp-after" size="30" value="${esc(bp.after.join(", "))}"></label><button id="bp-save">save</button></div>
      <p class="muted">node names, comma-separated; resume and replay stop there</p></section>
    <section><h2>operations</h2><table id="jobs"><thead><tr><th>#</th><th>run</th><th>what</th><th>state</th><th>how it ended</th></tr></thead><tbody></tbody></table></section></div>`;
  const act = async (path, body, done) => {
    try {
      const r = await api(`/api/runs/${encodeURIComponent(view.id)}/${path}`, body);
      toast(done(r));
      refreshJobs();
    } catch (e) {
      toast(e.message, true);
    }
  };
  $("#replay-btn").addEventListener("click", () => act("replay", { from: $("#replay-from").value.trim() }, (r) => `replay started (operation ${r.job})`));
  $("#resume-btn").addEventListener("click", () => act("resume", {}, (r) => `kt resume started (operation ${r.job})`));
  const names = (s) => s.split(",").map((x) => x.trim()).filter(Boolean);
  $("#bp-save").addEventListener("click", () =>
    act("breakpoints", { before: names($("#bp-before").value), after: names($("#bp-after").value) }, (r) => `breakpoints: before [${r.before}] after [${r.after}]`)
  );
}

// The prompt a manual: run waits for, in full, and a box that answers exactly that prompt (by its id). Drawn
// again only when the prompt changes, so a redraw never loses what is typed, and a new prompt never inherits
// the old one's answer.
function renderAnswerBox(w) {
  const box = $("#answer-box");
  const key = w ? `${w.id}${w.answered ? ":answered" : ""}` : "";
  if (box.dataset.prompt === key || (w && box.dataset.prompt === `${w.id}:sent`)) return;
  box.dataset.prompt = key;
  if (!w) {
    box.innerHTML = "";
    return;
  }
  box.innerHTML = `<section id="answer-section" data-prompt-id="${esc(w.id)}"><h2>the run waits for an answer to prompt <code>${esc(w.id)}</code> (node ${esc(w.node)})</h2>
    ${w.text !== null && w.text !== undefined ? `<pre id="prompt-text" class="prompt">${esc(w.text)}</pre>` : `<p class="bad">the prompt file <code>${esc(w.prompt_file)}</code> cannot be read (moved, or not a prompt kt wrote)</p>`}
    ${w.answered
      ? `<p id="answer-pending" class="muted">This prompt has its answer; <code>kt resume ${esc(view.id)}</code> continues with it.</p>`
      : `<textarea id="answer-text" rows="10" cols="100" placeholder="the answer to ${esc(w.id)}, as the LLM would give it"></textarea>
         <div><button id="answer-btn">answer ${esc(w.id)} and resume</button></div>`}</section>`;
  const btn = $("#answer-btn");
  btn?.addEventListener("click", async () => {
    btn.disabled = true;
    try {
      const r = await api(`/api/runs/${encodeURIComponent(view.id)}/answer`, { id: w.id, text: $("#answer-text").value });
      box.dataset.prompt = `${w.id}:sent`;
      box.innerHTML = `<section><p id="answer-sent" data-prompt-id="${esc(r.answered)}">Answer to <code>${esc(r.answered)}</code> sent; kt resume continues the run (operation ${r.job}). The next prompt, if the run asks one, appears here.</p></section>`;
      toast(`answered ${r.answered}; resuming (operation ${r.job})`);
      refreshJobs();
    } catch (e) {
      toast(e.message, true);
      btn.disabled = false;
    }
  });
}

async function refreshJobs() {
  const { jobs } = await api("/api/jobs");
  const body = $("#jobs tbody");
  if (!body) return;
  body.innerHTML = jobs
    .filter((j) => j.run === view.id)
    .reverse()
    .map((j) => `<tr><td>${j.id}</td><td>${esc(j.run)}</td><td>${esc(j.kind)}</td><td><span class="status ${esc(j.state)}">${esc(j.state)}</span></td><td><pre>${esc(j.message)}</pre></td></tr>`)
    .join("");
  if (jobs.some((j) => j.state === "running")) setTimeout(refreshJobs, 1000);
}

// ---------------------------------------------------------------- routing

function route() {
  const parts = location.hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent);
  if (parts[0] === "run" && parts[1]) showRun(parts[1], TABS.includes(parts[2]) ? parts[2] : "live");
  else showRuns();
}

$("#mode").textContent = READ_ONLY ? "read-only" : "";
// A page left (or kept in the back-forward cache) gives its event stream back: the browser allows a few
// connections per studio, and a stream held by a page nobody sees would make the next page's requests wait.
window.addEventListener("pagehide", () => {
  source?.close();
  source = null;
});
window.addEventListener("pageshow", (e) => e.persisted && route());
window.addEventListener("hashchange", route);
route();

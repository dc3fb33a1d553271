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
      ${d.graph_note ? `<p id="graph-note" class="muted">${esc(d.graph_note)}</p>` : ""}
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

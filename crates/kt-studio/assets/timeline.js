// kt studio's time travel: the checkpoint timeline (paged, zoomable, a range or a jump), the state at a
// checkpoint, per-field diffs a screen at a time, and a fork with an edited field. Loaded before studio.js, whose
// helpers ($, api, esc, view, toast) it calls once the page runs.
"use strict";

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

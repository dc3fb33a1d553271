// kt studio's steer tab: answering a waiting manual: prompt by its id, replay, resume (with the LLM it will use),
// breakpoints, and the operations started from the page. Loaded before studio.js, whose helpers it calls.
"use strict";

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

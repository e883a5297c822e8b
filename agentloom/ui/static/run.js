// A run: summary, decision, graph, timeline, steps and state, kept live by the
// server-sent events of /api/runs/{id}/events.
"use strict";

(function () {
  const { el } = AL;
  const SVG = "http://www.w3.org/2000/svg";
  const runId = decodeURIComponent(location.pathname.replace(/^\/runs\//, ""));
  const base = `/api/runs/${encodeURIComponent(runId)}`;
  const open = new Set();
  let current = null;

  function svg(tag, attrs, text) {
    const node = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function renderSummary(d) {
    document.getElementById("run-id").textContent = d.run.run_id;
    document.title = `AgentLoom run ${d.run.run_id}`;
    const status = document.getElementById("status");
    status.textContent = d.run.status;
    status.className = `badge s-${d.run.status}`;
    document.getElementById("workflow").textContent = d.run.workflow;
    const s = d.summary;
    const steps = Object.entries(s.steps).map(([k, n]) => `${n} ${k}`).join(", ") || "none";
    const facts = [["Started", AL.when(d.run.started_at)], ["Duration", AL.duration(s.duration_seconds)],
      ["Steps", steps], ["Tokens", AL.tokens(s.tokens)], ["Cost", AL.cost(s.cost_usd)]];
    if (d.run.batch_id) facts.push(["Batch", d.run.batch_id]);
    if (d.run.claimed_by) facts.push(["Held by", d.run.claimed_by]);
    for (const e of s.errors) facts.push([`Error in ${e.step}`, e.error]);
    const dl = document.getElementById("summary");
    dl.replaceChildren(...facts.flatMap(([k, v]) => [el("dt", { text: k }), el("dd", { text: v })]));
  }

  function renderDecision(d) {
    const box = document.getElementById("decision");
    const p = d.paused;
    const waiting = p && ["paused", "needs_decision"].includes(d.run.status);
    const failed = d.run.status === "failed";
    const capped = d.run.status === "budget_exceeded";
    box.hidden = !(waiting || failed || capped);
    document.getElementById("decision-title").textContent =
      failed ? "The run failed" : capped ? "The run stopped at its budget" : "Waiting for a person";
    if (failed) return renderRetry(d, box);
    if (capped) return renderHigherCap(d, box);
    if (!waiting) return;
    if (box.dataset.step === `${p.step_id}/${d.seq}`) return; // keep what is being typed
    box.dataset.step = `${p.step_id}/${d.seq}`;
    document.getElementById("prompt").textContent =
      `Step ${p.step_id}${p.call_id ? ` (tool call ${p.call_id})` : ""}: ${p.prompt || p.waiting_for}`;
    const controls = document.getElementById("decision-controls");
    controls.replaceChildren();
    if (p.waiting_for === "answer") {
      let read;
      if (p.choices && p.kind === "choose_many") {
        const boxes = p.choices.map((c) => el("input", { type: "checkbox", value: c }));
        controls.append(...boxes.map((b, i) => el("label", { cls: "choice" }, b, p.choices[i])));
        read = () => boxes.filter((b) => b.checked).map((b) => b.value);
      } else if (p.choices) {
        const select = el("select", { id: "answer" }, ...p.choices.map((c) => el("option", { value: c, text: c })));
        controls.append(select);
        read = () => select.value;
      } else {
        const input = el("input", { id: "answer", type: p.kind === "secret" ? "password" : "text", size: 40 });
        controls.append(input);
        read = () => input.value;
      }
      controls.append(el("button", { id: "answer-button", onclick: () => decide({ action: "answer", answer: read() }), text: "Answer" }));
    } else {
      controls.append(
        el("button", { id: "approve", cls: "approve", onclick: () => decide({ action: "approve" }), text: "Approve" }),
        el("button", { id: "reject", cls: "reject", onclick: () => decide({ action: "reject" }), text: "Reject" }));
    }
  }

  // A failed run: `agentloom resume RUN_ID --retry-failed`, one click away.
  function renderRetry(d, box) {
    if (box.dataset.step === `failed/${d.seq}`) return;
    box.dataset.step = `failed/${d.seq}`;
    const first = ((d.summary && d.summary.errors) || [])[0];
    document.getElementById("prompt").textContent =
      (first ? `Step ${first.step} failed: ${first.error}` : "The run failed.") +
      " Retrying runs the failed steps again; the steps that succeeded keep their results.";
    document.getElementById("decision-controls").replaceChildren(
      el("button", { id: "retry", cls: "approve", onclick: () => decide({ action: "retry" }), text: "Retry failed steps" }));
    document.getElementById("decision-result").textContent = "";
  }

  // A run stopped at its cap: `agentloom resume RUN_ID --retry-failed --budget USD`
  // (or --max-tokens-per-run N); what it spent counts against the new cap.
  function renderHigherCap(d, box) {
    if (box.dataset.step === `capped/${d.seq}`) return;
    box.dataset.step = `capped/${d.seq}`;
    const first = ((d.summary && d.summary.errors) || [])[0];
    document.getElementById("prompt").textContent =
      (first ? `Step ${first.step} was refused: ${first.error}` : "The run reached its cap.") +
      " Give a higher cap to go on: what the run spent so far counts against it.";
    const usd = el("input", { id: "cap-usd", type: "text", size: 10, placeholder: "USD" });
    const tokens = el("input", { id: "cap-tokens", type: "text", size: 10, placeholder: "tokens" });
    const read = () => {
      const body = { action: "retry" };
      if (usd.value.trim()) body.budget = usd.value.trim();
      if (tokens.value.trim()) body.max_tokens_per_run = tokens.value.trim();
      return body;
    };
    document.getElementById("decision-controls").replaceChildren(
      el("label", { cls: "choice" }, "Cost cap ", usd),
      el("label", { cls: "choice" }, "Token cap ", tokens),
      el("button", { id: "go-on", cls: "approve", onclick: () => decide(read()), text: "Go on with this cap" }));
    document.getElementById("decision-result").textContent = "";
  }

  async function decide(body) {
    const result = document.getElementById("decision-result");
    for (const b of document.querySelectorAll("#decision button")) b.disabled = true;
    result.textContent = "resuming…";
    const answer = await AL.postJSON(`${base}/decision`, body);
    result.textContent = answer.ok ? `accepted: the run is ${answer.body.status}` : `refused: ${answer.body.error}`;
    if (!answer.ok) for (const b of document.querySelectorAll("#decision button")) b.disabled = false;
    // The stream of a failed run had ended: follow the retried run again.
    else if (body.action === "retry") follow();
  }

  function renderGraph(d) {
    const nodes = d.graph.nodes;
    const depth = {};
    const byId = Object.fromEntries(nodes.map((n) => [n.id, n]));
    const level = (id, seen = new Set()) => {
      if (depth[id] !== undefined) return depth[id];
      if (seen.has(id)) return 0;
      seen.add(id);
      const deps = (byId[id] ? byId[id].depends_on : []).filter((x) => byId[x]);
      depth[id] = deps.length ? 1 + Math.max(...deps.map((x) => level(x, seen))) : 0;
      return depth[id];
    };
    nodes.forEach((n) => level(n.id));
    const columns = [];
    for (const n of nodes) (columns[depth[n.id]] = columns[depth[n.id]] || []).push(n);
    const W = 150, H = 40, GX = 50, GY = 14;
    const pos = {};
    columns.forEach((col, x) => col.forEach((n, y) => { pos[n.id] = { x: 10 + x * (W + GX), y: 10 + y * (H + GY) }; }));
    const width = 20 + columns.length * (W + GX) - GX;
    const height = 20 + Math.max(1, ...columns.map((c) => c.length)) * (H + GY) - GY;
    const root = svg("svg", { width: Math.max(width, 10), height, viewBox: `0 0 ${Math.max(width, 10)} ${height}`, role: "img" });
    for (const n of nodes) {
      for (const dep of n.depends_on) {
        if (!pos[dep]) continue;
        const a = pos[dep], b = pos[n.id];
        root.append(svg("path", { class: "edge",
          d: `M${a.x + W},${a.y + H / 2} C${a.x + W + GX / 2},${a.y + H / 2} ${b.x - GX / 2},${b.y + H / 2} ${b.x},${b.y + H / 2}` }));
      }
    }
    for (const n of nodes) {
      const p = pos[n.id];
      const g = svg("g", { class: `node s-${n.status}`, "data-step": n.id });
      g.append(svg("rect", { x: p.x, y: p.y, width: W, height: H, rx: 6 }));
      g.append(svg("text", { x: p.x + 8, y: p.y + 17 }, n.id.length > 20 ? `${n.id.slice(0, 19)}…` : n.id));
      g.append(svg("text", { x: p.x + 8, y: p.y + 32, class: "sub" }, `${n.type || ""} · ${n.status}`));
      g.append(svg("title", {}, `${n.id}: ${n.status}`));
      root.append(g);
    }
    const notes = [];
    if (!d.graph.known) notes.push("the workflow file is gone or no longer loads: the steps the run stored");
    else if (d.graph.file_changed) notes.push("the workflow file changed since this run started: its steps as they are now");
    document.getElementById("graph").replaceChildren(
      ...notes.map((n) => el("p", { cls: "muted note", text: n })), root);
  }

  function renderTimeline(d) {
    const t = d.timeline;
    const box = document.getElementById("timeline");
    if (!t.bars.length) { box.replaceChildren(el("p", { cls: "muted", text: "no step has run yet" })); return; }
    const span = Math.max(t.span_seconds, 1e-3);
    const lanes = [];
    for (let i = 0; i < t.lanes; i++) lanes.push(el("div", { cls: "lane", "data-lane": i }));
    for (const b of t.bars) {
      const bar = el("div", { cls: `bar ${b.kind} s-${b.status}${b.attempts > 1 ? " retried" : ""}`,
        "data-step": b.id, "data-kind": b.kind, title: `${b.id}: ${b.kind === "wait" ? "waited" : b.status} ` +
          `${AL.duration(b.end - b.start)}${b.attempts > 1 ? `, ${b.attempts} attempts` : ""}` });
      bar.style.left = `${(100 * b.start) / span}%`;
      bar.style.width = `${Math.max((100 * (b.end - b.start)) / span, 0.6)}%`;
      bar.append(el("span", { text: b.kind === "wait" ? `${b.id} (waiting)` : b.id }));
      if (b.attempts > 1) bar.append(el("span", { cls: "attempts", text: ` ↻${b.attempts}` }));
      lanes[b.lane].append(bar);
    }
    const axis = el("div", { cls: "axis" }, el("span", { text: "0" }), el("span", { text: AL.duration(t.span_seconds) }));
    box.replaceChildren(...lanes, axis);
  }

  function pre(value) { return el("pre", { cls: "json", text: typeof value === "string" ? value : JSON.stringify(value, null, 2) }); }

  // A step's details (output, exchanges, tool calls, the state after it) are fetched when
  // it is opened, and kept while the step stays as it was (same status, same write).
  const details = new Map();
  const STEP_PAGE = 100;
  let shown = STEP_PAGE;

  function stepKey(s) { return `${s.status}/${s.state_seq}`; }

  function fillDetails(body, s, info) {
    const parts = [];
    if (info.output !== null && info.output !== undefined) parts.push(el("h4", { text: "Output" }), pre(info.output));
    if (info.exchanges.length) parts.push(el("h4", { text: `Model exchanges (${info.exchanges.length})` }), ...info.exchanges.map(pre));
    if (info.tool_calls.length) parts.push(el("h4", { text: `Tool calls (${info.tool_calls.length})` }), ...info.tool_calls.map(pre));
    const after = info.state_after;
    if (after) {
      const changes = [after.changed.length ? `set ${after.changed.join(", ")}` : "",
        after.removed.length ? `removed ${after.removed.join(", ")}` : ""].filter(Boolean).join("; ") || "unchanged";
      parts.push(el("h4", { text: `State after this step (write ${after.seq}: ${changes})` }),
        el("pre", { cls: "json state-after", text: JSON.stringify(after.state, null, 2) }));
    } else if (s.status === "success" || s.status === "failed") {
      parts.push(el("p", { cls: "muted", text: "the state after this step is no longer kept in the store" }));
    }
    if (!parts.length) parts.push(el("p", { cls: "muted", text: "nothing stored for this step yet" }));
    body.replaceChildren(...parts);
    body.dataset.loaded = "1";
  }

  function loadDetails(det, s) {
    const body = det.querySelector(".step-body");
    const hit = details.get(s.id);
    if (hit && hit.key === stepKey(s)) { fillDetails(body, s, hit.info); return; }
    if (["pending", "skipped"].includes(s.status) && s.state_seq === null) {
      body.replaceChildren(el("p", { cls: "muted", text: "nothing stored for this step yet" }));
      return;
    }
    body.replaceChildren(el("p", { cls: "muted", text: "loading…" }));
    AL.getJSON(`${base}/steps/${encodeURIComponent(s.id)}`).then((info) => {
      details.set(s.id, { key: stepKey(s), info });
      if (det.isConnected) fillDetails(body, s, info);
    }).catch((err) => { body.replaceChildren(el("p", { cls: "muted", text: `not loaded: ${err.message}` })); });
  }

  function renderSteps(d) {
    const box = document.getElementById("steps");
    for (const det of box.querySelectorAll("details[open]")) open.add(det.dataset.step);
    for (const det of box.querySelectorAll("details:not([open])")) open.delete(det.dataset.step);
    // Long runs: the first STEP_PAGE steps, then more on request (and the open ones).
    const visible = d.steps.filter((s, i) => i < shown || open.has(s.id));
    const items = visible.map((s) => {
      const facts = [
        ["status", s.status], ["type", s.type], ["attempts", s.attempts], ["model", s.model],
        ["provider", s.provider], ["tokens", AL.tokens(s.tokens)], ["cost", s.usage ? AL.cost(s.cost_usd) : null],
        ["duration", s.duration_seconds === null ? null : AL.duration(s.duration_seconds)],
        ["finish", s.finish_reason], ["error", s.error ? `${s.error_type || "error"}: ${s.error}` : null],
        ["reason", s.reason]];
      const line = el("summary", {}, el("strong", { text: s.id }), " ", AL.badge(s.status),
        ...facts.slice(2).filter(([, v]) => v !== null && v !== undefined && v !== "–")
          .map(([k, v]) => el("span", { cls: "fact" }, el("em", { text: `${k} ` }), String(v))));
      const body = el("div", { cls: "step-body" });
      const det = el("details", { cls: `step s-${s.status}${s.parent ? " nested" : ""}`, "data-step": s.id, open: open.has(s.id) }, line, body);
      // Also fires for a step created open (a re-render keeps what was open).
      det.addEventListener("toggle", () => { if (det.open) loadDetails(det, s); });
      return det;
    });
    const rest = d.steps.length - visible.length;
    if (rest > 0) {
      items.push(el("button", { id: "more-steps", cls: "more", text: `show ${Math.min(rest, STEP_PAGE)} more of ${rest}`,
        onclick: () => { shown += STEP_PAGE; renderSteps(current); } }));
    }
    box.replaceChildren(...items);
  }

  function render(d) {
    const same = current && current.seq === d.seq && current.run.status === d.run.status &&
      current.run.claimed_by === d.run.claimed_by;
    if (same) return; // nothing moved: keep the page (and what is open in it) as it is
    current = d;
    renderSummary(d);
    renderDecision(d);
    renderGraph(d);
    renderTimeline(d);
    renderSteps(d);
    document.getElementById("state").textContent = JSON.stringify(d.state, null, 2);
    document.body.dataset.seq = String(d.seq);
    document.body.dataset.status = d.run.status;
  }

  const going = () => current && ["running", "paused", "needs_decision"].includes(current.run.status);
  const later = () => { if (going()) setTimeout(follow, 5000); };

  // The stream's first event is the run as it is now; later ones come as it changes. The
  // server ends a stream after a few minutes without `end`: the browser reconnects.
  function follow() {
    const source = new EventSource(`${base}/events`);
    const live = document.getElementById("live");
    source.addEventListener("open", () => { live.hidden = false; });
    source.addEventListener("run", (e) => render(JSON.parse(e.data)));
    source.addEventListener("end", () => { source.close(); live.hidden = true; });
    source.addEventListener("error", () => {
      live.hidden = true;
      if (!current) { // never got the run: say why (not found, no token), or show it
        source.close();
        AL.getJSON(base).then((d) => { render(d); later(); }).catch(AL.showError);
      } else if (!going()) {
        source.close();
      } else if (source.readyState === EventSource.CLOSED) {
        later(); // refused (503: too many streams open), which the browser gives up on
      }
    });
  }

  follow();
})();

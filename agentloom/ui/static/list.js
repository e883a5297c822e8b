// The run list: filters in the query string, a page of runs from /api/runs, batch runs
// under a heading per batch.
"use strict";

(function () {
  const PAGE = 50;
  const params = new URLSearchParams(location.search);
  const offset = Math.max(0, parseInt(params.get("offset") || "0", 10) || 0);

  for (const name of ["status", "workflow", "q", "batch"]) {
    const input = document.getElementById(`f-${name}`);
    if (input && params.get(name)) input.value = params.get(name);
  }

  function link(over) {
    const next = new URLSearchParams(params);
    for (const [k, v] of Object.entries(over)) {
      if (v === null || v === "") next.delete(k); else next.set(k, v);
    }
    const q = next.toString();
    return q ? `/?${q}` : "/";
  }

  function row(run) {
    const { el } = AL;
    return el("tr", { cls: "run", "data-run": run.run_id },
      el("td", {}, el("a", { href: `/runs/${encodeURIComponent(run.run_id)}`, text: run.run_id })),
      el("td", {}, AL.badge(run.status)),
      el("td", {}, el("a", { href: link({ workflow: run.workflow, offset: null }), text: run.workflow })),
      el("td", { text: AL.when(run.started_at) }),
      el("td", { cls: "num", text: AL.duration(run.duration_seconds) }),
      el("td", { cls: "num", text: AL.tokens(run.tokens) }),
      el("td", { cls: "num", text: AL.cost(run.cost_usd) }));
  }

  function batchHeading(batch, runs) {
    const counts = {};
    for (const r of runs) counts[r.status] = (counts[r.status] || 0) + 1;
    const text = Object.entries(counts).map(([s, n]) => `${n} ${s}`).join(", ");
    return AL.el("tr", { cls: "batch" }, AL.el("td", { colspan: 7 },
      "batch ", AL.el("a", { href: link({ batch, offset: null }), text: batch }),
      ` · ${runs.length} run${runs.length === 1 ? "" : "s"} on this page (${text})`));
  }

  function render(page) {
    const body = document.querySelector("#runs tbody");
    body.replaceChildren();
    const groups = [];
    for (const run of page.runs) {
      const last = groups[groups.length - 1];
      const key = run.batch_id || null;
      const group = key && groups.find((g) => g.batch === key);
      if (group) group.runs.push(run);
      else if (!key && last && !last.batch) last.runs.push(run);
      else groups.push({ batch: key, runs: [run] });
    }
    for (const g of groups) {
      if (g.batch) body.append(batchHeading(g.batch, g.runs));
      for (const run of g.runs) body.append(row(run));
    }
    if (!page.runs.length) {
      body.append(AL.el("tr", {}, AL.el("td", { colspan: 7, cls: "muted", text: "no runs" })));
    }
    const last = Math.min(page.offset + page.runs.length, page.total);
    document.getElementById("count").textContent =
      `${page.total.toLocaleString("en")} run${page.total === 1 ? "" : "s"}` +
      (page.total ? ` · showing ${page.offset + (page.runs.length ? 1 : 0)}–${last}` : "");
    const prev = document.getElementById("prev"), next = document.getElementById("next");
    prev.hidden = page.offset === 0;
    prev.href = link({ offset: Math.max(0, page.offset - PAGE) || null });
    next.hidden = last >= page.total;
    next.href = link({ offset: page.offset + PAGE });
    document.getElementById("page").textContent =
      `page ${Math.floor(page.offset / PAGE) + 1} of ${Math.max(1, Math.ceil(page.total / PAGE))}`;
    const names = document.getElementById("workflows");
    names.replaceChildren(...[...new Set(page.runs.map((r) => r.workflow))]
      .map((w) => AL.el("option", { value: w })));
    document.body.dataset.loaded = "1";
  }

  const api = new URLSearchParams();
  for (const name of ["status", "workflow", "q", "batch"]) {
    if (params.get(name)) api.set(name, params.get(name));
  }
  api.set("limit", String(PAGE));
  api.set("offset", String(offset));
  AL.getJSON(`/api/runs?${api}`).then(render).catch(AL.showError);
})();

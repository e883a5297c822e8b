// Shared helpers of the AgentLoom UI pages. Every text goes into the DOM through
// textContent or attribute setters: nothing from the server is ever parsed as HTML.
"use strict";

const AL = {
  el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "text") node.textContent = String(value);
      else if (key === "cls") node.className = value;
      else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, String(value));
    }
    for (const child of children) {
      if (child === null || child === undefined) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  },

  async getJSON(url) {
    const response = await fetch(url, { credentials: "same-origin" });
    const body = await response.json();
    if (!response.ok) throw new Error(body.error || response.statusText);
    return body;
  },

  async postJSON(url, data) {
    const response = await fetch(url, {
      method: "POST", credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-AgentLoom-Request": "1" },
      body: JSON.stringify(data),
    });
    const body = await response.json();
    return { ok: response.ok, status: response.status, body };
  },

  duration(seconds) {
    if (seconds === null || seconds === undefined) return "–";
    if (seconds < 1) return `${Math.round(seconds * 1000)} ms`;
    if (seconds < 60) return `${seconds.toFixed(1)} s`;
    const m = Math.floor(seconds / 60), s = Math.round(seconds % 60);
    if (m < 60) return `${m} m ${s} s`;
    return `${Math.floor(m / 60)} h ${m % 60} m`;
  },

  cost(text) {
    if (text === null || text === undefined) return "?";
    const n = Number(text);
    return n === 0 ? "$0" : `$${n < 0.01 ? n.toPrecision(2) : n.toFixed(2)}`;
  },

  tokens(n) { return n === null || n === undefined ? "–" : n.toLocaleString("en"); },

  when(iso) {
    const d = new Date(iso);
    const pad = (x) => String(x).padStart(2, "0");
    return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ` +
      `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
  },

  badge(status) { return AL.el("span", { cls: `badge s-${status}`, text: status }); },

  showError(err) {
    const box = document.getElementById("error");
    box.textContent = String(err && err.message ? err.message : err);
    box.hidden = false;
  },
};

// memd's viewer: what makes the server-rendered pages live. Every page
// reads without it; with it, search runs as you type, the keyboard moves
// through results, the page follows changes (Server-Sent Events), and a
// memory can be corrected or forgotten through the drift guard (a change
// carries If-Match: the rev this page showed). Every URL is relative: it
// resolves against the page's <base>, the browser session's own path.
"use strict";

(function () {
  const $ = (sel, root) => (root || document).querySelector(sel);
  const $$ = (sel, root) => Array.from((root || document).querySelectorAll(sel));

  // --- search as you type, filters, keyboard -----------------------------

  const form = $("#search");
  const results = $("#results");
  let pending = null;
  let seq = 0;

  function query() {
    const params = new URLSearchParams();
    for (const [k, v] of new FormData(form)) {
      if (String(v).trim() !== "") params.append(k, v);
    }
    return params;
  }

  async function refresh(keepFocus) {
    if (!form || !results) return;
    const params = query();
    const mine = ++seq;
    const url = "./?" + params.toString();
    params.set("fragment", "results");
    const focused = keepFocus ? document.activeElement?.dataset?.id : null;
    const r = await fetch("./?" + params.toString(), { headers: { Accept: "text/html" } });
    if (mine !== seq || !r.ok) return;
    results.innerHTML = await r.text();
    history.replaceState(null, "", url);
    if (focused) $(`a.memory[data-id="${focused}"]`, results)?.focus();
  }

  if (form) {
    const q = $("#q");
    q.addEventListener("input", () => {
      clearTimeout(pending);
      pending = setTimeout(() => refresh(false), 120);
    });
    form.addEventListener("change", (e) => {
      if (e.target !== q) refresh(false);
    });
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      refresh(false);
    });
  }

  function items() {
    return $$("a.memory", results || document);
  }

  document.addEventListener("keydown", (e) => {
    const q = $("#q");
    const inField = ["INPUT", "TEXTAREA", "SELECT"].includes(document.activeElement?.tagName);
    if (e.key === "/" && !inField && q) {
      e.preventDefault();
      q.focus();
      q.select();
      return;
    }
    if (!results) return;
    const list = items();
    const at = list.indexOf(document.activeElement);
    if (e.key === "ArrowDown" && (at >= 0 || document.activeElement === q)) {
      e.preventDefault();
      list[Math.min(at + 1, list.length - 1)]?.focus();
    } else if (e.key === "ArrowUp" && at >= 0) {
      e.preventDefault();
      if (at === 0) q?.focus();
      else list[at - 1].focus();
    } else if (e.key === "Escape" && at >= 0) {
      q?.focus();
    }
  });

  // --- live updates ----------------------------------------------------

  const page = $("#memory");
  let first = true;
  if (window.EventSource) {
    const events = new EventSource("v1/events");
    events.addEventListener("open", () => { const l = $("#live"); if (l) l.hidden = false; });
    events.addEventListener("error", () => { const l = $("#live"); if (l) l.hidden = true; });
    events.addEventListener("change", () => {
      if (first) { first = false; return; }
      if (results) refresh(true);
      if (page) checkMemory();
    });
  }

  // --- one memory: changes made elsewhere, editing, forgetting -----------

  async function current() {
    const r = await fetch(`v1/memories/${page.dataset.id}?include_inactive=true`);
    if (!r.ok) return null;
    return (await r.json()).memory;
  }

  async function checkMemory() {
    const m = await current();
    const banner = $("#changed");
    if (!m) {
      banner.textContent = "This memory was forgotten (by another session, tool or machine).";
      banner.hidden = false;
      return;
    }
    if (m.rev > Number(page.dataset.rev)) {
      banner.innerHTML = "";
      banner.append(`This memory changed since this page was opened (rev ${m.rev}). `);
      const a = document.createElement("a");
      a.href = location.pathname;
      a.textContent = "Show the new version";
      banner.append(a);
      banner.append(" — what you type below is kept until you save.");
      banner.hidden = false;
    }
  }

  const edit = $("#edit");
  function showRefusal(problem) {
    const box = $("#refusal");
    box.innerHTML = "";
    const h = document.createElement("h3");
    const by = problem.changed_by || {};
    const who = [by.agent && `agent ${by.agent}`, by.session && `session ${by.session}`,
      by.machine && `on ${by.machine}`].filter(Boolean).join(", ") || (by.kind || "someone else");
    h.textContent = problem.status === 412
      ? `Not saved: this memory changed since you opened it (${who}).`
      : `Not saved: ${problem.detail || problem.title}`;
    box.append(h);
    if (problem.current) {
      const p = document.createElement("p");
      p.textContent = `It is at rev ${problem.current.rev} now and reads:`;
      const quote = document.createElement("blockquote");
      quote.id = "current";
      quote.textContent = problem.current.content;
      const note = document.createElement("p");
      note.textContent = "Your text is kept in the form. Save again to write it over this version, or reload to start from it.";
      box.append(p, quote, note);
      edit.dataset.rev = problem.current.rev;
      $("#save").textContent = "Save over this version";
    }
    box.hidden = false;
    box.scrollIntoView({ block: "center" });
  }

  async function change(method, body) {
    const headers = { "If-Match": `"${edit.dataset.rev}"` };
    if (body) headers["Content-Type"] = "application/json";
    const r = await fetch(`v1/memories/${edit.dataset.id}`, {
      method, headers, body: body ? JSON.stringify(body) : undefined,
    });
    const doc = await r.json().catch(() => ({}));
    return { ok: r.ok, status: r.status, doc };
  }

  if (edit) {
    edit.addEventListener("submit", async (e) => {
      e.preventDefault();
      const f = new FormData(edit);
      const body = {
        content: f.get("content"),
        subject: f.get("subject"),
        tags: String(f.get("tags") || "").split(",").map((t) => t.trim()).filter(Boolean),
        category: f.get("category"),
        tier: Number(f.get("tier")),
        importance: f.get("importance"),
        status: f.get("status"),
        pinned: f.get("pinned") === "on",
      };
      $("#save").disabled = true;
      $("#result").textContent = "Saving…";
      const r = await change("PATCH", body);
      $("#save").disabled = false;
      if (r.ok) {
        $("#result").textContent = `Saved as rev ${r.doc.memory.rev}.`;
        location.reload();
      } else {
        $("#result").textContent = "";
        showRefusal(r.doc);
      }
    });
    $("#forget").addEventListener("click", async () => {
      if (!confirm("Forget this memory? Its history keeps what it said.")) return;
      const r = await change("DELETE", null);
      if (r.ok) location.href = "./";
      else showRefusal(r.doc);
    });
    $("#purge").addEventListener("click", async () => {
      if (!confirm("Purge this memory? It is erased with its whole history, from drift backups " +
                   "and frozen blocks too. This cannot be undone.")) return;
      $("#result").textContent = "Purging…";
      const r = await fetch("v1/purge", {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ id: Number(edit.dataset.id), confirm: true }),
      });
      const doc = await r.json().catch(() => ({}));
      if (r.ok && doc.purged) location.href = "./";
      else {
        $("#result").textContent = "";
        showRefusal(doc);
      }
    });
  }
})();

// Faultline review console: keyboard, group toggles, live updates.
// No framework, no build step; served from the binary.
"use strict";
(function () {
  const body = document.body;
  // The user changed a form: live refreshes leave the forms alone.
  let dirty = false;
  const page = body.dataset.page;
  const csrf = body.dataset.csrf;

  function typing(el) {
    return el && (el.tagName === "INPUT" || el.tagName === "TEXTAREA" || el.tagName === "SELECT" || el.isContentEditable);
  }

  function post(action) {
    const form = document.createElement("form");
    form.method = "post";
    form.action = action;
    const input = document.createElement("input");
    input.type = "hidden";
    input.name = "csrf";
    input.value = csrf || "";
    form.appendChild(input);
    body.appendChild(form);
    form.submit();
  }

  // ---- queue -------------------------------------------------------------
  const listPage = page === "queue" || page === "analyses" || page === "groups";
  function rows() {
    return Array.from(document.querySelectorAll("main table.queue tr.row")).filter((r) => !r.hidden);
  }
  function selected() {
    return document.querySelector("main table.queue tr.row.selected");
  }
  function select(row) {
    document.querySelectorAll("main table.queue tr.row.selected").forEach((r) => r.classList.remove("selected"));
    if (!row) return;
    row.classList.add("selected");
    row.focus({ preventScroll: false });
    sessionStorage.setItem("faultline.selected", row.dataset.id || "");
  }
  function move(delta) {
    const all = rows();
    if (!all.length) return;
    const i = all.indexOf(selected());
    const next = i < 0 ? all[0] : all[Math.max(0, Math.min(all.length - 1, i + delta))];
    select(next);
  }
  function toggleGroup(key) {
    const button = document.querySelector('#queue button.toggle[data-toggle="' + CSS.escape(key) + '"]');
    const open = button ? button.getAttribute("aria-expanded") !== "true" : false;
    document.querySelectorAll('#queue tr.member[data-member-of="' + CSS.escape(key) + '"]').forEach((r) => (r.hidden = !open));
    if (button) {
      button.setAttribute("aria-expanded", String(open));
      button.textContent = button.textContent.replace(open ? "▸" : "▾", open ? "▾" : "▸");
    }
  }
  function expanded() {
    return Array.from(document.querySelectorAll('#queue button.toggle[aria-expanded="true"]')).map((b) => b.dataset.toggle);
  }
  document.addEventListener("click", (e) => {
    const toggle = e.target.closest("button.toggle");
    if (toggle) {
      toggleGroup(toggle.dataset.toggle);
      return;
    }
    const row = e.target.closest("main table.queue tr.row");
    if (row && !e.target.closest("a,button,input,select,textarea")) select(row);
    const help = e.target.closest("button.help");
    if (help) cheatsheet();
  });

  // ---- item --------------------------------------------------------------
  function submit(id) {
    const form = document.getElementById(id);
    if (form) form.requestSubmit();
    return !!form;
  }
  function go(id) {
    const a = document.getElementById(id);
    if (a) location.href = a.href;
  }
  function toggleScope() {
    const boxes = Array.from(document.querySelectorAll("input.scope-group"));
    if (!boxes.length) return;
    const on = !boxes[0].checked;
    boxes.forEach((b) => (b.checked = on));
    dirty = true; // a live refresh must not undo the choice
  }

  function cheatsheet() {
    const d = document.getElementById("cheatsheet");
    if (d && !d.open) d.showModal();
  }

  // ---- keyboard ----------------------------------------------------------
  document.addEventListener("keydown", (e) => {
    const target = e.target;
    if (typing(target)) {
      if (e.key === "Escape") target.blur();
      else if (e.key === "Enter" && (e.ctrlKey || e.metaKey) && target.form) {
        e.preventDefault();
        target.form.requestSubmit();
      }
      return;
    }
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    let handled = true;
    switch (e.key) {
      case "?":
        cheatsheet();
        break;
      case "j":
        if (listPage) move(1);
        else go("next");
        break;
      case "k":
        if (listPage) move(-1);
        else go("prev");
        break;
      case "u":
        location.href = "/ui/review";
        break;
      case "Enter":
      case "o":
        if (listPage && selected()) location.href = selected().dataset.href;
        else handled = false;
        break;
      case "c":
        if (page === "queue" && selected()) post("/ui/review/" + selected().dataset.id + "/claim");
        else if (page === "item") handled = submit("claim-form");
        break;
      case "g":
        if (page === "queue") {
          const row = selected();
          const key = row && (row.dataset.group || row.dataset.memberOf);
          if (key) toggleGroup(key);
        } else if (page === "item") toggleScope();
        break;
      case "a":
        if (page === "item") handled = submit("accept-form");
        break;
      case "e": {
        const field = document.getElementById("category");
        if (page === "item" && field) field.focus();
        else handled = false;
        break;
      }
      case "d": {
        const field = document.getElementById("dismiss-comment");
        if (page === "item" && field) field.focus();
        else handled = false;
        break;
      }
      default:
        handled = false;
    }
    if (handled) e.preventDefault();
  });

  // ---- live --------------------------------------------------------------
  document.addEventListener("input", () => (dirty = true));

  async function refresh() {
    const response = await fetch(location.href, { credentials: "same-origin", headers: { "X-Requested-With": "live" } });
    if (!response.ok) return;
    const fresh = new DOMParser().parseFromString(await response.text(), "text/html");
    const swap = (selector) => {
      const now = document.querySelector(selector);
      const next = fresh.querySelector(selector);
      if (now && next) now.replaceWith(next);
      return now && next;
    };
    if (page === "queue") {
      const keep = selected() ? selected().dataset.id : sessionStorage.getItem("faultline.selected");
      const open = expanded();
      swap("#queue-count");
      if (!swap("#queue")) {
        const main = document.querySelector("main");
        const next = fresh.querySelector("main");
        if (main && next) main.replaceWith(next);
      }
      open.forEach(toggleGroup);
      const row = keep && document.querySelector('#queue tr.row[data-id="' + CSS.escape(keep) + '"]');
      if (row) row.classList.add("selected");
    } else if (page === "item") {
      swap("#status");
      swap("#audit");
      if (!dirty) swap("#actions");
    }
    body.dataset.refreshed = String(Number(body.dataset.refreshed || 0) + 1);
  }

  // One stream per visible page: closed when the page is hidden (so pages
  // kept in the back/forward cache hold no connection), opened again
  // (with a refresh) when it comes back.
  let source = null;
  function connect(fresh) {
    if (source || !window.EventSource) return;
    source = new EventSource("/ui/live");
    // After a lost stream, what changed meanwhile was not heard: refresh.
    source.addEventListener("open", () => {
      if (body.dataset.live === "off") refresh().catch(() => {});
      body.dataset.live = "on";
    });
    source.addEventListener("error", () => (body.dataset.live = "off"));
    source.addEventListener("queue", () => refresh().catch(() => {}));
    if (fresh) refresh().catch(() => {});
  }
  if (page === "queue" || page === "item") {
    connect(false);
    window.addEventListener("pagehide", () => {
      if (source) source.close();
      source = null;
      body.dataset.live = "off";
    });
    window.addEventListener("pageshow", (e) => connect(e.persisted));
  }

  // Restore the queue selection after navigating back.
  if (page === "queue") {
    const keep = sessionStorage.getItem("faultline.selected");
    const row = keep && document.querySelector('#queue tr.row[data-id="' + CSS.escape(keep) + '"]');
    select(row || rows()[0]);
  } else if (listPage && rows().length) {
    rows()[0].classList.add("selected");
  }

  // ---- a run's trace, live ----------------------------------------------
  // Each committed iteration arrives as the trace's own HTML; the verdict
  // refreshes the status and the answer.
  const run = document.getElementById("run-status");
  const terminal = ["completed", "needs_review", "failed"];
  if (page === "analysis" && run && !terminal.includes(run.dataset.status) && window.EventSource) {
    const url = "/ui/analyses/" + run.dataset.run + "/events?last_event_id=" + encodeURIComponent(run.dataset.last || "0");
    const stream = new EventSource(url);
    stream.addEventListener("open", () => (body.dataset.live = "on"));
    stream.addEventListener("iteration", (e) => {
      const list = document.querySelector("#trace ol.steps");
      if (!list || list.querySelector('li[data-iteration="' + e.lastEventId + '"]')) return;
      const li = document.createElement("li");
      li.dataset.iteration = e.lastEventId;
      li.innerHTML = e.data;
      list.appendChild(li);
      const empty = document.querySelector("#trace p.muted");
      if (empty) empty.remove();
    });
    stream.addEventListener("verdict", async () => {
      stream.close();
      body.dataset.live = "done";
      const response = await fetch(location.href, { credentials: "same-origin" });
      if (!response.ok) return;
      const fresh = new DOMParser().parseFromString(await response.text(), "text/html");
      for (const sel of ["#run-status", ".maincol"]) {
        const now = document.querySelector(sel);
        const next = fresh.querySelector(sel);
        if (now && next) now.replaceWith(next);
      }
    });
    window.addEventListener("pagehide", () => stream.close());
  }
})();

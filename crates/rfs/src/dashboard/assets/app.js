// The rfs dashboard: polls /api/dashboard and draws it. Everything shown comes from that
// JSON; fields the page does not know yet are listed under "Other fields", and any
// status field named "*_by_type" or "*_by_reason" gets its own table of counts, so new
// status fields show up without touching this file. Text is always set with
// textContent, never parsed as HTML.
"use strict";

(function () {
  const $ = (id) => document.getElementById(id);
  const TOKEN_KEY = "rfs-dashboard-token";
  let token = sessionStorage.getItem(TOKEN_KEY) || "";
  let pollMs = 1000;
  let timer = null;
  let last = null;

  // A token given as #token=… is taken and removed from the address bar.
  const m = /(?:^#|&)token=([^&]+)/.exec(location.hash);
  if (m) {
    token = decodeURIComponent(m[1]);
    sessionStorage.setItem(TOKEN_KEY, token);
    history.replaceState(null, "", location.pathname + location.search);
  }

  function headers(extra) {
    const h = Object.assign({ Accept: "application/json" }, extra || {});
    if (token) h.Authorization = "Bearer " + token;
    return h;
  }

  // ---- formatting ---------------------------------------------------------------------
  const int = (n) => (typeof n === "number" ? Math.round(n).toLocaleString("en-US") : "–");
  function bytes(n) {
    if (typeof n !== "number") return "–";
    const u = ["B", "kB", "MB", "GB", "TB", "PB"];
    let i = 0;
    while (n >= 1000 && i < u.length - 1) { n /= 1000; i++; }
    return (i === 0 ? n.toFixed(0) : n.toFixed(1)) + " " + u[i];
  }
  function duration(s) {
    if (typeof s !== "number" || !isFinite(s)) return "–";
    s = Math.max(0, Math.round(s));
    const h = Math.floor(s / 3600), mi = Math.floor((s % 3600) / 60), se = s % 60;
    if (h > 0) return h + "h" + String(mi).padStart(2, "0") + "m";
    if (mi > 0) return mi + "m" + String(se).padStart(2, "0") + "s";
    return se + "s";
  }
  function clock(ms) {
    return typeof ms === "number" ? new Date(ms).toLocaleTimeString() : "–";
  }
  // Floor to one decimal so that 100 % means done.
  function percent(done, total) {
    if (typeof done !== "number" || typeof total !== "number" || total <= 0) return null;
    if (done >= total) return 100;
    return Math.floor((1000 * done) / total) / 10;
  }
  const human = (k) => k.replace(/_/g, " ");
  // The migration the store belongs to, as `rfs status` prints it: key=value, by key.
  function identity(m) {
    if (!m || typeof m !== "object") return "(identity not recorded yet)";
    const keys = Object.keys(m).sort();
    return keys.length ? keys.map((k) => k + "=" + m[k]).join(", ") : "(no identity)";
  }

  // ---- DOM helpers --------------------------------------------------------------------
  function el(tag, text, cls) {
    const e = document.createElement(tag);
    if (text !== undefined && text !== null) e.textContent = String(text);
    if (cls) e.className = cls;
    return e;
  }
  function bar(p, cls) {
    const b = el("div", null, "bar" + (cls ? " " + cls : "") + (p === 100 ? " done" : ""));
    const f = el("div");
    f.style.width = (p === null ? 0 : p) + "%";
    b.appendChild(f);
    return b;
  }
  // rows: array of arrays of cell specs: string/number, or {text, cls, node}
  function table(id, head, rows, empty) {
    const t = $(id);
    t.replaceChildren();
    if (!rows.length) {
      const tr = el("tr");
      tr.appendChild(el("td", empty || "none", "empty"));
      t.appendChild(tr);
      return;
    }
    const thead = el("tr");
    head.forEach((h) => {
      const [text, cls] = Array.isArray(h) ? h : [h, ""];
      thead.appendChild(el("th", text, cls));
    });
    t.appendChild(thead);
    rows.forEach((r) => {
      const tr = el("tr");
      r.forEach((c) => {
        if (c !== null && typeof c === "object") {
          const td = el("td", c.node ? null : c.text, c.cls);
          if (c.node) td.appendChild(c.node);
          if (c.title) td.title = c.title;
          tr.appendChild(td);
        } else {
          tr.appendChild(el("td", c, typeof c === "number" ? "num" : ""));
        }
      });
      t.appendChild(tr);
    });
  }

  // ---- what the fleet is doing ----------------------------------------------------------
  function fleetState(d) {
    const s = d.status;
    if (!s) return d.error ? ["STORE UNREACHABLE", "unreachable"] : ["CONNECTING", ""];
    const leased = (s.items && s.items.leased) || 0;
    if (s.finished) return ["FINISHED", "finished"];
    if (s.control === "PAUSE") return leased === 0 ? ["PAUSED", "paused"] : ["PAUSING", "pausing"];
    if (s.control === "STOP") return leased === 0 ? ["STOPPED", "stopped"] : ["STOPPING", "stopping"];
    if (!s.setup_done) return ["SETTING UP", "running"];
    return ["RUNNING", "running"];
  }

  function controlNote(s) {
    const leased = (s.items && s.items.leased) || 0;
    const plural = (n, one, many) => n + " " + (n === 1 ? one : many);
    if (s.finished) return "The migration is finished.";
    if (s.control === "PAUSE") {
      return leased === 0
        ? "Every worker has paused: no work item is leased. Resume to continue."
        : "Pausing: waiting for " + plural(leased, "leased item", "leased items") +
          " to be checkpointed and released.";
    }
    if (s.control === "STOP") {
      return leased === 0
        ? "Every worker has stopped: no work item is leased."
        : "Stopping: waiting for " + plural(leased, "leased item", "leased items") + " to be released.";
    }
    return "Workers are running: " + plural(leased, "item", "items") + " leased.";
  }

  // ---- rendering ----------------------------------------------------------------------
  function render(d) {
    last = d;
    const s = d.status;
    $("store").textContent = d.store || "?";
    $("migration").textContent = s ? identity(s.migration) : "?";
    const [label, cls] = fleetState(d);
    const badge = $("state");
    badge.textContent = label;
    badge.className = "badge " + cls;
    $("updated").textContent =
      d.read_at_ms ? "read at " + clock(d.read_at_ms) + ", every " + (d.interval_ms / 1000) + " s" : "not read yet";

    const banner = $("banner");
    if (d.error) {
      banner.hidden = false;
      banner.textContent =
        "Cannot read the coordination store (since " + clock(d.error.since_ms) + "): " + d.error.message +
        (s ? " — the figures below are from " + clock(d.read_at_ms) + "." : "");
    } else {
      banner.hidden = true;
      banner.textContent = "";
    }
    if (s) {
      renderOverview(s);
      renderControl(d, s);
      renderPhases(s);
      renderIndices(s);
      renderOther(s);
      renderReasons(s);
    } else {
      renderControl(d, null);
    }
    if (d.items) renderItems(d.items);
    renderNewest(d.failures);
    drawChart(d.rates);
  }

  function renderOverview(s) {
    $("docs-done").textContent = int(s.docs_done);
    $("live-docs").textContent = typeof s.live_docs === "number" ? int(s.live_docs) : "?";
    const p = percent(s.docs_done, s.live_docs);
    $("percent").textContent = p === null ? "" : "(" + p.toFixed(p === 100 ? 0 : 1) + " %)";
    const b = $("docs-bar");
    b.style.width = (p || 0) + "%";
    b.parentNode.className = "bar" + (p === 100 ? " done" : "");
    $("rate").textContent =
      typeof s.docs_per_sec === "number"
        ? int(s.docs_per_sec) + " docs/s · " + (s.bytes_per_sec / 1e6).toFixed(2) + " MB/s"
        : "–";
    $("eta").textContent = s.finished
      ? "done"
      : s.control === "PAUSE" ? "– (paused)" : s.control === "STOP" ? "– (stopped)" : duration(s.eta_seconds);
    $("bytes-done").textContent =
      bytes(s.bytes_done) + (typeof s.snapshot_bytes === "number" ? " (snapshot: " + bytes(s.snapshot_bytes) + " on disk)" : "");
    $("docs-failed").textContent = int(s.docs_refused);
    $("docs-skipped").textContent = int(s.docs_skipped);
    const chips = $("item-counts");
    chips.replaceChildren(el("span", "items:", ""));
    chips.firstChild.style.background = "none";
    const order = ["total", "done", "leased", "waiting", "failed"];
    const keys = Object.keys(s.items || {}).sort((a, b) => (order.indexOf(a) + 1 || 99) - (order.indexOf(b) + 1 || 99));
    keys.forEach((k) => {
      const c = el("span");
      c.id = "items-" + k;
      c.appendChild(document.createTextNode(k + " "));
      c.appendChild(el("b", int(s.items[k])));
      chips.appendChild(c);
    });
  }

  function renderControl(d, s) {
    $("control").textContent = s ? s.control : "?";
    $("control-note").textContent = s ? controlNote(s) : "";
    const allowed = d.control && d.control.allowed && !!s;
    ["pause", "resume", "stop"].forEach((id) => ($(id).disabled = !allowed));
    if (s && allowed) {
      $("pause").disabled = s.control === "PAUSE" || s.finished;
      $("resume").disabled = s.control === "RUN" || s.finished;
      $("stop").disabled = s.control === "STOP" || s.finished;
    }
    const form = $("token-form");
    if (d.control && !d.control.allowed) {
      if (d.control.token_configured) {
        form.hidden = false;
        if (!$("control-msg").textContent) $("control-msg").textContent = "Control needs the dashboard's token.";
      } else {
        $("control-msg").textContent = "Control is allowed only from the host running rfs status --serve.";
      }
    } else {
      form.hidden = true;
    }
  }

  function renderPhases(s) {
    const rows = (s.phases || []).map((p) => [
      p.name,
      { text: p.state, cls: "state-" + p.state },
      p.holder || "",
      { text: p.last_error || "", cls: "reason" },
    ]);
    table("phases", ["phase", "state", "holder", "last error"], rows, "no phase has started");
    $("keeper").textContent = s.keeper
      ? "keeper: " + s.keeper.holder + " (lease until " + clock(s.keeper.expiry) + ")"
      : s.setup_done ? "" : "setup is not done yet";
    const f = s.follow;
    $("follow").textContent = f
      ? "follow " + f.state + " (" + f.name + "): " + int(f.changes) + " changes applied, lag " +
        (f.lag_bytes == null ? "?" : int(f.lag_bytes) + " bytes of WAL") + ", " +
        (f.behind_seconds == null ? "?" : f.behind_seconds + " s") + " behind; the slot keeps " +
        (f.retained_bytes == null ? "?" : int(f.retained_bytes) + " bytes") +
        (f.warning ? " — " + f.warning : "") + (f.error ? " — FAILED: " + f.error : "")
      : "";
  }

  // Per-index (or per-group, per-table) progress, whatever the status calls it.
  function groups(s) {
    if (s.per_index) return ["index", s.per_index];
    const k = Object.keys(s).find((x) => /^per_/.test(x) && s[x] && typeof s[x] === "object");
    return k ? [k.slice(4), s[k]] : ["index", {}];
  }
  const KNOWN_GROUP = ["items", "docs_done", "docs_refused", "docs_skipped", "bytes_done", "live_docs", "bytes_total", "shards", "broken_shards"];

  function renderIndices(s) {
    const [kind, per] = groups(s);
    const names = Object.keys(per);
    const extra = [];
    names.forEach((n) =>
      Object.keys(per[n] || {}).forEach((k) => {
        const v = per[n][k];
        if (!KNOWN_GROUP.includes(k) && (typeof v === "number" || typeof v === "string") && !extra.includes(k)) extra.push(k);
      })
    );
    const rows = names.map((n) => {
      const p = per[n] || {};
      const pct = percent(p.docs_done, p.live_docs);
      const cell = el("div");
      cell.appendChild(bar(pct));
      cell.appendChild(
        el("small", int(p.docs_done) + " of " + (typeof p.live_docs === "number" ? int(p.live_docs) : "?") +
          " documents" + (pct === null ? "" : " (" + pct.toFixed(pct === 100 ? 0 : 1) + " %)"))
      );
      if (typeof p.bytes_total === "number") {
        const bp = percent(p.bytes_done, p.bytes_total);
        cell.appendChild(bar(bp, "bytes"));
        cell.appendChild(el("small", bytes(p.bytes_done) + " of " + bytes(p.bytes_total)));
      }
      const it = p.items || {};
      const failedShards = p.failed_shards && p.failed_shards.length ? " (failed shards: " + p.failed_shards.join(", ") + ")" : "";
      const row = [
        { text: n + failedShards, cls: "name" },
        { node: cell, cls: "barcell" },
        { text: int(p.docs_done), cls: "num" },
        { text: int(it.done) + " / " + int(it.total), cls: "num" },
        { text: int(it.leased), cls: "num" },
        { text: int((p.docs_refused || 0) + (p.docs_skipped || 0)), cls: it.failed ? "num state-failed" : "num" },
        { text: bytes(p.bytes_done), cls: "num" },
      ];
      extra.forEach((k) => row.push(typeof p[k] === "number" ? { text: int(p[k]), cls: "num" } : String(p[k])));
      return row;
    });
    table(
      "indices",
      [kind, "progress", ["documents", "num"], ["items done", "num"], ["leased", "num"], ["refused", "num"], ["bytes sent", "num"]]
        .concat(extra.map((k) => [human(k), ""])),
      rows,
      "no work items yet"
    );
    // Mark rows with the group name for readers and tests.
    const trs = $("indices").querySelectorAll("tr");
    names.forEach((n, i) => trs[i + 1] && trs[i + 1].setAttribute("data-group", n));
  }

  function renderItems(v) {
    const now = v.store_now;
    const more = (shown, total) => (total > shown ? " (" + shown + " of " + total + " shown)" : "");
    $("leased-count").textContent = "(" + v.leased_total + ")" + more(v.leased.length, v.leased_total);
    $("waiting-count").textContent = "(" + v.waiting_total + ")" + more(v.waiting.length, v.waiting_total);
    $("failed-count").textContent = "(" + v.failed_total + ")" + more(v.failed.length, v.failed_total);
    table(
      "leased",
      ["item", "holder", "lease ends", ["attempts", "num"], ["documents", "num"]],
      v.leased.map((i) => [
        i.id,
        i.holder || "",
        { text: "in " + duration((i.expiry - now) / 1000) + " (" + clock(i.expiry) + ")", title: String(i.expiry) },
        i.attempts,
        i.docs_done,
      ]),
      "no item is leased"
    );
    table(
      "waiting",
      ["item", ["attempts", "num"], ["documents", "num"], "note"],
      v.waiting.map((i) => [
        i.id,
        i.attempts,
        i.docs_done,
        i.holder && i.expiry ? "lease of " + i.holder + " expired at " + clock(i.expiry) : i.attempts ? "released" : "never leased",
      ]),
      "no item is waiting"
    );
    table(
      "failed",
      ["item", ["attempts", "num"], "last error"],
      v.failed.map((i) => [i.id, i.attempts, { text: i.last_error || "", cls: "reason" }]),
      "no item has failed"
    );
    const hs = (v.holders || []).map((h) => h.holder + " (" + h.items + ")");
    $("holders").textContent = hs.length ? "workers holding items: " + hs.join(", ") : "no worker holds an item";
  }

  // Any "*_by_type" / "*_by_reason" object of counts gets a table.
  function renderReasons(s) {
    const box = $("by-reason");
    box.replaceChildren();
    const keys = Object.keys(s).filter((k) => /_by_(type|reason)$/.test(k) && s[k] && typeof s[k] === "object");
    keys.forEach((k) => {
      box.appendChild(el("h3", human(k)));
      const t = el("table");
      t.id = "reasons-" + k;
      box.appendChild(t);
      const entries = Object.entries(s[k]).sort((a, b) => (b[1] || 0) - (a[1] || 0));
      table(t.id, ["reason", ["count", "num"]], entries.map(([r, n]) => [r, typeof n === "number" ? n : JSON.stringify(n)]), "none");
    });
    if (!keys.length) box.appendChild(el("p", "no failure counts", "empty"));
  }

  function renderNewest(f) {
    const rows = ((f && f.newest) || []).map((e) => [
      e.time,
      e.index,
      e.id,
      e.error_type,
      { text: e.reason, cls: "reason" },
    ]);
    table("newest", ["time", "index", "id", "type", "reason"], rows, "no refused document in the failure logs");
  }

  const KNOWN_STATUS = [
    "finished", "setup_done", "control", "items", "docs_done", "docs_refused", "docs_skipped", "bytes_done", "live_docs", "leases",
    "snapshot_bytes", "docs_per_sec", "bytes_per_sec", "eta_seconds", "failed_items", "phases", "keeper", "migration", "follow",
  ];
  function renderOther(s) {
    const [kind] = groups(s);
    const rows = Object.keys(s)
      .filter((k) => !KNOWN_STATUS.includes(k) && k !== "per_" + kind && k !== "per_index" && !/_by_(type|reason)$/.test(k))
      .map((k) => [human(k), { text: typeof s[k] === "object" ? JSON.stringify(s[k]) : String(s[k]), cls: "reason" }]);
    $("other-card").hidden = rows.length === 0;
    table("other", ["field", "value"], rows);
  }

  // ---- the rate chart -----------------------------------------------------------------
  function drawChart(rates) {
    const c = $("chart");
    const pts = (rates && rates.points) || [];
    const dpr = window.devicePixelRatio || 1;
    const w = c.clientWidth || 600, h = c.clientHeight || 220;
    if (c.width !== Math.round(w * dpr) || c.height !== Math.round(h * dpr)) {
      c.width = Math.round(w * dpr);
      c.height = Math.round(h * dpr);
    }
    const g = c.getContext("2d");
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, w, h);
    const L = 56, R = 56, T = 10, B = 24;
    const pw = w - L - R, ph = h - T - B;
    const end = pts.length ? pts[pts.length - 1][0] : Date.now();
    const first = pts.length ? pts[0][0] : end;
    // The last hour, or less while the run is younger (at least a minute).
    const span = Math.min(3600e3, Math.max(60e3, end - first));
    const start = end - span;
    $("chart-span").textContent = "(last " + (span >= 120e3 ? Math.round(span / 60000) + " min" : Math.round(span / 1000) + " s") + ", each point over " + ((rates && rates.window_s) || 30) + " s)";
    const [maxD, divs] = niceScale(Math.max(0, ...pts.map((p) => p[1])));
    const [maxB, divsB] = niceScale(Math.max(0, ...pts.map((p) => p[2] / 1e6)));
    const x = (t) => L + ((t - start) / span) * pw;
    const yD = (v) => T + ph - (v / maxD) * ph;
    const yB = (v) => T + ph - (v / maxB) * ph;
    const style = getComputedStyle(document.documentElement);
    g.font = "11px system-ui, sans-serif";
    g.strokeStyle = "#e3e7ee";
    g.fillStyle = "#5d6678";
    g.lineWidth = 1;
    // Grid lines follow the left axis; the right axis has its own labels.
    for (let i = 0; i <= divs; i++) {
      const y = T + (ph * i) / divs;
      g.beginPath();
      g.moveTo(L, y);
      g.lineTo(L + pw, y);
      g.stroke();
      g.textAlign = "right";
      g.fillText(fmtAxis((maxD * (divs - i)) / divs), L - 6, y + 4);
    }
    g.textAlign = "left";
    for (let i = 0; i <= divsB; i++) {
      g.fillText(fmtAxis((maxB * (divsB - i)) / divsB), L + pw + 6, T + (ph * i) / divsB + 4);
    }
    g.textAlign = "center";
    const ticks = 6;
    for (let i = 0; i <= ticks; i++) {
      const t = start + (span * i) / ticks;
      g.fillText(ago(end - t, span), x(t), h - 6);
    }
    const line = (idx, y, color, scale) => {
      g.strokeStyle = color;
      g.lineWidth = 2;
      g.beginPath();
      let started = false;
      pts.forEach((p) => {
        if (p[0] < start) return;
        const px = x(p[0]), py = y(p[idx] / scale);
        if (started) g.lineTo(px, py);
        else { g.moveTo(px, py); started = true; }
      });
      g.stroke();
    };
    line(1, yD, style.getPropertyValue("--docs").trim() || "#2f6fdb", 1);
    line(2, yB, style.getPropertyValue("--mb").trim() || "#d9822b", 1e6);
    $("chart-note").textContent = pts.length ? "" : "— no rate yet: it needs two readings at least a second apart";
  }
  // "-12 min" or, over short spans, "-1:30".
  function ago(ms, span) {
    if (ms < 500) return "now";
    const s = Math.round(ms / 1000);
    if (span > 600e3) return "-" + Math.round(s / 60) + " min";
    return "-" + Math.floor(s / 60) + ":" + String(s % 60).padStart(2, "0");
  }
  // The axis maximum (1, 2, 2.5 or 5 times a power of ten, at or above v) and how many
  // divisions give round labels.
  function niceScale(v) {
    if (!(v > 0)) return [1, 4];
    const p = Math.pow(10, Math.floor(Math.log10(v)));
    for (const [m, d] of [[1, 5], [2, 4], [2.5, 5], [5, 5], [10, 5]]) if (v <= m * p) return [m * p, d];
    return [10 * p, 5];
  }
  function fmtAxis(v) {
    if (v >= 1000) return Number((v / 1000).toPrecision(3)) + "k";
    return String(Number(v.toPrecision(3)));
  }

  // ---- polling and control ------------------------------------------------------------
  async function poll() {
    clearTimeout(timer);
    try {
      const r = await fetch("/api/dashboard", { cache: "no-store", headers: headers() });
      if (r.status === 401) {
        $("token-form").hidden = false;
        showBanner("This dashboard needs its token: enter it under Control.");
      } else if (!r.ok) {
        showBanner("The dashboard server answered " + r.status + ": " + (await errorText(r)));
      } else {
        const d = await r.json();
        pollMs = Math.max(500, Math.min(d.interval_ms || 1000, 2000) / 2);
        render(d);
      }
    } catch (e) {
      showBanner("The dashboard server does not answer (was rfs status --serve stopped?): " + e.message);
      $("state").textContent = last && last.status ? "NO CONNECTION" : "CONNECTING";
      $("state").className = "badge unreachable";
    }
    timer = setTimeout(poll, pollMs);
  }
  function showBanner(text) {
    $("banner").hidden = false;
    $("banner").textContent = text;
  }
  async function errorText(r) {
    try {
      const j = await r.json();
      return j.error || r.statusText;
    } catch (_) {
      return r.statusText;
    }
  }

  async function send(value) {
    const msg = $("control-msg");
    msg.className = "msg";
    msg.textContent = "sending " + value + "…";
    try {
      const r = await fetch("/api/control", {
        method: "POST",
        cache: "no-store",
        headers: headers({ "Content-Type": "application/json", "X-RFS-Request": "dashboard" }),
        body: JSON.stringify({ control: value }),
      });
      if (r.ok) {
        msg.textContent = "control set to " + (await r.json()).control + " at " + clock(Date.now());
      } else {
        msg.className = "msg error";
        msg.textContent = "refused (" + r.status + "): " + (await errorText(r));
        if (r.status === 401) $("token-form").hidden = false;
      }
    } catch (e) {
      msg.className = "msg error";
      msg.textContent = "not sent: " + e.message;
    }
    poll();
  }

  $("pause").addEventListener("click", () => send("PAUSE"));
  $("resume").addEventListener("click", () => send("RUN"));
  $("stop").addEventListener("click", () => {
    if (confirm("Stop every worker? They finish their batches, release their items and exit.")) send("STOP");
  });
  $("token-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    token = $("token").value.trim();
    sessionStorage.setItem(TOKEN_KEY, token);
    $("token").value = "";
    $("control-msg").textContent = "";
    poll();
  });
  window.addEventListener("resize", () => last && drawChart(last.rates));
  poll();
})();

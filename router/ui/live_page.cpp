#include "router/ui/live_state.hpp"

namespace lanes::router {

namespace {

// One document, nothing fetched from elsewhere: it polls ./ui/state once a second.
constexpr std::string_view page = R"lanes(<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>lanes</title>
<style>
  :root { --fg: #1d232a; --muted: #66707a; --line: #dde2e6; --ok: #1f8a4c; --bad: #c0392b;
          --warn: #b7791f; --accent: #2b6cb0; --bg: #f7f9fa; }
  * { box-sizing: border-box; }
  body { margin: 0; font: 14px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif;
         color: var(--fg); background: var(--bg); }
  header { display: flex; flex-wrap: wrap; gap: 12px; align-items: center; justify-content: space-between;
           padding: 10px 16px; background: #fff; border-bottom: 1px solid var(--line); }
  header h1 { font-size: 18px; margin: 0; }
  header .meta { color: var(--muted); font-size: 12px; }
  main { padding: 12px 16px; display: grid; gap: 12px; }
  .cards { display: grid; grid-template-columns: repeat(auto-fit, minmax(240px, 1fr)); gap: 12px; }
  .card { background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: 10px 12px; }
  .card h2 { font-size: 12px; font-weight: 600; color: var(--muted); margin: 0 0 4px;
             text-transform: uppercase; letter-spacing: .04em; }
  .big { font-size: 26px; font-weight: 600; }
  canvas { width: 100%; height: 60px; display: block; }
  .scroll { overflow-x: auto; }
  table { border-collapse: collapse; width: 100%; background: #fff; }
  th, td { text-align: left; padding: 6px 8px; border-bottom: 1px solid var(--line); white-space: nowrap; }
  th { font-size: 12px; color: var(--muted); font-weight: 600; }
  td.num { text-align: right; font-variant-numeric: tabular-nums; }
  .pill { display: inline-block; padding: 1px 8px; border-radius: 10px; font-size: 12px; color: #fff; }
  .up { background: var(--ok); } .down { background: var(--bad); } .drain { background: var(--warn); }
  .err { color: var(--bad); max-width: 200px; overflow: hidden; text-overflow: ellipsis; }
  .err.old { color: var(--muted); }
  .reasons span { margin-right: 8px; color: var(--muted); }
  .reasons b { color: var(--fg); font-weight: 600; }
  button { font: inherit; padding: 2px 10px; border: 1px solid var(--accent); color: var(--accent);
           background: #fff; border-radius: 4px; cursor: pointer; }
  input { font: inherit; padding: 2px 6px; border: 1px solid var(--line); border-radius: 4px; width: 180px; }
  #status { color: var(--muted); font-size: 12px; }
  @media (max-width: 600px) { .big { font-size: 22px; } header h1 { font-size: 16px; } }
</style>
</head>
<body>
<header>
  <div><h1>lanes</h1><div class="meta" id="status">connecting…</div></div>
  <div id="adminbox" hidden>
    <label>admin token <input id="token" type="password" autocomplete="off" placeholder="for drain / undrain"></label>
  </div>
</header>
<main>
  <section class="cards">
    <div class="card"><h2>Fleet prefix-cache hit rate</h2><div class="big" id="hit">–</div><canvas id="hitchart"></canvas></div>
    <div class="card"><h2>Requests / s</h2><div class="big" id="rate">–</div><canvas id="ratechart"></canvas></div>
    <div class="card"><h2>Replicas</h2><div class="big" id="count">–</div><div class="meta" id="countdetail"></div></div>
  </section>
  <section class="card scroll">
    <h2>Replicas</h2>
    <table id="replicas"><thead><tr>
      <th>replica</th><th>models</th><th>health</th><th>in flight</th><th>waiting</th><th>running</th><th>KV usage</th>
      <th>hit rate</th><th>requests by reason</th><th>last error</th><th></th>
    </tr></thead><tbody></tbody></table>
  </section>
  <section class="card scroll">
    <h2>Latest routing decisions</h2>
    <table id="decisions"><thead><tr>
      <th>time</th><th>replica</th><th>reason</th><th>cached blocks</th><th>status</th><th>ms</th><th>model</th><th title="each candidate's estimated time to first token (prefix policy); all of them on hover">estimates</th>
    </tr></thead><tbody></tbody></table>
  </section>
</main>
<script>
"use strict";
const history = { hit: [], rate: [] };
let last = null;
const token = document.getElementById("token");
token.value = sessionStorage.getItem("lanes-admin-token") || "";
token.addEventListener("input", () => sessionStorage.setItem("lanes-admin-token", token.value));

function pct(x) { return x == null || isNaN(x) ? "–" : (100 * x).toFixed(1) + " %"; }
function cell(row, text, cls) { const td = row.insertCell(); td.textContent = text; if (cls) td.className = cls; return td; }
function spark(id, values, max) {
  const c = document.getElementById(id), ctx = c.getContext("2d");
  const w = c.width = c.clientWidth * devicePixelRatio, h = c.height = c.clientHeight * devicePixelRatio;
  ctx.clearRect(0, 0, w, h);
  if (values.length < 2) return;
  const top = max || Math.max(...values, 1e-9);
  ctx.strokeStyle = "#2b6cb0"; ctx.lineWidth = 2 * devicePixelRatio; ctx.beginPath();
  values.forEach((v, i) => {
    const x = i * w / (values.length - 1), y = h - (v / top) * (h - 4) - 2;
    i ? ctx.lineTo(x, y) : ctx.moveTo(x, y);
  });
  ctx.stroke();
}
function push(list, v) { list.push(v); if (list.length > 120) list.shift(); }

async function setDrain(url, drain) {
  const res = await fetch("/admin/replicas/" + (drain ? "drain" : "undrain"), {
    method: "POST", headers: { "Content-Type": "application/json", "Authorization": "Bearer " + token.value },
    body: JSON.stringify({ url }) });
  if (!res.ok) alert((await res.json()).error?.message || res.status);
  poll();
}

function render(s) {
  const hits = s.replicas.reduce((a, r) => a + (r.prefix_cache_hits || 0), 0);
  const queries = s.replicas.reduce((a, r) => a + (r.prefix_cache_queries || 0), 0);
  if (last) {
    const dt = Math.max(s.now - last.now, 1e-3), dq = queries - last.queries;
    push(history.rate, (s.requests_total - last.total) / dt);
    if (dq > 0) push(history.hit, (hits - last.hits) / dq);
    document.getElementById("rate").textContent = history.rate.at(-1).toFixed(1);
  }
  last = { now: s.now, hits, queries, total: s.requests_total };
  document.getElementById("hit").textContent = pct(queries ? hits / queries : null);
  spark("hitchart", history.hit, 1);
  spark("ratechart", history.rate);
  const healthy = s.replicas.filter(r => r.healthy).length, draining = s.replicas.filter(r => r.draining).length;
  document.getElementById("count").textContent = healthy + " / " + s.replicas.length;
  document.getElementById("countdetail").textContent = "healthy" + (draining ? ", " + draining + " draining" : "");
  document.getElementById("adminbox").hidden = !s.admin;

  const body = document.querySelector("#replicas tbody");
  body.replaceChildren();
  for (const r of s.replicas) {
    const row = body.insertRow();
    row.dataset.replica = r.url;
    cell(row, r.url);
    cell(row, r.models ? r.models.join(", ") : "–", "models");
    const h = cell(row, "");
    const pill = document.createElement("span");
    pill.className = "pill " + (!r.healthy ? "down" : r.draining ? "drain" : "up");
    pill.textContent = !r.healthy ? "down" : r.draining ? "draining" : "up";
    h.append(pill);
    cell(row, r.inflight, "num");
    cell(row, r.waiting ?? "–", "num");
    cell(row, r.running ?? "–", "num");
    cell(row, pct(r.kv_usage), "num");
    cell(row, pct(r.prefix_cache_queries ? r.prefix_cache_hits / r.prefix_cache_queries : null), "num");
    const reasons = cell(row, "", "reasons");
    for (const [k, v] of Object.entries(r.requests)) {
      const sp = document.createElement("span"); sp.append(k + " "); const b = document.createElement("b");
      b.textContent = v; sp.append(b); reasons.append(sp);
    }
    const age = r.last_error ? Math.max(0, Math.round(s.now - r.last_error.at)) : 0;
    const e = cell(row, r.last_error ? r.last_error.what + " (" + age + " s ago)" : "",
                   "err" + (age > 60 ? " old" : ""));
    if (r.last_error) e.title = new Date(r.last_error.at * 1000).toLocaleString() + ": " + r.last_error.what;
    const act = cell(row, "");
    if (s.admin && token.value) {
      const b = document.createElement("button");
      b.textContent = r.draining ? "undrain" : "drain";
      b.onclick = () => setDrain(r.url, !r.draining);
      act.append(b);
    }
  }
  const dbody = document.querySelector("#decisions tbody");
  dbody.replaceChildren();
  for (const d of s.decisions.slice(0, 20)) {
    const row = dbody.insertRow();
    cell(row, new Date(d.at * 1000).toLocaleTimeString());
    cell(row, d.replica);
    cell(row, d.reason);
    cell(row, d.matched_blocks + " / " + d.blocks, "num");
    cell(row, d.status, "num");
    cell(row, d.duration_ms.toFixed(1), "num");
    cell(row, d.model || "");
    // What the policy weighed: the lowest estimates inline, every candidate's on hover.
    const est = (d.estimates || []).slice().sort((a, b) => a.estimate_ms - b.estimate_ms);
    const short = (u) => u.replace(/^[a-z]+:\/\//, "");
    const e = cell(row, est.slice(0, 3).map((x) => short(x.replica) + " " + x.estimate_ms.toFixed(1)).join(", ") +
                   (est.length > 3 ? ", …" : ""), "est");
    e.title = est.map((x) => x.replica + ": " + x.estimate_ms.toFixed(1) + " ms (" + x.cached_blocks +
                      " blocks cached, " + Math.round(x.queued_tokens) + " tokens queued)").join("\n");
  }
  document.getElementById("status").textContent =
    "updated " + new Date(s.now * 1000).toLocaleTimeString() + " · " + s.requests_total + " requests routed";
}

async function poll() {
  try {
    // Off loopback the admin listener wants the token for the state too.
    const headers = token.value ? { "Authorization": "Bearer " + token.value } : {};
    const res = await fetch("/ui/state", { cache: "no-store", headers });
    if (!res.ok) throw new Error("HTTP " + res.status);
    render(await res.json());
  } catch (e) {
    document.getElementById("status").textContent = "not reachable: " + e.message;
  }
}
poll();
setInterval(poll, 1000);
</script>
</body>
</html>
)lanes";

} // namespace

std::string_view live_page_html() {
    return page;
}

} // namespace lanes::router

/*
 * ui.c -- `infera serve --ui`: the read-only web console at /ui (issue 23).
 *
 * DESIGN.  GET /ui answers one static page (HTML, CSS and script inline,
 * compiled into the binary: no external asset, no CDN; it works offline).
 * The page polls GET /ui/state once a second: one JSON object built from
 * the same data /metrics renders (the models' slots, the per-version
 * counters of metrics.c, the monitoring state of monitor_hooks.c), and
 * draws it -- tables, request-rate and latency sparklines, drift bars per
 * feature, alert states -- with DOM text nodes only (data never becomes
 * markup).  With a registry (the server's --home / --registry), the page
 * also loads GET /ui/registry (models, versions, aliases), /ui/lineage
 * (one model's lineage graph: training data -> versions -> uses, SVG) and
 * /ui/audit (a page of 50 audit records, newest first; older/newer buttons), every 10 s.  `infera ui` serves
 * this page and these views alone (serve_main's console_only).  GET /ui/quality (every 10 s, with or
 * without a registry) answers the quality history that `serve --monitor` / `stream --monitor` stored
 * per model version (monitor/quality_store.h, under the server's home): the page draws one SVG line
 * chart per version, a line per metric, a point per window.  Nothing on the page changes the server.  Access:
 * /ui/state is guarded like /metrics (a token when --auth-metrics); the page itself holds no data.  Both answer 404
 * without --ui.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "monitor/quality_store.h"
#include "serve/serve.h"

static const char PAGE[] =
    "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Infera console</title><link rel=\"icon\" "
    "href=\"data:,\">\n"
    "<style>\n"
    "body{font:14px system-ui,sans-serif;margin:20px;color:#222}h1{font-size:19px}h2{font-size:15px;margin-top:22px}\n"
    "table{border-collapse:collapse;margin:4px 0}td,th{border:1px solid #ddd;padding:3px 8px;text-align:right}\n"
    "td:first-child,th:first-child{text-align:left}#status.err{color:#b00}.firing{color:#b00;font-weight:600}\n"
    ".ok{color:#070}svg{vertical-align:middle}.muted{color:#888}#audit td{text-align:left}\n"
    "#audit td:last-child{font:12px monospace;max-width:60em;overflow-wrap:anywhere}\n"
    "</style></head><body>\n"
    "<h1>Infera console <span id=\"status\" class=\"muted\">connecting</span></h1>\n"
    "<p class=\"muted\">Read-only.  Token (when /metrics needs one): <input id=\"token\" type=\"password\" "
    "size=\"30\"></p>\n"
    "<h2>Models</h2><table "
    "id=\"models\"><thead><tr><th>model</th><th>version</th><th>state</th><th>reason</th></tr></thead><tbody></tbody></"
    "table>\n"
    "<h2>Live traffic</h2><table id=\"traffic\"><thead><tr><th>model</th><th>version</th><th>requests "
    "ok</th><th>failed</th>"
    "<th>rows</th><th>mean latency ms</th><th>requests/s</th><th>rate (60 s)</th><th>latency (60 "
    "s)</th></tr></thead><tbody></tbody></table>\n"
    "<h2>Drift against the baseline</h2><div id=\"drift\"><p class=\"muted\">no monitored model (serve "
    "--baseline)</p></div>\n"
    "<h2>Alerts</h2><table "
    "id=\"alerts\"><thead><tr><th>rule</th><th>model</th><th>version</th><th>state</th><th>value</th>"
    "<th>threshold</th></tr></thead><tbody></tbody></table>\n"
    "<h2>Quality over time <select id=\"qualsel\"></select> <span class=\"muted\">(labels joined by "
    "serve/stream --monitor; a point per window)</span></h2><div id=\"quality\"><p class=\"muted\">no stored "
    "quality (a labels section in the --monitor rules)</p></div>\n"
    "<div id=\"reg\" hidden>\n"
    "<h2>Registry <span id=\"regloc\" class=\"muted\"></span></h2><table id=\"registry\"><thead><tr><th>model</th>"
    "<th>latest</th><th>live versions</th><th>aliases</th><th>updated</th></tr></thead><tbody></tbody></table>\n"
    "<h2>Lineage <select id=\"linsel\"></select></h2><div id=\"lineage\"></div>\n"
    "<h2>Audit log <span class=\"muted\">(newest first)</span> <button id=\"newer\" disabled>newer</button> "
    "<button id=\"older\" disabled>older</button> <span id=\"auditpage\" class=\"muted\"></span></h2><table "
    "id=\"audit\"><thead><tr><th>seq</th><th>time</th>"
    "<th>principal</th><th>action</th><th>model</th><th>version</th><th>outcome</th><th>detail</th></tr></thead>"
    "<tbody></tbody></table>\n"
    "</div>\n"
    "<script>\n"
    "'use strict';\n"
    "const hist = {};\n"
    "const tok = document.getElementById('token');\n"
    "tok.value = sessionStorage.getItem('infera-token') || '';\n"
    "tok.addEventListener('change', () => sessionStorage.setItem('infera-token', tok.value));\n"
    "function el(tag, attrs, text) { const e = document.createElement(tag);\n"
    "  for (const k in attrs || {}) e.setAttribute(k, attrs[k]); if (text !== undefined) e.textContent = text; return "
    "e; }\n"
    "function svg(tag, attrs) { const e = document.createElementNS('http://www.w3.org/2000/svg', tag);\n"
    "  for (const k in attrs) e.setAttribute(k, attrs[k]); return e; }\n"
    "function fmt(x, d) { return (x === null || x === undefined || !isFinite(x)) ? '-' : Number(x).toFixed(d); }\n"
    "function spark(values, color) { const s = svg('svg', {width: 120, height: 24, class: 'spark'});\n"
    "  const max = Math.max(1e-9, ...values); const pts = values.map((v, i) =>\n"
    "    (i * 120 / Math.max(1, values.length - 1)).toFixed(1) + ',' + (22 - 20 * v / max).toFixed(1)).join(' ');\n"
    "  s.appendChild(svg('polyline', {points: pts, fill: 'none', stroke: color, 'stroke-width': 1.5})); return s; }\n"
    "function fill(tbody, rows) { tbody.replaceChildren(...rows); }\n"
    "function render(st) {\n"
    "  fill(document.querySelector('#models tbody'), st.models.map(m => { const tr = el('tr', {'data-model': "
    "m.name});\n"
    "    [m.name, m.version || '-', m.state, m.reason].forEach(t => tr.appendChild(el('td', {}, t))); return tr; }));\n"
    "  const now = st.server.uptime_s;\n"
    "  fill(document.querySelector('#traffic tbody'), st.metrics.map(m => {\n"
    "    const key = m.model + '@' + m.version, h = hist[key] || (hist[key] = []);\n"
    "    const prev = h.length ? h[h.length - 1] : null;\n"
    "    const rate = prev && now > prev.t ? (m.success + m.failure - prev.n) / (now - prev.t) : 0;\n"
    "    const lat = prev && m.success > prev.ok ? (m.request_us - prev.us) / (m.success - prev.ok) / 1000 : (prev ? "
    "prev.lat : 0);\n"
    "    h.push({t: now, n: m.success + m.failure, ok: m.success, us: m.request_us, rate: rate, lat: lat}); if "
    "(h.length > 60) h.shift();\n"
    "    const tr = el('tr', {'data-model': m.model, 'data-version': m.version});\n"
    "    tr.appendChild(el('td', {}, m.model)); tr.appendChild(el('td', {}, m.version));\n"
    "    tr.appendChild(el('td', {class: 'success'}, String(m.success))); tr.appendChild(el('td', {class: 'failure'}, "
    "String(m.failure)));\n"
    "    tr.appendChild(el('td', {class: 'rows'}, String(m.rows)));\n"
    "    tr.appendChild(el('td', {class: 'latency'}, fmt(m.success ? m.request_us / m.success / 1000 : null, 3)));\n"
    "    tr.appendChild(el('td', {class: 'rate'}, fmt(rate, 1)));\n"
    "    const c1 = el('td'); c1.appendChild(spark(h.map(x => x.rate), '#1f77b4')); tr.appendChild(c1);\n"
    "    const c2 = el('td'); c2.appendChild(spark(h.map(x => x.lat), '#d62728')); tr.appendChild(c2);\n"
    "    return tr; }));\n"
    "  const drift = document.getElementById('drift'), blocks = [], alerts = [];\n"
    "  for (const m of st.monitor) {\n"
    "    for (const a of m.alerts) { const tr = el('tr', {'data-rule': a.rule, 'data-model': m.model});\n"
    "      [a.rule, m.model, m.version].forEach(t => tr.appendChild(el('td', {}, t)));\n"
    "      tr.appendChild(el('td', {class: a.firing ? 'state firing' : 'state ok'}, a.firing ? 'firing' : 'ok'));\n"
    "      tr.appendChild(el('td', {}, fmt(a.value, 4))); tr.appendChild(el('td', {}, String(a.threshold))); "
    "alerts.push(tr); }\n"
    "    if (!m.drift) continue;\n"
    "    const box = el('div', {class: 'drift-model', 'data-model': m.model, 'data-version': m.version});\n"
    "    box.appendChild(el('p', {}, m.model + ' version ' + m.version + ': ' + m.drift.rows + ' rows in the window' "
    "+\n"
    "      (m.drift.complete ? ' (last complete window)' : ' (current window)') + ', ' + m.records + ' records "
    "scored'));\n"
    "    const t = el('table', {class: 'drift'}), head = el('tr');\n"
    "    ['column', 'PSI', 'JS', 'KS / chi2', ''].forEach(x => head.appendChild(el('th', {}, x))); "
    "t.appendChild(head);\n"
    "    for (const sec of ['features', 'outputs']) for (const name in m.drift[sec]) {\n"
    "      const d = m.drift[sec][name], tr = el('tr', {'data-feature': name});\n"
    "      tr.appendChild(el('td', {}, name)); tr.appendChild(el('td', {class: 'psi'}, fmt(d.psi, 4)));\n"
    "      tr.appendChild(el('td', {class: 'js'}, fmt(d.js, 4))); tr.appendChild(el('td', {}, fmt(d.ks !== undefined ? "
    "d.ks : d.chi2, 4)));\n"
    "      const bar = svg('svg', {width: 160, height: 12}), w = Math.min(1, (d.psi || 0) / 0.5) * 160;\n"
    "      bar.appendChild(svg('rect', {x: 0, y: 1, width: w.toFixed(1), height: 10,\n"
    "        fill: d.psi > 0.25 ? '#d62728' : d.psi > 0.1 ? '#ff7f0e' : '#2ca02c'}));\n"
    "      const c = el('td'); c.appendChild(bar); tr.appendChild(c); t.appendChild(tr); }\n"
    "    box.appendChild(t); blocks.push(box); }\n"
    "  if (blocks.length) drift.replaceChildren(...blocks);\n"
    "  fill(document.querySelector('#alerts tbody'), alerts);\n"
    "}\n"
    "async function poll() {\n"
    "  const status = document.getElementById('status');\n"
    "  try { const headers = tok.value ? {Authorization: 'Bearer ' + tok.value} : {};\n"
    "    const r = await fetch('/ui/state', {headers: headers, cache: 'no-store'});\n"
    "    if (!r.ok) throw new Error('HTTP ' + r.status + (r.status === 401 ? ': a token is needed' : ''));\n"
    "    render(await r.json()); status.textContent = 'live'; status.className = 'ok';\n"
    "  } catch (e) { status.textContent = String(e.message || e); status.className = 'err'; }\n"
    "  setTimeout(poll, 1000);\n"
    "}\n"
    "poll();\n"
    "function authHeaders() { return tok.value ? {Authorization: 'Bearer ' + tok.value} : {}; }\n"
    "async function getJson(url) { const r = await fetch(url, {headers: authHeaders(), cache: 'no-store'});\n"
    "  if (!r.ok) throw new Error(url + ': HTTP ' + r.status); return r.json(); }\n"
    "function note(parent, text) { parent.replaceChildren(el('p', {class: 'muted'}, text)); }\n"
    "function renderRegistry(reg) {\n"
    "  document.getElementById('regloc').textContent = reg.registry;\n"
    "  const models = reg.models || [], sel = document.getElementById('linsel'), cur = sel.value;\n"
    "  fill(document.querySelector('#registry tbody'), models.map(m => { const tr = el('tr', {'data-model': m.name});\n"
    "    const a = Object.keys(m.aliases || {}).map(k => k + ' -> ' + (m.aliases[k].version !== undefined ? "
    "m.aliases[k].version : m.aliases[k])).join(', ');\n"
    "    [m.name, String(m.latest_version), String(m.live_versions), a || '-', m.updated_at].forEach(t => "
    "tr.appendChild(el('td', {}, t)));\n"
    "    return tr; }));\n"
    "  sel.replaceChildren(...models.map(m => el('option', {value: m.name}, m.name)));\n"
    "  if (cur && models.some(m => m.name === cur)) sel.value = cur;\n"
    "}\n"
    "function node(g, x, y, label, cls) { const w = Math.max(90, 7 * label.length + 16);\n"
    "  const n = svg('g', {class: 'node ' + cls, 'data-label': label});\n"
    "  n.appendChild(svg('rect', {x: x, y: y, width: w, height: 24, rx: 5, fill: cls === 'version' ? '#e8f0fb' : cls "
    "=== 'data' ? '#eef7ea' : '#fbf1e6', stroke: '#999'}));\n"
    "  const t = svg('text', {x: x + 8, y: y + 16, 'font-size': 12}); t.textContent = label; n.appendChild(t); "
    "g.appendChild(n);\n"
    "  return {x: x, y: y, w: w}; }\n"
    "function edge(g, a, b) { g.appendChild(svg('line', {x1: a.x + a.w, y1: a.y + 12, x2: b.x, y2: b.y + 12, stroke: "
    "'#888', class: 'edge'})); }\n"
    "function renderLineage(j) {\n"
    "  const box = document.getElementById('lineage');\n"
    "  if (!j.lineage) { note(box, j.lineage_error || 'no lineage'); return; }\n"
    "  const data = [], uses = [], vers = j.lineage.versions || [];\n"
    "  for (const v of vers) { for (const d of [v.training_data, v.derived_from]) if (d && !data.includes(d)) "
    "data.push(d);\n"
    "    for (const u of v.used_by || []) { const k = u.kind + ' ' + (u.destination || u.source || ''); if "
    "(!uses.includes(k)) uses.push(k); } }\n"
    "  const rows = Math.max(data.length, vers.length, uses.length, 1), h = rows * 34 + 10;\n"
    "  const g = svg('svg', {width: 900, height: h, id: 'lineage-graph'}), at = {};\n"
    "  data.forEach((d, i) => at['d:' + d] = node(g, 5, 5 + i * 34, d, 'data'));\n"
    "  uses.forEach((u, i) => at['u:' + u] = node(g, 520, 5 + i * 34, u, 'use'));\n"
    "  vers.forEach((v, i) => { const n = node(g, 300, 5 + i * 34, j.lineage.name + '@' + v.version + (v.deleted ? ' "
    "(deleted)' : ''), 'version');\n"
    "    for (const d of [v.training_data, v.derived_from]) if (d) edge(g, at['d:' + d], n);\n"
    "    for (const u of v.used_by || []) edge(g, n, at['u:' + u.kind + ' ' + (u.destination || u.source || '')]); "
    "});\n"
    "  box.replaceChildren(g);\n"
    "  if (j.model && j.model.description) box.appendChild(el('p', {class: 'muted'}, j.model.description));\n"
    "}\n"
    "function renderAudit(j) {\n"
    "  const rows = (j.audit || []).slice().reverse();\n"
    "  fill(document.querySelector('#audit tbody'), rows.map(a => { const tr = el('tr', {'data-seq': String(a.seq)});\n"
    "    [String(a.seq), a.ts, a.principal, a.action, a.model || '-', a.version === null || a.version === undefined ? "
    "'-' : String(a.version),\n"
    "     a.outcome, typeof a.detail === 'string' ? a.detail : JSON.stringify(a.detail)].forEach(t => "
    "tr.appendChild(el('td', {}, t))); return tr; }));\n"
    "}\n"
    "let auditPage = 1;\n"
    "async function audit(pending) { const au = await (pending || getJson('/ui/audit?limit=50&page=' + auditPage)); "
    "renderAudit(au);\n"
    "  document.getElementById('older').disabled = !au.more; document.getElementById('newer').disabled = auditPage === "
    "1;\n"
    "  document.getElementById('auditpage').textContent = 'page ' + auditPage; }\n"
    "for (const [id, step] of [['older', 1], ['newer', -1]]) document.getElementById(id).addEventListener('click', () "
    "=> {\n"
    "  auditPage = Math.max(1, auditPage + step); audit().catch(e => { document.getElementById('status').textContent = "
    "String(e.message || e); }); });\n"
    "async function lineage() { const m = document.getElementById('linsel').value; if (!m) return;\n"
    "  try { renderLineage(await getJson('/ui/lineage?ref=' + encodeURIComponent(m))); } catch (e) { "
    "note(document.getElementById('lineage'), String(e.message || e)); } }\n"
    "document.getElementById('linsel').addEventListener('change', lineage);\n"
    "async function registry() {\n"
    "  /* the audit page is asked for with the registry, not after it (one round trip less to the drawn page) */\n"
    "  const au = getJson('/ui/audit?limit=50&page=' + auditPage); au.catch(() => {});\n"
    "  try { const reg = await getJson('/ui/registry');\n"
    "    if (reg.registry === null) return; document.getElementById('reg').hidden = false;\n"
    "    renderRegistry(reg); const first = !document.getElementById('lineage').firstChild;\n"
    "    await Promise.all([first ? lineage() : null, audit(au)]);\n"
    "  } catch (e) { document.getElementById('status').textContent = String(e.message || e); "
    "document.getElementById('status').className = 'err'; }\n"
    "  setTimeout(registry, 10000);\n"
    "}\n"
    "registry();\n"
    "const QCOLORS = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f', "
    "'#17becf'];\n"
    "function qchart(doc) { const ws = doc.windows || [], names = [];\n"
    "  for (const w of ws) for (const k in w.metrics || {}) if (!names.includes(k)) names.push(k);\n"
    "  const W = 720, H = 220, L = 48, R = 150, T = 12, B = 34, pw = W - L - R, ph = H - T - B;\n"
    "  let ymax = 1; for (const w of ws) for (const k of names) { const v = w.metrics[k]; if (v !== null && v > "
    "ymax) ymax = v; }\n"
    "  const xs = i => L + (ws.length > 1 ? pw * i / (ws.length - 1) : pw / 2), ys = v => T + ph - ph * v / ymax;\n"
    "  const g = svg('svg', {width: W, height: H, class: 'qchart', 'data-model': doc.model, 'data-version': "
    "doc.version});\n"
    "  g.appendChild(svg('rect', {x: L, y: T, width: pw, height: ph, fill: '#fafafa', stroke: '#ccc'}));\n"
    "  for (const v of [0, ymax / 2, ymax]) { const t = svg('text', {x: L - 6, y: ys(v) + 4, 'font-size': 11, "
    "'text-anchor': 'end'});\n"
    "    t.textContent = v.toFixed(2); g.appendChild(t); }\n"
    "  ws.forEach((w, i) => { if (i % Math.ceil(ws.length / 6) && i !== ws.length - 1) return;\n"
    "    const t = svg('text', {x: xs(i), y: H - 12, 'font-size': 10, 'text-anchor': 'middle'}); t.textContent = "
    "w.start.slice(5, 16); g.appendChild(t); });\n"
    "  names.forEach((k, j) => { const c = QCOLORS[j % QCOLORS.length], pts = [];\n"
    "    const s = svg('g', {class: 'qseries', 'data-metric': k});\n"
    "    ws.forEach((w, i) => { const v = w.metrics[k]; if (v === null || v === undefined) return; pts.push(xs(i)."
    "toFixed(1) + ',' + ys(v).toFixed(1));\n"
    "      const p = svg('circle', {cx: xs(i).toFixed(1), cy: ys(v).toFixed(1), r: 3, fill: c, class: 'qpt', "
    "'data-metric': k, 'data-start': w.start, 'data-rows': w.rows, 'data-value': String(v)});\n"
    "      const tt = svg('title', {}); tt.textContent = k + ' ' + v.toFixed(4) + ' (' + w.start + ', ' + w.rows + "
    "' rows)'; p.appendChild(tt); s.appendChild(p); });\n"
    "    s.insertBefore(svg('polyline', {points: pts.join(' '), fill: 'none', stroke: c, 'stroke-width': 1.5}), "
    "s.firstChild);\n"
    "    const lt = svg('text', {x: W - R + 10, y: T + 12 + 15 * j, 'font-size': 12, fill: c}); lt.textContent = k; "
    "s.appendChild(lt);\n"
    "    g.appendChild(s); });\n"
    "  return g; }\n"
    "function renderQuality(j) {\n"
    "  const sel = document.getElementById('qualsel'), cur = sel.value, box = document.getElementById('quality');\n"
    "  sel.replaceChildren(...(j.models || []).map(m => el('option', {value: m}, m)));\n"
    "  if (j.model) sel.value = j.model; else if (cur) sel.value = cur;\n"
    "  if (!j.versions || !j.versions.length) { note(box, 'no stored quality (a labels section in the --monitor "
    "rules)'); return; }\n"
    "  box.replaceChildren(...j.versions.map(d => { const f = el('figure', {class: 'quality-version', 'data-model': "
    "d.model, 'data-version': d.version});\n"
    "    const last = d.windows.length ? d.windows[d.windows.length - 1] : null;\n"
    "    f.appendChild(el('figcaption', {}, d.model + ' version ' + d.version + ': ' + d.windows.length + ' windows of "
    "' + d.window_s + ' s' +\n"
    "      (last ? ', newest ' + last.start + ' (' + last.rows + ' labelled rows)' : '') + ', updated ' + "
    "d.updated));\n"
    "    f.appendChild(qchart(d)); return f; }));\n"
    "}\n"
    "async function quality() { const m = document.getElementById('qualsel').value;\n"
    "  try { renderQuality(await getJson('/ui/quality' + (m ? '?model=' + encodeURIComponent(m) : ''))); }\n"
    "  catch (e) { note(document.getElementById('quality'), String(e.message || e)); }\n"
    "}\n"
    "document.getElementById('qualsel').addEventListener('change', quality);\n"
    "(function qualityLoop() { quality().finally(() => setTimeout(qualityLoop, 10000)); })();\n"
    "</script></body></html>\n";

static int ui_off(srv_request *rq) {
    if (rq->srv->opt.ui) return 0;
    inf__serve_error(rq, 404, "no console: start the server with --ui");
    return 1;
}

int inf__serve_ui_page(srv_request *rq) {
    if (ui_off(rq)) return 0;
    rq->status = 200;
    rq->content_type = "text/html; charset=utf-8";
    inf__serve_buf_put(&rq->resp, PAGE, sizeof PAGE - 1);
    return 0;
}

static void metrics_json(srv_metrics *m, srv_buf *o) {
    inf__serve_buf_puts(o, "[");
    pthread_mutex_lock(&m->lock);
    for (srv_model_metrics *e = m->head; e; e = e->next) {
        uint64_t failed = 0;
        for (int k = 0; k < SRV_FAIL_COUNT; k++) failed += atomic_load(&e->failure[k]);
        if (e != m->head) inf__serve_buf_put(o, ",", 1);
        inf__serve_buf_puts(o, "{\"model\":");
        inf__serve_buf_json_str(o, e->model, strlen(e->model));
        inf__serve_buf_puts(o, ",\"version\":");
        inf__serve_buf_json_str(o, e->version, strlen(e->version));
        inf__serve_buf_printf(o, ",\"loaded\":%s,\"success\":%llu,\"failure\":%llu,\"rows\":%llu,\"request_us\":%llu,"
                                 "\"queue_depth\":%lld}",
                              atomic_load(&e->loaded) ? "true" : "false", (unsigned long long)atomic_load(&e->success),
                              (unsigned long long)failed, (unsigned long long)atomic_load(&e->inference_count),
                              (unsigned long long)atomic_load(&e->request_us), (long long)atomic_load(&e->queue_depth));
    }
    pthread_mutex_unlock(&m->lock);
    inf__serve_buf_puts(o, "]");
}

int inf__serve_ui_state(srv_request *rq) {
    if (ui_off(rq)) return 0;
    srv_server *srv = rq->srv;
    srv_buf *o = &rq->resp;
    rq->status = 200;
    rq->content_type = "application/json";
    inf__serve_buf_printf(o, "{\"server\":{\"uptime_s\":%.3f,\"in_flight\":%lld,\"http\":{",
                          (double)(inf__serve_now_ns() - srv->metrics.start_ns) / 1e9, (long long)atomic_load(&srv->in_flight));
    for (int c = 1; c <= 5; c++)
        inf__serve_buf_printf(o, "%s\"%dxx\":%llu", c > 1 ? "," : "", c,
                              (unsigned long long)atomic_load(&srv->metrics.http_by_class[c]));
    inf__serve_buf_puts(o, "}},\"models\":");
    inf__serve_models_index_json(srv->models, 0, o);
    inf__serve_buf_puts(o, ",\"metrics\":");
    metrics_json(&srv->metrics, o);
    inf__serve_buf_puts(o, ",\"monitor\":");
    inf__serve_monitor_state_json(srv, o);
    inf__serve_buf_puts(o, "}");
    return 0;
}

/* ---- the registry views: models, lineage, audit log ------------------------------------
 * Each view asks the server's console registry handle (opened once, at the first view, from
 * --home / --registry or the environment's: monitor_hooks.c) for one JSON view (the CLI's --json
 * views, infera/registry.h); the handle reads the registry's current state at every view, so a
 * change made meanwhile (an alias moved, a version registered) shows at the next one.  No
 * registry (a server of files): {"registry":null,"error":...}, status 200, so the page shows a
 * note rather than a failed request. */

static int registry_open(srv_request *rq, inf_registry **r) {
    inf_error e;
    if (inf__serve_monitor_registry(rq->srv, r, &e) == INF_OK) return 0;
    rq->status = 200;
    rq->content_type = "application/json";
    inf__serve_buf_puts(&rq->resp, "{\"registry\":null,\"error\":");
    inf__serve_buf_json_str(&rq->resp, e.message, strlen(e.message));
    inf__serve_buf_puts(&rq->resp, "}");
    return -1;
}

/* Gives the handle back; a view that failed reading the registry (not one that found no such
 * model) closes it, so the next view reopens it. */
static void registry_done(srv_request *rq, inf_status st) { inf__serve_monitor_registry_done(rq->srv, st == INF_EIO); }

/* Appends "key":JSON (the view) or "key":null,"key_error":"..." */
static void put_view(srv_buf *o, const char *key, inf_status st, char *json, const inf_error *e) {
    inf__serve_buf_printf(o, "\"%s\":", key);
    if (st == INF_OK && json) {
        inf__serve_buf_puts(o, json);
    } else {
        inf__serve_buf_printf(o, "null,\"%s_error\":", key);
        inf__serve_buf_json_str(o, e->message, strlen(e->message));
    }
    inf_registry_string_free(json);
}

static void begin_json(srv_request *rq, inf_registry *r) {
    rq->status = 200;
    rq->content_type = "application/json";
    inf__serve_buf_puts(&rq->resp, "{\"registry\":");
    const char *loc = inf_registry_location(r);
    inf__serve_buf_json_str(&rq->resp, loc ? loc : "", loc ? strlen(loc) : 0);
    inf__serve_buf_puts(&rq->resp, ",");
}

int inf__serve_ui_registry(srv_request *rq) {
    inf_registry *r;
    if (ui_off(rq) || registry_open(rq, &r)) return 0;
    char *json = NULL;
    inf_error e = {0};
    inf_status st = inf_registry_list_json(r, &json, &e);
    begin_json(rq, r);
    registry_done(rq, st);
    put_view(&rq->resp, "models", st, json, &e);
    inf__serve_buf_puts(&rq->resp, "}");
    return 0;
}

int inf__serve_ui_lineage(srv_request *rq) {
    const char *ref = inf__serve_http_query(rq, "ref");
    if (ui_off(rq)) return 0;
    if (!ref || !*ref) {
        inf__serve_error(rq, 400, "lineage: give ?ref=NAME or NAME@VERSION");
        return 0;
    }
    inf_registry *r;
    if (registry_open(rq, &r)) return 0;
    char *lin = NULL, *show = NULL;
    inf_error e1 = {0}, e2 = {0};
    inf_status s1 = inf_registry_lineage_json(r, ref, &lin, &e1);
    inf_status s2 = inf_registry_show_json(r, ref, &show, &e2);
    begin_json(rq, r);
    registry_done(rq, s1 == INF_EIO ? s1 : s2);
    put_view(&rq->resp, "lineage", s1, lin, &e1);
    inf__serve_buf_puts(&rq->resp, ",");
    put_view(&rq->resp, "model", s2, show, &e2);
    inf__serve_buf_puts(&rq->resp, "}");
    return 0;
}

/* Page `page` (1 = the newest) of an audit JSON array of the newest limit * page records in
 * order (n of them, fewer when the log is shorter): its records ranked (page - 1) * limit + 1 ..
 * from the newest, i.e. its first n - (page - 1) * limit; all of them for page 1.  The
 * registry's view has no offset (infera/registry.h): a later page asks it for more rows. */
/* The number of elements of a JSON array's text (a scan: no parse). */
static int array_count(const char *json) {
    int depth = 0, n = 0, in_str = 0;
    for (const char *c = json; *c; c++) {
        if (in_str) {
            if (*c == '\\' && c[1]) c++;
            else if (*c == '"') in_str = 0;
            continue;
        }
        if (*c == '"') in_str = 1;
        if (depth == 1 && !n && *c != ' ' && *c != '\n' && *c != '\t' && *c != '\r' && *c != ']') n = 1;
        if (depth == 1 && *c == ',') n++;
        if (*c == '[' || *c == '{') depth++;
        else if (*c == ']' || *c == '}') depth--;
    }
    return n;
}

static char *audit_page(char *json, long limit, long page, int *more) {
    *more = 0;
    if (page == 1) { /* the registry's answer as it is: only counted */
        *more = array_count(json) == (int)limit;
        return json;
    }
    cJSON *a = cJSON_Parse(json);
    if (!cJSON_IsArray(a)) {
        cJSON_Delete(a);
        return json;
    }
    int n = cJSON_GetArraySize(a);
    *more = n == (int)(limit * page);
    if (page > 1) {
        int keep = n - (int)(limit * (page - 1)); /* <= 0: the earlier pages hold every record */
        if (keep < 0) keep = 0;
        while (cJSON_GetArraySize(a) > keep)
            cJSON_DeleteItemFromArray(a, keep);
    }
    char *text = page > 1 ? cJSON_PrintUnformatted(a) : NULL;
    cJSON_Delete(a);
    if (page == 1 || !text) return json;
    inf_registry_string_free(json);
    return text;
}

int inf__serve_ui_audit(srv_request *rq) {
    if (ui_off(rq)) return 0;
    const char *model = inf__serve_http_query(rq, "model"), *lim = inf__serve_http_query(rq, "limit"),
               *pg = inf__serve_http_query(rq, "page");
    long limit = lim ? strtol(lim, NULL, 10) : 50, page = pg ? strtol(pg, NULL, 10) : 1;
    if (limit <= 0 || limit > 10000) limit = limit <= 0 ? 50 : 10000;
    if (page < 1) page = 1;
    if (page > 10000 / limit) page = 10000 / limit > 0 ? 10000 / limit : 1; /* 10,000 rows read at most */
    inf_registry *r;
    if (registry_open(rq, &r)) return 0;
    inf_registry_audit_filter f = {model && *model ? model : NULL, NULL, (int)(limit * page)};
    char *json = NULL;
    inf_error e = {0};
    inf_status st = inf_registry_audit_json(r, &f, &json, &e);
    begin_json(rq, r);
    registry_done(rq, st);
    int more = 0;
    if (st == INF_OK && json) json = audit_page(json, limit, page, &more);
    inf__serve_buf_printf(&rq->resp, "\"limit\":%ld,\"page\":%ld,\"more\":%s,", limit, page, more ? "true" : "false");
    put_view(&rq->resp, "audit", st, json, &e);
    inf__serve_buf_puts(&rq->resp, "}");
    return 0;
}

/* ---- the quality history (monitor/quality_store.h) ------------------------------------------ */

int inf__serve_ui_quality(srv_request *rq) {
    if (ui_off(rq)) return 0;
    const char *want = inf__serve_http_query(rq, "model");
    cJSON *models = NULL, *versions = NULL;
    inf_error e;
    inf_status st = inf__mon_quality_list(rq->srv->opt.home, NULL, &models, &e);
    const char *name = want && *want ? want : NULL;
    if (!st && !name && cJSON_GetArraySize(models) > 0) name = cJSON_GetArrayItem(models, 0)->valuestring;
    if (!st) st = inf__mon_quality_list(rq->srv->opt.home, name, &versions, &e);
    char *m = st ? NULL : cJSON_PrintUnformatted(models), *v = st ? NULL : cJSON_PrintUnformatted(versions);
    if (!m || !v)
        inf__serve_error(rq, 500, "%s", st ? e.message : "quality: out of memory");
    else {
        rq->status = 200;
        rq->content_type = "application/json";
        inf__serve_buf_printf(&rq->resp, "{\"models\":%s,\"model\":", m);
        if (name)
            inf__serve_buf_json_str(&rq->resp, name, strlen(name));
        else
            inf__serve_buf_puts(&rq->resp, "null");
        inf__serve_buf_printf(&rq->resp, ",\"versions\":%s}", v);
    }
    free(m);
    free(v);
    cJSON_Delete(models);
    cJSON_Delete(versions);
    return 0;
}

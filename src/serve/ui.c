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
 * markup).  Nothing on the page changes the server.  Access: /ui/state is
 * guarded like /metrics (a token when --auth-metrics); the page itself holds
 * no data.  Both answer 404 without --ui.
 */
#include <stdatomic.h>
#include <string.h>

#include "serve/serve.h"

static const char PAGE[] =
    "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Infera console</title><link rel=\"icon\" href=\"data:,\">\n"
    "<style>\n"
    "body{font:14px system-ui,sans-serif;margin:20px;color:#222}h1{font-size:19px}h2{font-size:15px;margin-top:22px}\n"
    "table{border-collapse:collapse;margin:4px 0}td,th{border:1px solid #ddd;padding:3px 8px;text-align:right}\n"
    "td:first-child,th:first-child{text-align:left}#status.err{color:#b00}.firing{color:#b00;font-weight:600}\n"
    ".ok{color:#070}svg{vertical-align:middle}.muted{color:#888}\n"
    "</style></head><body>\n"
    "<h1>Infera console <span id=\"status\" class=\"muted\">connecting</span></h1>\n"
    "<p class=\"muted\">Read-only.  Token (when /metrics needs one): <input id=\"token\" type=\"password\" size=\"30\"></p>\n"
    "<h2>Models</h2><table id=\"models\"><thead><tr><th>model</th><th>version</th><th>state</th><th>reason</th></tr></thead><tbody></tbody></table>\n"
    "<h2>Live traffic</h2><table id=\"traffic\"><thead><tr><th>model</th><th>version</th><th>requests ok</th><th>failed</th>"
    "<th>rows</th><th>mean latency ms</th><th>requests/s</th><th>rate (60 s)</th><th>latency (60 s)</th></tr></thead><tbody></tbody></table>\n"
    "<h2>Drift against the baseline</h2><div id=\"drift\"><p class=\"muted\">no monitored model (serve --baseline)</p></div>\n"
    "<h2>Alerts</h2><table id=\"alerts\"><thead><tr><th>rule</th><th>model</th><th>version</th><th>state</th><th>value</th>"
    "<th>threshold</th></tr></thead><tbody></tbody></table>\n"
    "<script>\n"
    "'use strict';\n"
    "const hist = {};\n"
    "const tok = document.getElementById('token');\n"
    "tok.value = sessionStorage.getItem('infera-token') || '';\n"
    "tok.addEventListener('change', () => sessionStorage.setItem('infera-token', tok.value));\n"
    "function el(tag, attrs, text) { const e = document.createElement(tag);\n"
    "  for (const k in attrs || {}) e.setAttribute(k, attrs[k]); if (text !== undefined) e.textContent = text; return e; }\n"
    "function svg(tag, attrs) { const e = document.createElementNS('http://www.w3.org/2000/svg', tag);\n"
    "  for (const k in attrs) e.setAttribute(k, attrs[k]); return e; }\n"
    "function fmt(x, d) { return (x === null || x === undefined || !isFinite(x)) ? '-' : Number(x).toFixed(d); }\n"
    "function spark(values, color) { const s = svg('svg', {width: 120, height: 24, class: 'spark'});\n"
    "  const max = Math.max(1e-9, ...values); const pts = values.map((v, i) =>\n"
    "    (i * 120 / Math.max(1, values.length - 1)).toFixed(1) + ',' + (22 - 20 * v / max).toFixed(1)).join(' ');\n"
    "  s.appendChild(svg('polyline', {points: pts, fill: 'none', stroke: color, 'stroke-width': 1.5})); return s; }\n"
    "function fill(tbody, rows) { tbody.replaceChildren(...rows); }\n"
    "function render(st) {\n"
    "  fill(document.querySelector('#models tbody'), st.models.map(m => { const tr = el('tr', {'data-model': m.name});\n"
    "    [m.name, m.version || '-', m.state, m.reason].forEach(t => tr.appendChild(el('td', {}, t))); return tr; }));\n"
    "  const now = st.server.uptime_s;\n"
    "  fill(document.querySelector('#traffic tbody'), st.metrics.map(m => {\n"
    "    const key = m.model + '@' + m.version, h = hist[key] || (hist[key] = []);\n"
    "    const prev = h.length ? h[h.length - 1] : null;\n"
    "    const rate = prev && now > prev.t ? (m.success + m.failure - prev.n) / (now - prev.t) : 0;\n"
    "    const lat = prev && m.success > prev.ok ? (m.request_us - prev.us) / (m.success - prev.ok) / 1000 : (prev ? prev.lat : 0);\n"
    "    h.push({t: now, n: m.success + m.failure, ok: m.success, us: m.request_us, rate: rate, lat: lat}); if (h.length > 60) h.shift();\n"
    "    const tr = el('tr', {'data-model': m.model, 'data-version': m.version});\n"
    "    tr.appendChild(el('td', {}, m.model)); tr.appendChild(el('td', {}, m.version));\n"
    "    tr.appendChild(el('td', {class: 'success'}, String(m.success))); tr.appendChild(el('td', {class: 'failure'}, String(m.failure)));\n"
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
    "      tr.appendChild(el('td', {}, fmt(a.value, 4))); tr.appendChild(el('td', {}, String(a.threshold))); alerts.push(tr); }\n"
    "    if (!m.drift) continue;\n"
    "    const box = el('div', {class: 'drift-model', 'data-model': m.model, 'data-version': m.version});\n"
    "    box.appendChild(el('p', {}, m.model + ' version ' + m.version + ': ' + m.drift.rows + ' rows in the window' +\n"
    "      (m.drift.complete ? ' (last complete window)' : ' (current window)') + ', ' + m.records + ' records scored'));\n"
    "    const t = el('table', {class: 'drift'}), head = el('tr');\n"
    "    ['column', 'PSI', 'JS', 'KS / chi2', ''].forEach(x => head.appendChild(el('th', {}, x))); t.appendChild(head);\n"
    "    for (const sec of ['features', 'outputs']) for (const name in m.drift[sec]) {\n"
    "      const d = m.drift[sec][name], tr = el('tr', {'data-feature': name});\n"
    "      tr.appendChild(el('td', {}, name)); tr.appendChild(el('td', {class: 'psi'}, fmt(d.psi, 4)));\n"
    "      tr.appendChild(el('td', {class: 'js'}, fmt(d.js, 4))); tr.appendChild(el('td', {}, fmt(d.ks !== undefined ? d.ks : d.chi2, 4)));\n"
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

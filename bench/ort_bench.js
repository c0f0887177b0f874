#!/usr/bin/env node
// ort_bench.js -- the ONNX Runtime side of bench/run.sh: runs one model in
// onnxruntime-node (CPU execution provider) the way `infera bench --json`
// runs it in Infera, and prints one JSON line with the same fields.
//
//   node bench/ort_bench.js MODEL.onnx [--threads N] [--batch B] [--iters N] [--warmup N] [--flush MB]
//
// Measured: load_ms = InferenceSession.create (read + optimise the graph);
// first_run_ms = the first run; latency_us = warm runs (each awaited: the
// node binding's per-call cost is part of what a node user of ORT pays);
// throughput = batch / mean latency; peak_rss_mb = process maxRSS (includes
// node itself, ~40 MB; the baseline before loading ORT is reported too).
// Inputs are random uniform [-1, 1) (integers: [0, 8)) with symbolic
// dimensions set to the batch -- the same distribution as `infera bench`.
// --flush MB: each timed run after a read of an MB MiB buffer (cold caches;
// ort_common.js).  Options, inputs and the onnxruntime-node lookup are
// bench/ort_common.js's.
'use strict';
const { loadOrt, parseArgs, sessionOptions, makeFeeds, cacheSweeper } = require('./ort_common');

const baseRssMb = process.resourceUsage().maxRSS / 1024;

async function main() {
  const a = parseArgs('ort_bench', process.argv.slice(2));
  const ort = loadOrt('ort_bench');
  const opts = sessionOptions(a.threads);
  const t0 = process.hrtime.bigint();
  const session = await ort.InferenceSession.create(a.model, opts);
  const loadMs = Number(process.hrtime.bigint() - t0) / 1e6;

  const { feeds, rows } = makeFeeds('ort_bench', ort, session, a.batch);

  const t1 = process.hrtime.bigint();
  await session.run(feeds);
  const firstMs = Number(process.hrtime.bigint() - t1) / 1e6;
  for (let i = 0; i < a.warmup; i++) await session.run(feeds);

  const sweep = cacheSweeper(a.flush);
  const lat = new Float64Array(a.iters);
  let sum = 0;
  for (let i = 0; i < a.iters; i++) {
    sweep();
    const s = process.hrtime.bigint();
    await session.run(feeds);
    lat[i] = Number(process.hrtime.bigint() - s) / 1e3;
    sum += lat[i];
  }
  lat.sort();
  const pct = p => { const idx = Math.round(p / 100 * (a.iters - 1)); return lat[Math.min(idx, a.iters - 1)]; };
  const mean = sum / a.iters;
  const r2 = x => Math.round(x * 100) / 100;
  console.log(JSON.stringify({
    model: a.model, engine: 'onnxruntime-node ' + (ort.env.versions ? ort.env.versions.common : ''),
    threads: a.threads, batch: rows, iters: a.iters,
    load_ms: Math.round(loadMs * 1000) / 1000, first_run_ms: Math.round(firstMs * 1000) / 1000,
    latency_us: { mean: r2(mean), p50: r2(pct(50)), p90: r2(pct(90)), p99: r2(pct(99)) },
    throughput_rows_per_s: Math.round(rows / (mean * 1e-6) * 10) / 10,
    peak_rss_mb: Math.round(process.resourceUsage().maxRSS / 1024 * 10) / 10,
    base_rss_mb: Math.round(baseRssMb * 10) / 10,
  }));
  await session.release();
}

main().catch(e => { console.error('ort_bench: ' + (e && e.message ? e.message : e)); process.exit(1); });

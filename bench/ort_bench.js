#!/usr/bin/env node
// ort_bench.js -- the ONNX Runtime side of bench/run.sh: runs one model in
// onnxruntime-node (CPU execution provider) the way `infera bench --json`
// runs it in Infera, and prints one JSON line with the same fields.
//
//   node bench/ort_bench.js MODEL.onnx [--threads N] [--batch B] [--iters N] [--warmup N]
//
// Measured: load_ms = InferenceSession.create (read + optimise the graph);
// first_run_ms = the first run; latency_us = warm runs (each awaited: the
// node binding's per-call cost is part of what a node user of ORT pays);
// throughput = batch / mean latency; peak_rss_mb = process maxRSS (includes
// node itself, ~40 MB; the baseline before loading ORT is reported too).
// Inputs are random uniform [-1, 1) (integers: [0, 8)) with symbolic
// dimensions set to the batch -- the same distribution as `infera bench`.
// onnxruntime-node is looked up in bench/node_modules, then
// tests/models/ort/node_modules (npm install --ignore-scripts onnxruntime-node@1.30.0).
'use strict';
const path = require('path');

const baseRssMb = process.resourceUsage().maxRSS / 1024;

function loadOrt() {
  const here = __dirname;
  const candidates = [path.join(here, 'node_modules', 'onnxruntime-node'),
                      path.join(here, '..', 'tests', 'models', 'ort', 'node_modules', 'onnxruntime-node')];
  for (const c of candidates) {
    try { return require(c); } catch (e) { if (e.code !== 'MODULE_NOT_FOUND') throw e; }
  }
  console.error('ort_bench: onnxruntime-node not found; run (cd bench && npm install --ignore-scripts onnxruntime-node@1.30.0)');
  process.exit(2);
}

function parseArgs(argv) {
  const a = { model: null, threads: 1, batch: 1, iters: 100, warmup: 10 };
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i];
    if (['--threads', '--batch', '--iters', '--warmup'].includes(k)) {
      const v = parseInt(argv[++i], 10);
      if (!(v >= 0)) { console.error(`ort_bench: ${k} needs a number`); process.exit(2); }
      a[k.slice(2)] = v;
    } else if (k.startsWith('-')) {
      console.error(`ort_bench: unknown option ${k}`); process.exit(2);
    } else a.model = k;
  }
  if (!a.model) { console.error('usage: ort_bench.js MODEL.onnx [--threads N] [--batch B] [--iters N] [--warmup N]'); process.exit(2); }
  return a;
}

// xorshift64, same stream shape as infera bench (values differ in detail; the
// distribution is what matters for dense kernels).
let rng = 0x9E3779B97F4A7C15n;
function next01() {
  const M = (1n << 64n) - 1n;
  rng ^= (rng << 13n) & M; rng ^= rng >> 7n; rng ^= (rng << 17n) & M;
  return Number(rng >> 11n) / 9007199254740992.0;
}

function makeInput(ort, meta, batch) {
  const dims = meta.shape.map(d => (typeof d === 'number' && d >= 0 ? d : batch));
  const n = dims.reduce((x, y) => x * y, 1);
  switch (meta.type) {
    case 'float32': {
      const a = new Float32Array(n);
      for (let i = 0; i < n; i++) a[i] = 2 * next01() - 1;
      return new ort.Tensor('float32', a, dims);
    }
    case 'int64': {
      const a = new BigInt64Array(n);
      for (let i = 0; i < n; i++) a[i] = BigInt(Math.floor(next01() * 8));
      return new ort.Tensor('int64', a, dims);
    }
    case 'int32': {
      const a = new Int32Array(n);
      for (let i = 0; i < n; i++) a[i] = Math.floor(next01() * 8);
      return new ort.Tensor('int32', a, dims);
    }
    default:
      console.error(`ort_bench: input '${meta.name}': unsupported type ${meta.type}`);
      process.exit(2);
  }
}

async function main() {
  const a = parseArgs(process.argv.slice(2));
  const ort = loadOrt();
  const opts = {
    executionProviders: ['cpu'],
    intraOpNumThreads: a.threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
  };
  const t0 = process.hrtime.bigint();
  const session = await ort.InferenceSession.create(a.model, opts);
  const loadMs = Number(process.hrtime.bigint() - t0) / 1e6;

  const feeds = {};
  let rows = 1;
  session.inputMetadata.forEach((meta, i) => {
    const t = makeInput(ort, meta, a.batch);
    if (i === 0) rows = t.dims.length ? t.dims[0] : 1;
    feeds[meta.name] = t;
  });

  const t1 = process.hrtime.bigint();
  await session.run(feeds);
  const firstMs = Number(process.hrtime.bigint() - t1) / 1e6;
  for (let i = 0; i < a.warmup; i++) await session.run(feeds);

  const lat = new Float64Array(a.iters);
  let sum = 0;
  for (let i = 0; i < a.iters; i++) {
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

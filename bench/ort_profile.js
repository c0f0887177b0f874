#!/usr/bin/env node
// ort_profile.js -- ONNX Runtime's per-node profile of one model, the ORT side
// of bench/profile_vs_ort.py: runs the model in onnxruntime-node with
// enableProfiling, reads the trace file ORT writes (Chrome trace JSON), keeps
// the "Node" events of the timed runs (the warm-up runs are dropped by
// matching each event to its "model_run" event) and prints one JSON line:
//
//   {"engine","threads","batch","runs","run_us"  (mean model_run duration),
//    "nodes":[{"node","op","inputs":[shapes],"output":shape,"calls","total_us"}]}
//
//   node bench/ort_profile.js MODEL.onnx [--threads N] [--batch B] [--iters N] [--warmup N]
//
// Session options and inputs are those of bench/ort_bench.js (CPU provider,
// graph optimisation "all", sequential, random uniform inputs with symbolic
// dimensions = batch).  Durations are ORT's "dur" of each "<node>_kernel_time"
// event, in microseconds (the kernel's wall time on the calling thread).
// The trace file is written to the system temp directory and removed.
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');

function loadOrt() {
  const here = __dirname;
  const candidates = [path.join(here, 'node_modules', 'onnxruntime-node'),
                      path.join(here, '..', 'tests', 'models', 'ort', 'node_modules', 'onnxruntime-node')];
  for (const c of candidates) {
    try { return require(c); } catch (e) { if (e.code !== 'MODULE_NOT_FOUND') throw e; }
  }
  console.error('ort_profile: onnxruntime-node not found; run (cd bench && npm install --ignore-scripts onnxruntime-node@1.30.0)');
  process.exit(2);
}

function parseArgs(argv) {
  const a = { model: null, threads: 1, batch: 1, iters: 100, warmup: 10 };
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i];
    if (['--threads', '--batch', '--iters', '--warmup'].includes(k)) {
      const v = parseInt(argv[++i], 10);
      if (!(v >= 0)) { console.error(`ort_profile: ${k} needs a number`); process.exit(2); }
      a[k.slice(2)] = v;
    } else if (k.startsWith('-')) {
      console.error(`ort_profile: unknown option ${k}`); process.exit(2);
    } else a.model = k;
  }
  if (!a.model || a.iters < 1) {
    console.error('usage: ort_profile.js MODEL.onnx [--threads N] [--batch B] [--iters N>=1] [--warmup N]');
    process.exit(2);
  }
  return a;
}

// xorshift64 uniform [0, 1), as bench/ort_bench.js and `infera bench`.
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
      console.error(`ort_profile: input '${meta.name}': unsupported type ${meta.type}`);
      process.exit(2);
  }
}

// The shape in a type_shape entry ({"float": [1, 3, 96, 96]}), or null.
const shapeOf = ts => (ts && typeof ts === 'object' ? Object.values(ts)[0] || null : null);

// Node events of the last `timed` model_run windows, summed per node name.
function summarise(trace, timed) {
  const runs = trace.filter(e => e.cat === 'Session' && e.name === 'model_run').sort((x, y) => x.ts - y.ts);
  const kept = runs.slice(Math.max(0, runs.length - timed));
  const inKept = ts => kept.some(r => ts >= r.ts && ts <= r.ts + r.dur);
  const byNode = new Map();
  for (const e of trace) {
    if (e.cat !== 'Node' || !e.name.endsWith('_kernel_time') || !inKept(e.ts)) continue;
    const name = e.name.slice(0, -'_kernel_time'.length);
    let n = byNode.get(name);
    if (!n) {
      const args = e.args || {};
      n = { node: name, op: args.op_name || '?', inputs: (args.input_type_shape || []).map(shapeOf),
            output: shapeOf((args.output_type_shape || [])[0]), calls: 0, total_us: 0 };
      byNode.set(name, n);
    }
    n.calls++;
    n.total_us += e.dur;
  }
  const runUs = kept.reduce((s, r) => s + r.dur, 0) / Math.max(1, kept.length);
  return { runs: kept.length, run_us: runUs, nodes: [...byNode.values()].sort((x, y) => y.total_us - x.total_us) };
}

async function main() {
  const a = parseArgs(process.argv.slice(2));
  const ort = loadOrt();
  const prefix = path.join(os.tmpdir(), `ort_profile_${process.pid}`);
  const opts = {
    executionProviders: ['cpu'],
    intraOpNumThreads: a.threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
    enableProfiling: true,
    profileFilePrefix: prefix,
  };
  const session = await ort.InferenceSession.create(a.model, opts);
  const feeds = {};
  let rows = 1;
  session.inputMetadata.forEach((meta, i) => {
    const t = makeInput(ort, meta, a.batch);
    if (i === 0) rows = t.dims.length ? t.dims[0] : 1;
    feeds[meta.name] = t;
  });
  for (let i = 0; i < 1 + a.warmup + a.iters; i++) await session.run(feeds);
  if (session.endProfiling) await session.endProfiling();
  await session.release(); // writes the trace file
  const dir = path.dirname(prefix);
  const files = fs.readdirSync(dir).filter(f => f.startsWith(path.basename(prefix) + '_') && f.endsWith('.json'));
  if (files.length !== 1) {
    console.error(`ort_profile: expected one trace file ${prefix}_*.json, found ${files.length}`);
    process.exit(1);
  }
  const file = path.join(dir, files[0]);
  const trace = JSON.parse(fs.readFileSync(file, 'utf8'));
  fs.unlinkSync(file);
  const s = summarise(trace, a.iters);
  console.log(JSON.stringify({
    model: a.model, engine: 'onnxruntime-node ' + (ort.env.versions ? ort.env.versions.common : ''),
    threads: a.threads, batch: rows, runs: s.runs, run_us: Math.round(s.run_us * 100) / 100, nodes: s.nodes,
  }));
}

main().catch(e => { console.error('ort_profile: ' + (e && e.message ? e.message : e)); process.exit(1); });

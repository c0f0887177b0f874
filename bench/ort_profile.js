#!/usr/bin/env node
// ort_profile.js -- ONNX Runtime's per-node profile of one model, the ORT side
// of bench/profile_vs_ort.py: runs the model in onnxruntime-node with
// enableProfiling, reads the trace file ORT writes (Chrome trace JSON), keeps
// the "Node" events of the timed runs (the warm-up runs are dropped by
// matching each event to its "model_run" event) and prints one JSON line:
//
//   {"engine","threads","batch","runs","run_us"  (mean model_run duration),
//    "nodes":[{"node","op","inputs":[shapes],"output":shape,"calls","total_us","min_us"}]}
//
//   node bench/ort_profile.js MODEL.onnx [--threads N] [--batch B] [--iters N] [--warmup N] [--flush MB]
//
// Session options and inputs are bench/ort_common.js's, as in ort_bench.js (CPU provider,
// graph optimisation "all", sequential, random uniform inputs with symbolic
// dimensions = batch).  Durations are ORT's "dur" of each "<node>_kernel_time"
// event, in microseconds (the kernel's wall time on the calling thread);
// min_us is a node's shortest call (at a high load, the figure to compare with
// the minimum of `infera bench --profile`).
// --flush MB: each timed run after a read of an MB MiB buffer (cold caches;
// ort_common.js), outside the node events.
// The trace file is written to the system temp directory and removed.
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const { loadOrt, parseArgs, sessionOptions, makeFeeds, cacheSweeper } = require('./ort_common');

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
            output: shapeOf((args.output_type_shape || [])[0]), calls: 0, total_us: 0, min_us: Infinity };
      byNode.set(name, n);
    }
    n.calls++;
    n.total_us += e.dur;
    n.min_us = Math.min(n.min_us, e.dur);
  }
  const runUs = kept.reduce((s, r) => s + r.dur, 0) / Math.max(1, kept.length);
  return { runs: kept.length, run_us: runUs, nodes: [...byNode.values()].sort((x, y) => y.total_us - x.total_us) };
}

async function main() {
  const a = parseArgs('ort_profile', process.argv.slice(2));
  const ort = loadOrt('ort_profile');
  const prefix = path.join(os.tmpdir(), `ort_profile_${process.pid}`);
  const opts = { ...sessionOptions(a.threads), enableProfiling: true, profileFilePrefix: prefix };
  const session = await ort.InferenceSession.create(a.model, opts);
  const { feeds, rows } = makeFeeds('ort_profile', ort, session, a.batch);
  const sweep = cacheSweeper(a.flush);
  for (let i = 0; i < 1 + a.warmup + a.iters; i++) {
    if (i > a.warmup) sweep();
    await session.run(feeds);
  }
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

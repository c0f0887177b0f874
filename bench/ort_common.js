// ort_common.js -- what the ONNX Runtime side of the benchmarks shares:
// finding onnxruntime-node, the command line (MODEL [--threads N] [--batch B]
// [--iters N] [--warmup N] [--flush MB]), the caches' sweep before a cold
// run, the session options every comparison uses (CPU provider, graph
// optimisation "all", sequential, intra-op threads = N) and the random
// inputs (uniform [-1, 1), integers [0, 8), symbolic dimensions = the batch:
// the distribution `infera bench` uses).  Used by ort_bench.js,
// ort_profile.js and extra/ort_run.js.
'use strict';
const path = require('path');

// onnxruntime-node from bench/node_modules, else tests/models/ort/node_modules.
function loadOrt(tool) {
  const candidates = [path.join(__dirname, 'node_modules', 'onnxruntime-node'),
                      path.join(__dirname, '..', 'tests', 'models', 'ort', 'node_modules', 'onnxruntime-node')];
  for (const c of candidates) {
    try { return require(c); } catch (e) { if (e.code !== 'MODULE_NOT_FOUND') throw e; }
  }
  console.error(`${tool}: onnxruntime-node not found; run (cd bench && npm install --ignore-scripts onnxruntime-node@1.30.0)`);
  process.exit(2);
}

function parseArgs(tool, argv) {
  const a = { model: null, threads: 1, batch: 1, iters: 100, warmup: 10, flush: 0 };
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i];
    if (['--threads', '--batch', '--iters', '--warmup', '--flush'].includes(k)) {
      const v = parseInt(argv[++i], 10);
      if (!(v >= 0)) { console.error(`${tool}: ${k} needs a number`); process.exit(2); }
      a[k.slice(2)] = v;
    } else if (k.startsWith('-')) {
      console.error(`${tool}: unknown option ${k}`); process.exit(2);
    } else a.model = k;
  }
  if (!a.model || a.iters < 1) {
    console.error(`usage: ${tool} MODEL.onnx [--threads N] [--batch B] [--iters N>=1] [--warmup N] [--flush MB]`);
    process.exit(2);
  }
  return a;
}

// --flush MB: a function that reads every 64-byte line of an MB MiB buffer
// (with MB above the L3, the next run starts with cold caches: the
// `--flush` of bench/bench_ab.c), called before each timed run outside its
// time; a no-op without --flush.
let sweepSink = 0; // the sums, kept so that no compiler drops the reads
function cacheSweeper(mb) {
  if (!(mb > 0)) return () => {};
  const buf = new Uint8Array(mb << 20).fill(1);
  return () => { let s = 0; for (let i = 0; i < buf.length; i += 64) s += buf[i]; sweepSink += s; };
}

function sessionOptions(threads) {
  return {
    executionProviders: ['cpu'],
    intraOpNumThreads: threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
  };
}

// xorshift64 uniform [0, 1), the stream shape of `infera bench`.
let rng = 0x9E3779B97F4A7C15n;
function next01() {
  const M = (1n << 64n) - 1n;
  rng ^= (rng << 13n) & M; rng ^= rng >> 7n; rng ^= (rng << 17n) & M;
  return Number(rng >> 11n) / 9007199254740992.0;
}

function makeInput(tool, ort, meta, batch) {
  const dims = meta.shape.map(d => (typeof d === 'number' && d >= 0 ? d : batch));
  const n = dims.reduce((x, y) => x * y, 1);
  const fill = (a, f) => { for (let i = 0; i < n; i++) a[i] = f(); return a; };
  switch (meta.type) {
    case 'float32': return new ort.Tensor('float32', fill(new Float32Array(n), () => 2 * next01() - 1), dims);
    case 'int64': return new ort.Tensor('int64', fill(new BigInt64Array(n), () => BigInt(Math.floor(next01() * 8))), dims);
    case 'int32': return new ort.Tensor('int32', fill(new Int32Array(n), () => Math.floor(next01() * 8)), dims);
    default:
      console.error(`${tool}: input '${meta.name}': unsupported type ${meta.type}`);
      process.exit(2);
  }
}

// Random inputs for every model input, and the rows of the first one.
function makeFeeds(tool, ort, session, batch) {
  const feeds = {};
  let rows = 1;
  session.inputMetadata.forEach((meta, i) => {
    const t = makeInput(tool, ort, meta, batch);
    if (i === 0) rows = t.dims.length ? t.dims[0] : 1;
    feeds[meta.name] = t;
  });
  return { feeds, rows };
}

module.exports = { loadOrt, parseArgs, sessionOptions, makeFeeds, cacheSweeper };

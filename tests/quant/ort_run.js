#!/usr/bin/env node
// ort_run.js -- runs an ONNX model in ONNX Runtime (onnxruntime-node 1.30.0, the
// test oracle of tests/models/ort/) on .npy inputs and writes each output to
// OUTDIR/<output name>.npy, for the quantization tests and benchmark.
//
//   node tests/quant/ort_run.js MODEL OUTDIR NAME=FILE.npy...
//   node tests/quant/ort_run.js --bench MODEL NAME=FILE.npy... [--iters N] [--threads T]
//        prints {"mean_us": ...} for the model on the given inputs (one warm-up run)
// ORT_OPT=disabled|basic|extended|all sets the graph optimisation level (default all).
'use strict';
const fs = require('fs');
const path = require('path');

let ort;
try {
  ort = require(path.join(__dirname, '..', 'models', 'ort', 'node_modules', 'onnxruntime-node'));
} catch (e) {
  console.error('ort_run.js: cannot load onnxruntime-node; run: (cd tests/models/ort && npm ci --ignore-scripts)');
  process.exit(77);
}

const DTYPES = { '<f4': [Float32Array, 'float32'], '<i8': [BigInt64Array, 'int64'], '|u1': [Uint8Array, 'uint8'],
                 '|i1': [Int8Array, 'int8'], '<i4': [Int32Array, 'int32'] };
const DESCR = { float32: '<f4', int64: '<i8', uint8: '|u1', int8: '|i1', int32: '<i4' };

function readNpy(file) {
  const buf = fs.readFileSync(file);
  const major = buf[6];
  const hlen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const hstart = major === 1 ? 10 : 12;
  const header = buf.toString('latin1', hstart, hstart + hlen);
  const descr = /'descr':\s*'([^']+)'/.exec(header)[1];
  const dims = /'shape':\s*\(([^)]*)\)/.exec(header)[1].split(',').map(s => s.trim()).filter(s => s).map(Number);
  const [Ctor, type] = DTYPES[descr];
  const n = dims.reduce((a, b) => a * b, 1);
  const data = new Ctor(n);
  Buffer.from(data.buffer).set(buf.subarray(hstart + hlen, hstart + hlen + n * Ctor.BYTES_PER_ELEMENT));
  return new ort.Tensor(type, data, dims);
}

function writeNpy(file, t) {
  const dims = t.dims;
  let header = "{'descr': '" + DESCR[t.type] + "', 'fortran_order': False, 'shape': (" +
               dims.join(', ') + (dims.length === 1 ? ',' : '') + '), }';
  header += ' '.repeat((64 - ((11 + header.length) % 64)) % 64) + '\n';
  const pre = Buffer.alloc(10);
  pre.write('\x93NUMPY', 0, 'latin1');
  pre[6] = 1;
  pre.writeUInt16LE(header.length, 8);
  fs.writeFileSync(file, Buffer.concat([pre, Buffer.from(header, 'latin1'),
                                        Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength)]));
}

async function main() {
  const args = process.argv.slice(2);
  const bench = args[0] === '--bench';
  if (bench) args.shift();
  let iters = 50, threads = 1;
  const rest = [];
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '--iters') iters = Number(args[++i]);
    else if (args[i] === '--threads') threads = Number(args[++i]);
    else rest.push(args[i]);
  }
  const model = rest.shift();
  const outDir = bench ? null : rest.shift();
  const sess = await ort.InferenceSession.create(model, {
    executionProviders: ['cpu'], intraOpNumThreads: threads, interOpNumThreads: 1, graphOptimizationLevel: process.env.ORT_OPT || 'all' });
  const feeds = {};
  for (const a of rest) {
    const eq = a.indexOf('=');
    const name = eq > 0 ? a.slice(0, eq) : sess.inputNames[0];
    feeds[name] = readNpy(eq > 0 ? a.slice(eq + 1) : a);
  }
  if (!bench) {
    const res = await sess.run(feeds);
    for (const o of sess.outputNames) writeNpy(path.join(outDir, o + '.npy'), res[o]);
    return;
  }
  await sess.run(feeds);
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < iters; i++) await sess.run(feeds);
  const us = Number(process.hrtime.bigint() - t0) / 1e3 / iters;
  console.log(JSON.stringify({ mean_us: us }));
}
main().catch(e => { console.error('ort_run.js: ' + e.message); process.exit(1); });

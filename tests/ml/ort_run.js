#!/usr/bin/env node
// Runs every ONNX case of tests/ml/data/manifest.txt in ONNX Runtime (onnxruntime-node)
// and writes data/<case>.ort.<output>.npy for numeric tensor outputs (string, sequence
// and map outputs are skipped -- ort_extra.py writes those; a model ORT refuses is reported and skipped).
//   (cd tests/models/ort && npm ci --ignore-scripts); node tests/ml/ort_run.js
'use strict';
const fs = require('fs');
const path = require('path');
const ort = require(path.join(__dirname, '..', 'models', 'ort', 'node_modules', 'onnxruntime-node'));
const DATA = path.join(__dirname, 'data');
const DT = { '<f4': [Float32Array, 'float32'], '<f8': [Float64Array, 'float64'], '<i8': [BigInt64Array, 'int64'],
             '<i4': [Int32Array, 'int32'] };
const DESCR = { float32: '<f4', float64: '<f8', int64: '<i8', int32: '<i4' };

function readNpy(file) {
  const buf = fs.readFileSync(file);
  const major = buf[6];
  const hlen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const hs = major === 1 ? 10 : 12;
  const header = buf.toString('latin1', hs, hs + hlen);
  const descr = /'descr':\s*'([^']+)'/.exec(header)[1];
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header)[1].split(',').map(s => s.trim()).filter(s => s).map(Number);
  const [C, type] = DT[descr];
  const raw = buf.subarray(hs + hlen);
  const data = new C(raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.length));
  return new ort.Tensor(type, data, shape);
}

function writeNpy(file, t) {
  let header = `{'descr': '${DESCR[t.type]}', 'fortran_order': False, 'shape': (${t.dims.join(', ')}${t.dims.length === 1 ? ',' : ''}), }`;
  while ((header.length + 11) % 64) header += ' ';
  header += '\n';
  const pre = Buffer.alloc(10);
  Buffer.from('\x93NUMPY', 'latin1').copy(pre);
  pre[6] = 1; pre[7] = 0;
  pre.writeUInt16LE(header.length, 8);
  fs.writeFileSync(file, Buffer.concat([pre, Buffer.from(header, 'latin1'), Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength)]));
}

(async () => {
  for (const line of fs.readFileSync(path.join(DATA, 'manifest.txt'), 'utf8').split('\n')) {
    if (!line.trim()) continue;
    const [head, outs] = line.split(' : ');
    const [name, model, ...inputs] = head.split(' ');
    if (!model.endsWith('.onnx')) continue;
    // ORT (1.30) reads TreeEnsemble's post_transform 1 as LOGISTIC and 2 as SOFTMAX; the ONNX spec (and
    // onnx.reference) says 1 SOFTMAX, 2 LOGISTIC.  Those cases are checked against the spec's numbers only.
    if (/^tree5_t2_.*_post[12]_/.test(name)) { console.log(`skip ${name}: ORT swaps SOFTMAX/LOGISTIC`); continue; }
    const feeds = {};
    let skip = false;
    for (const i of inputs) {
      const f = path.join(DATA, `${name}.in.${i}.npy`);
      if (!fs.existsSync(f)) { skip = true; break; }
      feeds[i] = readNpy(f);
    }
    if (skip) { console.log(`skip ${name}: non-numeric input`); continue; }
    try {
      const s = await ort.InferenceSession.create(path.join(DATA, model));
      const res = await s.run(feeds);
      for (const o of outs.split(' ')) {
        const t = res[o];
        if (t && t.type && DESCR[t.type]) writeNpy(path.join(DATA, `${name}.ort.${o}.npy`), t);
      }
      console.log(`ok   ${name}`);
    } catch (e) {
      console.log(`skip ${name}: ${String(e.message).split('\n')[0]}`);
    }
  }
})();

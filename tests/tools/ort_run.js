#!/usr/bin/env node
// ort_run.js -- runs a model once in ONNX Runtime (onnxruntime-node, CPU) for
// tests/tools/test_compress.sh:
//
//   node tests/tools/ort_run.js MODEL.onnx INPUT.npy OUT_DIR
//
// INPUT.npy (float32) is bound to the model's first input; every float32 /
// int64 output is written as OUT_DIR/<name>.npy.  Exit 2 when
// onnxruntime-node is not installed ((cd tests/models/ort && npm ci --ignore-scripts)).
'use strict';
const fs = require('fs');
const path = require('path');
let ort;
try {
  ort = require(path.join(__dirname, '..', 'models', 'ort', 'node_modules', 'onnxruntime-node'));
} catch (e) {
  console.error('ort_run.js: onnxruntime-node not installed: ' + e.message.split('\n')[0]);
  process.exit(2);
}

function readNpyF32(file) {
  const buf = fs.readFileSync(file);
  const major = buf[6];
  const hlen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const hs = major === 1 ? 10 : 12;
  const header = buf.toString('latin1', hs, hs + hlen);
  if (!/'descr':\s*'<f4'/.test(header)) throw new Error(file + ': not float32');
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header)[1].split(',').map(s => s.trim()).filter(s => s).map(Number);
  const raw = buf.subarray(hs + hlen);
  return new ort.Tensor('float32', new Float32Array(raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.length)), shape);
}

function writeNpy(file, t) {
  const descr = { float32: '<f4', int64: '<i8' }[t.type];
  if (!descr) return;
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': (${t.dims.join(', ')}${t.dims.length === 1 ? ',' : ''}), }`;
  while ((10 + header.length + 1) % 64) header += ' ';
  header += '\n';
  const h = Buffer.alloc(10);
  h.write('\x93NUMPY', 0, 'latin1');
  h[6] = 1; h[7] = 0;
  h.writeUInt16LE(header.length, 8);
  const data = Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength);
  fs.writeFileSync(file, Buffer.concat([h, Buffer.from(header, 'latin1'), data]));
}

(async () => {
  const [model, input, outDir] = process.argv.slice(2);
  if (!outDir) { console.error('usage: ort_run.js MODEL.onnx INPUT.npy OUT_DIR'); process.exit(2); }
  const s = await ort.InferenceSession.create(model);
  const r = await s.run({ [s.inputNames[0]]: readNpyF32(input) });
  fs.mkdirSync(outDir, { recursive: true });
  for (const name of s.outputNames) writeNpy(path.join(outDir, name + '.npy'), r[name]);
})().catch((e) => { console.error('ort_run.js: ' + e.message); process.exit(1); });

#!/usr/bin/env node
// ort_run.js -- one ONNX Runtime (onnxruntime-node, CPU) run for bench/extra/check.py:
//
//   node bench/extra/ort_run.js MODEL.onnx IN.bin '[N,C,H,W]' OUT.bin
//
// IN.bin is the float32 input "x" (raw, little-endian) of the given shape;
// the float32 output "y" is written raw to OUT.bin.  onnxruntime-node is
// looked up by bench/ort_common.js.
'use strict';
const fs = require('fs');
const { loadOrt } = require('../ort_common');

(async () => {
  const [model, inp, shape, out] = process.argv.slice(2);
  if (!out) { console.error('usage: ort_run.js MODEL.onnx IN.bin SHAPE_JSON OUT.bin'); process.exit(2); }
  const ort = loadOrt('ort_run');
  const s = await ort.InferenceSession.create(model);
  const buf = fs.readFileSync(inp);
  const x = new Float32Array(buf.buffer, buf.byteOffset, buf.length / 4);
  const r = await s.run({ x: new ort.Tensor('float32', x, JSON.parse(shape)) });
  fs.writeFileSync(out, Buffer.from(r.y.data.buffer, r.y.data.byteOffset, r.y.data.byteLength));
})().catch((e) => { console.error('ort_run: ' + e.message); process.exit(1); });

#!/usr/bin/env node
// compare.js -- for the quantization tests: compares Infera's outputs with ONNX
// Runtime's on the same quantized model, in units of a quantization step.
//
//   node tests/quant/compare.js GOT.npy WANT.npy FP32.npy [MAX_STEPS]
//
// step = (max(0, max FP32) - min(0, min FP32)) / 255: the step of a uint8
// quantization of the output over its FP32 range on these inputs (the rule
// `infera quantize` and ONNX Runtime use for activations).  Prints
// max|got - want| in steps and the FP32 error of WANT (ONNX Runtime's INT8
// vs FP32) for scale; exits 1 when max|got - want| > MAX_STEPS steps
// (default 1), or when the shapes differ.
'use strict';
const fs = require('fs');

function readF32(file) {
  const buf = fs.readFileSync(file);
  const major = buf[6];
  const hlen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const hstart = major === 1 ? 10 : 12;
  const header = buf.toString('latin1', hstart, hstart + hlen);
  if (!/'descr':\s*'<f4'/.test(header)) throw new Error(file + ': not float32');
  const dims = /'shape':\s*\(([^)]*)\)/.exec(header)[1].split(',').map(s => s.trim()).filter(s => s).map(Number);
  const n = dims.reduce((a, b) => a * b, 1);
  const data = new Float32Array(n);
  Buffer.from(data.buffer).set(buf.subarray(hstart + hlen, hstart + hlen + 4 * n));
  return { data, dims };
}

const [gotF, wantF, fpF, maxArg] = process.argv.slice(2);
const maxSteps = maxArg ? Number(maxArg) : 1;
const got = readF32(gotF), want = readF32(wantF), fp = readF32(fpF);
if (got.dims.join() !== want.dims.join() || fp.dims.join() !== want.dims.join()) {
  console.log('shape mismatch: ' + got.dims + ' vs ' + want.dims + ' vs ' + fp.dims);
  process.exit(1);
}
let lo = 0, hi = 0, d = 0, e = 0;
for (let i = 0; i < fp.data.length; i++) {
  lo = Math.min(lo, fp.data[i]); hi = Math.max(hi, fp.data[i]);
  const di = Math.abs(got.data[i] - want.data[i]);
  d = Number.isNaN(di) ? Infinity : Math.max(d, di);
  e = Math.max(e, Math.abs(want.data[i] - fp.data[i]));
}
const step = (hi - lo) / 255 || 1;
const line = `max|infera - ort| = ${d.toExponential(3)} (${(d / step).toFixed(3)} steps of ${step.toExponential(3)}); ` +
             `ort int8 vs fp32: ${(e / step).toFixed(3)} steps`;
console.log(line);
process.exit(d <= maxSteps * step ? 0 : 1);

#!/usr/bin/env node
// Run each example model in ONNX Runtime (onnxruntime-node) on its fixed input and write
// <model>_<output>.ort.npy next to the PyTorch references, then print ORT-vs-PyTorch diffs.
//
//   (cd tests/models/ort && npm ci --ignore-scripts)     # once; see README.md
//   node tests/models/ort_reference.js [--check]
//   node tests/models/ort_reference.js --unseen [--check]   # unseen/ (gen_unseen_models.py):
//        inputs NAME_x<i>.npy -> NAME_y<j>.ort.npy, compared with NAME_y<j>.torch.npy where present
//
// --check: write nothing; exit 1 if ORT disagrees with <model>_<output>.torch.npy beyond
//          |ort - torch| <= 1e-5 + 1e-4 * |torch| (numpy.allclose rule), or with the
//          committed .ort.npy beyond the same tolerance.
'use strict';
const fs = require('fs');
const path = require('path');

const HERE = __dirname;
let ort;
try {
  ort = require(path.join(HERE, 'ort', 'node_modules', 'onnxruntime-node'));
} catch (e) {
  console.error('ort_reference.js: cannot load onnxruntime-node (' + e.message.split('\n')[0] +
                '); run: (cd tests/models/ort && npm ci --ignore-scripts)');
  process.exit(2);
}

const MODELS = ['mlp', 'cnn', 'transformer'];
const RTOL = 1e-4, ATOL = 1e-5;

// ---------------------------------------------------------------- minimal .npy I/O
const DTYPES = {   // numpy descr -> [TypedArray, ort type]
  '<f4': [Float32Array, 'float32'], '<f8': [Float64Array, 'float64'],
  '<i4': [Int32Array, 'int32'], '<i8': [BigInt64Array, 'int64'],
  '|u1': [Uint8Array, 'uint8'], '|i1': [Int8Array, 'int8'], '|b1': [Uint8Array, 'bool'],
};
const ORT_TO_DESCR = { float32: '<f4', float64: '<f8', int32: '<i4', int64: '<i8',
                       uint8: '|u1', int8: '|i1', bool: '|b1' };

function readNpy(file) {
  const buf = fs.readFileSync(file);
  if (buf.toString('latin1', 0, 6) !== '\x93NUMPY') throw new Error(file + ': not a .npy file');
  const major = buf[6];
  const hlen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const hstart = major === 1 ? 10 : 12;
  const header = buf.toString('latin1', hstart, hstart + hlen);
  const descr = /'descr':\s*'([^']+)'/.exec(header)[1];
  if (/'fortran_order':\s*True/.test(header)) throw new Error(file + ': fortran order not supported');
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header)[1].split(',')
    .map(s => s.trim()).filter(s => s.length).map(Number);
  const [Ctor, type] = DTYPES[descr] || [];
  if (!Ctor) throw new Error(file + ': unsupported dtype ' + descr);
  const off = hstart + hlen;
  const n = shape.reduce((a, b) => a * b, 1);
  const data = new Ctor(n);
  Buffer.from(data.buffer).set(buf.subarray(off, off + n * Ctor.BYTES_PER_ELEMENT));
  return { data, dims: shape, type };
}

function writeNpy(file, data, dims, type) {
  const descr = ORT_TO_DESCR[type];
  if (!descr) throw new Error('cannot write dtype ' + type);
  const shapeStr = dims.length === 1 ? '(' + dims[0] + ',)' : '(' + dims.join(', ') + ')';
  let header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shapeStr + ', }';
  // magic(6) + version(2) + len(2) + header + '\n' must be a multiple of 64 (numpy >= 1.x pads to 64)
  const total = 10 + header.length + 1;
  header += ' '.repeat((64 - (total % 64)) % 64) + '\n';
  const pre = Buffer.alloc(10);
  pre.write('\x93NUMPY', 0, 'latin1');
  pre[6] = 1; pre[7] = 0;
  pre.writeUInt16LE(header.length, 8);
  const body = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  fs.writeFileSync(file, Buffer.concat([pre, Buffer.from(header, 'latin1'), body]));
}

// ---------------------------------------------------------------- comparison
function compare(a, b) {  // a: got, b: reference (typed arrays of equal length)
  let maxAbs = 0, maxRel = 0, bad = 0;
  for (let i = 0; i < b.length; i++) {
    const x = Number(a[i]), y = Number(b[i]);
    const d = Math.abs(x - y);
    if (!(d <= ATOL + RTOL * Math.abs(y))) bad++;   // NaN counts as bad
    if (d > maxAbs || Number.isNaN(d)) maxAbs = Number.isNaN(d) ? NaN : d;
    if (y !== 0) maxRel = Math.max(maxRel, d / Math.abs(y));
  }
  return { maxAbs, maxRel, bad };
}
const sameDims = (a, b) => a.length === b.length && a.every((v, i) => v === b[i]);

// ---------------------------------------------------------------- unseen/
// Every unseen/NAME.onnx with inputs NAME_x0.npy, NAME_x1.npy, ... bound to x0, x1, ...
async function unseen(check) {
  const dir = path.join(HERE, 'unseen');
  let failed = 0;
  for (const file of fs.readdirSync(dir).filter(f => f.endsWith('.onnx')).sort()) {
    const name = file.slice(0, -5);
    const sess = await ort.InferenceSession.create(path.join(dir, file), {
      executionProviders: ['cpu'], graphOptimizationLevel: 'disabled', intraOpNumThreads: 1, interOpNumThreads: 1,
    });
    const feeds = {};
    for (let i = 0; fs.existsSync(path.join(dir, name + '_x' + i + '.npy')); i++) {
      const x = readNpy(path.join(dir, name + '_x' + i + '.npy'));
      feeds['x' + i] = new ort.Tensor(x.type, x.data, x.dims);
    }
    const res = await sess.run(feeds);
    for (const out of sess.outputNames) {
      const t = res[out], tag = name + '_' + out;
      const ortFile = path.join(dir, tag + '.ort.npy'), torchFile = path.join(dir, tag + '.torch.npy');
      let line = tag.padEnd(30) + ' ' + t.type + ' [' + t.dims.join(',') + ']';
      if (check) {
        const c = readNpy(ortFile);
        const cc = compare(t.data, c.data);
        line += '  vs committed .ort.npy max|d|=' + cc.maxAbs.toExponential(3);
        if (cc.bad || !sameDims(c.dims, t.dims)) { line += ' FAIL'; failed++; }
      } else {
        writeNpy(ortFile, t.data, t.dims, t.type);
      }
      if (fs.existsSync(torchFile)) {
        const r = readNpy(torchFile);
        const c = sameDims(r.dims, t.dims) ? compare(t.data, r.data) : null;
        line += c ? '  ort-vs-torch max|d|=' + c.maxAbs.toExponential(3) + (c.bad ? ' (' + c.bad + ' outside)' : '')
                  : '  SHAPE differs from torch [' + r.dims.join(',') + ']';
      }
      console.log(line);
    }
  }
  if (failed) {
    console.error(failed + ' comparison(s) failed');
    process.exit(1);
  }
}

// ---------------------------------------------------------------- main
async function main() {
  const check = process.argv.includes('--check');
  if (process.argv.includes('--unseen')) return unseen(check);
  let failed = 0;
  console.log('onnxruntime-node ' + (ort.env.versions ? ort.env.versions.node : '?') +
              (check ? ' (check mode: nothing written)' : ''));
  for (const name of MODELS) {
    const modelPath = path.join(HERE, name + '.onnx');
    const sess = await ort.InferenceSession.create(modelPath, {
      executionProviders: ['cpu'], graphOptimizationLevel: 'disabled',
      intraOpNumThreads: 1, interOpNumThreads: 1,
    });
    const x = readNpy(path.join(HERE, name + '_input.npy'));
    const res = await sess.run({ input: new ort.Tensor(x.type, x.data, x.dims) });

    // Dynamic batch: batch-1 run on row 0 must equal row 0 of the batch-4 run.
    const rowLen = x.data.length / x.dims[0];
    const x1 = new ort.Tensor(x.type, x.data.slice(0, rowLen), [1].concat(x.dims.slice(1)));
    const res1 = await sess.run({ input: x1 });

    for (const out of sess.outputNames) {
      const t = res[out];
      const tag = name + '_' + out;
      const ortFile = path.join(HERE, tag + '.ort.npy');
      if (!check) writeNpy(ortFile, t.data, t.dims, t.type);

      const ref = readNpy(path.join(HERE, tag + '.torch.npy'));
      let line = tag.padEnd(26) + ' ' + t.type + ' [' + t.dims.join(',') + ']';
      if (!sameDims(ref.dims, t.dims)) {
        line += '  SHAPE MISMATCH vs torch [' + ref.dims.join(',') + ']';
        failed++;
      } else {
        const c = compare(t.data, ref.data);
        line += '  ort-vs-torch max|d|=' + c.maxAbs.toExponential(3) +
                ' max rel=' + c.maxRel.toExponential(3) +
                (c.bad ? '  FAIL: ' + c.bad + ' elements outside rtol 1e-4/atol 1e-5' : '  ok');
        if (c.bad) failed++;
      }
      const r1 = compare(res1[out].data, t.data.slice(0, res1[out].data.length));
      line += '  | batch-1 vs row 0: max|d|=' + r1.maxAbs.toExponential(3);
      if (r1.bad) { line += ' FAIL'; failed++; }
      if (check && fs.existsSync(ortFile)) {
        const committed = readNpy(ortFile);
        const cc = compare(t.data, committed.data);
        line += '  | vs committed .ort.npy max|d|=' + cc.maxAbs.toExponential(3);
        if (cc.bad || !sameDims(committed.dims, t.dims)) { line += ' FAIL'; failed++; }
      }
      console.log(line);
    }
  }
  if (failed) {
    console.error(failed + ' comparison(s) failed');
    process.exit(1);
  }
}

main().catch(e => { console.error('ort_reference.js: ' + (e && e.stack || e)); process.exit(2); });

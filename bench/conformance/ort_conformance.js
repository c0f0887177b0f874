#!/usr/bin/env node
// ort_conformance.js -- run the ONNX backend node/simple/pytorch-* test suites
// (libonnx-testdata) through ONNX Runtime's Node binding (onnxruntime-node,
// CPU execution provider) and report which tests pass, to compare with
// `infera conformance --suite all` (see compare.sh).
//
//   node bench/conformance/ort_conformance.js [--data DIR] [--suite S]...
//        [--jobs N] [--timeout SEC] [--json FILE] [--filter SUBSTR]
//
// Defaults: --data /usr/share/libonnx-testdata/data, suites node,
// pytorch-converted, pytorch-operator, simple; --jobs = number of CPUs;
// --timeout 120; --json bench/conformance/ort_results.json.
//
// Each test runs in its own child process (this script with --worker DIR) so
// a native crash or hang in ORT fails that test only. A test passes when the
// session is created and, for every test_data_set_N, every output matches
// output_K.pb with the ONNX backend-test tolerance: floats
// |got - want| <= 1e-7 + 1e-3 * |want| (NaN == NaN, inf == inf), everything
// else (integers, bools, strings) exactly; dtype and shape must match too.
//
// Inputs: input_K.pb is fed to the K-th graph input (session.inputNames);
// when the TensorProto carries a name that is one of the session's inputs,
// that name is used instead (same thing in practice). Graph inputs with no
// input_K.pb are left unfed (omitted optional inputs). Sequence / optional /
// map typed graph inputs or outputs cannot be passed through the Node API
// (it only handles tensors), so such tests fail with a reason saying so.
'use strict';
const fs = require('fs');
const path = require('path');
const os = require('os');
const { spawn } = require('child_process');

// ---------------------------------------------------------------- protobuf --

class Reader {
  constructor(buf) { this.buf = buf; this.pos = 0; }
  eof() { return this.pos >= this.buf.length; }
  varint() { // returns BigInt (uint64)
    let result = 0n, shift = 0n;
    for (;;) {
      if (this.pos >= this.buf.length) throw new Error('truncated varint');
      const b = this.buf[this.pos++];
      result |= BigInt(b & 0x7f) << shift;
      if (!(b & 0x80)) break;
      shift += 7n;
      if (shift > 70n) throw new Error('varint too long');
    }
    return result;
  }
  varintNum() { return Number(this.varint()); }
  bytes() {
    const n = this.varintNum();
    if (this.pos + n > this.buf.length) throw new Error('truncated bytes field');
    const b = this.buf.subarray(this.pos, this.pos + n);
    this.pos += n;
    return b;
  }
  skip(wt) {
    switch (wt) {
      case 0: this.varint(); break;
      case 1: this.pos += 8; break;
      case 2: this.bytes(); break;
      case 5: this.pos += 4; break;
      default: throw new Error(`unsupported wire type ${wt}`);
    }
  }
  // iterate over fields: cb(fieldNumber, wireType)
  fields(cb) {
    while (!this.eof()) {
      const key = this.varintNum();
      const before = this.pos;
      const handled = cb(key >>> 3, key & 7);
      if (handled === false && this.pos === before) this.skip(key & 7);
    }
  }
}

// Read a repeated scalar field, packed (wt 2) or not. kind: 'varint'|'f32'|'f64'
function readRepeated(r, wt, kind, out) {
  const one = (rr) => {
    if (kind === 'varint') out.push(rr.varint());
    else if (kind === 'f32') { out.push(rr.buf.readFloatLE(rr.pos)); rr.pos += 4; }
    else { out.push(rr.buf.readDoubleLE(rr.pos)); rr.pos += 8; }
  };
  if (wt === 2) {
    const sub = new Reader(Buffer.from(r.bytes()));
    while (!sub.eof()) one(sub);
  } else {
    one(r);
  }
}

const DT = {
  1: 'float32', 2: 'uint8', 3: 'int8', 4: 'uint16', 5: 'int16', 6: 'int32', 7: 'int64',
  8: 'string', 9: 'bool', 10: 'float16', 11: 'float64', 12: 'uint32', 13: 'uint64',
  14: 'complex64', 15: 'complex128', 16: 'bfloat16', 17: 'float8e4m3fn', 18: 'float8e4m3fnuz',
  19: 'float8e5m2', 20: 'float8e5m2fnuz', 21: 'uint4', 22: 'int4', 23: 'float4e2m1',
};

// Decode a TensorProto into {name, dataType (onnx enum), type (string), dims, data}
// where data is the typed array ort.Tensor expects (string[] for strings,
// Uint8Array for bool, Uint16Array bit patterns for float16/bfloat16).
function decodeTensor(buf) {
  const r = new Reader(buf);
  const t = { name: '', dataType: 0, dims: [], raw: null, floats: [], ints: [], i64: [], doubles: [],
              u64: [], strings: [], external: false };
  r.fields((f, wt) => {
    switch (f) {
      case 1: { const a = []; readRepeated(r, wt, 'varint', a); for (const v of a) t.dims.push(Number(BigInt.asIntN(64, v))); return; }
      case 2: t.dataType = r.varintNum(); return;
      case 4: readRepeated(r, wt, 'f32', t.floats); return;
      case 5: readRepeated(r, wt, 'varint', t.ints); return;
      case 6: t.strings.push(Buffer.from(r.bytes()).toString('utf8')); return;
      case 7: readRepeated(r, wt, 'varint', t.i64); return;
      case 8: t.name = Buffer.from(r.bytes()).toString('utf8'); return;
      case 9: t.raw = Buffer.from(r.bytes()); return; // copy -> aligned
      case 10: readRepeated(r, wt, 'f64', t.doubles); return;
      case 11: readRepeated(r, wt, 'varint', t.u64); return;
      case 13: r.bytes(); t.external = true; return;
      default: return false;
    }
  });
  if (t.external) throw new Error(`tensor '${t.name}' uses external data`);
  const type = DT[t.dataType] || `dtype${t.dataType}`;
  const n = t.dims.reduce((a, b) => a * b, 1);
  let data;
  const fromRaw = (Ctor) => {
    if (t.raw.length !== n * Ctor.BYTES_PER_ELEMENT)
      throw new Error(`tensor '${t.name}': raw_data has ${t.raw.length} bytes, want ${n * Ctor.BYTES_PER_ELEMENT}`);
    const ab = new ArrayBuffer(t.raw.length);
    new Uint8Array(ab).set(t.raw);
    return new Ctor(ab);
  };
  const CTOR = {
    float32: Float32Array, uint8: Uint8Array, int8: Int8Array, uint16: Uint16Array, int16: Int16Array,
    int32: Int32Array, int64: BigInt64Array, bool: Uint8Array, float16: Uint16Array, float64: Float64Array,
    uint32: Uint32Array, uint64: BigUint64Array, bfloat16: Uint16Array,
  };
  if (type === 'string') {
    data = t.strings;
  } else if (!CTOR[type]) {
    throw new Error(`tensor '${t.name}': unsupported data type ${type}`);
  } else if (t.raw) {
    data = fromRaw(CTOR[type]);
  } else {
    const C = CTOR[type];
    let src;
    switch (type) {
      case 'float32': src = t.floats; break;
      case 'float64': src = t.doubles; break;
      case 'int64': src = t.i64.map((v) => BigInt.asIntN(64, v)); break;
      case 'uint64': src = t.u64.map((v) => BigInt.asUintN(64, v)); break;
      case 'uint32': src = t.u64.map((v) => Number(BigInt.asUintN(32, v))); break;
      default: // int32_data holds int32/int16/int8/uint16/uint8/bool/float16/bfloat16
        src = t.ints.map((v) => Number(BigInt.asIntN(64, v)));
    }
    if (src.length !== n) throw new Error(`tensor '${t.name}': ${src.length} elements, want ${n}`);
    data = C.from(src);
  }
  if (type === 'string' && data.length !== n)
    throw new Error(`tensor '${t.name}': ${data.length} strings, want ${n}`);
  return { name: t.name, dataType: t.dataType, type, dims: t.dims, data };
}

// Graph input/output value kinds from model.onnx (ModelProto.graph=7;
// GraphProto.input=11, output=12, initializer=5; ValueInfoProto name=1 type=2;
// TypeProto tensor_type=1 sequence_type=4 map_type=5 sparse_tensor_type=8 optional_type=9).
function graphSignature(modelBuf) {
  const sig = { inputs: [], outputs: [], initializers: new Set() };
  const kindOf = (typeBuf) => {
    let kind = 'unknown';
    new Reader(typeBuf).fields((f) => {
      kind = { 1: 'tensor', 4: 'sequence', 5: 'map', 8: 'sparse_tensor', 9: 'optional' }[f] || kind;
      return false;
    });
    return kind;
  };
  const valueInfo = (b) => {
    const vi = { name: '', kind: 'unknown' };
    const r = new Reader(b);
    r.fields((f, wt) => {
      if (f === 1 && wt === 2) { vi.name = Buffer.from(r.bytes()).toString('utf8'); return; }
      if (f === 2 && wt === 2) { vi.kind = kindOf(r.bytes()); return; }
      return false;
    });
    return vi;
  };
  const m = new Reader(modelBuf);
  m.fields((f, wt) => {
    if (f !== 7 || wt !== 2) return false;
    const g = new Reader(m.bytes());
    g.fields((gf, gwt) => {
      if (gwt !== 2) return false;
      if (gf === 11) { sig.inputs.push(valueInfo(g.bytes())); return; }
      if (gf === 12) { sig.outputs.push(valueInfo(g.bytes())); return; }
      if (gf === 5) {
        const r = new Reader(g.bytes());
        r.fields((tf, twt) => {
          if (tf === 8 && twt === 2) { sig.initializers.add(Buffer.from(r.bytes()).toString('utf8')); return; }
          return false;
        });
        return;
      }
      return false;
    });
  });
  return sig;
}

// ---------------------------------------------------------------- compare --

function halfToFloat(h) {
  const s = (h & 0x8000) ? -1 : 1, e = (h >> 10) & 0x1f, f = h & 0x3ff;
  if (e === 0) return s * f * 2 ** -24;
  if (e === 31) return f ? NaN : s * Infinity;
  return s * (1 + f / 1024) * 2 ** (e - 15);
}
const bf16Buf = new DataView(new ArrayBuffer(4));
function bf16ToFloat(h) { bf16Buf.setUint32(0, (h & 0xffff) << 16); return bf16Buf.getFloat32(0); }

const FLOAT_TYPES = new Set(['float32', 'float64', 'float16', 'bfloat16']);

function fmt(v) { return typeof v === 'bigint' ? v.toString() : typeof v === 'string' ? JSON.stringify(v) : String(v); }

// returns null if equal, else a reason string
function compareTensor(name, got, want) {
  const gotType = got.type;
  if (gotType !== want.type) return `output '${name}': dtype ${gotType}, expected ${want.type}`;
  const gd = Array.from(got.dims), wd = want.dims;
  if (gd.length !== wd.length || gd.some((d, i) => Number(d) !== wd[i]))
    return `output '${name}': shape [${gd}], expected [${wd}]`;
  const g = got.data, w = want.data;
  if (g.length !== w.length) return `output '${name}': ${g.length} elements, expected ${w.length}`;
  const conv = want.type === 'float16' ? halfToFloat : want.type === 'bfloat16' ? bf16ToFloat : (x) => x;
  const isFloat = FLOAT_TYPES.has(want.type);
  let bad = 0, first = -1;
  for (let i = 0; i < w.length; i++) {
    let ok;
    if (isFloat) {
      const a = conv(Number(g[i])), b = conv(Number(w[i]));
      ok = (a === b) || (Number.isNaN(a) && Number.isNaN(b)) || Math.abs(a - b) <= 1e-7 + 1e-3 * Math.abs(b);
    } else if (want.type === 'bool') {
      ok = (!!g[i]) === (!!w[i]);
    } else {
      ok = g[i] === w[i];
    }
    if (!ok) { if (first < 0) first = i; bad++; }
  }
  if (!bad) return null;
  const show = (arr, i) => isFloat ? String(conv(Number(arr[i]))) : fmt(arr[i]);
  return `output '${name}': ${bad}/${w.length} elements differ; element ${first}: got ${show(g, first)}, expected ${show(w, first)}`;
}

// ----------------------------------------------------------------- worker --

function loadOrt() {
  const candidates = [path.join(__dirname, '..', 'node_modules', 'onnxruntime-node'),
                      path.join(__dirname, '..', '..', 'tests', 'models', 'ort', 'node_modules', 'onnxruntime-node')];
  for (const c of candidates) {
    try { return require(c); } catch (e) { if (e.code !== 'MODULE_NOT_FOUND') throw e; }
  }
  throw new Error('onnxruntime-node not found (cd tests/models/ort && npm ci --ignore-scripts)');
}

function errMsg(e) { return String((e && e.message) || e).split('\n')[0].trim(); }

async function runTest(dir) {
  const ort = loadOrt();
  const modelPath = path.join(dir, 'model.onnx');
  const modelBuf = fs.readFileSync(modelPath);
  const sig = graphSignature(modelBuf);
  const sigIn = new Map(sig.inputs.map((v) => [v.name, v]));
  const sigOut = new Map(sig.outputs.map((v) => [v.name, v]));
  let session;
  try {
    session = await ort.InferenceSession.create(modelPath, {
      executionProviders: ['cpu'], intraOpNumThreads: 1, interOpNumThreads: 1, logSeverityLevel: 3,
    });
  } catch (e) {
    // drop the long model path ORT puts in load errors
    return `fail: session create: ${errMsg(e).replace(/^Load model from \S+ failed:\s*/, '')}`;
  }
  const inputNames = session.inputNames, outputNames = session.outputNames;
  for (const n of inputNames) {
    const k = (sigIn.get(n) || {}).kind;
    if (k && k !== 'tensor') return `fail: graph input '${n}' is ${k}-typed (Node API passes tensors only)`;
  }
  for (const n of outputNames) {
    const k = (sigOut.get(n) || {}).kind;
    if (k && k !== 'tensor') return `fail: graph output '${n}' is ${k}-typed (Node API returns tensors only)`;
  }
  const sets = fs.readdirSync(dir).filter((d) => /^test_data_set_\d+$/.test(d))
    .sort((a, b) => Number(a.split('_').pop()) - Number(b.split('_').pop()));
  if (!sets.length) return 'fail: no test_data_set_N';
  const pbList = (d, prefix) => fs.readdirSync(d).filter((f) => new RegExp(`^${prefix}_\\d+\\.pb$`).test(f))
    .sort((a, b) => Number(a.match(/\d+/)[0]) - Number(b.match(/\d+/)[0]));
  for (const ds of sets) {
    const d = path.join(dir, ds);
    const inFiles = pbList(d, 'input'), outFiles = pbList(d, 'output');
    if (inFiles.length > inputNames.length)
      return `fail: ${ds}: ${inFiles.length} input files but session has ${inputNames.length} inputs`;
    const feeds = {};
    for (let k = 0; k < inFiles.length; k++) {
      let t;
      try { t = decodeTensor(fs.readFileSync(path.join(d, inFiles[k]))); } catch (e) { return `fail: ${ds}: ${inFiles[k]}: ${errMsg(e)}`; }
      const name = (t.name && inputNames.includes(t.name)) ? t.name : inputNames[k];
      if (t.type === 'bfloat16' || !(t.type in { float32: 1, uint8: 1, int8: 1, uint16: 1, int16: 1, int32: 1, int64: 1, string: 1,
                                          bool: 1, float16: 1, float64: 1, uint32: 1, uint64: 1 }))
        return `fail: ${ds}: input '${name}' has dtype ${t.type}, not supported by onnxruntime-node`;
      try { feeds[name] = new ort.Tensor(t.type, t.data, t.dims); } catch (e) { return `fail: ${ds}: input '${name}': ${errMsg(e)}`; }
    }
    let results;
    try { results = await session.run(feeds); } catch (e) { return `fail: ${ds}: run: ${errMsg(e)}`; }
    if (outFiles.length !== outputNames.length)
      return `fail: ${ds}: ${outFiles.length} expected outputs, session has ${outputNames.length}`;
    for (let k = 0; k < outFiles.length; k++) {
      let want;
      try { want = decodeTensor(fs.readFileSync(path.join(d, outFiles[k]))); } catch (e) { return `fail: ${ds}: ${outFiles[k]}: ${errMsg(e)}`; }
      const name = outputNames[k];
      const got = results[name];
      if (!got) return `fail: ${ds}: output '${name}' missing from results`;
      const why = compareTensor(name, got, want);
      if (why) return `fail: ${ds}: ${why}`;
    }
  }
  return 'pass';
}

// ----------------------------------------------------------------- driver --

function parseArgs(argv) {
  const a = { data: '/usr/share/libonnx-testdata/data', suites: [], jobs: os.cpus().length, timeout: 120,
              json: path.join(__dirname, 'ort_results.json'), filter: null, worker: null };
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i], v = () => argv[++i];
    if (k === '--data') a.data = v();
    else if (k === '--suite') a.suites.push(v());
    else if (k === '--jobs') a.jobs = Math.max(1, parseInt(v(), 10));
    else if (k === '--timeout') a.timeout = parseFloat(v());
    else if (k === '--json') a.json = v();
    else if (k === '--filter') a.filter = v();
    else if (k === '--worker') a.worker = v();
    else { console.error(`ort_conformance: unknown argument ${k}`); process.exit(2); }
  }
  if (!a.suites.length) a.suites = ['node', 'pytorch-converted', 'pytorch-operator', 'simple'];
  return a;
}

function runChild(dir, timeoutSec) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [__filename, '--worker', dir], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '', err = '', timedOut = false;
    child.stdout.on('data', (b) => { out += b; });
    child.stderr.on('data', (b) => { err += b; });
    const timer = setTimeout(() => { timedOut = true; child.kill('SIGKILL'); }, timeoutSec * 1000);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      const line = out.split('\n').find((l) => l.startsWith('RESULT '));
      if (timedOut) resolve(`fail: timeout after ${timeoutSec}s`);
      else if (line) resolve(line.slice(7));
      else if (signal) resolve(`fail: worker killed by ${signal}`);
      else {
        const last = err.trim().split('\n').filter(Boolean).pop() || '';
        resolve(`fail: worker exited with code ${code}${last ? ': ' + last.slice(0, 200) : ''}`);
      }
    });
  });
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  if (args.worker) {
    let res;
    try { res = await runTest(args.worker); } catch (e) { res = `fail: ${errMsg(e)}`; }
    process.stdout.write(`RESULT ${res.replace(/\s*\n\s*/g, ' ')}\n`);
    return;
  }
  try { loadOrt(); } catch (e) { console.error(`ort_conformance: ${errMsg(e)}`); process.exit(2); }
  const tests = [];
  for (const s of args.suites) {
    const sd = path.join(args.data, s);
    if (!fs.existsSync(sd)) { console.error(`ort_conformance: no suite directory ${sd}`); process.exit(2); }
    for (const t of fs.readdirSync(sd).sort()) {
      if (!t.startsWith('test_')) continue;
      const key = `${s}/${t}`;
      if (args.filter && !key.includes(args.filter)) continue;
      if (!fs.existsSync(path.join(sd, t, 'model.onnx'))) continue;
      tests.push({ suite: s, key, dir: path.join(sd, t) });
    }
  }
  const results = new Array(tests.length);
  let next = 0, printed = 0;
  const flush = () => { // print in order
    while (printed < tests.length && results[printed] !== undefined) {
      const r = results[printed], t = tests[printed];
      console.log(r === 'pass' ? `PASS  ${t.key}` : `FAIL  ${t.key}: ${r.replace(/^fail: /, '')}`);
      printed++;
    }
  };
  const worker = async () => {
    while (next < tests.length) {
      const i = next++;
      results[i] = await runChild(tests[i].dir, args.timeout);
      flush();
    }
  };
  await Promise.all(Array.from({ length: Math.min(args.jobs, tests.length) }, worker));
  flush();
  const json = {};
  const per = new Map();
  tests.forEach((t, i) => {
    json[t.key] = results[i];
    const c = per.get(t.suite) || { pass: 0, fail: 0 };
    if (results[i] === 'pass') c.pass++; else c.fail++;
    per.set(t.suite, c);
  });
  let tp = 0, tf = 0;
  for (const [s, c] of per) { console.log(`${s}: ${c.pass} passed, ${c.fail} failed`); tp += c.pass; tf += c.fail; }
  console.log(`total: ${tp} passed, ${tf} failed`);
  if (args.json) fs.writeFileSync(args.json, JSON.stringify(json, null, 1) + '\n');
}

main().catch((e) => { console.error(e); process.exit(1); });

// SPDX-License-Identifier: MIT
// ort-check.js: runs the cases gen_opset21.py writes (model.onnx +
// test_data_set_0/{input,output}_N.pb) with ONNX Runtime (npm
// onnxruntime-node) and compares its outputs with the expected ones, the numpy
// references npu-conformance checks OpenNPU against: so those references are
// what ONNX Runtime computes too. Optional: exits 77 (skip) when node or
// onnxruntime-node is missing. Where to find it: $NPU_ORT_NODE_MODULES (a
// node_modules folder, e.g. from `npm install --ignore-scripts
// onnxruntime-node` outside the repository), else node's own search path.
//
// usage: node ort-check.js CASES_DIR
'use strict';
const fs = require('fs');
const path = require('path');

let ort;
try {
  const extra = process.env.NPU_ORT_NODE_MODULES;
  ort = require(extra ? path.join(extra, 'onnxruntime-node') : 'onnxruntime-node');
} catch (e) {
  console.log('SKIP: onnxruntime-node not found (set NPU_ORT_NODE_MODULES): ' + e.message);
  process.exit(77);
}

// Minimal TensorProto reader: dims 1, data_type 2, raw_data 9 (numpy_helper
// writes raw_data for every numeric type).
function readTensor(file) {
  const b = fs.readFileSync(file);
  let p = 0;
  const varint = () => {
    let v = 0n, s = 0n;
    for (;;) {
      const c = b[p++];
      v |= BigInt(c & 0x7f) << s;
      if (!(c & 0x80)) return v;
      s += 7n;
    }
  };
  const dims = [];
  let dtype = 0, raw = null;
  while (p < b.length) {
    const key = Number(varint()), f = key >> 3, wt = key & 7;
    if (wt === 0) {
      const v = varint();
      if (f === 1) dims.push(Number(v));
      else if (f === 2) dtype = Number(v);
    } else if (wt === 2) {
      const n = Number(varint()), sub = b.subarray(p, p + n);
      p += n;
      if (f === 9) raw = sub;
      else if (f === 1) { // packed dims
        let q = 0;
        while (q < sub.length) {
          let v = 0, s = 0, c;
          do { c = sub[q++]; v += (c & 0x7f) * 2 ** s; s += 7; } while (c & 0x80);
          dims.push(v);
        }
      }
    } else if (wt === 5) p += 4;
    else if (wt === 1) p += 8;
    else throw new Error(file + ': unsupported wire type ' + wt);
  }
  const types = {1: ['float32', Float32Array], 7: ['int64', BigInt64Array],
                 6: ['int32', Int32Array], 3: ['int8', Int8Array], 2: ['uint8', Uint8Array]};
  if (!types[dtype] || !raw) throw new Error(file + ': data type ' + dtype + ' without raw_data');
  const [name, T] = types[dtype];
  const copy = Uint8Array.from(raw);
  return new ort.Tensor(name, new T(copy.buffer, 0, copy.length / T.BYTES_PER_ELEMENT), dims);
}

async function main() {
  const dir = process.argv[2];
  let bad = 0, n = 0;
  for (const name of fs.readdirSync(dir).sort()) {
    const d = path.join(dir, name), ds = path.join(d, 'test_data_set_0');
    let sess;
    try {
      // graph optimizations off: ORT's fused kernels (e.g. DequantizeLinear +
      // MatMul -> MatMulNBits) may approximate; the ops' own kernels are compared
      sess = await ort.InferenceSession.create(path.join(d, 'model.onnx'),
                                               {graphOptimizationLevel: 'disabled'});
    } catch (e) {
      console.log(`FAIL ${name}: ONNX Runtime cannot load it: ${e.message.split('\n')[0]}`);
      bad++;
      continue;
    }
    const feeds = {};
    sess.inputNames.forEach((iname, i) => {
      feeds[iname] = readTensor(path.join(ds, `input_${i}.pb`));
    });
    const res = await sess.run(feeds);
    let worst = 0, ok = true;
    sess.outputNames.forEach((oname, i) => {
      const want = readTensor(path.join(ds, `output_${i}.pb`)), got = res[oname];
      if (got.dims.join() !== want.dims.join()) {
        ok = false;
        return;
      }
      for (let k = 0; k < want.data.length; k++) {
        const w = Number(want.data[k]), g = Number(got.data[k]);
        const err = Math.abs(g - w);
        worst = Math.max(worst, err);
        if (!(err <= 1e-5 + 1e-3 * Math.abs(w))) ok = false;
      }
    });
    console.log(`${ok ? 'pass' : 'FAIL'} ${name} (max abs err vs the numpy reference ${worst.toExponential(2)})`);
    bad += !ok;
    n++;
  }
  console.log(`ort-check: ONNX Runtime ${ort.env.versions.common}: ${n - bad} of ${n} cases agree`);
  process.exit(bad ? 1 : 0);
}
main().catch((e) => { console.log('FAIL: ' + e.message); process.exit(1); });

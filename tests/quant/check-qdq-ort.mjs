// SPDX-License-Identifier: MIT
// check-qdq-ort.mjs: runs a QDQ ONNX model that npuc --emit-qdq wrote under
// ONNX Runtime (npm onnxruntime-node) on .npy inputs and compares its first
// output with OpenNPU's (.npy files npu-run wrote for the same model):
//   node check-qdq-ort.mjs ORT_DIR MODEL.onnx MIN_COS IN1.npy:OURS1.npy ...
// Prints the cosine per input; exit 1 when one is under MIN_COS.
import path from 'node:path';

import { loadOrt, readNpy } from '../../scripts/ort-common.mjs';

const [ortDir, model, minCos, ...pairs] = process.argv.slice(2);
const ort = loadOrt(ortDir);

const sess = await ort.InferenceSession.create(model);
let fails = 0;
for (const p of pairs) {
  const [inp, ours] = p.split(':');
  const x = readNpy(inp);
  const feeds = { [sess.inputNames[0]]: new ort.Tensor(x.type, x.data, x.shape) };
  const out = await sess.run(feeds);
  const a = out[sess.outputNames[0]].data;
  const b = readNpy(ours).data;
  let xy = 0, xx = 0, yy = 0;
  for (let i = 0; i < a.length; i++) { xy += a[i] * b[i]; xx += a[i] * a[i]; yy += b[i] * b[i]; }
  const cos = a.length === b.length ? xy / Math.sqrt(xx * yy) : 0;
  console.log(`${path.basename(inp)}: cosine ONNX Runtime ${ort.env.versions?.common ?? ''} vs OpenNPU ${cos.toFixed(7)}`);
  if (!(cos >= Number(minCos))) fails++;
}
process.exit(fails ? 1 : 0);

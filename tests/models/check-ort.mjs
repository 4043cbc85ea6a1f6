// SPDX-License-Identifier: MIT
// check-ort.mjs: runs each test model (tests/models/data/<name>/) through ONNX
// Runtime (npm package onnxruntime-node) on its in.*.npy inputs and compares
// with torch's out.*.npy, so that the reference outputs the model tests use
// are confirmed by a second, independent implementation.
//
//   node check-ort.mjs ORT_MODULE_DIR MODEL_DIR...
// ORT_MODULE_DIR is the folder holding node_modules/onnxruntime-node (see
// check-ort.sh, which installs it into a cache outside the source tree).
// Exit status 0 if every output has cosine >= 0.99999 and max abs error
// <= 1e-4 * max(1, max |ref|).
import fs from 'node:fs';
import path from 'node:path';

import { loadOrt, readNpy } from '../../scripts/ort-common.mjs';

const [ortDir, ...models] = process.argv.slice(2);
if (!ortDir || models.length === 0) {
    console.error('usage: node check-ort.mjs ORT_MODULE_DIR MODEL_DIR...');
    process.exit(2);
}
const ort = loadOrt(ortDir);

function compare(ref, got) {
    let dot = 0, nr = 0, ng = 0, maxerr = 0, maxref = 0;
    for (let i = 0; i < ref.length; i++) {
        const r = Number(ref[i]), g = Number(got[i]);
        dot += r * g; nr += r * r; ng += g * g;
        maxerr = Math.max(maxerr, Math.abs(r - g));
        maxref = Math.max(maxref, Math.abs(r));
    }
    const cos = nr === 0 && ng === 0 ? 1 : dot / Math.sqrt(nr * ng);
    return { cos, maxerr, maxref };
}

// The file name npu-run (and make-models.py) give output k (npu-run --help).
function outputFile(names, k) {
    const one = (i) => {
        let n = names[i].replace(/[^A-Za-z0-9._-]/g, '_').slice(0, 200);
        if (!n) return `output${i}`;
        return n[0] === '.' ? '_' + n.slice(1) : n;
    };
    const base = one(k);
    for (let j = 0; j < k; j++) if (one(j) === base) return `${base}-${k}`;
    return base;
}

let failures = 0;
for (const dir of models) {
    const name = path.basename(path.resolve(dir));
    const session = await ort.InferenceSession.create(path.join(dir, 'model.onnx'));
    // The model's own data, then any extra data sets (batchN/) beside it.
    const sets = [dir, ...fs.readdirSync(dir, { withFileTypes: true })
        .filter((e) => e.isDirectory()).map((e) => path.join(dir, e.name))
        .filter((d) => fs.existsSync(path.join(d, 'meta.txt')))];
    for (const ddir of sets) {
        const label = ddir === dir ? name : `${name}/${path.basename(ddir)}`;
        const feeds = {};
        for (const n of session.inputNames) {
            const a = readNpy(path.join(ddir, `in.${n}.npy`));
            feeds[n] = new ort.Tensor(a.type, a.data, a.shape);
        }
        const res = await session.run(feeds);
        for (const [k, n] of session.outputNames.entries()) {
            const ref = readNpy(path.join(ddir, `out.${outputFile(session.outputNames, k)}.npy`));
            const got = res[n];
            const sameShape = JSON.stringify(Array.from(got.dims)) === JSON.stringify(ref.shape);
            const c = compare(ref.data, got.data);
            const ok = sameShape && c.cos >= 0.99999 && c.maxerr <= 1e-4 * Math.max(1, c.maxref);
            if (!ok) failures++;
            const shapeText = sameShape ? 'same' : 'DIFFERS';
            console.log(`${ok ? 'ok  ' : 'FAIL'} ${label}/${n}: shape ${shapeText}` +
                ` cosine ${c.cos.toFixed(9)} max abs err ${c.maxerr.toExponential(2)}` +
                ` (max |ref| ${c.maxref.toPrecision(3)})`);
        }
    }
}
const ortVersion = ort.env.versions?.common ?? '';
console.log(`onnxruntime-node ${ortVersion}: ${failures} output(s) disagree with torch`);
process.exit(failures ? 1 : 0);

// SPDX-License-Identifier: MIT
// ort-common.mjs: what the Node scripts that run ONNX Runtime share (scripts/bench-ort.mjs,
// scripts/bench-compile-ort.mjs, tests/models/check-ort.mjs, tests/quant/check-qdq-ort.mjs):
// loading the npm package onnxruntime-node from the folder scripts/ort-env.sh installs it
// into, and reading the .npy files numpy writes.
import { createRequire } from 'node:module';
import fs from 'node:fs';
import path from 'node:path';

// onnxruntime-node from ORT_MODULE_DIR (the folder holding node_modules/onnxruntime-node).
export function loadOrt(ortDir) {
    const require = createRequire(path.join(path.resolve(ortDir), 'index.js'));
    return require('onnxruntime-node');
}

const NPY_TYPES = {
    '<f4': ['float32', Float32Array], '<f8': ['float64', Float64Array],
    '<i8': ['int64', BigInt64Array], '<i4': ['int32', Int32Array],
    '|b1': ['bool', Uint8Array], '|u1': ['uint8', Uint8Array], '|i1': ['int8', Int8Array],
};

// The .npy files np.save writes (v1-3, C order, little-endian): { type (ORT's name), shape,
// data (a typed array; bool as an Array of booleans) }.
export function readNpy(file) {
    const buf = fs.readFileSync(file);
    if (buf.toString('latin1', 1, 6) !== 'NUMPY') throw new Error(`${file}: not .npy`);
    const major = buf[6];
    const hlen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
    const pre = major === 1 ? 10 : 12;
    const hdr = buf.toString('latin1', pre, pre + hlen);
    const descr = /'descr':\s*'([^']+)'/.exec(hdr)[1];
    if (/'fortran_order':\s*True/.test(hdr)) throw new Error(`${file}: Fortran order`);
    const shape = /'shape':\s*\(([^)]*)\)/.exec(hdr)[1].split(',').map((s) => s.trim())
        .filter((s) => s.length).map(Number);
    const t = NPY_TYPES[descr];
    if (!t) throw new Error(`${file}: dtype ${descr} not handled`);
    const data = buf.subarray(pre + hlen);
    const copy = new Uint8Array(data.length);
    copy.set(data);
    const arr = new t[1](copy.buffer, 0, copy.length / t[1].BYTES_PER_ELEMENT);
    return { type: t[0], shape, data: t[0] === 'bool' ? Array.from(arr, (v) => v !== 0) : arr };
}

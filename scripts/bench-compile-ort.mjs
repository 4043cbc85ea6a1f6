// SPDX-License-Identifier: MIT
// bench-compile-ort.mjs: the ONNX Runtime side of scripts/bench-compile.sh. Creates an ONNX
// Runtime session (one intra-op thread, default options otherwise) for each model file REPS
// times and prints, per model, the best wall time and the best process CPU time
// (process.cpuUsage() around InferenceSession.create) of one creation:
//   ortcreate <model path> wall_s=<s> cpu_s=<s>
// or "ortcreate <model path> error <message>".
//   node bench-compile-ort.mjs ORT_MODULE_DIR REPS MODEL.onnx...
import { loadOrt } from './ort-common.mjs';

const [ortDir, repsArg, ...models] = process.argv.slice(2);
if (!ortDir || !repsArg || models.length === 0) {
    console.error('usage: node bench-compile-ort.mjs ORT_MODULE_DIR REPS MODEL.onnx...');
    process.exit(2);
}
const ort = loadOrt(ortDir);
ort.env.logLevel = 'error';
for (const m of models) {
    try {
        let wall = Infinity, cpu = Infinity;
        for (let i = 0; i < Number(repsArg); i++) {
            const opts = { intraOpNumThreads: 1, interOpNumThreads: 1, logSeverityLevel: 3 };
            const c0 = process.cpuUsage();
            const t0 = process.hrtime.bigint();
            const s = await ort.InferenceSession.create(m, opts);
            const t1 = process.hrtime.bigint();
            const c = process.cpuUsage(c0);
            wall = Math.min(wall, Number(t1 - t0) / 1e9);
            cpu = Math.min(cpu, (c.user + c.system) / 1e6);
            await s.release?.();
        }
        console.log(`ortcreate ${m} wall_s=${wall.toFixed(3)} cpu_s=${cpu.toFixed(3)}`);
    } catch (e) {
        console.log(`ortcreate ${m} error ${String(e.message || e).split('\n')[0]}`);
    }
}

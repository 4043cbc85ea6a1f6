// SPDX-License-Identifier: MIT
// bench-ort.mjs: the ONNX Runtime side of scripts/bench-ort.sh. For each model folder
// (model.onnx and its in.<name>.npy inputs, as tests/models/make-models.py writes them) it
// creates an ONNX Runtime session with the given intra-op thread count (default options
// otherwise), times the session creation, runs the model on those inputs warmup + runs times
// and prints one line per model:
//   ort <name> threads=<T> create_ms=<ms> min_ms=<ms> median_ms=<ms> cpu_ms=<ms> create_cpu_ms=<ms>
// (cpu_ms: the process's CPU time per run, user + system, mean over the timed runs)
// or "ort <name> error <message>".
//   node bench-ort.mjs ORT_MODULE_DIR THREADS RUNS MODEL_DIR...
import path from 'node:path';

import { loadOrt, readNpy } from './ort-common.mjs';

const [ortDir, threadsArg, runsArg, ...models] = process.argv.slice(2);
if (!ortDir || !threadsArg || !runsArg || models.length === 0) {
    console.error('usage: node bench-ort.mjs ORT_MODULE_DIR THREADS RUNS MODEL_DIR...');
    process.exit(2);
}
const ort = loadOrt(ortDir);
const threads = Number(threadsArg), runs = Number(runsArg);
ort.env.logLevel = 'error'; // no initializer-in-inputs warnings on stdout

const ms = (a, b) => Number(b - a) / 1e6;
for (const dir of models) {
    const name = path.basename(path.resolve(dir));
    try {
        const opts = { intraOpNumThreads: threads, interOpNumThreads: 1, logSeverityLevel: 3 };
        const cc0 = process.cpuUsage();
        const t0 = process.hrtime.bigint();
        const session = await ort.InferenceSession.create(path.join(dir, 'model.onnx'), opts);
        const t1 = process.hrtime.bigint();
        const cc = process.cpuUsage(cc0);
        const feeds = {};
        for (const n of session.inputNames) {
            const a = readNpy(path.join(dir, `in.${n}.npy`));
            feeds[n] = new ort.Tensor(a.type, a.data, a.shape);
        }
        const times = [];
        let cpu = 0;
        for (let i = 0; i < 2 + runs; i++) {
            const c0 = process.cpuUsage();
            const s = process.hrtime.bigint();
            await session.run(feeds);
            if (i >= 2) {
                times.push(ms(s, process.hrtime.bigint()));
                const c = process.cpuUsage(c0);
                cpu += (c.user + c.system) / 1000;
            }
        }
        times.sort((a, b) => a - b);
        console.log(`ort ${name} threads=${threads} create_ms=${ms(t0, t1).toFixed(3)}` +
            ` min_ms=${times[0].toFixed(4)} median_ms=${times[times.length >> 1].toFixed(4)}` +
            ` cpu_ms=${(cpu / runs).toFixed(4)}` +
            ` create_cpu_ms=${((cc.user + cc.system) / 1000).toFixed(3)}`);
        await session.release?.();
    } catch (e) {
        console.log(`ort ${name} error ${String(e.message || e).split('\n')[0]}`);
    }
}

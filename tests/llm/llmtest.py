# SPDX-License-Identifier: MIT
# What the language-model tests of this folder share: the skip when Debian's torch / numpy
# are missing, a private compile cache for npu-generate, the test checkpoints of gen-llm.py
# with their references, the teacher-forced logits' cosine against the reference (and the
# w8a8 check built on it), and the peak RSS of one npu-generate run. Imported by the test-llm-*.py scripts (their folder is
# on sys.path when they run); not a test itself.
import atexit
import contextlib
import importlib
import importlib.util
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
NAMES = ("gpt2", "llama", "qwen2")


def need(*modules):
    """Import MODULES (torch for gen-llm.py, numpy) or skip the test (exit 77) saying why."""
    try:
        return [importlib.import_module(m) for m in modules]
    except ImportError as e:
        print(f"SKIP: {e} (needs Debian's /usr/bin/python3 with {' and '.join(modules)})")
        sys.exit(77)


def private_compile_cache():
    """npu-generate's compile cache (its default: $XDG_CACHE_HOME/opennpu/llm) in a folder
    of this run, removed at exit."""
    cache = tempfile.mkdtemp(prefix="npu-llm-cache-")
    atexit.register(shutil.rmtree, cache, True)
    os.environ["XDG_CACHE_HOME"] = cache


def gen_llm():
    """gen-llm.py as a module (its make() / SEEDS build variant checkpoints)."""
    spec = importlib.util.spec_from_file_location("gen_llm", os.path.join(HERE, "gen-llm.py"))
    gl = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gl)
    return gl


def make_checkpoints(tmp):
    """The GPT-2, LLaMA and Qwen2 test checkpoints and their references into TMP, made in
    this process (torch is imported once per test, not again by a gen-llm.py child)."""
    with contextlib.redirect_stdout(io.StringIO()):
        gen_llm().write_all(tmp)


def backend_env(backend):
    """The environment of npu-generate's runs on BACKEND: on sim (and auto, which is the
    simulator or the kernel double's rknpu / rocket device) every node the NPU takes goes
    to the NPU (NPU_PARTITION=supported), so that the NPU really computes."""
    env = dict(os.environ)
    if backend in ("sim", "auto"):
        env["NPU_PARTITION"] = "supported"
    return env


def split_cores(n):
    """npu-generate's arguments for each step's jobs split over N cores. The tiny models'
    tasks are shorter than a submit, so the planner alone would keep them on one core:
    every independent run is split (NPU_SPLIT_FORCE=1, as split-layers-test.sh)."""
    os.environ["NPU_SPLIT_FORCE"] = "1"
    return ["--cores", str(n)]


def ids_arg(ids):
    """Token ids as npu-generate's --prompt-ids / --force-ids want them."""
    return ",".join(map(str, ids))


def reference(tmp, name):
    """NAME's reference (gen-llm.py's NAME.ref.json: dir, prompt, ids) plus 'folder', the
    checkpoint's path."""
    ref = json.load(open(os.path.join(tmp, name + ".ref.json")))
    ref["folder"] = os.path.join(tmp, ref["dir"])
    return ref


def checkpoints(tmp, names=NAMES):
    """Make the checkpoints into TMP, then (name, reference) for each of NAMES."""
    make_checkpoints(tmp)
    for name in names:
        yield name, reference(tmp, name)


def logits_against_reference(np, got_npy, tmp, name):
    """The logits in GOT_NPY against NAME's teacher-forced reference logits: the per-step
    cosine, the number of steps whose argmax is the reference's, and None; or None, None and
    why when the shapes differ."""
    got = np.load(got_npy).astype(np.float64)
    exp = np.load(os.path.join(tmp, name + ".logits.npy")).astype(np.float64)
    if got.shape != exp.shape:
        return None, None, f"logits shape {got.shape}, want {exp.shape}"
    cos = (got * exp).sum(1) / np.linalg.norm(got, axis=1) / np.linalg.norm(exp, axis=1)
    return cos, int((got.argmax(1) == exp.argmax(1)).sum()), None


def check_teacher_forced(np, base, env, tmp, name, ids, tag, min_cos=0.99):
    """Run BASE (an npu-generate command up to its options) teacher-forced on IDS, the
    logits into TMP, against NAME's reference logits: prints an ok / FAIL line for TAG and
    returns the number of failures (0 or 1). w8a8 does not give fp32's greedy ids exactly,
    so its check is a cosine of at least MIN_COS at every step (as test-llm-w8a8.py)."""
    lo = os.path.join(tmp, f"{name}.tf.npy")
    r = subprocess.run(base + ["--ids", "--quiet", "--force-ids", ids_arg(ids), "--logits-out",
                               lo], env=env, capture_output=True, text=True)
    cos, _, why = (None, None, r.stderr) if r.returncode else \
        logits_against_reference(np, lo, tmp, name)
    if why or cos.min() < min_cos:
        print(f"FAIL {tag}: teacher-forced logits: {why or f'cosine min {cos.min():.6f}'}")
        return 1
    print(f"ok   {tag}: teacher-forced logits cosine min {cos.min():.6f}")
    return 0


# each run in its own python child, whose RUSAGE_CHILDREN is that run's peak
_PROBE = ("import resource,subprocess,sys;"
          "r=subprocess.run(sys.argv[1:],capture_output=True,text=True);"
          "print(r.returncode, len(r.stdout.split())-1,"
          "resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss);"
          "sys.stderr.write(r.stderr)")


def peak_rss(cmd, env):
    """Run CMD (an npu-generate --ids run); its exit code, the number of ids it printed,
    its peak RSS in KiB and its stderr. Under AddressSanitizer freed memory waits in a
    quarantine (256 MB): off here, so that what is measured is what the program holds."""
    menv = dict(env)
    menv["ASAN_OPTIONS"] = (menv.get("ASAN_OPTIONS", "") + ":quarantine_size_mb=0").lstrip(":")
    r = subprocess.run([sys.executable, "-c", _PROBE] + cmd, capture_output=True, text=True,
                       env=menv)
    rc, cnt, peak = (int(x) for x in r.stdout.split())
    return rc, cnt, peak, r.stderr

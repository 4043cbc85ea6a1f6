#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# The compile cache of npu-generate's programs (compiler/llm/npu-llm.c): on sim,
# a first run compiles the prefill and decode-step programs and writes them to
# --cache-dir; a second run loads both from there (nothing compiled) and gives
# the same ids; --no-cache compiles and writes nothing; new weights (the
# safetensors file's modification time) miss the cache. Needs /usr/bin/python3
# with torch for gen-llm.py (skips otherwise).
#
#   test-llm-cache.py NPU_GENERATE
import os
import re
import subprocess
import sys
import tempfile
import time

import llmtest

llmtest.need("torch")  # gen-llm.py


def main():
    gen = sys.argv[1]
    fails = 0
    with tempfile.TemporaryDirectory(prefix="npu-llm-cache-") as tmp:
        llmtest.make_checkpoints(tmp)
        ref = llmtest.reference(tmp, "gpt2")
        folder = ref["folder"]
        cache = os.path.join(tmp, "cache")
        cmd = [gen, folder, "--prompt-ids", llmtest.ids_arg(ref["prompt"]),
               "--max-new-tokens", "8", "--backend", "sim", "--ids"]
        env = dict(os.environ, XDG_CACHE_HOME=os.path.join(tmp, "xdg"))

        def run(*extra, env_extra=None):
            r = subprocess.run(cmd + list(extra), env=dict(env, **(env_extra or {})),
                               capture_output=True, text=True)
            m = re.search(r"programs: (\d+) compiled, (\d+) from the compile cache", r.stderr)
            counts = (int(m.group(1)), int(m.group(2))) if m else None
            return r, counts

        def check(what, ok, r):
            nonlocal fails
            print(f"{'ok  ' if ok else 'FAIL'} {what}")
            if not ok:
                print(r.stderr)
                fails += 1

        want = "ids: " + " ".join(map(str, ref["ids"][:8])) + "\n"
        r1, c1 = run("--cache-dir", cache)
        files = sorted(os.listdir(cache)) if os.path.isdir(cache) else []
        check(f"first run: 2 programs compiled and written ({files}), reference ids",
              r1.returncode == 0 and c1 == (2, 0) and r1.stdout == want and len(files) == 2
              and files[0].startswith("decode-") and files[1].startswith("prefill-"), r1)
        r2, c2 = run("--cache-dir", cache)
        check(f"second run: both programs from the cache ({c2}), the same ids",
              r2.returncode == 0 and c2 == (0, 2) and r2.stdout == r1.stdout, r2)
        r3, c3 = run("--cache-dir", cache, "--no-cache")
        check(f"--no-cache: compiled again ({c3}), nothing new written",
              r3.returncode == 0 and c3 == (2, 0) and r3.stdout == want
              and sorted(os.listdir(cache)) == files, r3)
        r4, c4 = run()
        xdg = os.path.join(tmp, "xdg", "opennpu", "llm")
        check(f"default folder $XDG_CACHE_HOME/opennpu/llm ({c4})",
              r4.returncode == 0 and c4 == (2, 0) and os.path.isdir(xdg)
              and len(os.listdir(xdg)) == 2, r4)
        st = os.stat(os.path.join(folder, "model.safetensors"))
        os.utime(os.path.join(folder, "model.safetensors"),
                 ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
        r5, c5 = run("--cache-dir", cache)
        check(f"weights file changed: the cache misses ({c5})",
              r5.returncode == 0 and c5 == (2, 0) and r5.stdout == want
              and len(os.listdir(cache)) == 4, r5)
        # A budget smaller than two entries: after a run that writes new ones, the entries
        # of earlier runs (least recently used) are deleted and this run's two are kept.
        before = set(os.listdir(cache))
        time.sleep(1.1)  # entry times have one-second resolution
        os.utime(os.path.join(folder, "model.safetensors"))
        r6, c6 = run("--cache-dir", cache, env_extra={"NPU_LLM_CACHE_MAX_MB": "0"})
        after = set(os.listdir(cache))
        check(f"budget 0 MiB: earlier entries trimmed, this run's kept ({sorted(after)})",
              r6.returncode == 0 and c6 == (2, 0) and r6.stdout == want and len(after) == 2
              and not (after & before), r6)
        r7, c7 = run("--cache-dir", cache, env_extra={"NPU_LLM_CACHE_MAX_MB": "0"})
        check(f"budget 0 MiB, second run: both from the cache ({c7})",
              r7.returncode == 0 and c7 == (0, 2) and set(os.listdir(cache)) == after, r7)
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()

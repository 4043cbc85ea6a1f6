#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# npu-generate --quiet: no statistics and no notices on stderr, errors still. A folder
# without tokenizer.json generates token ids (the text stream says so on stderr, with the
# tokenizer's reason, unless --quiet); a bad flag value is still an error under --quiet.
# The checkpoint is test-llm-memory.py's tiny LLaMA (numpy only).
#
#   test-llm-quiet.py NPU_GENERATE
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile


def main():
    npu_generate = sys.argv[1]
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, here)
    spec = importlib.util.spec_from_file_location("llm_memory",
                                                  os.path.join(here, "test-llm-memory.py"))
    mem = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mem)  # exits 77 without numpy
    tmp = tempfile.mkdtemp(prefix="npu-llm-quiet-")
    ok = True
    try:
        d = os.path.join(tmp, "tiny")
        mem.checkpoint(d, 64, 4, 2, 128, 1, 256)
        base = [npu_generate, d, "--backend", "cpu", "--max-new-tokens", "2"]

        def run(extra, prompt=("--prompt-ids", "1")):
            r = subprocess.run(base + list(prompt) + extra, capture_output=True, text=True)
            return r.returncode, r.stdout, r.stderr

        rc, out, err = run([])
        ids = out.split()
        if rc != 0 or len(ids) != 2 or "tokenizer.json" not in err or "token ids" not in err:
            print(f"FAIL: without --quiet: exit {rc}, stdout {out!r}, stderr {err!r} (want two "
                  "ids and the no-tokenizer notice)")
            ok = False
        rc, out, err = run(["--quiet"])
        if rc != 0 or out.split() != ids or err != "":
            print(f"FAIL: --quiet: exit {rc}, stdout {out!r}, stderr {err!r} (want the same ids "
                  "and nothing on stderr)")
            ok = False
        rc, out, err = run(["--quiet", "--ids"])
        if rc != 0 or out != "ids: " + " ".join(ids) + "\n" or err != "":
            print(f"FAIL: --quiet --ids: exit {rc}, stdout {out!r}, stderr {err!r}")
            ok = False
        rc, out, err = run(["--quiet", "--top-k", "x"])
        if rc == 0 or "--top-k" not in err:
            print(f"FAIL: --quiet with a bad --top-k: exit {rc}, stderr {err!r} (want the error)")
            ok = False
        rc, out, err = run(["--quiet"], ("--prompt", "hello"))
        if rc == 0 or "tokenizer.json" not in err:
            print(f"FAIL: --quiet --prompt without tokenizer.json: exit {rc}, stderr {err!r} "
                  "(want the error)")
            ok = False
    finally:
        shutil.rmtree(tmp, True)
    print("ok" if ok else "FAIL")
    sys.exit(0 if ok else 1)


main()

# SPDX-License-Identifier: MIT
# Build-time helper: gunzip.py IN.gz OUT (the checked-in tokenizer.json test files
# are gzipped to keep the repository small). Any python3.
import gzip
import sys

with gzip.open(sys.argv[1], 'rb') as f, open(sys.argv[2], 'wb') as o:
    o.write(f.read())

# SPDX-License-Identifier: MIT
# Build-time helper (any python3): derive.py IN.json.gz OUT.json VARIANT writes a
# variant of the LLaMA-2 tokenizer.json with the same vocabulary and merges but
# the Metaspace pre-tokenizer that other SentencePiece exports use instead of
# the Prepend/Replace normalizer (make-expected.mjs derives the same, in
# variantOf()):
#   metaspace-first: Metaspace(prepend_scheme "first", split false) and the
#                    Metaspace decoder (tokenizers >= 0.14 exports, "legacy": false)
#   metaspace-split: Metaspace(prepend_scheme "always", split true), the older
#                    exports' behaviour (one piece per word, each space its own)
import gzip
import json
import sys

src, dst, variant = sys.argv[1:4]
with gzip.open(src, 'rb') as f:
    tj = json.load(f)
tj['normalizer'] = None
if variant == 'metaspace-first':
    tj['pre_tokenizer'] = {'type': 'Metaspace', 'replacement': '\u2581',
                           'prepend_scheme': 'first', 'split': False}
    tj['decoder'] = {'type': 'Metaspace', 'replacement': '\u2581',
                     'prepend_scheme': 'first', 'split': False}
elif variant == 'metaspace-split':
    tj['pre_tokenizer'] = {'type': 'Metaspace', 'replacement': '\u2581',
                           'prepend_scheme': 'always', 'split': True}
    tj['decoder'] = {'type': 'Metaspace', 'replacement': '\u2581',
                     'prepend_scheme': 'always', 'split': True}
else:
    sys.exit('derive.py: unknown variant ' + variant)
with open(dst, 'w', encoding='utf-8') as f:
    json.dump(tj, f, ensure_ascii=False)

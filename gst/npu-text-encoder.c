/* SPDX-License-Identifier: MIT */
/*
 * npu-text-encoder.c: the text encoder of npu-text-encoder.h: tokenize
 * (npu-tokenizer or SentencePiece), pad to the model's sequence length, run
 * the model through the model API, pool when the output is per token, and
 * L2-normalise.
 */
#include <math.h>
#include <string.h>

#include "npu-text-encoder.h"
#include "npu/npu-fp16.h"
#include "npu/npu-tokenizer.h"
#ifdef HAVE_SENTENCEPIECE
#include "npu-spm.h"
#endif

struct _GstNpuTextEncoder
{
  GstNpuTextTokenizerKind kind;
  struct npu_tokenizer *tok;
#ifdef HAVE_SENTENCEPIECE
  GstNpuSpm *spm;
#endif
  gint32 eos, pad;
  gsize vocab;

  struct npu_model *model;
  struct npu_session *session;
  gint ids_input, mask_input;   /* mask_input -1: none */
  enum npu_dtype ids_dtype, mask_dtype;
  guint seq_len;
  gint output;
  gboolean per_token;           /* output [1, L, D]: pooled here */
  guint dims;
};

GQuark
gst_npu_text_encoder_error_quark (void)
{
  return g_quark_from_static_string ("gst-npu-text-encoder-error-quark");
}

#define FAIL(...) g_set_error (error, GST_NPU_TEXT_ENCODER_ERROR, 0, __VA_ARGS__)

static const gchar *out_names[] = {
  "text_embeds", "pooler_output", "embeddings", "embedding", NULL
};

static gboolean
is_int_dtype (enum npu_dtype d)
{
  return d == NPU_DTYPE_INT64 || d == NPU_DTYPE_INT32;
}

/* [1, L] or [L]: L, else 0 */
static guint
seq_of (const struct npu_io_info *io)
{
  if (io->ndim == 1 && io->dims[0] > 0)
    return (guint) io->dims[0];
  if (io->ndim == 2 && io->dims[0] == 1 && io->dims[1] > 0)
    return (guint) io->dims[1];
  return 0;
}

static gboolean load_tokenizer_file (GstNpuTextEncoder * enc,
    const gchar * path, GError ** error);

static gboolean
load_tokenizer (GstNpuTextEncoder * enc, const gchar * path, GError ** error)
{
  gchar *json = g_build_filename (path, "tokenizer.json", NULL);
  gchar *spiece = g_build_filename (path, "spiece.model", NULL);
  gboolean ok;

  /* a model folder without tokenizer.json but with SentencePiece's
   * spiece.model (SigLIP's Hugging Face layout): that model */
  if (g_file_test (path, G_FILE_TEST_IS_DIR)
      && !g_file_test (json, G_FILE_TEST_EXISTS)
      && g_file_test (spiece, G_FILE_TEST_IS_REGULAR))
    ok = load_tokenizer_file (enc, spiece, error);
  else
    ok = load_tokenizer_file (enc, path, error);
  g_free (json);
  g_free (spiece);
  return ok;
}

static gboolean
load_tokenizer_file (GstNpuTextEncoder * enc, const gchar * path,
    GError ** error)
{
  if (g_str_has_suffix (path, ".model")) {
#ifdef HAVE_SENTENCEPIECE
    char *why = NULL;

    enc->kind = GST_NPU_TEXT_TOKENIZER_SPM;
    enc->spm = gst_npu_spm_load (path, &why);
    if (!enc->spm) {
      FAIL ("%s", why ? why : "cannot load the SentencePiece model");
      free (why);
      return FALSE;
    }
    enc->eos = gst_npu_spm_eos (enc->spm);
    /* SigLIP pads with "</s>", the EOS (transformers' SiglipTokenizer
     * pad_token), not the model's <pad> piece: the tower has no attention
     * mask and is pooled at the last position, so the pad id matters */
    enc->pad = enc->eos;
    enc->vocab = gst_npu_spm_vocab_size (enc->spm);
    if (enc->eos < 0) {
      FAIL ("SentencePiece model \"%s\" has no EOS piece (spm_train "
          "--eos_id); the SigLIP text tower needs one", path);
      return FALSE;
    }
    return TRUE;
#else
    FAIL ("tokenizer \"%s\" is a SentencePiece model, and this build has no "
        "SentencePiece (libsentencepiece-dev)", path);
    return FALSE;
#endif
  }
  enc->kind = GST_NPU_TEXT_TOKENIZER_JSON;
  if (npu_tokenizer_load (path, &enc->tok) != NPU_OK) {
    FAIL ("cannot load tokenizer \"%s\" (a tokenizer.json, its folder, or a "
        "SentencePiece .model; NPU_DEBUG=tokenizer says why)", path);
    return FALSE;
  }
  enc->eos = npu_tokenizer_eos (enc->tok);
  enc->vocab = npu_tokenizer_vocab_size (enc->tok);
  if (enc->eos < 0) {
    FAIL ("tokenizer \"%s\" names no EOS token; the text tower is pooled at "
        "it", path);
    return FALSE;
  }
  enc->pad = enc->eos;
  return TRUE;
}

static gboolean
check_model (GstNpuTextEncoder * enc, const gchar * path, GError ** error)
{
  gint nin = npu_model_num_inputs (enc->model);
  gint nout = npu_model_num_outputs (enc->model), i, j;
  const struct npu_io_info *io;
  gint64 kept[NPU_MAX_DIMS];
  gint nkept = 0;

  enc->ids_input = enc->mask_input = -1;
  for (i = 0; i < nin; i++) {
    io = npu_model_input (enc->model, i);
    if (io->name && !strcmp (io->name, "attention_mask"))
      enc->mask_input = i;
    else if (io->name && !strcmp (io->name, "input_ids"))
      enc->ids_input = i;
  }
  if (enc->ids_input < 0)
    for (i = 0; i < nin && enc->ids_input < 0; i++)
      if (i != enc->mask_input)
        enc->ids_input = i;
  if (enc->ids_input < 0 || nin > 2 || (nin == 2 && enc->mask_input < 0)) {
    FAIL ("text model \"%s\" has %d inputs; a text tower takes input_ids "
        "[1, L] and optionally attention_mask [1, L]", path, nin);
    return FALSE;
  }
  io = npu_model_input (enc->model, enc->ids_input);
  enc->ids_dtype = io->dtype;
  enc->seq_len = seq_of (io);
  if (!is_int_dtype (io->dtype) || !enc->seq_len) {
    FAIL ("text model \"%s\": input \"%s\" is not token ids (need int64 or "
        "int32 of shape [1, L], got %s with %d dims)", path,
        io->name ? io->name : "?", npu_dtype_name (io->dtype), io->ndim);
    return FALSE;
  }
  if (enc->mask_input >= 0) {
    io = npu_model_input (enc->model, enc->mask_input);
    enc->mask_dtype = io->dtype;
    if (!is_int_dtype (io->dtype) || seq_of (io) != enc->seq_len) {
      FAIL ("text model \"%s\": attention_mask must be int64 or int32 "
          "[1, %u] like input_ids", path, enc->seq_len);
      return FALSE;
    }
  }

  enc->output = -1;
  for (j = 0; out_names[j] && enc->output < 0; j++)
    for (i = 0; i < nout; i++) {
      io = npu_model_output (enc->model, i);
      if (io->name && !strcmp (io->name, out_names[j])) {
        enc->output = i;
        break;
      }
    }
  if (enc->output < 0)
    enc->output = 0;
  if (nout < 1) {
    FAIL ("text model \"%s\" has no outputs", path);
    return FALSE;
  }
  io = npu_model_output (enc->model, enc->output);
  for (i = 0; i < io->ndim; i++)
    if (io->dims[i] != 1)
      kept[nkept++] = io->dims[i];
  if (nkept == 1 && !(io->ndim >= 2 && io->dims[io->ndim - 1] == 1)) {
    enc->dims = (guint) kept[0];
    enc->per_token = FALSE;
  } else if (io->ndim == 3 && io->dims[0] == 1
      && io->dims[1] == (gint64) enc->seq_len && io->dims[2] > 0) {
    enc->dims = (guint) io->dims[2];
    enc->per_token = TRUE;
  } else {
    FAIL ("text model \"%s\": output \"%s\" is not an embedding ([1, D], or "
        "[1, %u, D] per token)", path, io->name ? io->name : "?", enc->seq_len);
    return FALSE;
  }
  if (io->dtype != NPU_DTYPE_FP32 && io->dtype != NPU_DTYPE_FP16) {
    FAIL ("text model \"%s\": output \"%s\" is %s, not float", path,
        io->name ? io->name : "?", npu_dtype_name (io->dtype));
    return FALSE;
  }
  return TRUE;
}

GstNpuTextEncoder *
gst_npu_text_encoder_new (const gchar * model_path,
    const gchar * tokenizer_path, const struct npu_model_options *opts,
    GError ** error)
{
  GstNpuTextEncoder *enc;
  struct npu_model_options mopts = { 0 };
  gchar *dims = NULL;
  enum npu_status st;

  if (!model_path || !*model_path || !tokenizer_path || !*tokenizer_path) {
    FAIL ("a text encoder needs both a model and a tokenizer");
    return NULL;
  }
  if (!g_file_test (model_path, G_FILE_TEST_IS_REGULAR)) {
    FAIL ("text model \"%s\" does not exist", model_path);
    return NULL;
  }
  if (!g_file_test (tokenizer_path, G_FILE_TEST_EXISTS)) {
    FAIL ("tokenizer \"%s\" does not exist", tokenizer_path);
    return NULL;
  }
  enc = g_new0 (GstNpuTextEncoder, 1);
  if (!load_tokenizer (enc, tokenizer_path, error))
    goto fail;
  /* A model exported with a symbolic sequence axis gets the length
   * transformers pads to (CLIP 77, SigLIP 64); fixed axes keep theirs
   * ("input:axis=N" only sizes symbolic axes). */
  if (opts)
    mopts = *opts;
  if (!mopts.dim_values) {
    guint L = enc->kind == GST_NPU_TEXT_TOKENIZER_SPM ? 64 : 77;

    dims = g_strdup_printf ("input_ids:0=1,input_ids:1=%u,"
        "attention_mask:0=1,attention_mask:1=%u", L, L);
    mopts.dim_values = dims;
    mopts.strict_dims = false;
  }
  st = npu_model_load (model_path, &mopts, &enc->model);
  g_free (dims);
  if (st != NPU_OK) {
    FAIL ("cannot load text model \"%s\": %s (NPU_DEBUG=1 says why)",
        model_path, npu_status_str (st));
    goto fail;
  }
  if (!check_model (enc, model_path, error))
    goto fail;
  st = npu_session_create (enc->model, 0, &enc->session);
  if (st != NPU_OK) {
    FAIL ("cannot create a session for text model \"%s\": %s", model_path,
        npu_status_str (st));
    goto fail;
  }
  return enc;

fail:
  gst_npu_text_encoder_free (enc);
  return NULL;
}

void
gst_npu_text_encoder_free (GstNpuTextEncoder * enc)
{
  if (!enc)
    return;
  if (enc->session)
    npu_session_destroy (enc->session);
  npu_model_free (enc->model);
  npu_tokenizer_free (enc->tok);
#ifdef HAVE_SENTENCEPIECE
  gst_npu_spm_free (enc->spm);
#endif
  g_free (enc);
}

guint
gst_npu_text_encoder_dims (const GstNpuTextEncoder * enc)
{
  return enc->dims;
}

guint
gst_npu_text_encoder_seq_len (const GstNpuTextEncoder * enc)
{
  return enc->seq_len;
}

GstNpuTextTokenizerKind
gst_npu_text_encoder_kind (const GstNpuTextEncoder * enc)
{
  return enc->kind;
}

const gchar *
gst_npu_text_encoder_backend (const GstNpuTextEncoder * enc)
{
  return npu_model_backend (enc->model);
}

/* SigLIP's canonical text: lowercase, ASCII punctuation removed, runs of
 * white space one space, trimmed (transformers' SiglipTokenizer). */
static gchar *
siglip_canonical (const gchar * text)
{
  GString *s = g_string_sized_new (strlen (text));
  gboolean space = FALSE;
  const gchar *p;

  for (p = text; *p; p++) {
    guchar c = (guchar) * p;

    if (c < 0x80 && g_ascii_ispunct (c))
      continue;
    if (c < 0x80 && g_ascii_isspace (c)) {
      space = s->len > 0;
      continue;
    }
    if (space)
      g_string_append_c (s, ' ');
    space = FALSE;
    g_string_append_c (s, (gchar) g_ascii_tolower (c));
  }
  return g_string_free (s, FALSE);
}

gboolean
gst_npu_text_encoder_tokenize (const GstNpuTextEncoder * enc,
    const gchar * text, gint32 * ids, guint * n_tokens, GError ** error)
{
  int32_t *v = NULL;
  size_t n = 0, i;

  if (!g_utf8_validate (text, -1, NULL)) {
    FAIL ("text is not valid UTF-8");
    return FALSE;
  }
  if (enc->kind == GST_NPU_TEXT_TOKENIZER_SPM) {
#ifdef HAVE_SENTENCEPIECE
    gchar *canon = siglip_canonical (text);
    char *why = NULL;
    int rc = gst_npu_spm_encode (enc->spm, canon, strlen (canon), &v, &n,
        &why);

    g_free (canon);
    if (rc) {
      FAIL ("%s", why ? why : "SentencePiece encode failed");
      free (why);
      return FALSE;
    }
    v[n++] = enc->eos;          /* gst_npu_spm_encode leaves room for one */
#else
    FAIL ("this build has no SentencePiece");
    return FALSE;
#endif
  } else {
    if (npu_tokenizer_encode (enc->tok, text, strlen (text), 1, &v,
            &n) != NPU_OK) {
      FAIL ("cannot tokenize \"%s\" (NPU_DEBUG=tokenizer says why)", text);
      return FALSE;
    }
    if (n == 0 || v[n - 1] != enc->eos) {
      /* a tokenizer.json without a post-processor: CLIP's BOS ... EOS is
       * what the tower was trained on; add the EOS it is pooled at */
      int32_t *w = g_renew (int32_t, NULL, n + 1);

      memcpy (w, v, n * sizeof (int32_t));
      free (v);
      v = NULL;
      w[n++] = enc->eos;
      for (i = 0; i < enc->seq_len; i++)
        ids[i] = i < n ? w[i] : enc->pad;
      if (n > enc->seq_len)
        ids[enc->seq_len - 1] = enc->eos;
      *n_tokens = MIN (n, enc->seq_len);
      g_free (w);
      return TRUE;
    }
  }
  for (i = 0; i < enc->seq_len; i++)
    ids[i] = i < n ? v[i] : enc->pad;
  /* too long: cut, keeping the EOS the tower is pooled at */
  if (n > enc->seq_len)
    ids[enc->seq_len - 1] = v[n - 1];
  *n_tokens = (guint) MIN (n, enc->seq_len);
  free (v);
  return TRUE;
}

static void
fill_ints (void *dst, enum npu_dtype dt, const gint32 * src, guint n)
{
  guint i;

  for (i = 0; i < n; i++) {
    if (dt == NPU_DTYPE_INT64)
      ((gint64 *) dst)[i] = src[i];
    else
      ((gint32 *) dst)[i] = src[i];
  }
}

/* Runs the model on seq_len ids of which the first n_tok are tokens. */
static gboolean
run_ids (GstNpuTextEncoder * enc, const gint32 * ids, guint n_tok,
    const gchar * what, gfloat * out, GError ** error)
{
  gint nin = npu_model_num_inputs (enc->model);
  gint nout = npu_model_num_outputs (enc->model);
  struct npu_tensor in[2], *outs;
  gint32 *mask;
  gint64 *ids_buf = g_new0 (gint64, enc->seq_len);
  gint64 *mask_buf = g_new0 (gint64, enc->seq_len);
  guint i, pos = 0;
  const struct npu_io_info *io;
  enum npu_status st;
  gboolean ok = FALSE;
  gdouble ss = 0.0;
  gsize base;

  outs = g_new0 (struct npu_tensor, nout);
  mask = g_new0 (gint32, enc->seq_len);
  for (i = 0; i < enc->seq_len; i++)
    mask[i] = i < n_tok;
  memset (in, 0, sizeof (in));
  io = npu_model_input (enc->model, enc->ids_input);
  in[enc->ids_input].dtype = io->dtype;
  in[enc->ids_input].ndim = io->ndim;
  memcpy (in[enc->ids_input].dims, io->dims, sizeof (io->dims));
  in[enc->ids_input].data = ids_buf;
  fill_ints (ids_buf, io->dtype, ids, enc->seq_len);
  if (enc->mask_input >= 0) {
    io = npu_model_input (enc->model, enc->mask_input);
    in[enc->mask_input].dtype = io->dtype;
    in[enc->mask_input].ndim = io->ndim;
    memcpy (in[enc->mask_input].dims, io->dims, sizeof (io->dims));
    in[enc->mask_input].data = mask_buf;
    fill_ints (mask_buf, io->dtype, mask, enc->seq_len);
  }
  st = npu_session_run (enc->session, in, nin, outs, nout, NULL);
  if (st != NPU_OK) {
    FAIL ("text model run failed for %s: %s", what, npu_status_str (st));
    goto out;
  }
  if (enc->per_token) {
    if (enc->kind == GST_NPU_TEXT_TOKENIZER_SPM) {
      pos = enc->seq_len - 1;   /* SigLIP: the last position */
    } else {
      /* CLIP: the first EOS */
      for (pos = 0; pos + 1 < enc->seq_len && ids[pos] != enc->eos; pos++);
    }
  }
  base = (gsize) pos *enc->dims;
  for (i = 0; i < enc->dims; i++) {
    const struct npu_tensor *t = &outs[enc->output];
    gfloat x = t->dtype == NPU_DTYPE_FP16 ?
        npu_fp16_to_fp32 (((const guint16 *) t->data)[base + i]) :
        ((const gfloat *) t->data)[base + i];

    if (!isfinite (x)) {
      FAIL ("text model gave a non-finite embedding for %s", what);
      goto out;
    }
    out[i] = x;
    ss += (gdouble) x *x;
  }
  if (!(ss > 0.0)) {
    FAIL ("text model gave a zero embedding for %s", what);
    goto out;
  }
  for (i = 0; i < enc->dims; i++)
    out[i] = (gfloat) (out[i] / sqrt (ss));
  ok = TRUE;

out:
  g_free (outs);
  g_free (mask);
  g_free (ids_buf);
  g_free (mask_buf);
  return ok;
}

gboolean
gst_npu_text_encoder_encode (GstNpuTextEncoder * enc, const gchar * text,
    gfloat * out, GError ** error)
{
  gint32 *ids = g_new (gint32, enc->seq_len);
  gchar *what = g_strdup_printf ("\"%s\"", text);
  guint n_tok = 0;
  gboolean ok = gst_npu_text_encoder_tokenize (enc, text, ids, &n_tok, error)
      && run_ids (enc, ids, n_tok, what, out, error);

  g_free (what);
  g_free (ids);
  return ok;
}

gboolean
gst_npu_text_encoder_encode_ids (GstNpuTextEncoder * enc, const gint32 * ids,
    guint n_ids, gfloat * out, GError ** error)
{
  gint32 *padded;
  guint i, n = MIN (n_ids, enc->seq_len);
  gboolean ok;

  if (n_ids == 0) {
    FAIL ("no token ids to encode");
    return FALSE;
  }
  for (i = 0; i < n_ids; i++)
    if (ids[i] < 0 || (gsize) ids[i] >= enc->vocab) {
      FAIL ("token id %d (position %u) is outside the vocabulary (%"
          G_GSIZE_FORMAT ")", ids[i], i, enc->vocab);
      return FALSE;
    }
  padded = g_new (gint32, enc->seq_len);
  for (i = 0; i < enc->seq_len; i++)
    padded[i] = i < n ? ids[i] : enc->pad;
  if (n_ids > enc->seq_len)
    padded[enc->seq_len - 1] = ids[n_ids - 1];
  ok = run_ids (enc, padded, n, "the ids", out, error);
  g_free (padded);
  return ok;
}

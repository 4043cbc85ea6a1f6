// SPDX-License-Identifier: MIT
// npu-spm.cc: the C interface of npu-spm.h over libsentencepiece's
// SentencePieceProcessor (C++). Only this file is C++; no exception leaves
// it (allocation failures come back as errors).
#include "npu-spm.h"

#include <sentencepiece_processor.h>

#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <vector>

struct _GstNpuSpm
{
  sentencepiece::SentencePieceProcessor sp;
};

static char *
dup_error (const std::string & s)
{
  char *e = static_cast<char *>(std::malloc (s.size () + 1));

  if (e)
    std::memcpy (e, s.c_str (), s.size () + 1);
  return e;
}

extern "C" GstNpuSpm *
gst_npu_spm_load (const char *path, char **error)
{
  try {
    GstNpuSpm *spm = new GstNpuSpm;
    const auto status = spm->sp.Load (path);

    if (!status.ok ()) {
      if (error)
        *error = dup_error (std::string ("SentencePiece model \"") + path +
            "\": " + status.ToString ());
      delete spm;
      return nullptr;
    }
    return spm;
  } catch (const std::exception & ex) {
    if (error)
      *error = dup_error (std::string ("SentencePiece model \"") + path +
          "\": " + ex.what ());
    return nullptr;
  }
}

extern "C" void
gst_npu_spm_free (GstNpuSpm * spm)
{
  delete spm;
}

extern "C" int
gst_npu_spm_encode (const GstNpuSpm * spm, const char *text, size_t len,
    int32_t ** ids, size_t *n, char **error)
{
  try {
    std::vector<int> v;
    const auto status = spm->sp.Encode (std::string (text, len), &v);

    if (!status.ok ()) {
      if (error)
        *error = dup_error ("SentencePiece encode: " + status.ToString ());
      return -1;
    }
    *ids = static_cast<int32_t *>(std::malloc ((v.size () + 1) *
            sizeof (int32_t)));
    if (!*ids) {
      if (error)
        *error = dup_error ("out of memory");
      return -1;
    }
    for (size_t i = 0; i < v.size (); i++)
      (*ids)[i] = v[i];
    *n = v.size ();
    return 0;
  } catch (const std::exception & ex) {
    if (error)
      *error = dup_error (std::string ("SentencePiece encode: ") + ex.what ());
    return -1;
  }
}

extern "C" int32_t
gst_npu_spm_eos (const GstNpuSpm * spm)
{
  return spm->sp.eos_id ();
}

extern "C" size_t
gst_npu_spm_vocab_size (const GstNpuSpm * spm)
{
  return (size_t) spm->sp.GetPieceSize ();
}

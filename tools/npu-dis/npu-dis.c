/* SPDX-License-Identifier: MIT */
/*
 * npu-dis: prints an RK3588 NPU regcmd stream task by task, with block, register and field
 * names and decoded values (enumerations by name, minus-one fields as real values, addresses
 * flagged), the task tails explained (next address, fetch amount in qwords, plan cores), and
 * everything the register database does not know flagged with "!!".
 *
 * Inputs (detected from the content unless -f says):
 *   golden text   the .regcmd files of tests/golden/vectors (golden-regcmd v1)
 *   partial table ab-rknn-conv-partial.tsv (its columns are named TARGET:OFFSET)
 *   binary        raw little-endian u64 qwords; segments cut by a task-descriptor file
 *                 (--tasks, 40-byte rknpu_task records) or found by walking the PC chain from
 *                 the first segment (--start, --amount)
 *
 * Exit status: 0 done; 1 with --strict when anything was unknown; 2 bad usage or malformed
 * input (the message names the file and line or byte offset).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npu-hw.h"

enum fmt { FMT_AUTO, FMT_GOLDEN, FMT_TSV, FMT_BIN };

struct buffer_range {
    char name[64];
    uint32_t start, size;
};

struct dis {
    FILE *out;
    unsigned fmt_flags;
    bool quiet, verbose, strict;
    /* Counters for the summary. */
    unsigned tasks, qwords, unknown, warnings;
    /* Known buffers for annotating addresses (golden header or --buffer). */
    struct buffer_range buffers[64];
    unsigned n_buffers;
    /* Binary mode: the regcmd file's own range. */
    bool have_regcmd_range;
    uint32_t regcmd_base, regcmd_size;
};

static const char *prog = "npu-dis";

static void __attribute__((format(printf, 1, 2), noreturn)) die_input(const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "%s: error: ", prog);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(2);
}

static void __attribute__((format(printf, 2, 3))) out(struct dis *d, const char *fmt, ...)
{
    va_list ap;

    if (d->quiet)
        return;
    va_start(ap, fmt);
    vfprintf(d->out, fmt, ap);
    va_end(ap);
}

/* Problems are printed even in quiet mode. */
static void __attribute__((format(printf, 3, 4)))
problem(struct dis *d, bool unknown, const char *fmt, ...)
{
    va_list ap;

    if (unknown)
        d->unknown++;
    else
        d->warnings++;
    va_start(ap, fmt);
    vfprintf(d->out, fmt, ap);
    va_end(ap);
}

static const char *
buffer_of(const struct dis *d, uint32_t addr, uint32_t *off)
{
    for (unsigned i = 0; i < d->n_buffers; i++)
        if (addr >= d->buffers[i].start && addr - d->buffers[i].start < d->buffers[i].size) {
            *off = addr - d->buffers[i].start;
            return d->buffers[i].name;
        }
    return NULL;
}

/* Fields whose value names no listed enumerator are flagged; so are reserved bits. */
static void
check_value(struct dis *d, const struct npu_reg_info *r, uint32_t value, const char *where)
{
    uint32_t res = npu_reg_reserved_bits(r, value);

    for (unsigned i = 0; i < r->n_fields; i++) {
        const struct npu_field_info *f = &r->fields[i];
        uint32_t v = npu_field_get(f, value);

        if (f->type && !npu_enum_name(f->type, v))
            problem(d, true, "      !! %s%s.%s = %u is not a known %s value\n", where, r->full_name,
                    f->name, v, f->type->name);
    }
    if (res)
        problem(d, true, "      !! %s%s: reserved bits 0x%08x set\n", where, r->full_name, res);
    if (r->flags & (NPU_REG_RO | NPU_REG_NO_REGCMD))
        problem(d, false, "      !! %s%s is %s\n", where, r->full_name,
                (r->flags & NPU_REG_RO) ? "read-only" : "not written by regcmd streams");
}

/* One qword; idx is its position in the segment. golden: the file's flags, or NULL. */
static void
dis_qword(struct dis *d, uint64_t q, size_t idx, const struct npu_golden *g,
          const struct npu_golden_qword *gq)
{
    struct npu_qword_info qi;
    char fields[1024];
    const char *note = "";

    npu_qword_classify(q, &qi);
    d->qwords++;
    if (gq && (gq->flags & NPU_GQ_AMBIGUOUS))
        note = "  [re-inserted zero, position ambiguous]";
    else if (gq && (gq->flags & NPU_GQ_INSERTED))
        note = "  [re-inserted zero]";
    out(d, "  [%4zu] %04x %04x %08x  ", idx, qi.target, qi.offset, qi.value);
    switch (qi.kind) {
    case NPU_QW_REG:
        if (qi.reg->flags & NPU_REG_ADDR) {
            uint32_t off = 0;
            const char *b = NULL;
            char where[128] = "";

            if (gq && (gq->flags & NPU_GQ_RELOC) && g) {
                snprintf(where, sizeof(where), " = @%s+0x%x", g->buffers[gq->buffer].name,
                         gq->buf_offset);
            } else if ((b = buffer_of(d, qi.value, &off))) {
                snprintf(where, sizeof(where), " = @%s+0x%x", b, off);
            } else if (d->have_regcmd_range && qi.value >= d->regcmd_base &&
                       qi.value - d->regcmd_base < d->regcmd_size) {
                snprintf(where, sizeof(where), " = regcmd+0x%x", qi.value - d->regcmd_base);
            }
            out(d, "%-26s ADDRESS 0x%08x%s%s\n", qi.reg->full_name, qi.value, where, note);
            if (npu_reg_reserved_bits(qi.reg, qi.value))
                problem(d, true, "      !! %s = 0x%08x is not 16-byte aligned\n", qi.reg->full_name,
                        qi.value);
        } else {
            npu_format_reg(fields, sizeof(fields), qi.reg, qi.value, d->fmt_flags);
            out(d, "%-26s %s%s%s\n", qi.reg->full_name, fields,
                (qi.reg->flags & NPU_REG_UNDOCUMENTED) ? "  [undocumented]" : "", note);
            check_value(d, qi.reg, qi.value, "");
        }
        if (d->verbose && qi.reg->unverified)
            out(d, "         unverified: %s\n", qi.reg->unverified);
        if (d->verbose)
            for (unsigned i = 0; i < qi.reg->n_fields; i++)
                if (qi.reg->fields[i].unverified)
                    out(d, "         unverified %s: %s\n", qi.reg->fields[i].name,
                        qi.reg->fields[i].unverified);
        break;
    case NPU_QW_NOP: out(d, "no-op (zero qword)%s\n", note); break;
    case NPU_QW_MARKER: out(d, "marker (must precede op_en)\n"); break;
    case NPU_QW_OP_EN:
        npu_format_op_en(fields, sizeof(fields), qi.value);
        out(d, "op_en %s\n", fields);
        break;
    default:
        out(d, "\n");
        problem(d, true, "      !! qword [%zu] %016" PRIx64 ": %s\n", idx, q,
                npu_qword_kind_str(qi.kind));
        break;
    }
}

/* A segment: body + 4-qword tail. gt/g: golden task and file, when decoding golden text. */
static void
dis_segment(struct dis *d, const uint64_t *q, size_t n, const struct npu_golden *g,
            const struct npu_golden_task *gt)
{
    struct npu_tail tail;
    size_t body = n >= NPU_TASK_TAIL_QWORDS ? n - NPU_TASK_TAIL_QWORDS : 0;
    char mask[128];

    for (size_t i = 0; i < body; i++)
        dis_qword(d, q[i], i, g, gt ? &gt->q[i] : NULL);
    if (n < NPU_TASK_TAIL_QWORDS) {
        problem(d, true, "  !! segment of %zu qwords has no 4-qword tail\n", n);
        return;
    }
    npu_tail_parse(q, n, &tail);
    out(d, "  tail:\n");
    /* Tail fields raw: the line after them gives the real next address and amount. */
    unsigned save = d->fmt_flags;
    d->fmt_flags |= NPU_FMT_RAW;
    for (size_t i = body; i < n; i++)
        dis_qword(d, q[i], i, g, gt ? &gt->q[i] : NULL);
    d->fmt_flags = save;
    if (!tail.well_formed) {
        problem(d, true,
                "  !! malformed tail (want next address or 0, PC_REGISTER_AMOUNTS, "
                "0x0041 marker, 0x0081 op_en)\n");
        return;
    }
    npu_format_op_en(mask, sizeof(mask), tail.enable_mask);
    if (tail.has_next && g) {
        for (uint32_t i = 0; i < g->n_tasks; i++)
            if (g->tasks[i].addr == tail.next_addr && g->tasks[i].dup_of < 0) {
                out(d, "  => chains to task %u\n", g->tasks[i].index);
                break;
            }
    }
    if (tail.has_next)
        out(d,
            "  => next task at 0x%08x, fetch amount %u = %zu qwords (ceil(N/2)-1 for a "
            "segment of %zu or %zu), plan of %u core%s; then op_en %s starts this task\n",
            tail.next_addr, tail.next_amount, npu_pc_amount_qwords(tail.next_amount),
            npu_pc_amount_qwords(tail.next_amount) - 1, npu_pc_amount_qwords(tail.next_amount),
            tail.cores, tail.cores > 1 ? "s" : "", mask);
    else
        out(d, "  => last task of its chain; op_en %s starts it\n", mask);
    if (!tail.has_next && tail.next_amount)
        problem(d, false, "  !! no next address but a fetch amount of %u\n", tail.next_amount);
}

/* ------------------------------------------------------------------ golden text */

static int
run_golden(struct dis *d, const char *path, const char *text, size_t len)
{
    struct npu_golden g;
    uint64_t *buf = NULL;

    if (npu_golden_parse(text, len, path, &g) != NPU_OK)
        die_input("%s", g.errmsg);
    for (uint32_t i = 0; i < g.n_buffers && d->n_buffers < NPU_ARRAY_SIZE(d->buffers); i++) {
        struct buffer_range *b = &d->buffers[d->n_buffers++];
        snprintf(b->name, sizeof(b->name), "%s", g.buffers[i].name);
        b->start = g.buffers[i].start;
        b->size = g.buffers[i].size;
    }
    const char *cs = npu_golden_header(&g, "case");
    out(d, "# %s: golden-regcmd v1, case %s, %u tasks, %u buffers\n", path, cs ? cs : "?",
        g.n_tasks, g.n_buffers);
    for (uint32_t i = 0; i < g.n_buffers; i++)
        out(d, "# buffer %-16s 0x%08x + 0x%x\n", g.buffers[i].name, g.buffers[i].start,
            g.buffers[i].size);
    for (uint32_t i = 0; i < g.n_tasks; i++) {
        const struct npu_golden_task *t = &g.tasks[i];

        d->tasks++;
        out(d, "\ntask %u (line %d):", t->index, t->line);
        for (uint32_t k = 0; k < t->n_keys; k++)
            out(d, " %s=%s", t->keys[k].key, t->keys[k].value);
        out(d, "\n");
        if (t->dup_of >= 0) {
            out(d, "  descriptor points at the segment of task %lld\n", (long long)t->dup_of);
            continue;
        }
        free(buf);
        buf = malloc((t->n_q ? t->n_q : 1) * sizeof(uint64_t));
        if (!buf)
            die_input("out of memory");
        for (uint32_t j = 0; j < t->n_q; j++)
            buf[j] = t->q[j].q;
        if (t->amount >= 0)
            out(d,
                "  body %lld qwords (descriptor regcfg_amount) + 4 tail; PC fetch amount for "
                "this segment would be %u\n",
                (long long)t->amount, npu_pc_amount((size_t)t->amount + 4));
        dis_segment(d, buf, t->n_q, &g, t);
        if (t->n_q >= 4 && t->enable >= 0 && npu_regcmd_value(buf[t->n_q - 1]) != t->enable)
            problem(d, false, "  !! descriptor enable=0x%llx but op_en is 0x%x\n",
                    (unsigned long long)t->enable, npu_regcmd_value(buf[t->n_q - 1]));
    }
    free(buf);
    npu_golden_free(&g);
    return 0;
}

/* ----------------------------------------------------------- partial table (TSV) */

static char *
next_field(char **s)
{
    char *f = *s, *tab;

    if (!f)
        return NULL;
    tab = strchr(f, '\t');
    if (tab) {
        *tab = '\0';
        *s = tab + 1;
    } else {
        *s = NULL;
    }
    return f;
}

static int
run_tsv(struct dis *d, const char *path, char *text, size_t len)
{
    enum { MAXCOL = 64, META = 6 };
    uint16_t col_target[MAXCOL], col_offset[MAXCOL];
    char *col_name[MAXCOL];
    int ncol = 0, line = 0, rows = 0;
    char *s = text, *end = text + len;
    bool have_header = false;

    out(d, "# %s: RKNN partial conv table (registers per conv task)\n", path);
    while (s < end) {
        char *nl = memchr(s, '\n', (size_t)(end - s));
        char *l = s, *p;

        if (nl)
            *nl = '\0';
        s = nl ? nl + 1 : end;
        line++;
        if (!*l || l[0] == '#')
            continue;
        if (!have_header) {
            /* slug task_count amounts enable_masks task_index task_amount name(TTTT:OOOO)... */
            p = l;
            for (char *f; (f = next_field(&p));) {
                if (ncol >= MAXCOL)
                    die_input("%s:%d: more than %d columns", path, line, MAXCOL);
                col_name[ncol] = f;
                if (ncol >= META) {
                    unsigned t, o;
                    char *par = strrchr(f, '(');
                    if (!par || sscanf(par, "(%4x:%4x)", &t, &o) != 2)
                        die_input("%s:%d: column %d '%s' does not name TARGET:OFFSET", path, line,
                                  ncol + 1, f);
                    col_target[ncol] = (uint16_t)t;
                    col_offset[ncol] = (uint16_t)o;
                    *par = '\0';
                }
                ncol++;
            }
            if (ncol <= META)
                die_input("%s:%d: header has no register columns", path, line);
            /* The columns themselves must be registers the database knows. */
            for (int c = META; c < ncol; c++) {
                uint64_t q = npu_regcmd_pack(col_target[c], col_offset[c], 0);
                struct npu_qword_info qi;
                if (npu_qword_classify(q, &qi) != NPU_QW_REG)
                    problem(d, true, "!! column %s (%04x:%04x): %s\n", col_name[c], col_target[c],
                            col_offset[c], npu_qword_kind_str(qi.kind));
            }
            have_header = true;
            continue;
        }
        /* A data row. */
        char *meta[META];
        p = l;
        for (int c = 0; c < META; c++)
            if (!(meta[c] = next_field(&p)))
                die_input("%s:%d: row has %d of %d columns", path, line, c, ncol);
        rows++;
        d->tasks++;
        out(d, "\nrow %d (line %d): %s task %s of %s, amount %s (amounts %s, masks %s)\n", rows,
            line, meta[0], meta[4], meta[1], meta[5], meta[2], meta[3]);
        for (int c = META; c < ncol; c++) {
            char *f = next_field(&p), *e;
            unsigned long v;

            if (!f)
                die_input("%s:%d: row has %d of %d columns", path, line, c, ncol);
            if (!strcmp(f, "-"))
                continue;
            errno = 0;
            v = strtoul(f, &e, 16);
            if (errno || *e || !*f || v > UINT32_MAX)
                die_input("%s:%d: column %d (%s): '%s' is not a hex value", path, line, c + 1,
                          col_name[c], f);
            dis_qword(d, npu_regcmd_pack(col_target[c], col_offset[c], (uint32_t)v), (size_t)c,
                      NULL, NULL);
        }
        if (p)
            die_input("%s:%d: row has more than %d columns", path, line, ncol);
    }
    if (!have_header)
        die_input("%s: no header row", path);
    return 0;
}

/* ------------------------------------------------------------------------ binary */

static void
read_file(const char *path, char **data, size_t *len)
{
    FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
    size_t cap = 0;

    *data = NULL;
    *len = 0;
    if (!f)
        die_input("%s: %s", path, strerror(errno));
    for (;;) {
        if (*len + 1 >= cap) {
            cap = cap ? cap * 2 : 1 << 16;
            *data = realloc(*data, cap);
            if (!*data)
                die_input("%s: out of memory", path);
        }
        size_t r = fread(*data + *len, 1, cap - *len - 1, f);
        *len += r;
        if (!r)
            break;
    }
    if (ferror(f))
        die_input("%s: read error", path);
    (*data)[*len] = '\0';
    if (f != stdin)
        fclose(f);
}

static int
run_bin(struct dis *d, const char *path, const char *data, size_t len, uint32_t base,
        const char *tasks_path, uint64_t start, long first_amount)
{
    size_t n = len / 8;
    uint64_t *q;

    if (len % 8)
        die_input("%s: %zu bytes is not a whole number of 8-byte qwords", path, len);
    if (!n)
        die_input("%s: empty", path);
    if ((uint64_t)base + len > (1ull << 32))
        die_input("%s: --base 0x%x + %zu bytes crosses 4 GiB", path, base, len);
    q = malloc(len);
    if (!q)
        die_input("out of memory");
    /* Qwords are little-endian on the device. */
    for (size_t i = 0; i < n; i++) {
        uint64_t v = 0;
        for (int b = 7; b >= 0; b--)
            v = v << 8 | (uint8_t)data[i * 8 + (size_t)b];
        q[i] = v;
    }
    d->have_regcmd_range = true;
    d->regcmd_base = base;
    d->regcmd_size = (uint32_t)len;
    out(d, "# %s: %zu qwords at IOVA 0x%08x\n", path, n, base);

    if (tasks_path) {
        char *td;
        size_t tl;

        read_file(tasks_path, &td, &tl);
        if (tl % sizeof(struct npu_rknpu_task) || !tl)
            die_input("%s: %zu bytes is not a whole number of 40-byte task descriptors", tasks_path,
                      tl);
        for (size_t t = 0; t < tl / sizeof(struct npu_rknpu_task); t++) {
            struct npu_rknpu_task desc;
            uint64_t off, cnt;

            memcpy(&desc, td + t * sizeof(desc), sizeof(desc));
            off = desc.regcmd_addr - base;
            cnt = (uint64_t)desc.regcfg_amount + NPU_TASK_TAIL_QWORDS;
            if (desc.regcmd_addr < base || off % 8 || off / 8 + cnt > n)
                die_input("%s: descriptor %zu (byte %zu): segment 0x%llx + %llu qwords lies "
                          "outside %s",
                          tasks_path, t, t * sizeof(desc), (unsigned long long)desc.regcmd_addr,
                          (unsigned long long)cnt, path);
            d->tasks++;
            out(d,
                "\ntask %zu @0x%08llx: body %u qwords + 4 tail, enable_mask 0x%x, int_mask "
                "0x%x, op_idx %u\n",
                t, (unsigned long long)desc.regcmd_addr, desc.regcfg_amount, desc.enable_mask,
                desc.int_mask, desc.op_idx);
            dis_segment(d, q + off / 8, (size_t)cnt, NULL, NULL);
            if (desc.int_mask != npu_int_mask_for_enable(npu_regcmd_value(q[off / 8 + cnt - 1])))
                problem(d, false, "  !! int_mask 0x%x does not match the op_en blocks\n",
                        desc.int_mask);
        }
        free(td);
        free(q);
        return 0;
    }

    /* Walk the PC chain from the first segment. */
    if (start % 8 || start / 8 >= n)
        die_input("%s: --start 0x%llx is not a qword inside the file", path,
                  (unsigned long long)start);
    size_t pos = (size_t)(start / 8), limit = 0;
    long amount = first_amount;
    for (unsigned t = 0;; t++) {
        size_t cnt;

        if (amount >= 0) {
            cnt = (size_t)amount + NPU_TASK_TAIL_QWORDS;
            if (pos + cnt > n)
                die_input("%s: first segment at byte 0x%zx with --amount %ld runs past the end",
                          path, pos * 8, amount);
        } else {
            /* Segment = up to and including the first op_en within the fetch limit. */
            size_t stop = limit ? NPU_MIN(n, pos + limit) : n, i;
            for (i = pos; i < stop; i++)
                if (npu_regcmd_target(q[i]) == NPU_TARGET_OP_EN)
                    break;
            if (i == stop)
                die_input("%s: no op_en entry (target 0x0081) in the segment at byte 0x%zx%s", path,
                          pos * 8, limit ? " within its fetch amount" : "");
            cnt = i + 1 - pos;
        }
        d->tasks++;
        out(d, "\ntask %u @0x%08zx (byte 0x%zx): %zu qwords = body %zu + 4 tail\n", t,
            (size_t)base + pos * 8, pos * 8, cnt, cnt >= 4 ? cnt - 4 : 0);
        dis_segment(d, q + pos, cnt, NULL, NULL);

        struct npu_tail tail;
        npu_tail_parse(q + pos, cnt, &tail);
        if (!tail.well_formed || !tail.has_next)
            break;
        if (tail.next_addr < base || (tail.next_addr - base) % 8 ||
            (tail.next_addr - base) / 8 >= n)
            die_input("%s: task %u (byte 0x%zx) chains to 0x%08x, outside the file (base "
                      "0x%08x, %zu bytes); give --base",
                      path, t, (pos + cnt - 4) * 8, tail.next_addr, base, len);
        if (t + 1 >= n)
            die_input("%s: the PC chain loops", path);
        pos = (tail.next_addr - base) / 8;
        limit = npu_pc_amount_qwords(tail.next_amount);
        amount = -1;
    }
    free(q);
    return 0;
}

static void
usage(FILE *f)
{
    fprintf(f,
            "usage: %s [options] FILE\n"
            "Prints an RK3588 NPU regcmd stream task by task.\n"
            "  -f, --format F      auto (default), golden, tsv or bin\n"
            "  -b, --base IOVA     binary: IOVA of the file's first byte (default 0)\n"
            "  -t, --tasks FILE    binary: rknpu task descriptors (40 bytes each) to cut segments\n"
            "  -s, --start OFF     binary: byte offset of the first segment (default 0)\n"
            "  -n, --amount N      binary: body qwords of the first segment (default: up to its "
            "op_en)\n"
            "  -B, --buffer N:START:SIZE  name an address range (repeatable)\n"
            "  -a, --all-fields    print zero-valued fields too\n"
            "  -r, --raw           raw field values (no enum names, no minus-one adjustment)\n"
            "  -v, --verbose       also print the database's unverified notes\n"
            "  -q, --quiet         print only problems and the summary\n"
            "      --strict        exit 1 when any qword, field value or bit is unknown\n"
            "  -h, --help\n",
            prog);
}

static uint64_t
parse_num(const char *what, const char *s)
{
    char *e;
    unsigned long long v;

    errno = 0;
    v = strtoull(s, &e, 0);
    if (errno || *e || !*s)
        die_input("%s: '%s' is not a number", what, s);
    return v;
}

int
main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"format", required_argument, NULL, 'f'},
        {"base", required_argument, NULL, 'b'},
        {"tasks", required_argument, NULL, 't'},
        {"start", required_argument, NULL, 's'},
        {"amount", required_argument, NULL, 'n'},
        {"buffer", required_argument, NULL, 'B'},
        {"all-fields", no_argument, NULL, 'a'},
        {"raw", no_argument, NULL, 'r'},
        {"verbose", no_argument, NULL, 'v'},
        {"quiet", no_argument, NULL, 'q'},
        {"strict", no_argument, NULL, 'S'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct dis d = {.out = stdout};
    enum fmt fmt = FMT_AUTO;
    uint64_t base = 0, start = 0;
    long amount = -1;
    const char *tasks = NULL, *path;
    char *data;
    size_t len;
    int c;

    while ((c = getopt_long(argc, argv, "f:b:t:s:n:B:arvqh", opts, NULL)) != -1) {
        switch (c) {
        case 'f':
            if (!strcmp(optarg, "auto"))
                fmt = FMT_AUTO;
            else if (!strcmp(optarg, "golden"))
                fmt = FMT_GOLDEN;
            else if (!strcmp(optarg, "tsv"))
                fmt = FMT_TSV;
            else if (!strcmp(optarg, "bin"))
                fmt = FMT_BIN;
            else
                die_input("--format: '%s' (auto, golden, tsv, bin)", optarg);
            break;
        case 'b':
            base = parse_num("--base", optarg);
            if (base > UINT32_MAX)
                die_input("--base: 0x%llx is past 4 GiB", (unsigned long long)base);
            break;
        case 't': tasks = optarg; break;
        case 's': start = parse_num("--start", optarg); break;
        case 'n':
            if (parse_num("--amount", optarg) > 65535 * 2)
                die_input("--amount: %s is larger than one PC fetch", optarg);
            amount = (long)parse_num("--amount", optarg);
            break;
        case 'B': {
            struct buffer_range *b;
            char name[64];
            unsigned long long st, sz;
            if (d.n_buffers >= NPU_ARRAY_SIZE(d.buffers))
                die_input("--buffer: at most %zu", NPU_ARRAY_SIZE(d.buffers));
            if (sscanf(optarg, "%63[^:]:%lli:%lli", name, &st, &sz) != 3 || st > UINT32_MAX ||
                sz > UINT32_MAX)
                die_input("--buffer: '%s' is not NAME:START:SIZE", optarg);
            b = &d.buffers[d.n_buffers++];
            snprintf(b->name, sizeof(b->name), "%s", name);
            b->start = (uint32_t)st;
            b->size = (uint32_t)sz;
            break;
        }
        case 'a': d.fmt_flags |= NPU_FMT_ALL_FIELDS; break;
        case 'r': d.fmt_flags |= NPU_FMT_RAW; break;
        case 'v': d.verbose = true; break;
        case 'q': d.quiet = true; break;
        case 'S': d.strict = true; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind + 1 != argc) {
        usage(stderr);
        return 2;
    }
    path = argv[optind];
    read_file(path, &data, &len);
    if (fmt == FMT_AUTO) {
        if (len >= 27 && !memcmp(data, "# format: golden-regcmd v1", 26))
            fmt = FMT_GOLDEN;
        else if (len >= 37 && !memcmp(data, "# format: golden-regcmd partial table", 37))
            fmt = FMT_TSV;
        else
            fmt = FMT_BIN;
    }
    if (fmt == FMT_GOLDEN)
        run_golden(&d, path, data, len);
    else if (fmt == FMT_TSV)
        run_tsv(&d, path, data, len);
    else
        run_bin(&d, path, data, len, (uint32_t)base, tasks, start, amount);
    free(data);
    fprintf(d.out, "\n# %u tasks, %u qwords, %u unknown, %u warnings\n", d.tasks, d.qwords,
            d.unknown, d.warnings);
    if (d.strict && d.unknown) {
        fprintf(stderr, "%s: %s: %u unknown items (see lines marked !!)\n", prog, path, d.unknown);
        return 1;
    }
    return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * fuzz-replay.c: a plain-C stand-in for libFuzzer's driver. Runs every file of
 * the given folders (or files) through LLVMFuzzerTestOneInput once, so that
 * the seed corpus and every crash ever found are replayed by `meson test`
 * (and under ASan/UBSan by scripts/test.sh) without clang. Each input runs on
 * a thread with a small stack (256 KB; 1 MB under ASan, whose frames are
 * several times larger; FUZZ_STACK_KB overrides), so that unbounded recursion
 * on a crafted input crashes here rather than only on smaller stacks than the
 * main thread's 8 MB (issue 17: nested ONNX subgraphs).
 */
#include <dirent.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#if defined(__SANITIZE_ADDRESS__)
#define ASAN_BUILD 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ASAN_BUILD 1
#endif
#endif

static size_t
stack_bytes(void)
{
    const char *e = getenv("FUZZ_STACK_KB");
    long kb = e ? atol(e) : 0;
#ifdef ASAN_BUILD
    if (kb <= 0)
        kb = 1024;
#else
    if (kb <= 0)
        kb = 256;
#endif
    return (size_t)kb * 1024;
}

struct one {
    const uint8_t *data;
    size_t size;
};

static void *
run_one(void *arg)
{
    struct one *o = arg;
    LLVMFuzzerTestOneInput(o->data, o->size);
    return NULL;
}

static int
run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "fuzz-replay: cannot open %s\n", path);
        return 1;
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    uint8_t *buf = malloc(n > 0 ? (size_t)n : 1);
    if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
        fclose(f);
        free(buf);
        return 1;
    }
    fclose(f);
    struct one o = {buf, (size_t)n};
    pthread_attr_t at;
    pthread_t t;
    pthread_attr_init(&at);
    if (pthread_attr_setstacksize(&at, stack_bytes()) || pthread_create(&t, &at, run_one, &o)) {
        fprintf(stderr, "fuzz-replay: cannot start a thread for %s\n", path);
        pthread_attr_destroy(&at);
        free(buf);
        return 1;
    }
    pthread_join(t, NULL);
    pthread_attr_destroy(&at);
    free(buf);
    return 0;
}

int
main(int argc, char **argv)
{
    int files = 0, errors = 0;
    for (int i = 1; i < argc; i++) {
        struct stat sb;
        if (stat(argv[i], &sb)) {
            fprintf(stderr, "fuzz-replay: %s: not found\n", argv[i]);
            return 1;
        }
        if (!S_ISDIR(sb.st_mode)) {
            errors += run_file(argv[i]);
            files++;
            continue;
        }
        struct dirent **ents = NULL; /* unset when scandir fails */
        int n = scandir(argv[i], &ents, NULL, alphasort);
        for (int k = 0; k < n; k++) {
            if (ents[k]->d_name[0] != '.') {
                char p[4096];
                snprintf(p, sizeof(p), "%s/%s", argv[i], ents[k]->d_name);
                if (!stat(p, &sb) && S_ISREG(sb.st_mode)) {
                    errors += run_file(p);
                    files++;
                }
            }
            free(ents[k]);
        }
        free(ents);
    }
    printf("fuzz-replay: %d inputs replayed, %d unreadable\n", files, errors);
    return errors || files == 0;
}

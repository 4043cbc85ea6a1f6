/* SPDX-License-Identifier: MIT */
/*
 * fuzz-replay.c: a plain-C stand-in for libFuzzer's driver. Runs every file of
 * the given folders (or files) through LLVMFuzzerTestOneInput once, so that
 * the seed corpus and every crash ever found are replayed by `meson test`
 * (and under ASan/UBSan by scripts/test.sh) without clang.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

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
    LLVMFuzzerTestOneInput(buf, (size_t)n);
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
        struct dirent **ents;
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

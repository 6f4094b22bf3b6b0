/* Reading whole inputs with a cap: every reader of a text input (TOML specs, job files,
 * residual manifests, CSVs, samples, nccl-tests logs) refuses one larger than
 * SC_TEXT_INPUT_MAX bytes with an error naming the file, so that /dev/zero or any endless
 * stream given as an input is an error, not all of the machine's memory. Traces are read as
 * a stream (core/src/trace/parse.c) and have their own, larger cap, SC_TRACE_INPUT_MAX bytes
 * of JSON after decompression (a real profiler trace of a large job is gigabytes). */
#ifndef SC_COMMON_SLURP_H
#define SC_COMMON_SLURP_H

#include <stdint.h>
#include <stdio.h>

#include "stepcast/common.h"

#define SC_TEXT_INPUT_MAX ((size_t)256 << 20)    /* 256 MiB */
#define SC_TRACE_INPUT_MAX ((uint64_t)64 << 30)  /* 64 GiB of trace JSON */

/* The whole of path in *text (malloc'd, NUL-terminated after *len bytes; free it), at most
 * max bytes. SC_EIO when it cannot be read, SC_ELIMIT (naming path and the cap) when it holds
 * more than max bytes, SC_ENOMEM. */
int sc__slurp(const char *path, size_t max, char **text, size_t *len, sc_error *err);

/* path read whole (at most SC_TEXT_INPUT_MAX bytes) and opened as a stream for reading, for
 * the line readers (getline): NULL and err set on error. fclose the stream, then free
 * *text. */
FILE *sc__fopen_text(const char *path, char **text, sc_error *err);

#endif

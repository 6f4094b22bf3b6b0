/*
 * Helpers shared by the commands that read a table of runs (validate, validate --memory):
 * a field's trimmed text, a choice among named values with the one-line error every column
 * gives, and the model columns' defaults.
 */
#ifndef SC_CLI_CSVROW_H
#define SC_CLI_CSVROW_H

#include <stddef.h>
#include <stdint.h>

#include "stepcast/csv.h"
#include "stepcast/predict.h"
#include "stepcast/spec.h"

/* The text of field (row, col), spaces and tabs trimmed, into buf ("" for a missing one). */
const char *sc__csv_text(const sc_csv *c, size_t row, int col, char *buf, size_t cap);

/* The index of text in choices (NULL-terminated), or -1. */
int sc__choice_of(const char *const *choices, const char *text);

/* text as one of choices into *out; else SC_EPARSE "path:line: column 'column': 'text' is
 * not <what>" (what lists them: "true or false"). */
int sc__csv_choice(const char *path, uint32_t line, const char *column, const char *text,
                   const char *const *choices, const char *what, int *out, sc_error *err);

/* The activation column's value (gelu, swiglu, relu, squared_relu, geglu), as sc__csv_choice. */
int sc__csv_activation(const char *path, uint32_t line, const char *text, sc_activation *out,
                       sc_error *err);

/* The defaults a row's activation implies where its columns do not say: GPT-style (gelu,
 * relu, squared_relu: LayerNorm, learned positions, biases) or Llama-style (the gated
 * swiglu, geglu: RMSNorm, RoPE, no biases). */
void sc__model_style_defaults(sc_model *m);

#endif

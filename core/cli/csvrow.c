#include "csvrow.h"

#include <stdio.h>
#include <string.h>

#include "stepcast/stepcast.h"

const char *sc__csv_text(const sc_csv *c, size_t row, int col, char *buf, size_t cap) {
  const char *s = col >= 0 ? sc_csv_field(c, row, (size_t)col) : NULL;
  size_t n;
  if (s == NULL) s = "";
  while (*s == ' ' || *s == '\t') s++;
  n = strlen(s);
  while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t')) n--;
  if (n >= cap) n = cap - 1;
  memcpy(buf, s, n);
  buf[n] = '\0';
  return buf;
}

int sc__choice_of(const char *const *choices, const char *text) {
  for (int i = 0; choices[i] != NULL; i++)
    if (strcmp(choices[i], text) == 0) return i;
  return -1;
}

int sc__csv_choice(const char *path, uint32_t line, const char *column, const char *text,
                   const char *const *choices, const char *what, int *out, sc_error *err) {
  int k = sc__choice_of(choices, text);
  if (k < 0)
    return sc_error_set(err, SC_EPARSE, "%s:%u: column '%s': '%s' is not %s", path, line,
                        column, text, what);
  *out = k;
  return SC_OK;
}

int sc__csv_activation(const char *path, uint32_t line, const char *text, sc_activation *out,
                       sc_error *err) {
  static const char *const acts[] = {"gelu", "swiglu", "relu", "squared_relu", "geglu", NULL};
  int k = 0;
  int rc = sc__csv_choice(path, line, "activation", text, acts,
                          "gelu, swiglu, relu, squared_relu or geglu", &k, err);
  if (rc == SC_OK) *out = (sc_activation)k;
  return rc;
}

void sc__model_style_defaults(sc_model *m) {
  int gpt = !sc_activation_gated(m->activation);
  m->norm = gpt ? SC_NORM_LAYERNORM : SC_NORM_RMSNORM;
  m->position = gpt ? SC_POS_LEARNED : SC_POS_ROPE;
  m->linear_bias = gpt;
}

/*
 * Fixtures shared by the Check suites (each suite is its own program, so these are static).
 */
#ifndef SC_TESTS_FIXTURES_H
#define SC_TESTS_FIXTURES_H

#include <check.h>
#include <stdio.h>
#include <string.h>

#include "stepcast/spec.h"
#include "stepcast/stepcast.h"

/* A GPT-2-medium-like model named name: 16 heads of 64, 4h MLP, GELU, learned positions,
 * layers layers, embeddings tied or not. */
static inline void sc_test_gpt_model(sc_model *m, const char *name, int64_t layers, int tied) {
  sc_error err;
  memset(m, 0, sizeof *m);
  snprintf(m->name, sizeof m->name, "%s", name);
  m->layers = layers;
  m->hidden = 1024;
  m->ffn_hidden = 4096;
  m->heads = 16;
  m->kv_heads = 16;
  m->vocab = 50304;
  m->max_seq = 1024;
  m->activation = SC_ACT_GELU;
  m->norm = SC_NORM_LAYERNORM;
  m->position = SC_POS_LEARNED;
  m->tied_embeddings = tied;
  m->linear_bias = 1;
  sc_error_clear(&err);
  ck_assert_msg(sc_model_finish(m, &err) == SC_OK, "%s", err.msg);
}

#endif

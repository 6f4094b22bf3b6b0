/* Parallel configuration defaults. */
#include <string.h>

#include "stepcast/schedule.h"

#include "stepcast/parallel.h"

void sc_parallel_defaults(sc_parallel *p) {
  memset(p, 0, sizeof *p);
  p->tp = p->pp = p->dp = p->cp = 1;
  p->ep = p->etp = 1;
  p->micro_batch = 1;
  p->global_batch = 1;
  p->seq_len = 2048;
  p->virtual_stages = 1;
  p->schedule = SC_SCHED_1F1B;
  p->recompute = SC_RECOMPUTE_NONE;
  p->flash_attention = 1;
  p->dtype = SC_DTYPE_BF16;
  p->order[0] = SC_GROUP_TP;
  p->order[1] = SC_GROUP_CP;
  p->order[2] = SC_GROUP_DP;
  p->order[3] = SC_GROUP_PP;
}

const char *sc_recompute_name(sc_recompute r) {
  switch (r) {
  case SC_RECOMPUTE_NONE: return "none";
  case SC_RECOMPUTE_SELECTIVE: return "selective";
  case SC_RECOMPUTE_FULL: return "full";
  }
  return "?";
}

int sc_recompute_parse(const char *s, sc_recompute *out) {
  for (int i = SC_RECOMPUTE_NONE; s != NULL && i <= SC_RECOMPUTE_FULL; i++) {
    if (strcmp(s, sc_recompute_name((sc_recompute)i)) == 0) {
      *out = (sc_recompute)i;
      return SC_OK;
    }
  }
  return SC_EINVAL;
}

int sc_schedule_kind_parse(const char *s, sc_schedule_kind *out) {
  static const char *const cli[] = {"gpipe", "1f1b", "interleaved", "zb-h1", "dualpipe"};
  for (int i = SC_SCHED_GPIPE; s != NULL && i <= SC_SCHED_DUALPIPE; i++) {
    if (strcmp(s, cli[i]) == 0 || strcmp(s, sc_schedule_kind_name((sc_schedule_kind)i)) == 0) {
      *out = (sc_schedule_kind)i;
      return SC_OK;
    }
  }
  return SC_EINVAL;
}

int sc_dtype_parse(const char *s, sc_dtype *out) {
  for (int i = 0; s != NULL && i < SC_DTYPE_COUNT; i++) {
    if (strcmp(s, sc_dtype_name((sc_dtype)i)) == 0) {
      *out = (sc_dtype)i;
      return SC_OK;
    }
  }
  return SC_EINVAL;
}

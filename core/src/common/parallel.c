/* Parallel configuration defaults. */
#include <string.h>

#include "stepcast/parallel.h"

void sc_parallel_defaults(sc_parallel *p) {
  memset(p, 0, sizeof *p);
  p->tp = p->pp = p->dp = p->cp = 1;
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

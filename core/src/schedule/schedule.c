/*
 * Pipeline schedule: event simulation of one training iteration (see docs/schedule.md).
 *
 * Each pipeline rank runs its passes in the fixed order its schedule prescribes. A pass
 * starts when the rank's compute stream is free and its input has arrived (the activation
 * sent by the previous virtual stage, the gradient sent by the next one); sends queue FIFO
 * on the sender's P2P stream. Because every rank's order is fixed and every resource is a
 * FIFO, start and end times follow max-plus recurrences that do not depend on the order in
 * which ranks are visited: the simulation visits a rank when one of its inputs arrives
 * (a worklist), so every pass is placed exactly once, O(passes) in all.
 */
#include <math.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include <stdlib.h>
#include <string.h>

#include "schedule/exposed.h"
#include "stepcast/schedule.h"
#include "stepcast/stepcast.h"

/* Encoding of one pass in a rank's order: bits 28..31 its kind, bits 20..25 the chunk (vp
 * <= 64; DualPipe: the direction), bits 0..19 the micro-batch (< 2^20). */
#define OP_BWD 0x80000000u   /* a backward: B and W together unless OP_SPLIT */
#define OP_W 0x40000000u     /* the weight-gradient pass W of a split backward */
#define OP_SPLIT 0x20000000u /* with OP_BWD: the input-gradient part B alone (W later) */
#define OP_PAIR 0x10000000u  /* a forward run as one pass with the backward after it in the
                                order (DualPipe's overlapped F&B chunk pair) */
#define OP_CHUNK_SHIFT 20
#define OP_CHUNK_MASK 0x3Fu
#define OP_MB_MASK 0x000FFFFFu

typedef struct sc__slot {
  double arr, prod;
} sc__slot;

struct sc_sched_workspace {
  /* capacities */
  size_t cap_ops, cap_gm, cap_g, cap_pp, cap_iv, cap_flow;
  uint32_t *ops;          /* pp rows of stride entries: each rank's order of passes */
  /* Inputs of pass (g, mb) at [mb*G + g] (the passes in flight at one time are close in
   * memory): when the activation (fwd_in) or gradient (bwd_in) arrives and when its
   * producer finished; arr < 0 = not yet. bwd_in of the last virtual stage holds the end
   * of its own forward. */
  sc__slot *fwd_in, *bwd_in;
  int32_t *fwd_send_iv, *bwd_send_iv; /* G*m: interval index of the send (timeline only) */
  uint32_t *fcount, *bcount;    /* G: passes done per chunk */
  uint32_t *gdone;              /* G: passes done per chunk that finished a micro-batch's
                                   weight gradients (a whole backward, or a W) */
  double *gather_first, *gather_end; /* G: param all-gather bucket 0 / last bucket end */
  /* per rank */
  uint32_t *next, *worklist;
  uint32_t *nops_r;         /* entries of each rank's order (ZB-H1 and DualPipe: W passes
                               and F&B pairs make them differ) */
  uint32_t *wq;             /* pp + 2: DualPipe's queue of deferred W passes while the
                               orders are built (first in, first out, as WeightGradStore) */
  uint8_t *inq, *done;
  double *cfree, *pnext_free, *pprev_free, *dpfree, *gather_all;
  sc_sched_breakdown *stages;
  /* The order in which the last run placed passes (the rank of each), a topological order
   * of the pass graph that depends only on (kind, pp, vp, m): a later run with the same
   * shape replays it without readiness checks or a worklist (sweeps). */
  uint32_t *seq;            /* nseq pairs (rank, encoded pass), sorted by level */
  size_t nseq;
  /* First run only: the level of each pass (1 + the largest level of what it waits on),
   * so that the replay order puts independent passes next to each other and the CPU
   * overlaps them instead of waiting on one long chain of dependent loads. */
  uint32_t *fwd_lvl, *bwd_lvl; /* G*m, like fwd_in / bwd_in */
  uint32_t *rank_lvl;          /* pp */
  uint32_t *seq_tmp, *pass_lvl, *lvl_count;
  int key_kind;
  uint32_t key_pp, key_vp, key_m; /* key_m: in->microbatches */
  sc_sched_interval *iv;
  size_t niv;
  sc_sched_flow *flows;
  size_t nflows;
};

static int grow(void **p, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap && *p != NULL) return 0;
  size_t n = need > 0 ? need : 1;
  void *q = realloc(*p, n * elem);
  if (q == NULL) return -1;
  *p = q;
  *cap = n;
  return 0;
}

int sc_sched_workspace_new(sc_sched_workspace **out, sc_error *err) {
  if (out == NULL) return sc_error_set(err, SC_EINVAL, "sc_sched_workspace_new: out is NULL");
  *out = calloc(1, sizeof **out);
  if (*out == NULL) return sc_error_set(err, SC_ENOMEM, "schedule: out of memory (workspace)");
  return SC_OK;
}

void sc_sched_workspace_free(sc_sched_workspace *ws) {
  if (ws == NULL) return;
  free(ws->ops);
  free(ws->fwd_in);
  free(ws->bwd_in);
  free(ws->fwd_send_iv);
  free(ws->bwd_send_iv);
  free(ws->fcount);
  free(ws->bcount);
  free(ws->gdone);
  free(ws->nops_r);
  free(ws->wq);
  free(ws->gather_first);
  free(ws->gather_end);
  free(ws->next);
  free(ws->worklist);
  free(ws->inq);
  free(ws->done);
  free(ws->cfree);
  free(ws->pnext_free);
  free(ws->pprev_free);
  free(ws->dpfree);
  free(ws->gather_all);
  free(ws->stages);
  free(ws->seq);
  free(ws->fwd_lvl);
  free(ws->bwd_lvl);
  free(ws->rank_lvl);
  free(ws->seq_tmp);
  free(ws->pass_lvl);
  free(ws->lvl_count);
  free(ws->iv);
  free(ws->flows);
  free(ws);
}

/* Grow every array to the problem. Capacities are tracked per group of same-sized arrays;
 * a group is regrown only when it is too small. */
static int ws_reserve(sc_sched_workspace *ws, size_t pp, size_t G, size_t m, size_t nops,
                      int timeline, size_t niv, size_t nflow) {
  size_t c;
  size_t gm = G * m;
  if (gm > ws->cap_gm || ws->fwd_in == NULL) {
    c = ws->cap_gm;
    if (grow((void **)&ws->fwd_in, &c, gm, sizeof(sc__slot))) return -1;
    c = ws->cap_gm;
    if (grow((void **)&ws->bwd_in, &c, gm, sizeof(sc__slot))) return -1;
    c = ws->cap_gm;
    if (grow((void **)&ws->fwd_lvl, &c, gm, sizeof(uint32_t))) return -1;
    c = ws->cap_gm;
    if (grow((void **)&ws->bwd_lvl, &c, gm, sizeof(uint32_t))) return -1;
    c = ws->cap_gm;
    if (grow((void **)&ws->fwd_send_iv, &c, gm, sizeof(int32_t))) return -1;
    c = ws->cap_gm;
    if (grow((void **)&ws->bwd_send_iv, &c, gm, sizeof(int32_t))) return -1;
    ws->cap_gm = gm;
  }
  if (pp * nops > ws->cap_ops || ws->ops == NULL) {
    c = 0;
    if (grow((void **)&ws->ops, &c, pp * nops, sizeof(uint32_t))) return -1;
    c = 0;
    if (grow((void **)&ws->seq, &c, 2 * pp * nops, sizeof(uint32_t))) return -1;
    c = 0;
    if (grow((void **)&ws->seq_tmp, &c, 2 * pp * nops, sizeof(uint32_t))) return -1;
    c = 0;
    if (grow((void **)&ws->pass_lvl, &c, pp * nops, sizeof(uint32_t))) return -1;
    c = 0;
    if (grow((void **)&ws->lvl_count, &c, pp * nops + 2, sizeof(uint32_t))) return -1;
    ws->cap_ops = pp * nops;
    ws->nseq = 0; /* the cached order is gone with the old array */
  }
  if (G > ws->cap_g || ws->fcount == NULL) {
    c = 0;
    if (grow((void **)&ws->fcount, &c, G, sizeof(uint32_t))) return -1;
    c = 0;
    if (grow((void **)&ws->bcount, &c, G, sizeof(uint32_t))) return -1;
    c = 0;
    if (grow((void **)&ws->gdone, &c, G, sizeof(uint32_t))) return -1;
    c = 0;
    if (grow((void **)&ws->gather_first, &c, G, sizeof(double))) return -1;
    c = 0;
    if (grow((void **)&ws->gather_end, &c, G, sizeof(double))) return -1;
    ws->cap_g = G;
  }
  if (pp > ws->cap_pp || ws->next == NULL) {
    c = 0;
    if (grow((void **)&ws->next, &c, pp, sizeof(uint32_t))) return -1;
    c = 0;
    if (grow((void **)&ws->worklist, &c, pp, sizeof(uint32_t))) return -1;
    c = 0;
    if (grow((void **)&ws->inq, &c, pp, 1)) return -1;
    c = 0;
    if (grow((void **)&ws->done, &c, pp, 1)) return -1;
    c = 0;
    if (grow((void **)&ws->rank_lvl, &c, pp, sizeof(uint32_t))) return -1;
    c = 0;
    if (grow((void **)&ws->nops_r, &c, pp, sizeof(uint32_t))) return -1;
    c = 0;
    if (grow((void **)&ws->wq, &c, pp + 2, sizeof(uint32_t))) return -1;
    double **d[] = {&ws->cfree, &ws->pnext_free, &ws->pprev_free, &ws->dpfree,
                    &ws->gather_all};
    for (size_t i = 0; i < sizeof d / sizeof d[0]; i++) {
      c = 0;
      if (grow((void **)d[i], &c, pp, sizeof(double))) return -1;
    }
    c = 0;
    if (grow((void **)&ws->stages, &c, pp, sizeof(sc_sched_breakdown))) return -1;
    ws->cap_pp = pp;
  }
  if (timeline) {
    if (grow((void **)&ws->iv, &ws->cap_iv, niv, sizeof(sc_sched_interval))) return -1;
    if (grow((void **)&ws->flows, &ws->cap_flow, nflow, sizeof(sc_sched_flow))) return -1;
  }
  return 0;
}

/* ------------------------------------------------------------------------- */
/* Orders                                                                    */

static inline uint32_t enc(int bwd, uint32_t chunk, uint32_t mb) {
  return (bwd ? OP_BWD : 0u) | (chunk << OP_CHUNK_SHIFT) | mb;
}

/* Megatron's interleaved mapping of the k-th forward (or backward) pass of a rank to its
 * chunk and micro-batch (schedules.py: get_model_chunk_id, microbatch id in chunk). */
static inline uint32_t il_op(uint32_t k, int bwd, uint32_t pp, uint32_t vp) {
  uint32_t in_group = k % (pp * vp);
  uint32_t chunk = in_group / pp;
  if (bwd) chunk = vp - chunk - 1;
  uint32_t mb = (k / (pp * vp)) * pp + k % pp;
  return enc(bwd, chunk, mb);
}

static inline uint32_t mk(uint32_t flags, uint32_t chunk, uint32_t mb) {
  return flags | (chunk << OP_CHUNK_SHIFT) | mb;
}

/* ZB-H1 (Qi et al. 2023, "Zero Bubble Pipeline Parallelism", arXiv:2401.10241, Sec. 2.1 and
 * Fig. 3), in the order InternLM's ZeroBubblePipelineScheduler runs it: 1F1B's warm-up of
 * min(pp - r - 1, m) forwards, then forward / B pairs where the i-th pair is followed by the
 * oldest pending W once i >= r (rank r defers its first r W passes into the cooldown), then
 * B / W pairs, then the W passes still pending. Every backward is split; a rank never holds
 * more than pp micro-batches in flight (stage 0 exactly 1F1B's pp). */
static uint32_t build_zbh1(uint32_t *o, uint32_t pp, uint32_t m, uint32_t r) {
  uint32_t n = 0, w = 0;
  uint32_t warm = pp - r - 1 < m ? pp - r - 1 : m;
  uint32_t steady = m - warm;
  for (uint32_t i = 0; i < warm; i++) o[n++] = mk(0, 0, i);
  for (uint32_t i = 0; i < steady; i++) {
    o[n++] = mk(0, 0, warm + i);
    o[n++] = mk(OP_BWD | OP_SPLIT, 0, i);
    if (i >= r) o[n++] = mk(OP_W, 0, w++);
  }
  for (uint32_t i = steady; i < m; i++) {
    o[n++] = mk(OP_BWD | OP_SPLIT, 0, i);
    o[n++] = mk(OP_W, 0, w++);
  }
  while (w < m) o[n++] = mk(OP_W, 0, w++);
  return n;
}

/* DualPipe's order for one rank, built as DeepSeek's reference implementation
 * (github.com/deepseek-ai/DualPipe, dualpipe.py, DualPipe.step) issues it. Phase 0 of a rank
 * is the direction in which it is nearer the start (the forward direction on the first half
 * of the ranks, the reverse one on the second half), phase 1 the other. */
typedef struct dp_build {
  uint32_t *o, n;
  uint32_t second;       /* 1 on the second half of the ranks: phase 0 is direction 1 */
  uint32_t fc[2], bc[2]; /* next forward / backward micro-batch of each direction */
  uint32_t *q, qh, qt, qn; /* deferred W passes, first in first out */
} dp_build;

static void dp_f(dp_build *b, uint32_t ph, uint32_t flags) {
  uint32_t d = ph ^ b->second;
  b->o[b->n++] = mk(flags, d, b->fc[d]++);
}
static void dp_b(dp_build *b, uint32_t ph, int zb) {
  uint32_t d = ph ^ b->second;
  uint32_t op = mk(OP_BWD | (zb ? OP_SPLIT : 0u), d, b->bc[d]++);
  b->o[b->n++] = op;
  if (zb) b->q[b->qt++ % b->qn] = op;
}
static void dp_w(dp_build *b) {
  uint32_t op = b->q[b->qh++ % b->qn];
  b->o[b->n++] = (op & ~(OP_BWD | OP_SPLIT)) | OP_W;
}
static void dp_fb(dp_build *b, uint32_t ph_f, uint32_t ph_b) {
  dp_f(b, ph_f, OP_PAIR);
  dp_b(b, ph_b, 0);
}

static uint32_t build_dualpipe(uint32_t *o, uint32_t *q, uint32_t pp, uint32_t m, uint32_t r) {
  uint32_t half = pp / 2, h = r < pp - 1 - r ? r : pp - 1 - r;
  int middle = r == half - 1 || r == half;
  dp_build b;
  memset(&b, 0, sizeof b);
  b.o = o;
  b.q = q;
  b.qn = pp + 2; /* at most h + 1 <= pp / 2 are pending at once */
  b.second = r >= half;
  /* 1: nF0 */
  for (uint32_t i = 0; i < (half - h - 1) * 2; i++) dp_f(&b, 0, 0);
  /* 2: nF0F1 */
  for (uint32_t i = 0; i < h + 1; i++) {
    dp_f(&b, 0, 0);
    dp_f(&b, 1, 0);
  }
  /* 3: nB1W1F1, zero bubble */
  for (uint32_t i = 0; i < half - h - 1; i++) {
    dp_b(&b, 1, 1);
    dp_w(&b);
    dp_f(&b, 1, 0);
  }
  /* 4: nF0B1F1B0, the overlapped pairs; the middle ranks run their first F0 and B1 apart */
  uint32_t s4 = m / 2 - pp + h + 1;
  for (uint32_t i = 0; i < s4; i++) {
    if (i == 0 && middle) {
      dp_f(&b, 0, 0);
      dp_b(&b, 1, 0);
    } else {
      dp_fb(&b, 0, 1);
    }
    dp_fb(&b, 1, 0);
  }
  /* 5: nB1F1B0 */
  for (uint32_t i = 0; i < half - h - 1; i++) {
    dp_b(&b, 1, 0);
    dp_fb(&b, 1, 0);
  }
  /* 6: nB1B0, the second half of them split (zero bubble) */
  int zb = 0;
  for (uint32_t i = 0; i < h + 1; i++) {
    if (i == (h + 1) / 2 && h % 2 == 1) zb = 1;
    dp_b(&b, 1, zb);
    if (i == (h + 1) / 2 && h % 2 == 0) zb = 1;
    dp_b(&b, 0, zb);
  }
  /* 7: nWB0, zero bubble */
  for (uint32_t i = 0; i < half - h - 1; i++) {
    dp_w(&b);
    dp_b(&b, 0, 1);
  }
  /* 8: nW */
  for (uint32_t i = 0; i < h + 1; i++) dp_w(&b);
  return b.n;
}

/* Each rank's order into ops (rows of stride entries) and its length into nops_r. */
static void build_orders(const sc_sched_input *in, uint32_t *ops, uint32_t stride,
                         uint32_t *nops_r, uint32_t *wq) {
  uint32_t pp = in->pp, m = in->microbatches, vp = in->vp;
  for (uint32_t r = 0; r < pp; r++) {
    uint32_t *o = ops + (size_t)r * stride;
    uint32_t n = 0;
    if (in->kind == SC_SCHED_ZB_H1) {
      nops_r[r] = build_zbh1(o, pp, m, r);
      continue;
    }
    if (in->kind == SC_SCHED_DUALPIPE) {
      nops_r[r] = build_dualpipe(o, wq, pp, m, r);
      continue;
    }
    nops_r[r] = 2u * vp * m;
    if (in->kind == SC_SCHED_GPIPE) {
      for (uint32_t i = 0; i < m; i++) o[n++] = enc(0, 0, i);
      for (uint32_t i = 0; i < m; i++) o[n++] = enc(1, 0, i);
    } else if (in->kind == SC_SCHED_1F1B) {
      uint32_t warm = pp - r - 1 < m ? pp - r - 1 : m;
      uint32_t steady = m - warm;
      for (uint32_t i = 0; i < warm; i++) o[n++] = enc(0, 0, i);
      for (uint32_t i = 0; i < steady; i++) {
        o[n++] = enc(0, 0, warm + i);
        o[n++] = enc(1, 0, i);
      }
      for (uint32_t i = steady; i < m; i++) o[n++] = enc(1, 0, i);
    } else {
      uint32_t total = m * vp, warm;
      if (m == pp) {
        warm = total; /* Megatron: all warm-up when microbatches == pipeline size */
      } else {
        warm = (pp - r - 1) * 2 + (vp - 1) * pp;
        if (warm > total) warm = total;
      }
      uint32_t steady = total - warm;
      for (uint32_t k = 0; k < warm; k++) o[n++] = il_op(k, 0, pp, vp);
      for (uint32_t k = 0; k < steady; k++) {
        o[n++] = il_op(k + warm, 0, pp, vp);
        o[n++] = il_op(k, 1, pp, vp);
      }
      for (uint32_t k = steady; k < total; k++) o[n++] = il_op(k, 1, pp, vp);
    }
  }
}

/* ------------------------------------------------------------------------- */
/* Validation                                                                */

static int bad_time(double x) { return !(x >= 0.0) || !isfinite(x); }

static int check_split(const double *split, uint32_t n, double total, uint32_t g,
                       const char *what, sc_error *err) {
  if (split == NULL) return SC_OK;
  double s = 0.0;
  for (uint32_t i = 0; i < n; i++) {
    if (bad_time(split[i]))
      return sc_error_set(err, SC_EINVAL,
                          "schedule: chunks[%u].%s_family_s[%u] must be finite and >= 0", g,
                          what, i);
    s += split[i];
  }
  if (fabs(s - total) > 1e-9 * fmax(fabs(total), 1e-300))
    return sc_error_set(err, SC_EINVAL,
                        "schedule: chunks[%u].%s_family_s sums to %.17g s, not %s_s = %.17g s",
                        g, what, s, what, total);
  return SC_OK;
}

static int validate(const sc_sched_input *in, sc_error *err) {
  if (in == NULL) return sc_error_set(err, SC_EINVAL, "schedule: input is NULL");
  if (in->kind != SC_SCHED_GPIPE && in->kind != SC_SCHED_1F1B &&
      in->kind != SC_SCHED_INTERLEAVED && in->kind != SC_SCHED_ZB_H1 &&
      in->kind != SC_SCHED_DUALPIPE)
    return sc_error_set(err, SC_EINVAL, "schedule: unknown schedule kind %d", (int)in->kind);
  if (in->pp < 1 || in->pp > SC_SCHED_MAX_PP)
    return sc_error_set(err, SC_EINVAL, "schedule: pp = %u must be in [1, %u]", in->pp,
                        SC_SCHED_MAX_PP);
  if (in->vp < 1 || in->vp > SC_SCHED_MAX_VP)
    return sc_error_set(err, SC_EINVAL, "schedule: virtual stages = %u must be in [1, %u]",
                        in->vp, SC_SCHED_MAX_VP);
  if (in->microbatches < 1 || in->microbatches > SC_SCHED_MAX_MICROBATCHES)
    return sc_error_set(err, SC_EINVAL, "schedule: microbatches = %u must be in [1, %u]",
                        in->microbatches, SC_SCHED_MAX_MICROBATCHES);
  if (in->kind != SC_SCHED_INTERLEAVED && in->vp != 1)
    return sc_error_set(err, SC_EINVAL,
                        "schedule: virtual stages = %u needs the interleaved schedule "
                        "(%s takes 1)",
                        in->vp, sc_schedule_kind_name(in->kind));
  if (in->kind == SC_SCHED_INTERLEAVED) {
    if (in->pp < 2)
      return sc_error_set(err, SC_ECONFIG,
                          "schedule: interleaved 1F1B needs pp >= 2 (pp = %u)", in->pp);
    if (in->microbatches % in->pp != 0)
      return sc_error_set(err, SC_ECONFIG,
                          "schedule: interleaved 1F1B needs microbatches (%u) to be a "
                          "multiple of pp (%u), as Megatron-LM requires",
                          in->microbatches, in->pp);
  }
  if (in->kind == SC_SCHED_DUALPIPE) {
    if (in->pp % 2 != 0)
      return sc_error_set(err, SC_ECONFIG,
                          "schedule: dualpipe needs an even pp (pp = %u): each rank holds "
                          "stage r and stage pp-1-r", in->pp);
    if (in->microbatches % 2 != 0)
      return sc_error_set(err, SC_ECONFIG,
                          "schedule: dualpipe needs an even microbatches (%u): half enter at "
                          "each end", in->microbatches);
    if (in->microbatches < 2u * in->pp)
      return sc_error_set(err, SC_ECONFIG,
                          "schedule: dualpipe needs microbatches (%u) >= 2*pp (%u), as "
                          "DeepSeek's implementation requires", in->microbatches, 2u * in->pp);
  }
  if ((uint64_t)in->microbatches * in->vp * 3u * in->pp > 0x7FFFFFFFull / 8u)
    return sc_error_set(err, SC_EINVAL,
                        "schedule: pp * vp * microbatches = %llu passes is too large",
                        (unsigned long long)in->microbatches * in->vp * in->pp);
  if (in->chunks == NULL) return sc_error_set(err, SC_EINVAL, "schedule: chunks is NULL");
  if (!(in->tp_overlap_frac >= 0.0 && in->tp_overlap_frac <= 1.0))
    return sc_error_set(err, SC_EINVAL, "schedule: tp_overlap_frac = %g must be in [0, 1]",
                        in->tp_overlap_frac);
  if (!(in->cp_overlap_frac >= 0.0 && in->cp_overlap_frac <= 1.0))
    return sc_error_set(err, SC_EINVAL, "schedule: cp_overlap_frac = %g must be in [0, 1]",
                        in->cp_overlap_frac);
  if (in->grad_buckets > 65536 || in->param_buckets > 65536)
    return sc_error_set(err, SC_EINVAL, "schedule: grad_buckets / param_buckets must be <= 65536");
  if (in->nfamilies > SC_SCHED_MAX_FAMILIES)
    return sc_error_set(err, SC_EINVAL, "schedule: nfamilies = %u exceeds %d", in->nfamilies,
                        SC_SCHED_MAX_FAMILIES);
  if (in->nfamilies > 0) {
    if (in->family_names == NULL)
      return sc_error_set(err, SC_EINVAL, "schedule: nfamilies = %u but family_names is NULL",
                          in->nfamilies);
    for (uint32_t i = 0; i < in->nfamilies; i++) {
      const char *nm = in->family_names[i];
      if (nm == NULL || nm[0] == '\0' || strlen(nm) >= SC_SCHED_FAMILY_NAME_MAX)
        return sc_error_set(err, SC_EINVAL,
                            "schedule: family_names[%u] must be non-empty and shorter than %d "
                            "bytes",
                            i, SC_SCHED_FAMILY_NAME_MAX);
    }
  }
  uint32_t G = in->pp * in->vp;
  for (uint32_t g = 0; g < G; g++) {
    const sc_sched_chunk *c = &in->chunks[g];
    const struct {
      const char *name;
      double v;
    } f[] = {{"fwd_s", c->fwd_s},       {"bwd_s", c->bwd_s}, {"wgrad_s", c->wgrad_s},
             {"recompute_s", c->recompute_s}, {"tp_fwd_s", c->tp_fwd_s},
             {"tp_bwd_s", c->tp_bwd_s}, {"cp_fwd_s", c->cp_fwd_s},
             {"cp_bwd_s", c->cp_bwd_s}, {"p2p_fwd_s", c->p2p_fwd_s},
             {"p2p_bwd_s", c->p2p_bwd_s}, {"dp_grad_s", c->dp_grad_s},
             {"dp_param_gather_s", c->dp_param_gather_s}, {"shard_fwd_s", c->shard_fwd_s},
             {"shard_bwd_s", c->shard_bwd_s}, {"shard_fwd_hide_s", c->shard_fwd_hide_s},
             {"shard_bwd_hide_s", c->shard_bwd_hide_s}, {"tp_fwd_fixed_s", c->tp_fwd_fixed_s},
             {"tp_bwd_fixed_s", c->tp_bwd_fixed_s}};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
      if (bad_time(f[i].v))
        return sc_error_set(err, SC_EINVAL, "schedule: chunks[%u].%s = %g must be finite and >= 0",
                            g, f[i].name, f[i].v);
    if (c->wgrad_s > c->bwd_s)
      return sc_error_set(err, SC_EINVAL,
                          "schedule: chunks[%u].wgrad_s = %g exceeds bwd_s = %g (it is a part "
                          "of it)", g, c->wgrad_s, c->bwd_s);
    if (c->tp_fwd_fixed_s > c->tp_fwd_s || c->tp_bwd_fixed_s > c->tp_bwd_s)
      return sc_error_set(err, SC_EINVAL,
                          "schedule: chunks[%u].tp_fwd_fixed_s / tp_bwd_fixed_s (%g, %g) exceed "
                          "tp_fwd_s / tp_bwd_s (%g, %g) (each is a part of it)",
                          g, c->tp_fwd_fixed_s, c->tp_bwd_fixed_s, c->tp_fwd_s, c->tp_bwd_s);
    if (c->shard_fwd_hide_s > c->shard_fwd_s || c->shard_bwd_hide_s > c->shard_bwd_s)
      return sc_error_set(err, SC_EINVAL,
                          "schedule: chunks[%u]: the hidden part of the sharded communication "
                          "exceeds it (fwd %g of %g, bwd %g of %g)", g, c->shard_fwd_hide_s,
                          c->shard_fwd_s, c->shard_bwd_hide_s, c->shard_bwd_s);
    if (in->nfamilies > 0) {
      int rc;
      if ((rc = check_split(c->fwd_family_s, in->nfamilies, c->fwd_s, g, "fwd", err))) return rc;
      if ((rc = check_split(c->bwd_family_s, in->nfamilies, c->bwd_s, g, "bwd", err))) return rc;
      if ((rc = check_split(c->recompute_family_s, in->nfamilies, c->recompute_s, g,
                            "recompute", err)))
        return rc;
    }
  }
  if (in->optimizer_s != NULL)
    for (uint32_t r = 0; r < in->pp; r++)
      if (bad_time(in->optimizer_s[r]))
        return sc_error_set(err, SC_EINVAL, "schedule: optimizer_s[%u] = %g must be finite and >= 0",
                            r, in->optimizer_s[r]);
  return SC_OK;
}

/* ------------------------------------------------------------------------- */
/* Simulation                                                                */

typedef struct sim {
  const sc_sched_input *in;
  sc_sched_workspace *ws;
  /* m: micro-batches through each chunk (DualPipe: half of them, one direction's); G:
   * virtual stages (DualPipe: 2 pp, direction d's stage s at d*pp + s); nops: the longest
   * rank order */
  uint32_t pp, vp, m, G, nops, stride, gb, pb;
  int timeline;
  int general; /* ZB-H1, DualPipe: passes placed by step_general (split backwards, W, F&B) */
  int dual;    /* DualPipe */
  uint32_t nch; /* chunks per rank: vp, or 2 for DualPipe */
  uint32_t pass; /* sc_sched_interval.pass of the intervals being placed */
} sim;

/* Exposed part of a comm of length c, a fraction f of which can hide under compute x. */
/* max/min without branches (the comparisons are data-dependent and mispredict): SSE2's
 * maxsd/minsd where available. Operands are never NaN (inputs are validated finite). */
#if defined(__SSE2__)
static inline double dmax(double x, double y) {
  return _mm_cvtsd_f64(_mm_max_sd(_mm_set_sd(x), _mm_set_sd(y)));
}
static inline double dmin(double x, double y) {
  return _mm_cvtsd_f64(_mm_min_sd(_mm_set_sd(x), _mm_set_sd(y)));
}
#else
static inline double dmax(double x, double y) { return x > y ? x : y; }
static inline double dmin(double x, double y) { return x < y ? x : y; }
#endif


static inline uint32_t add_iv(sim *S, double s, double e, uint32_t stage, sc_lane lane,
                              sc_interval_kind kind, uint32_t chunk, int32_t mb,
                              int32_t bucket) {
  sc_sched_workspace *ws = S->ws;
  uint32_t i = (uint32_t)ws->niv++;
  sc_sched_interval *v = &ws->iv[i];
  v->start_s = s;
  v->end_s = e;
  v->stage = stage;
  v->lane = (uint16_t)lane;
  v->kind = (uint16_t)kind;
  v->chunk = chunk;
  v->microbatch = mb;
  v->bucket = bucket;
  v->pass = S->pass;
  return i;
}

static inline void push(sc_sched_workspace *ws, uint32_t *wn, uint32_t r) {
  if (!ws->inq[r]) {
    ws->inq[r] = 1;
    ws->worklist[(*wn)++] = r;
  }
}

/* Account the idle gap [t0, start) before a pass: bubble while the producer was still
 * computing (until pe), P2P while its transfer was in flight (until a), DP while the
 * parameter all-gather was (until start). */
static inline void gap(sc_sched_breakdown *bd, double t0, double pe, double a, double start) {
  /* Branch-free: start = max(t0, a, gather) >= t0 and pe <= a, so each term is >= 0 and
   * they add up to start - t0. */
  bd->bubble_s += dmax(0.0, dmin(pe, start) - t0);
  bd->p2p_exposed_s += dmax(0.0, dmin(a, start) - dmax(t0, pe));
  bd->dp_exposed_s += dmax(0.0, start - dmax(t0, a));
}

/* Try to run rank r's next pass; 0 when its input has not arrived yet. With check = 0
 * (replay of a known topological order) the input is known to be there and neighbours
 * are not queued. */
#if defined(__GNUC__)
__attribute__((always_inline))
#endif
static inline int step(sim *S, uint32_t r, uint32_t op, uint32_t *wn, uint32_t *lvp,
                       const int check) {
  sc_sched_workspace *ws = S->ws;
  const sc_sched_input *in = S->in;
  int bwd = (op & OP_BWD) != 0;
  S->pass++;
  uint32_t c = (op >> OP_CHUNK_SHIFT) & OP_CHUNK_MASK;
  uint32_t mb = op & OP_MB_MASK;
  uint32_t g = c * S->pp + r;
  size_t idx = (size_t)mb * S->G + g;
  const sc_sched_chunk *ch = &in->chunks[g];
  double t0 = ws->cfree[r], a, pe;

  if (!bwd) {
    if (g > 0) {
      a = ws->fwd_in[idx].arr;
      if (check && a < 0.0) return 0;
      pe = ws->fwd_in[idx].prod;
    } else {
      a = pe = 0.0;
    }
    if (check) {
      uint32_t lv = ws->rank_lvl[r];
      if (g > 0 && ws->fwd_lvl[idx] > lv) lv = ws->fwd_lvl[idx];
      *lvp = ws->rank_lvl[r] = lv + 1;
    }
    double gmin = 0.0, stretch = 0.0;
    int first = ws->fcount[g] == 0;
    if (first) {
      if (in->overlap_param_gather) {
        gmin = ws->gather_first[g];
        stretch = ws->gather_end[g] + ch->fwd_s / S->pb;
      } else {
        gmin = ws->gather_all[r];
      }
    }
    double start = dmax(t0, a);
    start = dmax(start, gmin);
    double x = ch->fwd_s;
    double etp = sc__exposed_tp(ch->tp_fwd_s, ch->tp_fwd_fixed_s, in->tp_overlap_frac, x);
    double ecp = sc__exposed(ch->cp_fwd_s, in->cp_overlap_frac, x);
    double esh = sc__exposed_part(ch->shard_fwd_s, ch->shard_fwd_hide_s, x);
    double xend = dmax(start + x, stretch);
    double end = xend + etp + ecp + esh;
    ws->cfree[r] = end;
    ws->fcount[g]++;
    uint32_t my_iv = 0;
    if (S->timeline) {
      my_iv = add_iv(S, start, end, r, SC_LANE_COMPUTE, SC_IV_FORWARD, c, (int32_t)mb, -1);
      if (ch->tp_fwd_s > 0.0)
        add_iv(S, xend + etp - ch->tp_fwd_s > start ? xend + etp - ch->tp_fwd_s : start,
               xend + etp, r, SC_LANE_TP, SC_IV_TP, c, (int32_t)mb, -1);
      if (ch->cp_fwd_s > 0.0)
        add_iv(S, end - esh - ch->cp_fwd_s > start ? end - esh - ch->cp_fwd_s : start,
               end - esh, r, SC_LANE_CP, SC_IV_CP, c, (int32_t)mb, -1);
      if (ch->shard_fwd_s > 0.0)
        add_iv(S, end - ch->shard_fwd_s > start ? end - ch->shard_fwd_s : start, end, r,
               SC_LANE_DP, SC_IV_DP_PARAM, c, (int32_t)mb, -1);
      if (g > 0 && ws->fwd_send_iv[idx] >= 0) {
        sc_sched_flow *f = &ws->flows[ws->nflows++];
        f->send = (uint32_t)ws->fwd_send_iv[idx];
        f->recv = my_iv;
      }
    }
    if (g + 1 < S->G) {
      double s = dmax(end, ws->pnext_free[r]);
      double e = s + ch->p2p_fwd_s;
      ws->pnext_free[r] = e;
      if (in->p2p_blocking) ws->cfree[r] = e; /* the sender waits for its send */
      size_t nidx = idx + 1;
      ws->fwd_in[nidx].arr = e;
      ws->fwd_in[nidx].prod = end;
      if (check) ws->fwd_lvl[nidx] = *lvp;
      if (S->timeline)
        ws->fwd_send_iv[nidx] = (int32_t)add_iv(S, s, e, r, SC_LANE_P2P_NEXT, SC_IV_P2P_ACT,
                                                c, (int32_t)mb, -1);
      if (check) push(ws, wn, (r + 1) % S->pp);
    } else {
      ws->bwd_in[idx].arr = end;
      ws->bwd_in[idx].prod = end;
      if (check) ws->bwd_lvl[idx] = *lvp;
    }
  } else {
    a = ws->bwd_in[idx].arr;
    if (check && a < 0.0) return 0;
    pe = ws->bwd_in[idx].prod;
    if (check) {
      uint32_t lv = ws->rank_lvl[r];
      if (ws->bwd_lvl[idx] > lv) lv = ws->bwd_lvl[idx];
      *lvp = ws->rank_lvl[r] = lv + 1;
    }
    double start = dmax(t0, a);
    double rc = ch->recompute_s;
    double x = rc + ch->bwd_s;
    double etp = sc__exposed_tp(ch->tp_bwd_s, ch->tp_bwd_fixed_s, in->tp_overlap_frac, x);
    double ecp = sc__exposed(ch->cp_bwd_s, in->cp_overlap_frac, x);
    double esh = sc__exposed_part(ch->shard_bwd_s, ch->shard_bwd_hide_s, x);
    double xend = start + x;
    double end = xend + etp + ecp + esh;
    ws->cfree[r] = end;
    ws->bcount[g]++;
    uint32_t my_iv = 0;
    if (S->timeline) {
      if (rc > 0.0)
        my_iv = add_iv(S, start, start + rc, r, SC_LANE_COMPUTE, SC_IV_RECOMPUTE, c,
                       (int32_t)mb, -1);
      uint32_t b_iv = add_iv(S, start + rc, end, r, SC_LANE_COMPUTE, SC_IV_BACKWARD, c,
                             (int32_t)mb, -1);
      if (rc <= 0.0) my_iv = b_iv;
      if (ch->tp_bwd_s > 0.0)
        add_iv(S, xend + etp - ch->tp_bwd_s > start ? xend + etp - ch->tp_bwd_s : start,
               xend + etp, r, SC_LANE_TP, SC_IV_TP, c, (int32_t)mb, -1);
      if (ch->cp_bwd_s > 0.0)
        add_iv(S, end - esh - ch->cp_bwd_s > start ? end - esh - ch->cp_bwd_s : start,
               end - esh, r, SC_LANE_CP, SC_IV_CP, c, (int32_t)mb, -1);
      if (ch->shard_bwd_s > 0.0)
        add_iv(S, end - ch->shard_bwd_s > start ? end - ch->shard_bwd_s : start, end, r,
               SC_LANE_DP, SC_IV_DP_GRAD, c, (int32_t)mb, -1);
      if (g + 1 < S->G && ws->bwd_send_iv[idx] >= 0) {
        sc_sched_flow *f = &ws->flows[ws->nflows++];
        f->send = (uint32_t)ws->bwd_send_iv[idx];
        f->recv = my_iv;
      }
    }
    if (g > 0) {
      double s = dmax(end, ws->pprev_free[r]);
      double e = s + ch->p2p_bwd_s;
      ws->pprev_free[r] = e;
      if (in->p2p_blocking) ws->cfree[r] = e; /* the sender waits for its send */
      size_t pidx = idx - 1;
      ws->bwd_in[pidx].arr = e;
      ws->bwd_in[pidx].prod = end;
      if (check) ws->bwd_lvl[pidx] = *lvp;
      if (S->timeline)
        ws->bwd_send_iv[pidx] = (int32_t)add_iv(S, s, e, r, SC_LANE_P2P_PREV, SC_IV_P2P_GRAD,
                                                c, (int32_t)mb, -1);
      if (check) push(ws, wn, (r + S->pp - 1) % S->pp);
    }
    /* Overlapped gradient reduction: the chunk's buckets become ready as its last
     * backward produces them (the last layers' first), Megatron's bucketed DDP. */
    if (in->overlap_grad_reduce && ws->bcount[g] == S->m && ch->dp_grad_s > 0.0) {
      double dur = end - start, piece = ch->dp_grad_s / S->gb;
      for (uint32_t j = 0; j < S->gb; j++) {
        double ready = start + dur * (double)(j + 1) / (double)S->gb;
        double s = ready > ws->dpfree[r] ? ready : ws->dpfree[r];
        ws->dpfree[r] = s + piece;
        if (S->timeline)
          add_iv(S, s, s + piece, r, SC_LANE_DP, SC_IV_DP_GRAD, c, -1, (int32_t)j);
      }
    }
  }
  ws->next[r]++;
  return 1;
}

/* The breakdown of rank r's passes: walk its order again with the arrivals the run left
 * in the slots, with the same arithmetic as step() (so the same times), and split every
 * pass and every idle gap into the breakdown's terms. */
static void account_rank(sim *S, uint32_t r) {
  sc_sched_workspace *ws = S->ws;
  const sc_sched_input *in = S->in;
  sc_sched_breakdown *bd = &ws->stages[r];
  const uint32_t *ops = ws->ops + (size_t)r * S->stride;
  uint64_t seen = 0; /* chunks whose first forward has run (vp <= 64) */
  double t0 = 0.0;
  for (uint32_t i = 0; i < S->nops; i++) {
    uint32_t op = ops[i];
    uint32_t c = (op >> OP_CHUNK_SHIFT) & OP_CHUNK_MASK;
    uint32_t mb = op & OP_MB_MASK;
    uint32_t g = c * S->pp + r;
    size_t idx = (size_t)mb * S->G + g;
    const sc_sched_chunk *ch = &in->chunks[g];
    if (!(op & OP_BWD)) {
      double a = 0.0, pe = 0.0, gmin = 0.0, stretch = 0.0;
      if (g > 0) {
        a = ws->fwd_in[idx].arr;
        pe = ws->fwd_in[idx].prod;
      }
      if (!(seen & (1ull << c))) {
        seen |= 1ull << c;
        if (in->overlap_param_gather) {
          gmin = ws->gather_first[g];
          stretch = ws->gather_end[g] + ch->fwd_s / S->pb;
        } else {
          gmin = ws->gather_all[r];
        }
      }
      double start = dmax(dmax(t0, a), gmin);
      gap(bd, t0, pe, a, start);
      double x = ch->fwd_s;
      double etp = sc__exposed_tp(ch->tp_fwd_s, ch->tp_fwd_fixed_s, in->tp_overlap_frac, x);
      double ecp = sc__exposed(ch->cp_fwd_s, in->cp_overlap_frac, x);
      double esh = sc__exposed_part(ch->shard_fwd_s, ch->shard_fwd_hide_s, x);
      double xend = dmax(start + x, stretch);
      bd->dp_exposed_s += xend - (start + x);
      bd->compute_fwd_s += x;
      bd->tp_exposed_s += etp;
      bd->cp_exposed_s += ecp;
      bd->dp_exposed_s += esh;
      t0 = xend + etp + ecp + esh;
      if (in->p2p_blocking && g + 1 < S->G) { /* held by its send until it completes */
        bd->p2p_exposed_s += ws->fwd_in[idx + 1].arr - t0;
        t0 = ws->fwd_in[idx + 1].arr;
      }
    } else {
      double a = ws->bwd_in[idx].arr, pe = ws->bwd_in[idx].prod;
      double start = dmax(t0, a);
      gap(bd, t0, pe, a, start);
      double rc = ch->recompute_s;
      double x = rc + ch->bwd_s;
      double etp = sc__exposed_tp(ch->tp_bwd_s, ch->tp_bwd_fixed_s, in->tp_overlap_frac, x);
      double ecp = sc__exposed(ch->cp_bwd_s, in->cp_overlap_frac, x);
      double esh = sc__exposed_part(ch->shard_bwd_s, ch->shard_bwd_hide_s, x);
      bd->compute_recompute_s += rc;
      bd->compute_bwd_s += ch->bwd_s;
      bd->tp_exposed_s += etp;
      bd->cp_exposed_s += ecp;
      bd->dp_exposed_s += esh;
      t0 = start + x + etp + ecp + esh;
      if (in->p2p_blocking && g > 0) {
        bd->p2p_exposed_s += ws->bwd_in[idx - 1].arr - t0;
        t0 = ws->bwd_in[idx - 1].arr;
      }
    }
  }
}


/* ------------------------------------------------------------------------- */
/* ZB-H1 and DualPipe: split backwards, W passes, overlapped F&B pairs        */

/* Chunk k (< S->nch) of rank r: its chunk number c (the interval's; DualPipe: the
 * direction, the rank's phase-k one first), virtual stage g and entry of in->chunks. */
static inline void rank_chunk(const sim *S, uint32_t r, uint32_t k, uint32_t *c, uint32_t *g,
                              uint32_t *ci) {
  if (S->dual) {
    uint32_t d = k ^ (r >= S->pp / 2 ? 1u : 0u);
    uint32_t pos = d == 0 ? r : S->pp - 1 - r;
    *c = d;
    *g = d * S->pp + pos;
    *ci = pos;
  } else {
    *c = k;
    *g = k * S->pp + r;
    *ci = *g;
  }
}

/* A pass's place on the chain of virtual stages: chunk c of rank r is virtual stage g, at
 * position pos of its chain (model stage, its times in->chunks[pos]); the next stage of
 * the chain is on rank nr, the previous on rank pr. Only for S->general (vp = 1). */
typedef struct gpass {
  uint32_t c, mb, g, pos, nr, pr;
  size_t idx;
} gpass;

static inline void gpass_of(const sim *S, uint32_t r, uint32_t op, gpass *p) {
  p->c = (op >> OP_CHUNK_SHIFT) & OP_CHUNK_MASK;
  p->mb = op & OP_MB_MASK;
  int rev = S->dual && p->c == 1;
  p->pos = rev ? S->pp - 1 - r : r;
  p->g = p->c * S->pp + p->pos;
  p->nr = rev ? r - 1 : r + 1;
  p->pr = rev ? r + 1 : r - 1;
  p->idx = (size_t)p->mb * S->G + p->g;
}

/* The timing of one general pass (a forward, a backward whole or split, or an F&B pair)
 * from its start, shared by step_general and account_general so that both compute the
 * same times with the same arithmetic. */
typedef struct gtimes {
  double xf, fend;        /* forward compute; when the forward part ends */
  double rc, bin, wpart;  /* recomputation, input-gradient part, weight part (whole B) */
  double etp, ecp, esh;   /* exposed TP, CP and sharded communication */
  double xend, end;       /* end of the compute; end of the pass */
} gtimes;

static inline void gtimes_of(const sim *S, const sc_sched_chunk *cf, const sc_sched_chunk *cb,
                             int split, double start, double stretch, gtimes *t) {
  const sc_sched_input *in = S->in;
  t->xf = cf ? cf->fwd_s : 0.0;
  t->rc = t->bin = t->wpart = 0.0;
  if (cb) {
    t->rc = cb->recompute_s;
    t->bin = cb->bwd_s - cb->wgrad_s;
    if (t->bin < 0.0) t->bin = 0.0;
    t->wpart = split ? 0.0 : cb->wgrad_s;
  }
  double xb = t->rc + t->bin + t->wpart;
  if (cf && cb) {
    /* DualPipe's F&B: each chunk's communication runs beside the other's computation, so
     * the pair's TP and CP communication hides under the pair's compute as far as it lasts */
    t->etp = sc__exposed(cf->tp_fwd_s + cb->tp_bwd_s, 1.0, t->xf + xb);
    t->ecp = sc__exposed(cf->cp_fwd_s + cb->cp_bwd_s, 1.0, t->xf + xb);
    t->esh = sc__exposed_part(cf->shard_fwd_s, cf->shard_fwd_hide_s, t->xf) +
             sc__exposed_part(cb->shard_bwd_s, cb->shard_bwd_hide_s, xb);
  } else if (cf) {
    t->etp = sc__exposed_tp(cf->tp_fwd_s, cf->tp_fwd_fixed_s, in->tp_overlap_frac, t->xf);
    t->ecp = sc__exposed(cf->cp_fwd_s, in->cp_overlap_frac, t->xf);
    t->esh = sc__exposed_part(cf->shard_fwd_s, cf->shard_fwd_hide_s, t->xf);
  } else {
    /* a split B carries the backward's communication and only its own compute hides it */
    t->etp = sc__exposed_tp(cb->tp_bwd_s, cb->tp_bwd_fixed_s, in->tp_overlap_frac, xb);
    t->ecp = sc__exposed(cb->cp_bwd_s, in->cp_overlap_frac, xb);
    t->esh = sc__exposed_part(cb->shard_bwd_s, cb->shard_bwd_hide_s, xb);
  }
  t->fend = cf ? dmax(start + t->xf, stretch) : start;
  t->xend = t->fend + xb;
  t->end = t->xend + t->etp + t->ecp + t->esh;
}

/* A chunk's weight gradients of one more micro-batch are complete at end (the pass that
 * computed them ran [s, end]): with overlap_grad_reduce, the last one starts the chunk's
 * bucketed reduction, as the last backward does in the other schedules. */
static inline void grad_done(sim *S, uint32_t r, uint32_t g, uint32_t c,
                             const sc_sched_chunk *ch, double s0, double end) {
  sc_sched_workspace *ws = S->ws;
  ws->gdone[g]++;
  if (S->in->overlap_grad_reduce && ws->gdone[g] == S->m && ch->dp_grad_s > 0.0) {
    double dur = end - s0, piece = ch->dp_grad_s / S->gb;
    for (uint32_t j = 0; j < S->gb; j++) {
      double ready = s0 + dur * (double)(j + 1) / (double)S->gb;
      double s = ready > ws->dpfree[r] ? ready : ws->dpfree[r];
      ws->dpfree[r] = s + piece;
      if (S->timeline) add_iv(S, s, s + piece, r, SC_LANE_DP, SC_IV_DP_GRAD, c, -1, (int32_t)j);
    }
  }
}

/* Try to run rank r's next pass (op, and for an F&B pair the backward after it) under
 * ZB-H1 or DualPipe; 0 when an input has not arrived. As step(), otherwise. */
static int step_general(sim *S, uint32_t r, uint32_t op, uint32_t *wn, uint32_t *lvp,
                        const int check) {
  sc_sched_workspace *ws = S->ws;
  const sc_sched_input *in = S->in;
  double t0 = ws->cfree[r];
  gpass f = {0}, b = {0};
  S->pass++;
  if (op & OP_W) {
    gpass_of(S, r, op, &b);
    const sc_sched_chunk *ch = &in->chunks[b.pos];
    if (check) *lvp = ws->rank_lvl[r] = ws->rank_lvl[r] + 1;
    double end = t0 + ch->wgrad_s;
    ws->cfree[r] = end;
    if (S->timeline)
      add_iv(S, t0, end, r, SC_LANE_COMPUTE, SC_IV_WGRAD, b.c, (int32_t)b.mb, -1);
    grad_done(S, r, b.g, b.c, ch, t0, end);
    ws->next[r]++;
    return 1;
  }
  int hasf = !(op & OP_BWD), hasb = !hasf || (op & OP_PAIR);
  uint32_t bop = op;
  if (hasf && hasb) bop = ws->ops[(size_t)r * S->stride + ws->next[r] + 1]; /* the pair's B */
  const sc_sched_chunk *cf = NULL, *cb = NULL;
  double af = 0.0, pef = 0.0, ab = 0.0, peb = 0.0;
  if (hasf) {
    gpass_of(S, r, op, &f);
    cf = &in->chunks[f.pos];
    if (f.pos > 0) {
      af = ws->fwd_in[f.idx].arr;
      if (check && af < 0.0) return 0;
      pef = ws->fwd_in[f.idx].prod;
    }
  }
  if (hasb) {
    gpass_of(S, r, bop, &b);
    cb = &in->chunks[b.pos];
    ab = ws->bwd_in[b.idx].arr;
    if (check && ab < 0.0) return 0;
    peb = ws->bwd_in[b.idx].prod;
  }
  if (check) {
    uint32_t lv = ws->rank_lvl[r];
    if (hasf && f.pos > 0 && ws->fwd_lvl[f.idx] > lv) lv = ws->fwd_lvl[f.idx];
    if (hasb && ws->bwd_lvl[b.idx] > lv) lv = ws->bwd_lvl[b.idx];
    *lvp = ws->rank_lvl[r] = lv + 1;
  }
  (void)pef;
  (void)peb;
  double gmin = 0.0, stretch = 0.0;
  if (hasf && ws->fcount[f.g] == 0) {
    if (in->overlap_param_gather) {
      gmin = ws->gather_first[f.g];
      stretch = ws->gather_end[f.g] + cf->fwd_s / S->pb;
    } else {
      gmin = ws->gather_all[r];
    }
  }
  double start = dmax(dmax(t0, dmax(af, ab)), gmin);
  int split = hasb && (bop & OP_SPLIT);
  gtimes t;
  gtimes_of(S, cf, cb, split, start, stretch, &t);
  ws->cfree[r] = t.end;
  uint32_t f_iv = 0, b_iv = 0;
  if (hasf) ws->fcount[f.g]++;
  if (hasb) ws->bcount[b.g]++;
  if (S->timeline) {
    if (hasf) {
      f_iv = add_iv(S, start, hasb ? t.fend : t.end, r, SC_LANE_COMPUTE, SC_IV_FORWARD, f.c,
                    (int32_t)f.mb, -1);
      if (f.pos > 0 && ws->fwd_send_iv[f.idx] >= 0) {
        sc_sched_flow *fl = &ws->flows[ws->nflows++];
        fl->send = (uint32_t)ws->fwd_send_iv[f.idx];
        fl->recv = f_iv;
      }
    }
    if (hasb) {
      double s0 = t.fend;
      if (t.rc > 0.0)
        b_iv = add_iv(S, s0, s0 + t.rc, r, SC_LANE_COMPUTE, SC_IV_RECOMPUTE, b.c,
                      (int32_t)b.mb, -1);
      double be = split ? t.end : s0 + t.rc + t.bin;
      uint32_t bi = add_iv(S, s0 + t.rc, be, r, SC_LANE_COMPUTE, SC_IV_BACKWARD, b.c,
                           (int32_t)b.mb, -1);
      if (t.rc <= 0.0) b_iv = bi;
      if (!split)
        add_iv(S, be, t.end, r, SC_LANE_COMPUTE, SC_IV_WGRAD, b.c, (int32_t)b.mb, -1);
      if (b.pos + 1 < S->pp && ws->bwd_send_iv[b.idx] >= 0) {
        sc_sched_flow *fl = &ws->flows[ws->nflows++];
        fl->send = (uint32_t)ws->bwd_send_iv[b.idx];
        fl->recv = b_iv;
      }
    }
    uint32_t lc = hasb ? b.c : f.c;
    int32_t lmb = (int32_t)(hasb ? b.mb : f.mb);
    double tp = (cf ? cf->tp_fwd_s : 0.0) + (cb ? cb->tp_bwd_s : 0.0);
    double cp = (cf ? cf->cp_fwd_s : 0.0) + (cb ? cb->cp_bwd_s : 0.0);
    double shf = cf ? cf->shard_fwd_s : 0.0, shb = cb ? cb->shard_bwd_s : 0.0;
    if (tp > 0.0)
      add_iv(S, dmax(t.xend + t.etp - tp, start), t.xend + t.etp, r, SC_LANE_TP, SC_IV_TP, lc,
             lmb, -1);
    if (cp > 0.0)
      add_iv(S, dmax(t.end - t.esh - cp, start), t.end - t.esh, r, SC_LANE_CP, SC_IV_CP, lc,
             lmb, -1);
    if (shf > 0.0)
      add_iv(S, dmax(t.end - shb - shf, start), t.end - shb, r, SC_LANE_DP, SC_IV_DP_PARAM,
             hasf ? f.c : lc, (int32_t)(hasf ? f.mb : b.mb), -1);
    if (shb > 0.0)
      add_iv(S, dmax(t.end - shb, start), t.end, r, SC_LANE_DP, SC_IV_DP_GRAD, b.c,
             (int32_t)b.mb, -1);
  }
  double hold = t.end; /* p2p_blocking: the compute stream waits for its sends */
  /* sends: to rank r+1 on the P2P-next stream, to rank r-1 on the P2P-prev one; the
   * forward's first (DualPipe: both may go to the same neighbour, in that order) */
  if (hasf) {
    if (f.pos + 1 < S->pp) {
      double *fr = f.nr > r ? &ws->pnext_free[r] : &ws->pprev_free[r];
      double s = dmax(t.end, *fr);
      double e = s + cf->p2p_fwd_s;
      *fr = e;
      hold = dmax(hold, e);
      size_t nidx = f.idx + 1;
      ws->fwd_in[nidx].arr = e;
      ws->fwd_in[nidx].prod = t.end;
      if (check) ws->fwd_lvl[nidx] = *lvp;
      if (S->timeline)
        ws->fwd_send_iv[nidx] =
            (int32_t)add_iv(S, s, e, r, f.nr > r ? SC_LANE_P2P_NEXT : SC_LANE_P2P_PREV,
                            SC_IV_P2P_ACT, f.c, (int32_t)f.mb, -1);
      if (check) push(ws, wn, f.nr);
    } else {
      ws->bwd_in[f.idx].arr = t.end;
      ws->bwd_in[f.idx].prod = t.end;
      if (check) ws->bwd_lvl[f.idx] = *lvp;
    }
  }
  if (hasb) {
    if (b.pos > 0) {
      double *fr = b.pr > r ? &ws->pnext_free[r] : &ws->pprev_free[r];
      double s = dmax(t.end, *fr);
      double e = s + cb->p2p_bwd_s;
      *fr = e;
      hold = dmax(hold, e);
      size_t pidx = b.idx - 1;
      ws->bwd_in[pidx].arr = e;
      ws->bwd_in[pidx].prod = t.end;
      if (check) ws->bwd_lvl[pidx] = *lvp;
      if (S->timeline)
        ws->bwd_send_iv[pidx] =
            (int32_t)add_iv(S, s, e, r, b.pr > r ? SC_LANE_P2P_NEXT : SC_LANE_P2P_PREV,
                            SC_IV_P2P_GRAD, b.c, (int32_t)b.mb, -1);
      if (check) push(ws, wn, b.pr);
    }
    if (!split) grad_done(S, r, b.g, b.c, cb, t.fend, t.end);
  }
  if (in->p2p_blocking) ws->cfree[r] = hold;
  ws->next[r] += hasf && hasb ? 2u : 1u;
  return 1;
}

/* account_rank for ZB-H1 and DualPipe: the same walk with step_general's arithmetic. */
static void account_general(sim *S, uint32_t r) {
  sc_sched_workspace *ws = S->ws;
  const sc_sched_input *in = S->in;
  sc_sched_breakdown *bd = &ws->stages[r];
  const uint32_t *ops = ws->ops + (size_t)r * S->stride;
  uint32_t seen = 0; /* chunks whose first forward has run */
  double t0 = 0.0;
  for (uint32_t i = 0; i < ws->nops_r[r]; i++) {
    uint32_t op = ops[i];
    gpass f = {0}, b = {0};
    if (op & OP_W) {
      gpass_of(S, r, op, &b);
      double w = in->chunks[b.pos].wgrad_s;
      bd->compute_bwd_s += w;
      t0 += w;
      continue;
    }
    int hasf = !(op & OP_BWD), hasb = !hasf || (op & OP_PAIR);
    uint32_t bop = op;
    if (hasf && hasb) bop = ops[++i]; /* the pair's backward */
    const sc_sched_chunk *cf = NULL, *cb = NULL;
    double a = 0.0, pe = 0.0, gmin = 0.0, stretch = 0.0;
    if (hasf) {
      gpass_of(S, r, op, &f);
      cf = &in->chunks[f.pos];
      if (f.pos > 0) {
        a = ws->fwd_in[f.idx].arr;
        pe = ws->fwd_in[f.idx].prod;
      }
      if (!(seen & (1u << f.c))) {
        seen |= 1u << f.c;
        if (in->overlap_param_gather) {
          gmin = ws->gather_first[f.g];
          stretch = ws->gather_end[f.g] + cf->fwd_s / S->pb;
        } else {
          gmin = ws->gather_all[r];
        }
      }
    }
    if (hasb) {
      gpass_of(S, r, bop, &b);
      cb = &in->chunks[b.pos];
      double ab = ws->bwd_in[b.idx].arr;
      if (!hasf || ab > a) { /* the input that arrived last decides the wait */
        a = ab;
        pe = ws->bwd_in[b.idx].prod;
      }
    }
    double start = dmax(dmax(t0, a), gmin);
    gap(bd, t0, pe, a, start);
    int split = hasb && (bop & OP_SPLIT);
    gtimes t;
    gtimes_of(S, cf, cb, split, start, stretch, &t);
    bd->compute_fwd_s += t.xf;
    bd->dp_exposed_s += t.fend - (hasf ? start + t.xf : start);
    bd->compute_recompute_s += t.rc;
    bd->compute_bwd_s += t.bin + t.wpart;
    bd->tp_exposed_s += t.etp;
    bd->cp_exposed_s += t.ecp;
    bd->dp_exposed_s += t.esh;
    t0 = t.end;
    if (in->p2p_blocking) {
      double hold = t.end;
      if (hasf && f.pos + 1 < S->pp) hold = dmax(hold, ws->fwd_in[f.idx + 1].arr);
      if (hasb && b.pos > 0) hold = dmax(hold, ws->bwd_in[b.idx - 1].arr);
      bd->p2p_exposed_s += hold - t0;
      t0 = hold;
    }
  }
}

static int step_checked(sim *S, uint32_t r, uint32_t op, uint32_t *wn, uint32_t *lv) {
  if (S->general) return step_general(S, r, op, wn, lv, 1);
  return step(S, r, op, wn, lv, 1);
}
static void step_replay(sim *S, uint32_t r, uint32_t op) {
  if (S->general) {
    uint32_t lv = 0;
    (void)step_general(S, r, op, NULL, &lv, 0);
    return;
  }
  (void)step(S, r, op, NULL, NULL, 0);
}

/* Everything after the last pass of rank r: non-overlapped reduction, optimizer. */
static void finish_rank(sim *S, uint32_t r) {
  sc_sched_workspace *ws = S->ws;
  const sc_sched_input *in = S->in;
  sc_sched_breakdown *bd = &ws->stages[r];
  double last = ws->cfree[r];
  S->pass++;
  if (!in->overlap_grad_reduce) {
    for (uint32_t k = 0; k < S->nch; k++) {
      /* chunks finish their backwards last-chunk first */
      uint32_t c, g, ci;
      rank_chunk(S, r, S->nch - 1 - k, &c, &g, &ci);
      const sc_sched_chunk *ch = &in->chunks[ci];
      if (ch->dp_grad_s <= 0.0) continue;
      double piece = ch->dp_grad_s / S->gb;
      for (uint32_t j = 0; j < S->gb; j++) {
        double s = last > ws->dpfree[r] ? last : ws->dpfree[r];
        ws->dpfree[r] = s + piece;
        if (S->timeline)
          add_iv(S, s, s + piece, r, SC_LANE_DP, SC_IV_DP_GRAD, c, -1, (int32_t)j);
      }
    }
  }
  double t = last;
  if (ws->dpfree[r] > t) {
    bd->dp_exposed_s += ws->dpfree[r] - t;
    t = ws->dpfree[r];
  }
  double opt = in->optimizer_s ? in->optimizer_s[r] : 0.0;
  if (opt > 0.0 && S->timeline)
    add_iv(S, t, t + opt, r, SC_LANE_OPT, SC_IV_OPTIMIZER, 0, -1, -1);
  bd->optimizer_s = opt;
  bd->end_s = t + opt;
  ws->done[r] = 1;
}

int sc_schedule_run(sc_sched_workspace *ws, const sc_sched_input *in, sc_sched_result *out,
                    sc_error *err) {
  if (ws == NULL || out == NULL)
    return sc_error_set(err, SC_EINVAL, "schedule: workspace or result is NULL");
  int rc = validate(in, err);
  if (rc != SC_OK) return rc;

  sim S;
  S.in = in;
  S.ws = ws;
  S.pp = in->pp;
  S.vp = in->vp;
  S.general = in->kind == SC_SCHED_ZB_H1 || in->kind == SC_SCHED_DUALPIPE;
  S.dual = in->kind == SC_SCHED_DUALPIPE;
  S.nch = S.dual ? 2u : in->vp;
  S.m = S.dual ? in->microbatches / 2 : in->microbatches;
  S.G = in->pp * S.nch;
  /* the longest rank order: a forward and a backward per chunk and micro-batch, and under
   * ZB-H1 and DualPipe up to one W each */
  S.nops = (S.general ? 3u : 2u) * S.nch * S.m;
  S.stride = S.nops + 16u; /* rows not 4 KiB apart: no cache-set aliasing across ranks */
  S.gb = in->grad_buckets ? in->grad_buckets : 1;
  S.pb = in->param_buckets ? in->param_buckets : 1;
  S.timeline = in->record_timeline != 0;
  S.pass = 0;

  size_t gm = (size_t)S.G * S.m;
  size_t niv = 0, nflow = 0;
  if (S.timeline) {
    /* per chunk and micro-batch at most: a forward with its TP, CP and sharded intervals
     * and its send (5); a recomputation, B, W, TP, CP, sharded and send (7); a W pass */
    niv = gm * 13u + (size_t)S.G * (S.gb + S.pb) + S.pp;
    nflow = 2u * gm;
  }
  if (ws_reserve(ws, S.pp, S.G, S.m, S.stride, S.timeline, niv, nflow) != 0)
    return sc_error_set(err, SC_ENOMEM, "schedule: out of memory (pp=%u vp=%u m=%u)", S.pp,
                        S.vp, S.m);

  ws->niv = 0;
  ws->nflows = 0;
  for (size_t i = 0; i < gm; i++) {
    ws->fwd_in[i].arr = -1.0;
    ws->bwd_in[i].arr = -1.0;
  }
  if (S.timeline)
    for (size_t i = 0; i < gm; i++) ws->fwd_send_iv[i] = ws->bwd_send_iv[i] = -1;
  memset(ws->fcount, 0, S.G * sizeof *ws->fcount);
  memset(ws->bcount, 0, S.G * sizeof *ws->bcount);
  memset(ws->gdone, 0, S.G * sizeof *ws->gdone);
  memset(ws->next, 0, S.pp * sizeof *ws->next);
  memset(ws->inq, 0, S.pp);
  memset(ws->done, 0, S.pp);
  memset(ws->stages, 0, S.pp * sizeof *ws->stages);
  for (uint32_t r = 0; r < S.pp; r++) {
    ws->cfree[r] = ws->pnext_free[r] = ws->pprev_free[r] = 0.0;
    ws->stages[r].stage = r;
    S.pass++;
    /* Parameter all-gather (distributed optimizer): issued at the start of the iteration
     * on the DP stream, chunk 0 first (the order the forwards need them). */
    double t = 0.0;
    for (uint32_t k = 0; k < S.nch; k++) {
      uint32_t c, g, ci;
      rank_chunk(&S, r, k, &c, &g, &ci);
      double piece = in->chunks[ci].dp_param_gather_s / S.pb;
      ws->gather_first[g] = t + piece;
      for (uint32_t j = 0; j < S.pb && piece > 0.0; j++) {
        if (S.timeline)
          add_iv(&S, t, t + piece, r, SC_LANE_DP, SC_IV_DP_PARAM, c, -1, (int32_t)j);
        t += piece;
      }
      ws->gather_end[g] = t;
    }
    ws->gather_all[r] = t;
    ws->dpfree[r] = t;
  }
  if (ws->nseq > 0 && ws->key_kind == (int)in->kind && ws->key_pp == S.pp &&
      ws->key_vp == S.vp && ws->key_m == in->microbatches) {
    /* the last run had this shape and placed every pass: replay its order */
    for (size_t i = 0; i < ws->nseq; i++) step_replay(&S, ws->seq[2 * i], ws->seq[2 * i + 1]);
    for (uint32_t r = 0; r < S.pp; r++) finish_rank(&S, r);
  } else {
    build_orders(in, ws->ops, S.stride, ws->nops_r, ws->wq);
    ws->nseq = 0;
    memset(ws->rank_lvl, 0, S.pp * sizeof *ws->rank_lvl);
    uint32_t maxlvl = 0;
    uint32_t wn = 0;
    for (uint32_t r = S.pp; r-- > 0;) push(ws, &wn, r);
    while (wn > 0) {
      uint32_t r = ws->worklist[--wn];
      ws->inq[r] = 0;
      while (ws->next[r] < ws->nops_r[r]) {
        uint32_t op = ws->ops[(size_t)r * S.stride + ws->next[r]];
        uint32_t lv = 0;
        if (!step_checked(&S, r, op, &wn, &lv)) break;
        ws->seq_tmp[2 * ws->nseq] = r;
        ws->seq_tmp[2 * ws->nseq + 1] = op;
        ws->pass_lvl[ws->nseq] = lv;
        if (lv > maxlvl) maxlvl = lv;
        ws->nseq++;
      }
      if (ws->next[r] == ws->nops_r[r] && !ws->done[r]) finish_rank(&S, r);
    }
    /* Counting sort of the passes by level (stable: a rank's passes keep their order,
     * and levels strictly increase along every dependency). */
    memset(ws->lvl_count, 0, ((size_t)maxlvl + 2) * sizeof *ws->lvl_count);
    for (size_t i = 0; i < ws->nseq; i++) ws->lvl_count[ws->pass_lvl[i] + 1]++;
    for (uint32_t l = 1; l <= maxlvl + 1; l++) ws->lvl_count[l] += ws->lvl_count[l - 1];
    for (size_t i = 0; i < ws->nseq; i++) {
      uint32_t at = ws->lvl_count[ws->pass_lvl[i]]++;
      ws->seq[2 * (size_t)at] = ws->seq_tmp[2 * i];
      ws->seq[2 * (size_t)at + 1] = ws->seq_tmp[2 * i + 1];
    }
    ws->key_kind = (int)in->kind;
    ws->key_pp = S.pp;
    ws->key_vp = S.vp;
    ws->key_m = in->microbatches;
  }
  for (uint32_t r = 0; r < S.pp; r++)
    if (!ws->done[r] && (ws->nseq = 0) == 0)
      return sc_error_set(err, SC_ECONFIG,
                          "schedule: %s order deadlocked at rank %u pass %u (internal error)",
                          sc_schedule_kind_name(in->kind), r, ws->next[r]);

  /* The iteration ends with the last stage; the others idle until then (bubble). */
  uint32_t crit = 0;
  double T = ws->stages[0].end_s;
  for (uint32_t r = 1; r < S.pp; r++)
    if (ws->stages[r].end_s > T) {
      T = ws->stages[r].end_s;
      crit = r;
    }
  for (uint32_t r = 0; r < S.pp; r++) {
    if (!S.timeline && r != crit) continue; /* sweeps need the critical stage only */
    if (S.general)
      account_general(&S, r);
    else
      account_rank(&S, r);
    sc_sched_breakdown *bd = &ws->stages[r];
    bd->iteration_s = T;
    bd->bubble_s += T - bd->end_s;
    bd->nfamilies = in->nfamilies;
    for (uint32_t f = 0; f < in->nfamilies; f++) {
      double s = 0.0;
      for (uint32_t k = 0; k < S.nch; k++) {
        uint32_t c, g, ci;
        rank_chunk(&S, r, k, &c, &g, &ci);
        const sc_sched_chunk *ch = &in->chunks[ci];
        s += ch->fwd_family_s ? ch->fwd_family_s[f] : 0.0;
        s += ch->bwd_family_s ? ch->bwd_family_s[f] : 0.0;
        s += ch->recompute_family_s ? ch->recompute_family_s[f] : 0.0;
      }
      bd->family_s[f] = s * (double)S.m;
      memcpy(bd->family_names[f], in->family_names[f], strlen(in->family_names[f]) + 1);
    }
  }
  memset(out, 0, sizeof *out);
  out->iteration_s = T;
  out->critical_stage = crit;
  out->breakdown = ws->stages[crit];
  out->stages = S.timeline ? ws->stages : NULL;
  out->pp = S.pp;
  out->vp = S.vp;
  out->microbatches = in->microbatches;
  if (S.timeline) {
    out->intervals = ws->iv;
    out->nintervals = ws->niv;
    out->flows = ws->flows;
    out->nflows = ws->nflows;
  }
  return SC_OK;
}

const char *sc_lane_name(sc_lane lane) {
  static const char *const names[SC_LANE_COUNT] = {"compute", "tp",  "cp",  "dp",
                                                   "p2p-next", "p2p-prev", "optimizer"};
  return (unsigned)lane < SC_LANE_COUNT ? names[lane] : "unknown";
}

const char *sc_interval_kind_name(sc_interval_kind kind) {
  static const char *const names[SC_IV_COUNT] = {
      "forward", "recompute", "backward",     "tp-comm",       "cp-comm",
      "send-activation", "send-gradient", "dp-grad-reduce", "dp-param-gather", "optimizer",
      "wgrad"};
  return (unsigned)kind < SC_IV_COUNT ? names[kind] : "unknown";
}

const char *sc_schedule_kind_name(sc_schedule_kind kind) {
  switch (kind) {
  case SC_SCHED_GPIPE: return "gpipe";
  case SC_SCHED_1F1B: return "1f1b";
  case SC_SCHED_INTERLEAVED: return "interleaved-1f1b";
  case SC_SCHED_ZB_H1: return "zb-h1";
  case SC_SCHED_DUALPIPE: return "dualpipe";
  }
  return "unknown";
}

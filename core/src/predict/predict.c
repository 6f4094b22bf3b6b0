/*
 * End-to-end prediction: workload → plugin estimates → pipeline schedule → sc_result.
 * See stepcast/predict.h for the contract and docs/predict.md for the composition rules.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "stepcast/comm.h"
#include "stepcast/estimate.h"
#include "stepcast/ops.h"
#include "stepcast/predict.h"
#include "stepcast/stepcast.h"
#include "stepcast/workload.h"

/* Operator families the compute breakdown keeps apart, in display order. Optimizer work is
 * a term of its own (the schedule's optimizer lane), so it is not a compute family. */
static const char *const sc__families[] = {
    SC_OP_GEMM, SC_OP_ATTENTION, SC_OP_SOFTMAX, SC_OP_NORM, SC_OP_ELEMENTWISE,
    SC_OP_EMBEDDING, SC_OP_CROSS_ENTROPY, SC_OP_MEMCPY};
#define SC__NFAM (sizeof sc__families / sizeof sc__families[0])

struct sc_predictor {
  sc_registry *reg;                 /* borrowed */
  sc_sched_workspace *ws;
  sc_stage_work work;               /* one chunk's workload (about 30 KiB) */
  size_t cap;                       /* chunks the arrays below hold */
  sc_sched_chunk *chunks;
  double *fam;                      /* cap * 3 * SC__NFAM: fwd, bwd, recompute splits */
  double *opt_s;                    /* optimizer time per pipeline rank (cap entries) */
  const sc_predict_opts *opts;      /* of the sc_predict call in progress */
};

const char *sc_estimator_name(sc_estimator e) {
  switch (e) {
  case SC_ESTIMATOR_ANALYTICAL: return "analytical";
  case SC_ESTIMATOR_HYBRID: return "hybrid";
  case SC_ESTIMATOR_LEARNED: return "learned";
  }
  return "?";
}

int sc_estimator_parse(const char *s, sc_estimator *out) {
  static const sc_estimator all[] = {SC_ESTIMATOR_ANALYTICAL, SC_ESTIMATOR_HYBRID,
                                     SC_ESTIMATOR_LEARNED};
  for (size_t i = 0; s != NULL && i < sizeof all / sizeof all[0]; i++) {
    if (strcmp(s, sc_estimator_name(all[i])) == 0) {
      *out = all[i];
      return SC_OK;
    }
  }
  return SC_EINVAL;
}

void sc_predict_opts_defaults(sc_predict_opts *o) {
  memset(o, 0, sizeof *o);
  o->estimator = SC_ESTIMATOR_ANALYTICAL;
  o->coll_algo = "auto";
}

int sc_predictor_new(sc_registry *reg, sc_predictor **out, sc_error *err) {
  sc_predictor *pr;
  int rc;
  if (reg == NULL || out == NULL) return sc_error_set(err, SC_EINVAL, "predictor: NULL argument");
  pr = calloc(1, sizeof *pr);
  if (pr == NULL) return sc_error_set(err, SC_ENOMEM, "predictor: out of memory");
  pr->reg = reg;
  rc = sc_sched_workspace_new(&pr->ws, err);
  if (rc != SC_OK) {
    free(pr);
    return rc;
  }
  *out = pr;
  return SC_OK;
}

void sc_predictor_free(sc_predictor *pr) {
  if (pr == NULL) return;
  sc_sched_workspace_free(pr->ws);
  free(pr->chunks);
  free(pr->fam);
  free(pr->opt_s);
  free(pr);
}

static int reserve(sc_predictor *pr, size_t n, sc_error *err) {
  sc_sched_chunk *c;
  double *f, *o;
  if (n <= pr->cap) return SC_OK;
  c = realloc(pr->chunks, n * sizeof *c);
  if (c != NULL) pr->chunks = c;
  f = realloc(pr->fam, n * 3 * SC__NFAM * sizeof *f);
  if (f != NULL) pr->fam = f;
  o = realloc(pr->opt_s, n * sizeof *o);
  if (o != NULL) pr->opt_s = o;
  if (c == NULL || f == NULL || o == NULL) return sc_error_set(err, SC_ENOMEM, "predictor: out of memory");
  pr->cap = n;
  return SC_OK;
}

static size_t family_index(const char *fam) {
  for (size_t i = 0; i < SC__NFAM; i++) {
    if (fam == sc__families[i] || strcmp(fam, sc__families[i]) == 0) return i;
  }
  return SC__NFAM; /* not a breakdown family: the caller refuses it */
}

/* The spans of the groups a configuration has, computed once per prediction. */
typedef struct spans {
  sc_coll_desc g[SC_GROUP_COUNT]; /* TP, CP, DP (dp*cp ranks), PP */
  int have[SC_GROUP_COUNT];
} spans;

static int make_spans(const sc_topology *t, const sc_parallel *p, spans *s, sc_error *err) {
  int rc;
  memset(s, 0, sizeof *s);
  for (int g = 0; g < SC_GROUP_COUNT; g++) {
    sc_parallel q = *p;
    if (g == SC_GROUP_DP) {
      /* The gradient group is DP x CP (context-parallel ranks hold the same parameters);
       * with CP placed right inside DP it is one contiguous group of dp*cp ranks. */
      uint32_t ci = 0, di = 0;
      for (uint32_t i = 0; i < SC_GROUP_COUNT; i++) {
        if (p->order[i] == SC_GROUP_CP) ci = i;
        if (p->order[i] == SC_GROUP_DP) di = i;
      }
      if (p->cp > 1 && di != ci + 1) {
        return sc_error_set(err, SC_ECONFIG,
                            "order: context parallel must sit just inside data parallel");
      }
      q.dp = p->dp * p->cp;
      q.cp = 1;
    }
    rc = sc_comm_group(t, &q, (sc_group_kind)g, &s->g[g], err);
    if (rc != SC_OK) return rc;
    s->have[g] = 1;
  }
  return SC_OK;
}

/* A two-member group between the first and last pipeline stage (tied-embedding gradient):
 * the pair crosses the highest tier the pipeline group crosses. */
static void pair_span(const sc_coll_desc *pp, sc_coll_desc *out) {
  int top = -1;
  *out = *pp;
  for (uint32_t i = 0; i < pp->ntiers; i++) {
    if (pp->tiers[i].ranks > 1) top = (int)i;
  }
  for (uint32_t i = 0; i < pp->ntiers; i++) out->tiers[i].ranks = ((int)i == top) ? 2 : 1;
  out->nranks = 2;
}

static int coll_time(sc_predictor *pr, const sc_topology *t, const spans *s,
                     const sc_work_coll *wc, const char *algo, double *time_s, sc_error *err) {
  sc_coll_desc d;
  sc_estimate e;
  int rc;
  *time_s = 0.0;
  if (wc->nranks <= 1 || wc->bytes <= 0.0) return SC_OK;
  if (wc->group == SC_GROUP_PP && wc->nranks == 2 && s->g[SC_GROUP_PP].nranks != 2) {
    pair_span(&s->g[SC_GROUP_PP], &d);
  } else {
    d = s->g[wc->group];
  }
  if (d.nranks != wc->nranks) {
    return sc_error_set(err, SC_ECONFIG,
                        "collective '%s': workload group of %u ranks, placement gives %u",
                        wc->label, wc->nranks, d.nranks);
  }
  d.kind = wc->kind;
  d.bytes = wc->bytes;
  d.dtype = wc->dtype;
  rc = sc_comm_estimate(pr->reg, t, &d, algo, &e, NULL, err);
  if (rc != SC_OK) return rc;
  *time_s = e.time_s * (double)wc->repeat;
  return SC_OK;
}

/* Pipeline send/recv between neighbouring stages (always the direct algorithm). */
static int p2p_time(sc_predictor *pr, const sc_topology *t, const spans *s, double bytes,
                    sc_dtype dt, double *time_s, sc_error *err) {
  sc_work_coll wc;
  memset(&wc, 0, sizeof wc);
  wc.kind = SC_COLL_SENDRECV;
  wc.group = SC_GROUP_PP;
  wc.nranks = s->g[SC_GROUP_PP].nranks;
  wc.bytes = bytes;
  wc.dtype = dt;
  wc.repeat = 1;
  snprintf(wc.label, sizeof wc.label, "pp.p2p");
  return coll_time(pr, t, s, &wc, "direct", time_s, err);
}

/* Sum the operators of one list: total time, split by family into fam[SC__NFAM]. */
static int ops_time(sc_predictor *pr, const sc_device *dev, const sc_work_list *l, double *total,
                    double *fam, sc_error *err) {
  double sum = 0.0;
  for (uint32_t i = 0; i < l->nops; i++) {
    const sc_work_op *o = &l->ops[i];
    sc_estimate e;
    size_t f = family_index(o->desc.family);
    int rc = sc_registry_estimate_op(pr->reg, dev, &o->desc, &e, err);
    if (rc != SC_OK) return rc;
    if (fam != NULL && f >= SC__NFAM) {
      return sc_error_set(err, SC_EINVAL, "operator '%s': family '%s' has no breakdown slot",
                          o->label, o->desc.family);
    }
    double t1 = e.time_s; /* analytical; hybrid/learned through the fitted residuals */
    if (pr->opts->estimator != SC_ESTIMATOR_ANALYTICAL) {
      rc = sc_residuals_apply(pr->opts->residuals, pr->opts->estimator, o->desc.family, &e, &t1,
                              err);
      if (rc != SC_OK) return rc;
    }
    double ts = t1 * (double)o->repeat;
    sum += ts;
    if (fam != NULL) fam[f] += ts;
  }
  *total = sum;
  return SC_OK;
}

/* Collectives of one per-micro-batch list into TP and CP time. */
static int colls_micro(sc_predictor *pr, const sc_topology *t, const spans *s,
                       const sc_work_list *l, const char *algo, double *tp_s, double *cp_s,
                       sc_error *err) {
  for (uint32_t i = 0; i < l->ncolls; i++) {
    double ts;
    int rc = coll_time(pr, t, s, &l->colls[i], algo, &ts, err);
    if (rc != SC_OK) return rc;
    if (l->colls[i].group == SC_GROUP_CP) {
      *cp_s += ts;
    } else {
      *tp_s += ts; /* TP (and anything else tied to a micro-batch pass) */
    }
  }
  return SC_OK;
}

static int fill_memory(const sc_model *m, const sc_parallel *p, const sc_device *dev,
                       const sc_predict_opts *o, sc_memory_usage *mu, sc_error *err) {
  sc_memory worst;
  uint32_t worst_stage = 0;
  memset(&worst, 0, sizeof worst);
  for (uint32_t r = 0; r < p->pp; r++) {
    sc_memory mem;
    int rc = sc_memory_per_gpu(m, p, r, &mem, err);
    if (rc != SC_OK) return rc;
    if (r == 0 || mem.total_bytes > worst.total_bytes) {
      worst = mem;
      worst_stage = r;
    }
  }
  memset(mu, 0, sizeof *mu);
  mu->weights_bytes = worst.weights_bytes;
  mu->grads_bytes = worst.grads_bytes;
  mu->optimizer_bytes = worst.optimizer_bytes;
  mu->activations_bytes = worst.activations_bytes;
  mu->total_bytes = worst.total_bytes;
  mu->capacity_bytes = dev->mem_bytes;
  if (!o->allow_oom && dev->mem_bytes > 0 && worst.total_bytes > dev->mem_bytes) {
    return sc_error_set(err, SC_ENOFIT,
                        "memory: pipeline stage %u needs %.1f GB per GPU, more than the %.1f GB "
                        "of %s (weights %.1f, gradients %.1f, optimizer %.1f, activations %.1f "
                        "GB); raise tp/pp, use --distributed-optimizer or --recompute",
                        worst_stage, worst.total_bytes / 1e9, dev->mem_bytes / 1e9, dev->name,
                        worst.weights_bytes / 1e9, worst.grads_bytes / 1e9,
                        worst.optimizer_bytes / 1e9, worst.activations_bytes / 1e9);
  }
  return SC_OK;
}

int sc_predict(sc_predictor *pr, const sc_model *m, const sc_topology *t, const sc_device *dev,
               const sc_parallel *p, const sc_predict_opts *o, sc_result *res,
               sc_sched_result *sched, sc_error *err) {
  sc_predict_opts defaults;
  sc_sched_input in;
  sc_sched_result sr;
  spans sp;
  int rc;
  uint32_t gpus, nchunks, mb;
  double model_flops = 0.0, hw_flops = 0.0;
  const char *algo;

  if (pr == NULL || m == NULL || t == NULL || dev == NULL || p == NULL || res == NULL)
    return sc_error_set(err, SC_EINVAL, "predict: NULL argument");
  if (o == NULL) {
    sc_predict_opts_defaults(&defaults);
    o = &defaults;
  }
  if (o->estimator != SC_ESTIMATOR_ANALYTICAL && o->residuals == NULL) {
    return sc_error_set(err, SC_EUNSUPPORTED,
                        "estimator '%s': no fitted residual models for device '%s' "
                        "(only 'analytical' is available)",
                        sc_estimator_name(o->estimator), dev->name);
  }
  pr->opts = o;
  if ((int)p->dtype < 0 || p->dtype >= SC_DTYPE_COUNT || !(dev->peak_flops_per_s[p->dtype] > 0))
    return sc_error_set(err, SC_EUNSUPPORTED, "dtype: device '%s' has no peak for this dtype",
                        dev->name);
  algo = (o->coll_algo != NULL) ? o->coll_algo : "auto";
  rc = sc_workload_validate(m, p, err);
  if (rc != SC_OK) return rc;
  gpus = p->tp * p->pp * p->dp * p->cp;
  rc = sc_comm_check_gpus(t, gpus, err);
  if (rc != SC_OK) return rc;
  memset(res, 0, sizeof *res);
  rc = fill_memory(m, p, dev, o, &res->memory, err);
  if (rc != SC_OK) return rc;
  rc = make_spans(t, p, &sp, err);
  if (rc != SC_OK) return rc;

  nchunks = p->pp * p->virtual_stages;
  rc = reserve(pr, nchunks, err);
  if (rc != SC_OK) return rc;
  memset(pr->chunks, 0, nchunks * sizeof *pr->chunks);
  memset(pr->fam, 0, nchunks * 3 * SC__NFAM * sizeof *pr->fam);
  memset(pr->opt_s, 0, p->pp * sizeof *pr->opt_s);
  mb = sc_parallel_microbatches(p);

  for (uint32_t r = 0; r < p->pp; r++) {
    for (uint32_t c = 0; c < p->virtual_stages; c++) {
      uint32_t g = c * p->pp + r; /* virtual stage index, as the schedule indexes chunks */
      sc_sched_chunk *ch = &pr->chunks[g];
      double *ff = &pr->fam[(size_t)g * 3 * SC__NFAM];
      sc_stage_work *w = &pr->work;
      double t_opt = 0.0;
      rc = sc_workload_stage(m, p, r, c, w, err);
      if (rc != SC_OK) return rc;
      rc = ops_time(pr, dev, &w->per_micro[SC_PHASE_FWD], &ch->fwd_s, ff, err);
      if (rc == SC_OK) rc = ops_time(pr, dev, &w->per_micro[SC_PHASE_BWD], &ch->bwd_s, ff + SC__NFAM, err);
      if (rc == SC_OK)
        rc = ops_time(pr, dev, &w->per_micro[SC_PHASE_RECOMPUTE], &ch->recompute_s,
                      ff + 2 * SC__NFAM, err);
      if (rc == SC_OK)
        rc = colls_micro(pr, t, &sp, &w->per_micro[SC_PHASE_FWD], algo, &ch->tp_fwd_s,
                         &ch->cp_fwd_s, err);
      if (rc == SC_OK)
        rc = colls_micro(pr, t, &sp, &w->per_micro[SC_PHASE_BWD], algo, &ch->tp_bwd_s,
                         &ch->cp_bwd_s, err);
      if (rc == SC_OK) /* recomputation's TP comm runs inside the backward pass */
        rc = colls_micro(pr, t, &sp, &w->per_micro[SC_PHASE_RECOMPUTE], algo, &ch->tp_bwd_s,
                         &ch->cp_bwd_s, err);
      if (rc == SC_OK) rc = ops_time(pr, dev, &w->per_iter, &t_opt, NULL, err);
      if (rc != SC_OK) return rc;
      pr->opt_s[r] += t_opt;
      for (uint32_t i = 0; i < w->per_iter.ncolls; i++) {
        const sc_work_coll *wc = &w->per_iter.colls[i];
        double ts;
        rc = coll_time(pr, t, &sp, wc, algo, &ts, err);
        if (rc != SC_OK) return rc;
        if (wc->group == SC_GROUP_DP && wc->phase == SC_PHASE_FWD) {
          ch->dp_param_gather_s += ts;
        } else {
          ch->dp_grad_s += ts; /* gradient reduction, tied-embedding gradient all-reduce */
        }
      }
      if (w->p2p_send_fwd_bytes > 0) {
        rc = p2p_time(pr, t, &sp, w->p2p_send_fwd_bytes, w->p2p_dtype, &ch->p2p_fwd_s, err);
        if (rc != SC_OK) return rc;
      }
      if (w->p2p_send_bwd_bytes > 0) {
        rc = p2p_time(pr, t, &sp, w->p2p_send_bwd_bytes, w->p2p_dtype, &ch->p2p_bwd_s, err);
        if (rc != SC_OK) return rc;
      }
      ch->fwd_family_s = ff;
      ch->bwd_family_s = ff + SC__NFAM;
      ch->recompute_family_s = ff + 2 * SC__NFAM;
      /* Model FLOPs of the whole job: every GPU of this pipeline rank does the same. */
      double per_gpu = (w->flops[SC_PHASE_FWD] + w->flops[SC_PHASE_BWD]) * mb;
      double ranks = (double)p->tp * p->cp * p->dp;
      model_flops += per_gpu * ranks;
      hw_flops += (per_gpu + w->flops[SC_PHASE_RECOMPUTE] * mb) * ranks;
    }
  }

  memset(&in, 0, sizeof in);
  in.kind = p->schedule;
  in.pp = p->pp;
  in.vp = p->virtual_stages;
  in.microbatches = mb;
  in.chunks = pr->chunks;
  in.optimizer_s = pr->opt_s;
  in.tp_overlap_frac = p->overlap_tp_comm ? 1.0 : 0.0;
  in.cp_overlap_frac = 1.0; /* Megatron overlaps the CP ring exchange with attention */
  in.overlap_grad_reduce = p->overlap_grad_reduce;
  in.overlap_param_gather = p->overlap_param_gather;
  in.grad_buckets = 0;
  in.param_buckets = 0;
  in.nfamilies = (uint32_t)SC__NFAM;
  in.family_names = sc__families;
  in.record_timeline = o->record_timeline;
  rc = sc_schedule_run(pr->ws, &in, &sr, err);
  if (rc != SC_OK) return rc;

  snprintf(res->model, sizeof res->model, "%s", m->name);
  snprintf(res->topology, sizeof res->topology, "%s", t->name);
  snprintf(res->hardware, sizeof res->hardware, "%s", dev->name);
  snprintf(res->estimator, sizeof res->estimator, "%s", sc_estimator_name(o->estimator));
  res->gpus = gpus;
  res->parallel = *p;
  res->iteration_s = sr.iteration_s;
  res->breakdown = sr.breakdown;
  res->model_flops = model_flops;
  res->hardware_flops = hw_flops;
  res->peak_flops_per_s = dev->peak_flops_per_s[p->dtype];
  res->token_budget = o->token_budget;
  rc = sc_result_finish(res, err);
  if (rc != SC_OK) return rc;
  if (sched != NULL) *sched = sr;
  return SC_OK;
}

/*
 * train_step: a real GPT training step on the host CPU, timed, against stepcast's prediction
 * of the same step on hardware/host-cpu.toml or the --hardware file (analytical, and hybrid
 * when the device has fitted residuals). Forward and backward of every layer (LayerNorm,
 * QKV, causal attention, projection, bias-dropout-add, GeLU MLP), the tied embedding and
 * logits, cross-entropy, and one AdamW step over every parameter, in fp32, with OpenBLAS
 * GEMMs and the C kernels of plugins/hardware/cpu_kernels.h: the very code `stepcast sample`
 * measures.
 *
 * The operators are those stepcast's workload emits for a GPT model with flash attention,
 * tp = pp = dp = 1 (`stepcast ops --model ... --dtype fp32` lists them) with the same GEMM
 * shapes and layouts (weights stored [out, in] as PyTorch does). Not modelled by stepcast and
 * done here: the head split/merge copies around attention (Megatron's are views), the QKV
 * bias (in cuBLAS's epilogue on GPUs), the logits' padding columns and the zeroing of the
 * few gradients a kernel accumulates into (the others are written by their GEMM, as after
 * PyTorch's zero_grad(set_to_none=True)); their time is part of the measured step, and the
 * per-family lines print it as "not modelled" and "zeroing".
 *
 *   train_step [--model gpt3-125m] [--layers 2] [--hidden 256] [--heads 4] [--ffn 1024]
 *              [--vocab 8192] [--seq 256] [--batch 1] [--steps 3] [--model-out FILE]
 *              [--hardware FILE]
 *
 * Shapes start from the model file and are overridden by the flags (scaled down to what a
 * CPU runs in seconds). Pin OPENBLAS_NUM_THREADS=1 (the device was measured so).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cpu_kernels.h"
#include "stepcast/estimate.h"
#include "stepcast/predict.h"
#include "stepcast/stepcast.h"
#include "bench_util.h"

void openblas_set_num_threads(int num_threads);

typedef struct layer {
  float *ln1_g, *ln1_b, *wqkv, *bqkv, *wproj, *bproj, *ln2_g, *ln2_b, *w1, *b1, *w2, *b2;
} layer;

typedef struct acts { /* what one layer's forward keeps for its backward */
  float *x, *mean1, *rstd1, *xn1, *qkv, *q, *k, *v, *o, *lse, *o2, *pr, *x1, *mean2, *rstd2,
      *xn2, *u, *g, *w;
  uint8_t *mask1, *mask2;
} acts;

/* Time spent in GEMMs and in fused attention during the timed steps (per-family check of
 * the prediction); everything else is the step's time minus these. */
static double t_gemm, t_attn, t_opt, t_zero;
/* The other families (and the work stepcast does not model), timed around each call. */
enum { F_NORM, F_EW, F_EMB, F_CE, F_COPY, F_COUNT };
static const char *const f_names[F_COUNT] = {"norm", "elementwise", "embedding",
                                             "cross_entropy", "not modelled"};
static double t_fam[F_COUNT];
#define TIMED(slot, stmt)                 \
  do {                                    \
    double t_ = now_s();                  \
    stmt;                                 \
    t_fam[slot] += now_s() - t_;          \
  } while (0)
/* The embedding's four calls apart (the token lookup, the position lookup, the position
 * table's backward, the token table's backward), as stepcast ops lists them. */
enum { E_EMBED, E_POS, E_POS_BWD, E_EMBED_BWD, E_COUNT };
static double t_emb[E_COUNT];
#define TIMED_EMB(which, stmt)            \
  do {                                    \
    double e_ = now_s();                  \
    TIMED(F_EMB, stmt);                   \
    t_emb[which] += now_s() - e_;         \
  } while (0)
static void prof_gemm(int ta, int tb, int64_t m, int64_t n, int64_t k, const float *A,
                      int64_t lda, const float *B, int64_t ldb, float beta, float *C,
                      int64_t ldc) {
  double t = now_s();
  sc__cpu_gemm_t(ta, tb, m, n, k, A, lda, B, ldb, beta, C, ldc);
  t_gemm += now_s() - t;
}
static void prof_attn_fwd(int64_t B, int64_t H, int64_t G, int64_t sq, int64_t sk, int64_t d,
                          int causal, const float *Q, const float *K, const float *V, float *O,
                          float *lse, float *scratch) {
  double t = now_s();
  sc__cpu_attn_fwd(B, H, G, sq, sk, d, causal, Q, K, V, O, lse, scratch);
  t_attn += now_s() - t;
}
static void prof_attn_bwd(int64_t B, int64_t H, int64_t G, int64_t sq, int64_t sk, int64_t d,
                          int causal, const float *Q, const float *K, const float *V,
                          const float *O, const float *dO, const float *lse, float *dQ,
                          float *dK, float *dV, float *scratch) {
  double t = now_s();
  sc__cpu_attn_bwd(B, H, G, sq, sk, d, causal, Q, K, V, O, dO, lse, dQ, dK, dV, scratch);
  t_attn += now_s() - t;
}

/* A prediction's breakdown split into GEMMs, attention and the rest, in seconds. */
static void split_terms(const sc_sched_breakdown *b, double out[3]) {
  sc_report_term t[32];
  size_t n = sc_report_terms(b, t, 32);
  for (size_t i = 0; i < n; i++) {
    int k = strcmp(t[i].key, "compute.gemm") == 0 ? 0
            : strcmp(t[i].key, "compute.attention") == 0 ? 1 : 2;
    out[k] += t[i].seconds;
  }
}

/* A prediction's compute term of one operator family, in seconds (0 when it has none). */
static double term_s(const sc_sched_breakdown *b, const char *family) {
  sc_report_term t[32];
  size_t n = sc_report_terms(b, t, 32);
  char key[64];
  if (strcmp(family, "optimizer") == 0) snprintf(key, sizeof key, "optimizer");
  else snprintf(key, sizeof key, "compute.%s", family);
  for (size_t i = 0; i < n; i++)
    if (strcmp(t[i].key, key) == 0) return t[i].seconds;
  return 0.0;
}

static float *arena_take(float **cur, size_t n) {
  float *p = *cur;
  *cur += n;
  return p;
}

/* Zeroed buffers, each on its own 64-byte line of its page in turn (sc__cpu_buf_alloc, as
 * the sampler allocates): with every block at the same page offset, AdamW's four arrays
 * alias in 4 KiB and the step's optimizer took 17-19 ms for some shapes against 10 ms. The
 * blocks are kept in `blocks` and freed by free_all at the end. */
static void **blocks;
static size_t nblocks, cap_blocks;

static void free_all(void) {
  for (size_t i = 0; i < nblocks; i++) free(blocks[i]);
  free(blocks);
  blocks = NULL;
  nblocks = cap_blocks = 0;
}

static void *xcalloc(size_t n, size_t sz) {
  void *raw = NULL, *p = NULL;
  if (nblocks == cap_blocks) {
    size_t cap = cap_blocks ? 2 * cap_blocks : 64;
    void **nb = realloc(blocks, cap * sizeof *nb);
    if (nb != NULL) {
      blocks = nb;
      cap_blocks = cap;
    }
  }
  if (nblocks < cap_blocks) p = sc__cpu_buf_alloc((n ? n : 1) * sz, (unsigned)nblocks, &raw);
  if (p != NULL) {
    blocks[nblocks++] = raw;
    memset(p, 0, (n ? n : 1) * sz);
  }
  if (p == NULL) {
    fprintf(stderr, "train_step: out of memory\n");
    exit(1);
  }
  return p;
}

/* qkv [B*S][3h] -> q, k, v [B][A][S][d]; and back (accumulating nothing: plain copies). */
static void split_heads(int64_t B, int64_t S, int64_t A, int64_t d, const float *qkv, float *q,
                        float *k, float *v) {
  int64_t h = A * d;
  for (int64_t b = 0; b < B; b++)
    for (int64_t s = 0; s < S; s++) {
      const float *row = qkv + (b * S + s) * 3 * h;
      for (int64_t a = 0; a < A; a++) {
        size_t o = (size_t)(((b * A + a) * S + s) * d);
        memcpy(q + o, row + a * d, (size_t)d * sizeof(float));
        memcpy(k + o, row + h + a * d, (size_t)d * sizeof(float));
        memcpy(v + o, row + 2 * h + a * d, (size_t)d * sizeof(float));
      }
    }
}

static void merge_heads(int64_t B, int64_t S, int64_t A, int64_t d, const float *heads,
                        float *out, int64_t ld, int64_t off) {
  for (int64_t b = 0; b < B; b++)
    for (int64_t s = 0; s < S; s++)
      for (int64_t a = 0; a < A; a++)
        memcpy(out + (b * S + s) * ld + off + a * d, heads + ((b * A + a) * S + s) * d,
               (size_t)d * sizeof(float));
}

int main(int argc, char **argv) {
  const char *model_name = "gpt3-125m", *model_out = NULL, *hardware = NULL;
  int64_t L = 2, h = 256, A = 4, f = 1024, V = 8192, S = 256, B = 1;
  int steps = 3;
  sc_model m;
  sc_error err;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (v == NULL) {
      fprintf(stderr, "train_step: %s needs a value\n", a);
      return 2;
    }
    i++;
    if (strcmp(a, "--model") == 0) model_name = v;
    else if (strcmp(a, "--model-out") == 0) model_out = v;
    else if (strcmp(a, "--hardware") == 0) hardware = v;
    else if (strcmp(a, "--layers") == 0) L = atoll(v);
    else if (strcmp(a, "--hidden") == 0) h = atoll(v);
    else if (strcmp(a, "--heads") == 0) A = atoll(v);
    else if (strcmp(a, "--ffn") == 0) f = atoll(v);
    else if (strcmp(a, "--vocab") == 0) V = atoll(v);
    else if (strcmp(a, "--seq") == 0) S = atoll(v);
    else if (strcmp(a, "--batch") == 0) B = atoll(v);
    else if (strcmp(a, "--steps") == 0) steps = atoi(v);
    else {
      fprintf(stderr, "train_step: unknown option %s\n", a);
      return 2;
    }
  }
  sc_error_clear(&err);
  if (sc_model_load(model_name, &m, &err) != SC_OK) {
    fprintf(stderr, "train_step: %s\n", err.msg);
    return 1;
  }
  if (m.norm != SC_NORM_LAYERNORM || m.activation != SC_ACT_GELU ||
      m.position != SC_POS_LEARNED || !m.tied_embeddings || m.kv_heads != m.heads) {
    fprintf(stderr, "train_step: %s is not a GPT-2/3 style model (LayerNorm, GeLU, learned "
            "positions, tied embeddings, no GQA)\n", m.name);
    return 1;
  }
  if (L < 1 || h < 1 || A < 1 || h % A != 0 || f < 1 || V < 2 || S < 1 || B < 1 || steps < 1) {
    fprintf(stderr, "train_step: shapes must be >= 1 and heads must divide hidden\n");
    return 2;
  }
  snprintf(m.name, sizeof m.name, "%.40s-cpu", model_name);
  m.layers = L;
  m.hidden = h;
  m.heads = A;
  m.kv_heads = A;
  m.ffn_hidden = f;
  m.vocab = V;
  m.max_seq = S;
  if (sc_model_finish(&m, &err) != SC_OK) {
    fprintf(stderr, "train_step: %s\n", err.msg);
    return 1;
  }
  openblas_set_num_threads(1);

  const int64_t d = h / A, T = B * S, Vp = (V + 127) / 128 * 128; /* Megatron's padding */
  /* ---- parameters (one flat buffer: AdamW runs over all of them at once) ---- */
  size_t per_layer = (size_t)(2 * h + 3 * h * h + 3 * h + h * h + h + 2 * h + f * h + f + h * f + h);
  size_t nparams = (size_t)(Vp * h + S * h) + (size_t)L * per_layer + (size_t)(2 * h);
  float *P = xcalloc(nparams, sizeof(float)), *G = xcalloc(nparams, sizeof(float));
  float *M1 = xcalloc(nparams, sizeof(float)), *M2 = xcalloc(nparams, sizeof(float));
  float *cur = P, *gcur = G;
  float *wte = arena_take(&cur, (size_t)(Vp * h)), *wpe = arena_take(&cur, (size_t)(S * h));
  float *dwte = arena_take(&gcur, (size_t)(Vp * h)), *dwpe = arena_take(&gcur, (size_t)(S * h));
  layer *Wl = xcalloc((size_t)L, sizeof *Wl), *dWl = xcalloc((size_t)L, sizeof *dWl);
  for (int64_t l = 0; l < L; l++) {
    layer *w[2] = {&Wl[l], &dWl[l]};
    float **c[2] = {&cur, &gcur};
    for (int k = 0; k < 2; k++) {
      w[k]->ln1_g = arena_take(c[k], (size_t)h);
      w[k]->ln1_b = arena_take(c[k], (size_t)h);
      w[k]->wqkv = arena_take(c[k], (size_t)(3 * h * h));
      w[k]->bqkv = arena_take(c[k], (size_t)(3 * h));
      w[k]->wproj = arena_take(c[k], (size_t)(h * h));
      w[k]->bproj = arena_take(c[k], (size_t)h);
      w[k]->ln2_g = arena_take(c[k], (size_t)h);
      w[k]->ln2_b = arena_take(c[k], (size_t)h);
      w[k]->w1 = arena_take(c[k], (size_t)(f * h));
      w[k]->b1 = arena_take(c[k], (size_t)f);
      w[k]->w2 = arena_take(c[k], (size_t)(h * f));
      w[k]->b2 = arena_take(c[k], (size_t)h);
    }
  }
  float *lnf_g = arena_take(&cur, (size_t)h), *lnf_b = arena_take(&cur, (size_t)h);
  float *dlnf_g = arena_take(&gcur, (size_t)h), *dlnf_b = arena_take(&gcur, (size_t)h);
  for (size_t i = 0; i < nparams; i++)
    P[i] = 0.02f * ((float)sc__cpu_hash(99, i) * (2.0f / 4294967296.0f) - 1.0f);
  for (int64_t l = 0; l < L; l++)
    for (int64_t c = 0; c < h; c++) Wl[l].ln1_g[c] = Wl[l].ln2_g[c] = 1.0f;
  for (int64_t c = 0; c < h; c++) lnf_g[c] = 1.0f;

  /* ---- activations ---- */
  acts *ac = xcalloc((size_t)L + 1, sizeof *ac);
  size_t th = (size_t)(T * h);
  for (int64_t l = 0; l <= L; l++) {
    ac[l].x = xcalloc(th, sizeof(float));
    if (l == L) break;
    ac[l].mean1 = xcalloc((size_t)T, sizeof(float));
    ac[l].rstd1 = xcalloc((size_t)T, sizeof(float));
    ac[l].xn1 = xcalloc(th, sizeof(float));
    ac[l].qkv = xcalloc(3 * th, sizeof(float));
    ac[l].q = xcalloc(th, sizeof(float));
    ac[l].k = xcalloc(th, sizeof(float));
    ac[l].v = xcalloc(th, sizeof(float));
    ac[l].o = xcalloc(th, sizeof(float));
    ac[l].lse = xcalloc((size_t)(B * A * S), sizeof(float));
    ac[l].o2 = xcalloc(th, sizeof(float));
    ac[l].pr = xcalloc(th, sizeof(float));
    ac[l].x1 = xcalloc(th, sizeof(float));
    ac[l].mean2 = xcalloc((size_t)T, sizeof(float));
    ac[l].rstd2 = xcalloc((size_t)T, sizeof(float));
    ac[l].xn2 = xcalloc(th, sizeof(float));
    ac[l].u = xcalloc((size_t)(T * f), sizeof(float));
    ac[l].g = xcalloc((size_t)(T * f), sizeof(float));
    ac[l].w = xcalloc(th, sizeof(float));
    ac[l].mask1 = xcalloc(th, 1);
    ac[l].mask2 = xcalloc(th, 1);
  }
  int64_t *ids = xcalloc((size_t)T, sizeof *ids), *pos = xcalloc((size_t)T, sizeof *pos);
  int64_t *labels = xcalloc((size_t)T, sizeof *labels);
  for (int64_t t = 0; t < T; t++) {
    ids[t] = (int64_t)(sc__cpu_hash(1, (uint64_t)t) % (uint64_t)V);
    labels[t] = (int64_t)(sc__cpu_hash(2, (uint64_t)t) % (uint64_t)V);
    pos[t] = t % S;
  }
  float *e1 = xcalloc(th, sizeof(float)), *e2 = xcalloc(th, sizeof(float));
  float *e = xcalloc(th, sizeof(float));
  uint8_t *mask0 = xcalloc(th, 1);
  float *meanf = xcalloc((size_t)T, sizeof(float)), *rstdf = xcalloc((size_t)T, sizeof(float));
  float *xf = xcalloc(th, sizeof(float)), *logits = xcalloc((size_t)(T * Vp), sizeof(float));
  float *loss = xcalloc((size_t)T, sizeof(float));
  float *scratch = xcalloc(sc__cpu_attn_scratch_floats(S), sizeof(float));
  float *gtok = xcalloc((size_t)(Vp * h), sizeof(float)), *gpos = xcalloc((size_t)(S * h), sizeof(float));
  /* gradient buffers */
  float *dx = xcalloc(th, sizeof(float)), *dxb = xcalloc(th, sizeof(float));
  float *dxf = xcalloc(th, sizeof(float)), *dw = xcalloc(th, sizeof(float));
  float *dg = xcalloc((size_t)(T * f), sizeof(float)), *du = xcalloc((size_t)(T * f), sizeof(float));
  float *dxn = xcalloc(th, sizeof(float)), *dx1 = xcalloc(th, sizeof(float));
  float *dpr = xcalloc(th, sizeof(float)), *do2 = xcalloc(th, sizeof(float));
  float *dO = xcalloc(th, sizeof(float)), *dQ = xcalloc(th, sizeof(float));
  float *dK = xcalloc(th, sizeof(float)), *dV = xcalloc(th, sizeof(float));
  float *dqkv = xcalloc(3 * th, sizeof(float));
  const float p_drop = 0.1f;

  double *times = xcalloc((size_t)steps + 1, sizeof *times);
  double gemm_sum = 0.0, attn_sum = 0.0, step_sum = 0.0, opt_sum = 0.0, zero_sum = 0.0;
  float last_loss = 0.0f;
  for (int it = 0; it <= steps; it++) { /* step 0 is the warm-up */
    double t0 = now_s();
    t_gemm = t_attn = 0.0;
    double fam0[F_COUNT], emb0[E_COUNT];
    memcpy(fam0, t_fam, sizeof fam0);
    memcpy(emb0, t_emb, sizeof emb0);
    /* ---------------- forward ---------------- */
    TIMED_EMB(E_EMBED, sc__cpu_embed_fwd(T, h, ids, wte, e1));                    /* embed */
    TIMED_EMB(E_POS, sc__cpu_embed_fwd(T, h, pos, wpe, e2));                      /* embed_pos */
    TIMED(F_EW, sc__cpu_add((int64_t)th, e1, e2, e));                            /* embed_pos_add */
    /* embed_dropout */
    TIMED(F_EW, sc__cpu_dropout_fwd((int64_t)th, p_drop, 11u + (uint64_t)it, e, ac[0].x, mask0));
    for (int64_t l = 0; l < L; l++) {
      acts *a = &ac[l];
      layer *w = &Wl[l];
      TIMED(F_NORM, sc__cpu_layernorm_fwd(T, h, a->x, w->ln1_g, w->ln1_b, a->xn1, a->mean1,
                  a->rstd1));
      prof_gemm(0, 1, T, 3 * h, h, a->xn1, h, w->wqkv, h, 0.0f, a->qkv, 3 * h); /* qkv */
      TIMED(F_COPY, for (int64_t t = 0; t < T; t++)                  /* qkv bias */
        for (int64_t c = 0; c < 3 * h; c++) a->qkv[t * 3 * h + c] += w->bqkv[c]);
      TIMED(F_COPY, split_heads(B, S, A, d, a->qkv, a->q, a->k, a->v));
      prof_attn_fwd(B, A, A, S, S, d, 1, a->q, a->k, a->v, a->o, a->lse, scratch); /* attn_core */
      TIMED(F_COPY, merge_heads(B, S, A, d, a->o, a->o2, h, 0));
      prof_gemm(0, 1, T, h, h, a->o2, h, w->wproj, h, 0.0f, a->pr, h); /* attn_proj */
      /* attn_bda */
      TIMED(F_EW, sc__cpu_bda_fwd((int64_t)th, p_drop, 100u + (uint64_t)l, a->pr, w->bproj, h, a->x,
                  a->x1, a->mask1));
      TIMED(F_NORM, sc__cpu_layernorm_fwd(T, h, a->x1, w->ln2_g, w->ln2_b, a->xn2, a->mean2,
                  a->rstd2));
      prof_gemm(0, 1, T, f, h, a->xn2, h, w->w1, h, 0.0f, a->u, f); /* mlp_fc1 */
      /* mlp_gelu (bias + GeLU) */
      TIMED(F_EW, sc__cpu_gelu_fwd(T * f, a->u, w->b1, f, a->g));
      prof_gemm(0, 1, T, h, f, a->g, f, w->w2, f, 0.0f, a->w, h); /* mlp_fc2 */
      /* mlp_bda */
      TIMED(F_EW, sc__cpu_bda_fwd((int64_t)th, p_drop, 200u + (uint64_t)l, a->w, w->b2, h, a->x1,
                  ac[l + 1].x, a->mask2));
    }
    /* final_norm */
    TIMED(F_NORM, sc__cpu_layernorm_fwd(T, h, ac[L].x, lnf_g, lnf_b, xf, meanf, rstdf));
    prof_gemm(0, 1, T, Vp, h, xf, h, wte, h, 0.0f, logits, Vp); /* logits */
    TIMED(F_COPY, for (int64_t t = 0; t < T; t++)                    /* padded rows never win */
      for (int64_t c = V; c < Vp; c++) logits[t * Vp + c] = -1e30f);
    TIMED(F_CE, sc__cpu_xent_fwd(T, Vp, labels, logits, loss));                  /* cross_entropy */
    /* ---------------- backward ---------------- */
    /* Gradients as autograd with zero_grad(set_to_none=True) leaves them, PyTorch's default:
     * each weight gradient GEMM writes its gradient (beta = 0) and a second contribution adds
     * into it (the tied embedding's). Only gradients that a kernel accumulates into from the
     * start are zeroed first: the norms' scales and shifts and the position table's. */
    double tz = now_s();
    memset(dwpe, 0, (size_t)(S * h) * sizeof(float));
    memset(dlnf_g, 0, (size_t)(2 * h) * sizeof(float)); /* dlnf_g, dlnf_b */
    for (int64_t l = 0; l < L; l++) {
      memset(dWl[l].ln1_g, 0, (size_t)(2 * h) * sizeof(float)); /* ln1_g, ln1_b */
      memset(dWl[l].ln2_g, 0, (size_t)(2 * h) * sizeof(float)); /* ln2_g, ln2_b */
    }
    t_zero = now_s() - tz;
    /* cross_entropy.bwd */
    TIMED(F_CE, sc__cpu_xent_bwd(T, Vp, labels, 1.0f / (float)T, logits));
    prof_gemm(0, 0, T, h, Vp, logits, Vp, wte, h, 0.0f, dxf, h); /* logits.dgrad */
    prof_gemm(1, 0, Vp, h, T, logits, Vp, xf, h, 0.0f, dwte, h); /* logits.wgrad */
    TIMED(F_NORM, sc__cpu_layernorm_bwd(T, h, dxf, ac[L].x, lnf_g, meanf, rstdf, dx, dlnf_g,
                dlnf_b));
    for (int64_t l = L - 1; l >= 0; l--) {
      acts *a = &ac[l];
      layer *w = &Wl[l], *gw = &dWl[l];
      TIMED(F_EW, sc__cpu_dropout_bwd((int64_t)th, p_drop, dx, a->mask2, dw));   /* mlp_bda.bwd */
      prof_gemm(0, 0, T, f, h, dw, h, w->w2, f, 0.0f, dg, f);  /* mlp_fc2.dgrad */
      prof_gemm(1, 0, h, f, T, dw, h, a->g, f, 0.0f, gw->w2, f); /* mlp_fc2.wgrad */
      TIMED(F_EW, sc__cpu_gelu_bwd(T * f, dg, a->u, w->b1, f, du));              /* mlp_gelu.bwd */
      prof_gemm(0, 0, T, h, f, du, f, w->w1, h, 0.0f, dxn, h); /* mlp_fc1.dgrad */
      prof_gemm(1, 0, f, h, T, du, f, a->xn2, h, 0.0f, gw->w1, h); /* mlp_fc1.wgrad */
      /* norm2.bwd */
      TIMED(F_NORM, sc__cpu_layernorm_bwd(T, h, dxn, a->x1, w->ln2_g, a->mean2, a->rstd2, dxb,
                  gw->ln2_g, gw->ln2_b));
      /* mlp_residual.bwd */
      TIMED(F_EW, sc__cpu_add((int64_t)th, dx, dxb, dx1));
      TIMED(F_EW, sc__cpu_dropout_bwd((int64_t)th, p_drop, dx1, a->mask1, dpr)); /* attn_bda.bwd */
      prof_gemm(0, 0, T, h, h, dpr, h, w->wproj, h, 0.0f, do2, h); /* attn_proj.dgrad */
      prof_gemm(1, 0, h, h, T, dpr, h, a->o2, h, 0.0f, gw->wproj, h); /* attn_proj.wgrad */
      /* do2 is [T][h]: its heads into dO [B][A][S][d] */
      TIMED(F_COPY, for (int64_t b = 0; b < B; b++)
        for (int64_t s = 0; s < S; s++)
          for (int64_t aa = 0; aa < A; aa++)
            memcpy(dO + ((b * A + aa) * S + s) * d, do2 + (b * S + s) * h + aa * d,
                   (size_t)d * sizeof(float)));
      prof_attn_bwd(B, A, A, S, S, d, 1, a->q, a->k, a->v, a->o, dO, a->lse, dQ, dK, dV,
                       scratch);                                    /* attn_core.bwd */
      TIMED(F_COPY, merge_heads(B, S, A, d, dQ, dqkv, 3 * h, 0));
      TIMED(F_COPY, merge_heads(B, S, A, d, dK, dqkv, 3 * h, h));
      TIMED(F_COPY, merge_heads(B, S, A, d, dV, dqkv, 3 * h, 2 * h));
      prof_gemm(0, 0, T, h, 3 * h, dqkv, 3 * h, w->wqkv, h, 0.0f, dxn, h); /* qkv.dgrad */
      prof_gemm(1, 0, 3 * h, h, T, dqkv, 3 * h, a->xn1, h, 0.0f, gw->wqkv, h); /* qkv.wgrad */
      /* norm1.bwd */
      TIMED(F_NORM, sc__cpu_layernorm_bwd(T, h, dxn, a->x, w->ln1_g, a->mean1, a->rstd1, dxb,
                  gw->ln1_g, gw->ln1_b));
      /* attn_residual.bwd */
      TIMED(F_EW, sc__cpu_add((int64_t)th, dx1, dxb, dx));
    }
    /* embed_dropout.bwd */
    TIMED(F_EW, sc__cpu_dropout_bwd((int64_t)th, p_drop, dx, mask0, dxb));
    /* embed_pos.bwd */
    TIMED_EMB(E_POS_BWD, sc__cpu_embed_bwd(T, h, S, pos, dxb, gpos, dwpe));
    TIMED_EMB(E_EMBED_BWD, sc__cpu_embed_bwd(T, h, Vp, ids, dxb, gtok, dwte));    /* embed.bwd */
    /* ---------------- optimizer ---------------- */
    double to = now_s();
    sc__cpu_adam((int64_t)nparams, 1e-4f, 0.9f, 0.95f, 1e-8f, 0.1f, it + 1, P, G, M1, M2);
    t_opt = now_s() - to;
    times[it] = now_s() - t0;
    if (it > 0) {
      gemm_sum += t_gemm;
      attn_sum += t_attn;
      opt_sum += t_opt;
      zero_sum += t_zero;
      step_sum += times[it];
    } else {
      memcpy(t_fam, fam0, sizeof fam0); /* the warm-up's calls are not counted */
      memcpy(t_emb, emb0, sizeof emb0);
    }
    last_loss = 0.0f;
    for (int64_t t = 0; t < T; t++) last_loss += loss[t] / (float)T;
  }
  qsort(times + 1, (size_t)steps, sizeof *times, cmp_double);
  double measured = times[1 + steps / 2];

  /* ---------------- prediction ---------------- */
  sc_registry *reg = NULL;
  sc_predictor *pr = NULL;
  sc_topology topo;
  sc_device dev;
  sc_parallel par;
  sc_predict_opts o;
  sc_result ra, rh;
  sc_residuals *resid = NULL;
  int have_h = 0;
  if (sc_registry_new(&reg, &err) != SC_OK || sc_registry_add_builtins(reg, &err) != SC_OK ||
      sc_topology_load("host-cpu", &topo, &err) != SC_OK ||
      sc_hardware_load(reg, hardware ? hardware : topo.hardware, &dev, &err) != SC_OK ||
      sc_predictor_new(reg, &pr, &err) != SC_OK) {
    fprintf(stderr, "train_step: %s\n", err.msg);
    return 1;
  }
  sc_parallel_defaults(&par);
  par.micro_batch = (uint32_t)B;
  par.global_batch = (uint32_t)B;
  par.seq_len = (uint32_t)S;
  par.dtype = SC_DTYPE_FP32;
  sc_predict_opts_defaults(&o);
  if (sc_predict(pr, &m, &topo, &dev, &par, &o, &ra, NULL, &err) != SC_OK) {
    fprintf(stderr, "train_step: predict: %s\n", err.msg);
    return 1;
  }
  if (sc_residuals_for_hardware(hardware ? hardware : topo.hardware, dev.name, reg,
                                SC_ESTIMATOR_HYBRID, &resid,
                                &err) == SC_OK) {
    o.estimator = SC_ESTIMATOR_HYBRID;
    o.residuals = resid;
    if (sc_predict(pr, &m, &topo, &dev, &par, &o, &rh, NULL, &err) != SC_OK) {
      fprintf(stderr, "train_step: predict hybrid: %s\n", err.msg);
      return 1;
    }
    have_h = 1;
  } else {
    fprintf(stderr, "train_step: hybrid not available: %s\n", err.msg);
  }
  printf("model %s: layers %lld hidden %lld heads %lld ffn %lld vocab %lld (padded %lld) seq %lld "
         "batch %lld, %zu parameters, loss %.4f\n", m.name, (long long)L, (long long)h,
         (long long)A, (long long)f, (long long)V, (long long)Vp, (long long)S, (long long)B,
         nparams, (double)last_loss);
  printf("measured  %.4f s (median of %d steps after 1 warm-up; min %.4f, max %.4f)\n", measured,
         steps, times[1], times[steps]);
  printf("analytical %.4f s (error %+.1f%%)\n", ra.iteration_s,
         100.0 * (ra.iteration_s - measured) / measured);
  if (have_h)
    printf("hybrid     %.4f s (error %+.1f%%)\n", rh.iteration_s,
           100.0 * (rh.iteration_s - measured) / measured);
  {
    /* Per family, mean over the timed steps, against the prediction's compute terms. */
    double pa[3] = {0}, ph[3] = {0};
    split_terms(&ra.breakdown, pa);
    if (have_h) split_terms(&rh.breakdown, ph);
    double mg = gemm_sum / steps, mat = attn_sum / steps, mo = step_sum / steps - mg - mat;
    static const char *const nm[3] = {"gemm", "attention", "other"};
    double meas[3] = {mg, mat, mo};
    printf("per family (mean of the timed steps): measured / analytical / hybrid, ms\n");
    for (int k = 0; k < 3; k++)
      printf("  %-10s %9.3f %9.3f %9.3f\n", nm[k], meas[k] * 1e3, pa[k] * 1e3,
             have_h ? ph[k] * 1e3 : NAN);
    printf("  (of other: optimizer step %.3f ms, zeroing gradients %.3f ms)\n",
           opt_sum / steps * 1e3, zero_sum / steps * 1e3);
    /* The rest by family: each call timed on its own, against the prediction's term. */
    double ma[F_COUNT + 2], pfa[F_COUNT + 2], pfh[F_COUNT + 2];
    const char *nms[F_COUNT + 2];
    for (int k = 0; k < F_COUNT; k++) {
      nms[k] = f_names[k];
      ma[k] = t_fam[k] / steps;
    }
    nms[F_COUNT] = "optimizer";
    ma[F_COUNT] = opt_sum / steps;
    nms[F_COUNT + 1] = "zeroing";
    ma[F_COUNT + 1] = zero_sum / steps;
    for (int k = 0; k < F_COUNT + 2; k++) {
      pfa[k] = term_s(&ra.breakdown, nms[k]);
      pfh[k] = have_h ? term_s(&rh.breakdown, nms[k]) : NAN;
      printf("    %-13s %9.3f %9.3f %9.3f\n", nms[k], ma[k] * 1e3, pfa[k] * 1e3, pfh[k] * 1e3);
    }
    printf("    (of embedding: embed %.3f ms, embed_pos %.3f ms, embed_pos.bwd %.3f ms, "
           "embed.bwd %.3f ms; stepcast ops --model FILE --dtype fp32 estimates each)\n",
           t_emb[E_EMBED] / steps * 1e3, t_emb[E_POS] / steps * 1e3,
           t_emb[E_POS_BWD] / steps * 1e3, t_emb[E_EMBED_BWD] / steps * 1e3);
  }
  printf("csv,%s,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%.5f,%.5f,%.5f\n", model_name, (long long)L,
         (long long)h, (long long)A, (long long)f, (long long)V, (long long)S, (long long)B,
         measured, ra.iteration_s, have_h ? rh.iteration_s : NAN);
  if (model_out != NULL) {
    FILE *fm = fopen(model_out, "w");
    if (fm == NULL) {
      perror(model_out);
      return 1;
    }
    fprintf(fm, "# %s scaled down by tests/bench/train_step.c for the host CPU\n[model]\n"
            "name = \"%s\"\nlayers = %lld\nhidden = %lld\nffn_hidden = %lld\nheads = %lld\n"
            "vocab = %lld\nmax_seq = %lld\nactivation = \"gelu\"\nnorm = \"layernorm\"\n"
            "position = \"learned\"\ntied_embeddings = true\nlinear_bias = true\n", model_name,
            m.name, (long long)L, (long long)h, (long long)f, (long long)A, (long long)V,
            (long long)S);
    fclose(fm);
    printf("same prediction: stepcast predict --model %s --topology host-cpu --hardware %s "
           "--dtype fp32 --micro-batch %lld --global-batch %lld --seq-len %lld "
           "--estimator hybrid\n", model_out, hardware ? hardware : "host-cpu", (long long)B,
           (long long)B, (long long)S);
  }
  sc_residuals_free(resid);
  sc_predictor_free(pr);
  sc_registry_free(reg);
  free_all();
  return 0;
}

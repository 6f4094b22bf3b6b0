/* The sampling plan (stepcast/sample.h): which operator shapes stepcast sample measures.
 * A designed plan is a space-filling set of Halton points over the log-ranges of real
 * transformer layers, per family, interleaved so that a spent time budget keeps every
 * family; a plan file lists a job's own operators (stepcast ops --csv). The runner and the
 * microbenchmarks that measure it are core/cli/sample.c's. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "stepcast/csv.h"
#include "stepcast/estimate.h"
#include "stepcast/ops.h"
#include "stepcast/sample.h"
#include "stepcast/stepcast.h"

/* Radical inverse of i in base b (Halton sequence), in [0, 1). */
static double halton(uint32_t i, uint32_t b) {
  double f = 1.0, r = 0.0;
  while (i > 0) {
    f /= b;
    r += f * (double)(i % b);
    i /= b;
  }
  return r;
}

/* The variant of point i among n: from its own Halton dimension (base 17), independent of
 * the shape's. (i % n correlates with the base-2 dimension: with n = 2 or 4 every variant
 * got one corner of the range, e.g. all layer-norm forwards had 16 to 80 rows.) */
static uint32_t vpick(uint32_t i, uint32_t n) {
  uint32_t v = (uint32_t)(halton(i, 17) * (double)n);
  return v < n ? v : n - 1;
}

/* v rounded to a multiple of q, at least q. */
static int64_t roundq(double v, int64_t q) {
  int64_t r = (int64_t)llround(v / (double)q) * q;
  return r < q ? q : r;
}

/* exp-uniform between lo and hi at u in [0,1), rounded to a multiple of q (>= q). */
static int64_t logpick(double u, double lo, double hi, int64_t q) {
  return roundq(exp(log(lo) + u * (log(hi) - log(lo))), q);
}

/* As logpick, but half of the u range below mid and half above: a plan that puts as many
 * points past the last-level cache as inside it. */
static int64_t twopick(double u, double lo, double mid, double hi, int64_t q) {
  return u < 0.5 ? logpick(2.0 * u, lo, mid, q) : logpick(2.0 * u - 1.0, mid, hi, q);
}

/* FNV-1a over what sc_op_same compares: family name, variant, dtype, flags, dims. */
static uint64_t op_hash(const sc_op_desc *o) {
  uint64_t h = 1469598103934665603ULL;
  const uint64_t v[4] = {o->variant, (uint64_t)o->dtype, o->flags, o->ndims};
  for (const char *f = o->family; f != NULL && *f; f++) {
    h ^= (unsigned char)*f;
    h *= 1099511628211ULL;
  }
  for (int i = 0; i < 4; i++) {
    h ^= v[i];
    h *= 1099511628211ULL;
  }
  for (uint32_t d = 0; d < o->ndims && d < SC_OP_MAX_DIMS; d++) {
    h ^= (uint64_t)o->dims[d];
    h *= 1099511628211ULL;
  }
  return h;
}

int sc_sample_plan_add(sc_sample_plan *p, const char *family, uint32_t variant, uint32_t ndims,
                       const int64_t *dims) {
  if (p->n == p->cap) {
    size_t nc = p->cap ? 2 * p->cap : 256;
    sc_op_desc *o = realloc(p->ops, nc * sizeof *o);
    if (o == NULL) return SC_ENOMEM;
    p->ops = o;
    p->cap = nc;
  }
  memset(&p->ops[p->n], 0, sizeof p->ops[p->n]);
  p->ops[p->n].family = family;
  p->ops[p->n].variant = variant;
  p->ops[p->n].dtype = SC_DTYPE_FP32;
  p->ops[p->n].ndims = ndims;
  memcpy(p->ops[p->n].dims, dims, ndims * sizeof *dims);
  p->n++;
  return SC_OK;
}

/* The plan of one family: count Halton points kept under a work cap. gpu != 0 (any device
 * but the host CPU): transformer-scale ranges (GEMMs up to 8192, attention sequences up to
 * 8192, memory-bound families up to 2^28 elements). On the CPU the memory-bound families go
 * up to 2^25 elements (a 2048-token x 16384 activation), well past the last-level cache, with
 * half of the points' element counts (log-uniform) below mid and half above (twopick): the
 * DRAM regime is where real layers run, and a fit whose training shapes are all
 * cache-resident cannot know it (a plain log-uniform range put a fifth of them there). */
static int plan_family(sc_sample_plan *p, const char *fam, uint32_t count, int gpu, double mid) {
  const double big = gpu ? (double)(1 << 28) : (double)(1 << 25);
  uint32_t kept = 0;
  for (uint32_t i = 1; kept < count && i < 100000; i++) {
    double u[6] = {halton(i, 2), halton(i, 3), halton(i, 5), halton(i, 7), halton(i, 11),
                   halton(i, 13)};
    int64_t d[8] = {0};
    int rc;
    if (strcmp(fam, "gemm") == 0) { /* plain: m, n, k in [32, 4096] (gpu: [64, 8192]) */
      d[0] = 1;
      d[1] = logpick(u[0], gpu ? 64 : 32, gpu ? 8192 : 4096, 16);
      d[2] = logpick(u[1], gpu ? 64 : 32, gpu ? 8192 : 4096, 16);
      d[3] = logpick(u[2], gpu ? 64 : 32, gpu ? 8192 : 4096, 16);
      if (!gpu && 2.0 * d[1] * d[2] * d[3] > 6e9) continue;
      rc = sc_sample_plan_add(p, SC_OP_GEMM, SC_GEMM_PLAIN, 4, d);
    } else if (strcmp(fam, "gemm.batched") == 0) { /* attention-shaped batched GEMMs */
      d[0] = logpick(u[0], 2, gpu ? 128 : 64, 1);
      d[1] = logpick(u[1], 32, gpu ? 8192 : 1024, 16);
      d[2] = logpick(u[2], 32, gpu ? 8192 : 1024, 16);
      d[3] = logpick(u[3], 32, 256, 16);
      if (2.0 * d[0] * d[1] * d[2] * d[3] > (gpu ? 2e12 : 3e9)) continue;
      if (gpu && (double)d[0] * d[1] * d[2] > (double)(1 << 30)) continue; /* C <= 2 GiB */
      rc = sc_sample_plan_add(p, SC_OP_GEMM, SC_GEMM_PLAIN, 4, d);
    } else if (strcmp(fam, "attention") == 0) {
      static const int64_t hd[3] = {32, 64, 128};
      d[0] = u[0] < 0.5 ? 1 : 2;
      d[1] = logpick(u[1], 1, gpu ? 64 : 16, 1);
      d[2] = (u[4] < 0.5 && d[1] % 2 == 0) ? d[1] / 2 : d[1]; /* some grouped-query */
      d[3] = logpick(u[2], gpu ? 128 : 64, gpu ? 8192 : 1024, 64);
      d[4] = d[3];
      d[5] = hd[(int)(u[3] * 3) % 3];
      d[6] = u[5] < 0.5 ? 1 : 0;
      if (!gpu && 4.0 * d[0] * d[1] * d[3] * d[4] * d[5] * (d[6] ? 0.5 : 1.0) > 2e9) continue;
      /* gpu: the unfused path keeps the batch x heads x seq^2 scores, at most 2^31 */
      if (gpu && (double)d[0] * d[1] * d[3] * d[4] > 2147483648.0) continue;
      rc = sc_sample_plan_add(p, SC_OP_ATTENTION, vpick(i, 2) ? SC_ATTN_FLASH_BWD : SC_ATTN_FLASH_FWD, 7, d);
    } else if (strcmp(fam, "norm") == 0) {
      if (gpu) {
        d[0] = logpick(u[0], 16, 65536, 16);
        d[1] = logpick(u[1], 64, 16384, 64);
      } else { /* elements half below, half above mid; then the row width */
        double n = (double)twopick(u[0], 1 << 12, mid, big, 1);
        d[1] = logpick(u[1], 64, fmin(8192.0, n / 16.0), 64);
        d[0] = roundq(fmax(16.0, n / (double)d[1]), 16);
      }
      if ((double)d[0] * d[1] > big) continue;
      rc = sc_sample_plan_add(p, SC_OP_NORM, vpick(i, SC_NORM_OP_VARIANT_COUNT), 2, d);
    } else if (strcmp(fam, "softmax") == 0) {
      if (gpu) {
        d[1] = logpick(u[1], 64, 8192, 64);
        d[0] = logpick(u[0], 64, 1 << 20, 64);
      } else {
        double n = (double)twopick(u[0], 1 << 12, mid, big, 1);
        d[1] = logpick(u[1], 64, fmin(2048.0, n / 64.0), 64);
        d[0] = roundq(fmax(64.0, n / (double)d[1]), 64);
      }
      if ((double)d[0] * d[1] > big) continue;
      rc = sc_sample_plan_add(p, SC_OP_SOFTMAX, vpick(i, SC_SOFTMAX_SAMPLED), 2, d);
    } else if (strcmp(fam, "elementwise") == 0) {
      d[0] = gpu ? logpick(u[0], 1 << 10, big, 64) : twopick(u[0], 1 << 10, mid, big, 64);
      rc = sc_sample_plan_add(p, SC_OP_ELEMENTWISE, vpick(i, SC_EW_SAMPLED), 1, d);
    } else if (strcmp(fam, "embedding") == 0) {
      d[0] = logpick(u[0], 64, 4096, 16);
      d[1] = logpick(u[1], 64, 2048, 64);
      if (gpu) {
        d[2] = logpick(u[2], 1024, 65536, 64);
      } else { /* the table (vocab_rows x hidden) half below, half above mid */
        double n = (double)twopick(u[2], 1 << 16, mid, big, 1);
        d[2] = roundq(fmax(1024.0, n / (double)d[1]), 64);
      }
      if ((double)d[2] * d[1] > big) continue;
      rc = sc_sample_plan_add(p, SC_OP_EMBEDDING, vpick(i, SC_EMBED_VARIANT_COUNT), 3, d);
    } else if (strcmp(fam, "cross_entropy") == 0) {
      if (gpu) {
        d[0] = logpick(u[0], 16, 2048, 16);
        d[1] = logpick(u[1], 1024, 65536, 64);
      } else {
        double n = (double)twopick(u[0], 1 << 14, mid, big, 1);
        d[1] = logpick(u[1], 1024, fmin(65536.0, n / 16.0), 64);
        d[0] = roundq(fmax(16.0, n / (double)d[1]), 16);
      }
      if ((double)d[0] * d[1] > big) continue;
      rc = sc_sample_plan_add(p, SC_OP_CROSS_ENTROPY, vpick(i, SC_CE_VARIANT_COUNT), 2, d);
    } else { /* optimizer */
      d[0] = gpu ? logpick(u[0], 1 << 10, 1 << 28, 64) : twopick(u[0], 1 << 10, mid, big, 64);
      rc = sc_sample_plan_add(p, SC_OP_OPTIMIZER, SC_OPTIM_ADAM, 1, d);
    }
    if (rc != SC_OK) return rc;
    kept++;
  }
  return SC_OK;
}

/* --plan: the operators of a CSV with columns family, variant, dtype and dims ("AxBx..."),
 * as `stepcast ops --csv` writes them (a kind column, where there is one, keeps the rows of
 * kind "op"). Rows of a family --families leaves out, or that the sampler does not measure
 * (memcpy), are counted in *other; an operator listed again is measured once (*dups). A
 * malformed row is a one-line error naming the file, the line and the column. */
int sc_sample_plan_read(const char *path, const char *families, sc_sample_plan *pl,
                        size_t *other, size_t *dups, sc_error *err) {
  /* each family's dims and variants (stepcast/ops.h); memcpy last, listed but not sampled */
  /* nsampled: the variants a sampler has kernels for (the others are listed, not sampled) */
  static const struct { const char *name; uint32_t ndims, nvariants, nsampled; } fams[] = {
      {SC_OP_GEMM, 4, SC_GEMM_VARIANT_COUNT, SC_GEMM_VARIANT_COUNT},
      {SC_OP_ATTENTION, 7, SC_ATTN_VARIANT_COUNT, SC_ATTN_VARIANT_COUNT},
      {SC_OP_NORM, 2, SC_NORM_OP_VARIANT_COUNT, SC_NORM_OP_VARIANT_COUNT},
      {SC_OP_SOFTMAX, 2, SC_SOFTMAX_SAMPLED, SC_SOFTMAX_SAMPLED},
      {SC_OP_ELEMENTWISE, 1, SC_EW_VARIANT_COUNT, SC_EW_SAMPLED},
      {SC_OP_OPTIMIZER, 1, SC_OPTIM_VARIANT_COUNT, SC_OPTIM_VARIANT_COUNT},
      {SC_OP_EMBEDDING, 3, SC_EMBED_VARIANT_COUNT, SC_EMBED_VARIANT_COUNT},
      {SC_OP_CROSS_ENTROPY, 2, SC_CE_VARIANT_COUNT, SC_CE_VARIANT_COUNT},
      {SC_OP_MEMCPY, 1, SC_MEMCPY_VARIANT_COUNT, SC_MEMCPY_VARIANT_COUNT}};
  const size_t nfams = sizeof fams / sizeof fams[0];
  static const char *const cols[] = {"family", "variant", "dtype", "dims"};
  int idx[4], kind;
  sc_csv *c = NULL;
  size_t *slot = NULL, cap = 16; /* the plan's operators by op_hash: plan index + 1 */
  int rc = sc_csv_load(path, &c, err);
  *other = *dups = 0;
  if (rc != SC_OK) return rc;
  if ((rc = sc_csv_require(c, cols, 4, idx, err)) != SC_OK) goto out;
  while (cap < 2 * sc_csv_nrows(c) + 2) cap *= 2;
  if ((slot = calloc(cap, sizeof *slot)) == NULL) {
    rc = sc_error_set(err, SC_ENOMEM, "sample: out of memory");
    goto out;
  }
  kind = sc_csv_column(c, "kind");
  for (size_t r = 0; r < sc_csv_nrows(c); r++) {
    const unsigned line = sc_csv_line(c, r);
    const char *fam = sc_csv_field(c, r, (size_t)idx[0]), *fs = NULL;
    size_t fi = nfams;
    const char *dt = sc_csv_field(c, r, (size_t)idx[2]), *dims = sc_csv_field(c, r, (size_t)idx[3]);
    sc_op_desc o;
    uint32_t variant;
    int known;
    if (kind >= 0 && strcmp(sc_csv_field(c, r, (size_t)kind), "op") != 0) continue;
    for (size_t k = 0; k < nfams; k++)
      if (strcmp(fam, fams[k].name) == 0) fi = k;
    if (fi < nfams - 1) fs = fams[fi].name; /* memcpy: listed, not sampled */
    if (fi == nfams) {
      rc = sc_error_set(err, SC_EPARSE, "%s:%u: column 'family': '%s' is not an operator "
                        "family (gemm, attention, norm, softmax, elementwise, optimizer, "
                        "embedding, cross_entropy, memcpy)", path, line, fam);
      goto out;
    }
    if ((rc = sc_csv_u32(c, r, (size_t)idx[1], &variant, &known, err)) != SC_OK) goto out;
    if (!known || variant >= fams[fi].nvariants) {
      rc = sc_error_set(err, SC_EPARSE, "%s:%u: column 'variant': %s%s (%s has %u variants, "
                        "0 to %u)", path, line, known ? "" : "empty",
                        known ? sc_csv_field(c, r, (size_t)idx[1]) : "", fam,
                        fams[fi].nvariants, fams[fi].nvariants - 1);
      goto out;
    }
    memset(&o, 0, sizeof o);
    o.family = fs;
    o.variant = variant;
    if (sc_dtype_parse(dt, &o.dtype) != SC_OK) {
      rc = sc_error_set(err, SC_EPARSE, "%s:%u: column 'dtype': '%s' is not a dtype", path,
                        line, dt);
      goto out;
    }
    int bad = 0;
    /* AxBx..., whole numbers >= 1 (attention's causal: 0 or 1) */
    for (const char *q = dims; !bad;) {
      char *end;
      long long v;
      const int causal = fi == 1 && o.ndims == 6;
      errno = 0;
      v = strtoll(q, &end, 10);
      bad = end == q || errno != 0 || v < (causal ? 0 : 1) || (causal && v > 1) ||
            o.ndims == fams[fi].ndims || (*end != 'x' && *end != '\0') || *q == '-' ||
            *q == '+' || *q == ' ';
      if (bad) break;
      o.dims[o.ndims++] = (int64_t)v;
      if (*end == '\0') break;
      q = end + 1;
    }
    if (bad || o.ndims != fams[fi].ndims) {
      rc = sc_error_set(err, SC_EPARSE, "%s:%u: column 'dims': '%s' is not %s's %u whole "
                        "numbers >= 1 joined by 'x'%s", path, line, dims, fam, fams[fi].ndims,
                        fi == 1 ? " (the last, causal, 0 or 1)" : "");
      goto out;
    }
    if (fs == NULL || !sc_name_in_list(families, fs) || o.variant >= fams[fi].nsampled) {
      (*other)++;
      continue;
    }
    /* an operator listed again: found in the hash table (open addressing), not by a pass
     * over the plan (a plan of n rows was n^2 / 2 comparisons) */
    o.family = fs;
    size_t h = (size_t)op_hash(&o) & (cap - 1);
    while (slot[h] != 0 && !sc_op_same(&pl->ops[slot[h] - 1], &o)) h = (h + 1) & (cap - 1);
    if (slot[h] != 0) {
      (*dups)++;
      continue;
    }
    if ((rc = sc_sample_plan_add(pl, fs, o.variant, o.ndims, o.dims)) != SC_OK) {
      rc = sc_error_set(err, SC_ENOMEM, "sample: out of memory");
      goto out;
    }
    pl->ops[pl->n - 1].dtype = o.dtype;
    slot[h] = pl->n;
  }
  if (pl->n == 0)
    rc = sc_error_set(err, SC_EPARSE, "%s: no operator to measure (%zu rows of other families "
                      "or kinds)", path, *other);
out:
  free(slot);
  sc_csv_free(c);
  return rc;
}

/* The run's plan: each family's points (a quarter of them with quick), interleaved so
 * that a spent budget keeps every family, all in dtype. GEMM (72 plain, 24 batched) and
 * embedding (48) have the most: their rooflines err most (4-5 % held out on the Zen 4
 * guest), so their held-out check and the chained splits the rule judges them on need the
 * rows (48/16 and 32 until 2026-11-26; the Halton points are a prefix of these). */
int sc_sample_plan_build(sc_sample_plan *pl, const char *families, int quick, int gpu,
                         double mid, sc_dtype dtype) {
  static const struct { const char *name, *fam; uint32_t count; } parts[] = {
      {"gemm", "gemm", 72},       {"gemm.batched", "gemm", 24}, {"attention", "attention", 48},
      {"norm", "norm", 48},       {"softmax", "softmax", 32},   {"elementwise", "elementwise", 88},
      {"optimizer", "optimizer", 24}, {"embedding", "embedding", 48},
      {"cross_entropy", "cross_entropy", 32}};
  sc_sample_plan per[9] = {{0}};
  size_t maxn = 0;
  int prc = SC_OK;
  for (size_t k = 0; k < 9 && prc == SC_OK; k++) {
    if (!sc_name_in_list(families, parts[k].fam)) continue;
    prc = plan_family(&per[k], parts[k].name, quick ? (parts[k].count + 3) / 4 : parts[k].count,
                      gpu, mid);
    if (per[k].n > maxn) maxn = per[k].n;
  }
  for (size_t j = 0; j < maxn && prc == SC_OK; j++) {
    for (size_t k = 0; k < 9 && prc == SC_OK; k++) {
      if (j < per[k].n)
        prc = sc_sample_plan_add(pl, per[k].ops[j].family, per[k].ops[j].variant, per[k].ops[j].ndims,
                       per[k].ops[j].dims);
    }
  }
  for (size_t k = 0; k < 9; k++) free(per[k].ops);
  for (size_t j = 0; j < pl->n; j++) pl->ops[j].dtype = dtype;
  return prc;
}


void sc_sample_plan_free(sc_sample_plan *pl) {
  if (pl == NULL) return;
  free(pl->ops);
  pl->ops = NULL;
  pl->n = pl->cap = 0;
}

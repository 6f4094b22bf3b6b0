/* stepcast sweep: every parallel configuration of a model on N GPUs, the best K; with
 * --vary, the search again for each variant of a hypothetical device or network.
 * Threads (--threads) and, when built with SC_MPI and started by mpirun, MPI ranks. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "common/checked.h"
#include "stepcast/afile.h"
#include "job.h"
#include "stepcast/estimate.h"
#include "stepcast/predict.h"
#include "stepcast/report.h"
#include "stepcast/sweep.h"

#ifdef SC_HAVE_MPI
#include <mpi.h>
#endif

#define MAX_VARY 4
#define MAX_THREADS 256
#define MAX_GPU_COUNTS 16
/* Units of the k-th GPU count follow those of the ones before (a space has far fewer). */
#define GPU_UNIT_SHIFT 40

static void sweep_usage(FILE *out) {
  fprintf(out,
          "usage: stepcast sweep --model M --topology T --gpus N[,N2,...] --global-batch B\n"
          "                      [options] [--top K] [--threads N] [--json | --csv]\n"
          "                      [--objective time|cost|energy]\n"
          "                      [--vary FIELD=V1,V2,... ]... [--plot FILE.svg]\n\n"
          "Enumerates every parallel configuration of the model on N GPUs (dp derived), skips\n"
          "what does not divide or fit (counting why), predicts the rest and prints the K\n"
          "fastest with their breakdown (or, --objective, the cheapest or least energy to train\n"
          "--tokens; several --gpus counts are searched one after the other). Under mpirun\n"
          "(built with SC_MPI) the ranks share the space and rank 0 prints the same answer as\n"
          "a serial run.\n\n"
          "dimensions (comma lists; default: every divisor / every choice):\n"
          "  --tp, --pp, --cp LIST      degrees (default: divisors of --gpus)\n"
          "  --micro-batch LIST         sequences per micro-batch (default: divisors of B)\n"
          "  --ep, --etp LIST           expert parallel and expert tensor parallel degrees of a\n"
          "                             mixture of experts (default 1)\n"
          "  --schedule LIST            gpipe, 1f1b, interleaved, zb-h1, dualpipe (default:\n"
          "                             gpipe, 1f1b, interleaved)\n"
          "  --virtual-stages LIST      for interleaved (default 2,3,4,6,8)\n"
          "  --recompute LIST           none, selective, full (default: all)\n"
          "  --sequence-parallel LIST   off, on (default: both)\n"
          "  --distributed-optimizer LIST  off, on (default: both)\n"
          "  --zero-stage LIST        ZeRO stages 0-3 instead (0 = off, 1 = the distributed\n"
          "                           optimizer, 2, 3 = FSDP; over the whole DP x CP group)\n\n"
          "fixed job options: --model --topology --hardware --gpus --global-batch --seq-len\n"
          "  --dtype --flash-attention --overlap-grad-reduce --overlap-param-gather\n"
          "  --overlap-tp-comm --estimator --algo --tokens --allow-oom --power-fraction --pue\n"
          "  --price-per-gpu-hour (as for predict)\n\n"
          "search and output:\n"
          "  --objective O            rank by time (default: the iteration time), cost (of\n"
          "                           --tokens at --price-per-gpu-hour) or energy (of --tokens:\n"
          "                           board power x --power-fraction x --pue)\n"
          "  --top K                  configurations printed (default 10)\n"
          "  --threads N              worker threads (default 1)\n"
          "  --no-prune               simulate every valid configuration (no lower-bound cut)\n"
          "  --exact                  predict every configuration with sc_predict itself\n"
          "  --json | --csv           every predicted configuration (pruning off)\n"
          "  --vary FIELD=V1,V2       re-run for each value: hardware.<field> of sc_device or\n"
          "                           topology.tier[I].<field> of sc_tier; 1.5x multiplies,\n"
          "                           a number sets; several --vary: the cross product\n"
          "  --plot FILE.svg          best time against the first --vary\n");
}

/* ------------------------------------------------------------------------- */
/* Lists                                                                     */

static int parse_u32_list(const char *opt, const char *v, uint32_t *out, uint32_t *n) {
  *n = 0;
  const char *p = v;
  for (;;) {
    char *end = NULL;
    if (*p < '0' || *p > '9')
      return sc_cli_usage_error("sweep", "--%s: '%s' is not a list of positive integers", opt, v);
    errno = 0;
    unsigned long long x = strtoull(p, &end, 10);
    uint32_t max = sc__size_limit(opt); /* common/checked.h; 0: not a parallel size */
    if ((errno != 0 && errno != ERANGE) || x == 0 || (*end != ',' && *end != '\0'))
      return sc_cli_usage_error("sweep", "--%s: '%s' is not a list of positive integers", opt, v);
    if (errno == ERANGE || x > (max ? max : UINT32_MAX))
      return sc_cli_usage_error("sweep", "--%s: %.*s is out of range (at most %u)", opt,
                                (int)(end - p), p, max ? max : UINT32_MAX);
    if (*n >= SC_SWEEP_MAX_CHOICES)
      return sc_cli_usage_error("sweep", "--%s: more than %d values", opt, SC_SWEEP_MAX_CHOICES);
    out[(*n)++] = (uint32_t)x;
    if (*end == '\0') return 0;
    p = end + 1;
  }
}

/* Split v at commas into words (each < 32 bytes); returns the count or -1. */
static int words(const char *v, char w[][32], int cap) {
  int n = 0;
  const char *p = v;
  for (;;) {
    const char *c = strchr(p, ',');
    size_t len = c ? (size_t)(c - p) : strlen(p);
    if (len == 0 || len >= 32 || n >= cap) return -1;
    memcpy(w[n], p, len);
    w[n][len] = '\0';
    n++;
    if (c == NULL) return n;
    p = c + 1;
  }
}

static int parse_onoff(const char *opt, const char *v, int *out, uint32_t *n) {
  char w[4][32];
  int k = words(v, w, 2);
  if (k < 0) return sc_cli_usage_error("sweep", "--%s: '%s' is not a list of off, on", opt, v);
  for (int i = 0; i < k; i++) {
    if (strcmp(w[i], "on") == 0 || strcmp(w[i], "true") == 0) out[i] = 1;
    else if (strcmp(w[i], "off") == 0 || strcmp(w[i], "false") == 0) out[i] = 0;
    else return sc_cli_usage_error("sweep", "--%s: '%s' is not off or on", opt, w[i]);
  }
  if (k == 2 && out[0] == out[1])
    return sc_cli_usage_error("sweep", "--%s: '%s' repeats a value", opt, v);
  *n = (uint32_t)k;
  return 0;
}

/* ------------------------------------------------------------------------- */
/* Output of every predicted configuration: per-thread text, segments by unit */

typedef struct seg {
  uint64_t unit;
  uint64_t off, len;
} seg;

typedef struct tbuf {
  FILE *f;
  char *buf;
  size_t size;
  seg *segs;
  size_t nseg, capseg;
  int failed;
} tbuf;

typedef struct emit_ctx {
  tbuf t[MAX_THREADS];
  uint32_t n;
  int json;
  int csv_training;      /* CSV rows end with the training columns (csv_row) */
  uint64_t unit_base;    /* of the GPU count being swept (k << GPU_UNIT_SHIFT) */
} emit_ctx;

/* sc_report_csv_header / _row, and with training the columns predict's CSV lacks
 * (gpu_hours, energy_j, cost of the token budget; empty where they do not apply). r NULL:
 * the header. */
static int csv_row(FILE *out, const sc_result *r, int training, sc_error *err) {
  if (!training) return r ? sc_report_csv_row(out, r, err) : sc_report_csv_header(out, err);
  char *buf = NULL;
  size_t n = 0;
  FILE *m = open_memstream(&buf, &n);
  if (m == NULL) return sc_error_set(err, SC_ENOMEM, "sweep: out of memory");
  int rc = r ? sc_report_csv_row(m, r, err) : sc_report_csv_header(m, err);
  if (fclose(m) != 0 && rc == SC_OK) rc = sc_error_set(err, SC_ENOMEM, "sweep: out of memory");
  if (rc == SC_OK) {
    if (n > 0 && buf[n - 1] == '\n') n--;
    fwrite(buf, 1, n, out);
    if (r == NULL) {
      fputs(",gpu_hours,energy_j,cost\n", out);
    } else {
      int budget = r->token_budget > 0;
      fputc(',', out);
      if (budget) fprintf(out, "%.12g", r->gpu_hours);
      fputc(',', out);
      if (budget && r->board_power_w > 0) fprintf(out, "%.12g", r->energy_j);
      fputc(',', out);
      if (budget && r->price_per_gpu_hour > 0) fprintf(out, "%.12g", r->cost);
      fputc('\n', out);
    }
    if (ferror(out)) rc = sc_error_set(err, SC_EIO, "sweep: csv: write error");
  }
  free(buf);
  return rc;
}

static int emit_visit(void *ud, uint32_t thread, uint64_t unit, uint64_t index,
                      const sc_result *r) {
  emit_ctx *c = ud;
  tbuf *b = &c->t[thread];
  sc_error err;
  (void)index;
  long at = ftell(b->f);
  if (at < 0) return 1;
  if (b->nseg == 0 || b->segs[b->nseg - 1].unit != c->unit_base + unit) {
    if (b->nseg == b->capseg) {
      size_t nc = b->capseg ? 2 * b->capseg : 64;
      seg *s = realloc(b->segs, nc * sizeof *s);
      if (s == NULL) return 1;
      b->segs = s;
      b->capseg = nc;
    }
    b->segs[b->nseg++] = (seg){c->unit_base + unit, (uint64_t)at, 0};
  }
  if (c->json) {
    fputc(',', b->f);
    if (sc_report_json(b->f, r, &err) != SC_OK) return 1;
  } else if (csv_row(b->f, r, c->csv_training, &err) != SC_OK) {
    return 1;
  }
  long end = ftell(b->f);
  if (end < 0) return 1;
  b->segs[b->nseg - 1].len = (uint64_t)end - b->segs[b->nseg - 1].off;
  return 0;
}

static int emit_open(emit_ctx *c, uint32_t n, int json) {
  memset(c, 0, sizeof *c);
  c->n = n;
  c->json = json;
  for (uint32_t i = 0; i < n; i++) {
    c->t[i].f = open_memstream(&c->t[i].buf, &c->t[i].size);
    if (c->t[i].f == NULL) return -1;
  }
  return 0;
}

/* Close the streams: afterwards t[i].buf/size hold the text. */
static int emit_close(emit_ctx *c) {
  int rc = 0;
  for (uint32_t i = 0; i < c->n; i++) {
    if (c->t[i].f != NULL && fclose(c->t[i].f) != 0) rc = -1;
    c->t[i].f = NULL;
  }
  return rc;
}

static void emit_free(emit_ctx *c) {
  emit_close(c);
  for (uint32_t i = 0; i < c->n; i++) {
    free(c->t[i].buf);
    free(c->t[i].segs);
  }
}

/* A flat text + segment list (what a rank contributes). */
typedef struct flat {
  char *text;
  uint64_t ntext;
  seg *segs;
  uint64_t nseg;
} flat;

static int flatten(const emit_ctx *c, flat *f) {
  memset(f, 0, sizeof *f);
  for (uint32_t i = 0; i < c->n; i++) {
    f->ntext += c->t[i].size;
    f->nseg += c->t[i].nseg;
  }
  f->text = malloc(f->ntext + 1);
  f->segs = malloc((f->nseg + 1) * sizeof *f->segs);
  if (f->text == NULL || f->segs == NULL) return -1;
  uint64_t off = 0, k = 0;
  for (uint32_t i = 0; i < c->n; i++) {
    if (c->t[i].size) memcpy(f->text + off, c->t[i].buf, c->t[i].size);
    for (size_t j = 0; j < c->t[i].nseg; j++) {
      f->segs[k] = c->t[i].segs[j];
      f->segs[k].off += off;
      k++;
    }
    off += c->t[i].size;
  }
  return 0;
}

static int seg_cmp(const void *a, const void *b) {
  const seg *x = a, *y = b;
  return x->unit < y->unit ? -1 : x->unit > y->unit;
}

/* Write the segments in unit order (= the serial enumeration order). */
static void write_segments(FILE *out, flat *f, int json) {
  int first = 1;
  qsort(f->segs, f->nseg, sizeof *f->segs, seg_cmp);
  for (uint64_t i = 0; i < f->nseg; i++) {
    const char *p = f->text + f->segs[i].off;
    size_t len = f->segs[i].len;
    if (json && first && len > 0) {
      p++; /* the first object has no comma before it */
      len--;
    }
    fwrite(p, 1, len, out);
    first = 0;
  }
}

/* ------------------------------------------------------------------------- */
/* MPI (only when built with it and started by a launcher)                    */

typedef struct mpi_state {
  int on, rank, size;
} mpi_state;

static void mpi_start(mpi_state *m, int *argc, char ***argv) {
  m->on = 0;
  m->rank = 0;
  m->size = 1;
#ifdef SC_HAVE_MPI
  if (getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE") || getenv("PMIX_RANK")) {
    MPI_Init(argc, argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &m->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &m->size);
    m->on = 1;
  }
#else
  (void)argc;
  (void)argv;
#endif
}

static void mpi_stop(mpi_state *m) {
#ifdef SC_HAVE_MPI
  if (m->on) MPI_Finalize();
#endif
  m->on = 0;
}

/* Did any rank fail? (collective; ok on every rank when MPI is off) */
static int mpi_any(const mpi_state *m, int failed) {
#ifdef SC_HAVE_MPI
  if (m->on) {
    int any = 0;
    MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return any;
  }
#else
  (void)m;
#endif
  return failed;
}

/* Gather every rank's result into rank 0's *r (merged in rank order). */
static int mpi_gather_result(const mpi_state *m, sc_sweep_result *r, sc_error *err) {
#ifdef SC_HAVE_MPI
  if (!m->on || m->size == 1) return SC_OK;
  sc_sweep_result hdr = *r;
  hdr.top = NULL;
  int nbytes = (int)(r->ntop * sizeof(sc_sweep_entry));
  sc_sweep_result *hdrs = NULL;
  int *counts = NULL, *displs = NULL;
  char *all = NULL;
  if (m->rank == 0) {
    hdrs = calloc((size_t)m->size, sizeof *hdrs);
    counts = calloc((size_t)m->size, sizeof *counts);
    displs = calloc((size_t)m->size, sizeof *displs);
  }
  MPI_Gather(&hdr, (int)sizeof hdr, MPI_BYTE, hdrs, (int)sizeof hdr, MPI_BYTE, 0, MPI_COMM_WORLD);
  MPI_Gather(&nbytes, 1, MPI_INT, counts, 1, MPI_INT, 0, MPI_COMM_WORLD);
  long total = 0;
  if (m->rank == 0) {
    for (int i = 0; i < m->size; i++) {
      displs[i] = (int)total;
      total += counts[i];
    }
    all = malloc((size_t)total + 1);
  }
  MPI_Gatherv(r->top, nbytes, MPI_BYTE, all, counts, displs, MPI_BYTE, 0, MPI_COMM_WORLD);
  int rc = SC_OK;
  if (m->rank == 0) {
    sc_sweep_result merged;
    memset(&merged, 0, sizeof merged);
    merged.top_k = r->top_k;
    merged.objective = r->objective;
    merged.space = r->space;
    for (int i = 0; i < m->size && rc == SC_OK; i++) {
      hdrs[i].top = (sc_sweep_entry *)(all + displs[i]);
      rc = sc_sweep_result_merge(&merged, &hdrs[i], err);
      if (hdrs[i].elapsed_s > merged.elapsed_s) merged.elapsed_s = hdrs[i].elapsed_s;
    }
    sc_sweep_result_free(r);
    *r = merged;
  }
  free(hdrs);
  free(counts);
  free(displs);
  free(all);
  return rc;
#else
  (void)m;
  (void)r;
  (void)err;
  return SC_OK;
#endif
}

/* Gather every rank's flat text into rank 0's *f. */
static int mpi_gather_flat(const mpi_state *m, flat *f) {
#ifdef SC_HAVE_MPI
  if (!m->on || m->size == 1) return 0;
  int n[2] = {(int)f->ntext, (int)(f->nseg * sizeof(seg))};
  int *cnt = NULL, *tcnt = NULL, *tdis = NULL, *scnt = NULL, *sdis = NULL;
  char *text = NULL, *segs = NULL;
  if (m->rank == 0) {
    cnt = calloc(2 * (size_t)m->size, sizeof *cnt);
    tcnt = calloc((size_t)m->size, sizeof *tcnt);
    tdis = calloc((size_t)m->size, sizeof *tdis);
    scnt = calloc((size_t)m->size, sizeof *scnt);
    sdis = calloc((size_t)m->size, sizeof *sdis);
  }
  MPI_Gather(n, 2, MPI_INT, cnt, 2, MPI_INT, 0, MPI_COMM_WORLD);
  long tt = 0, st = 0;
  if (m->rank == 0) {
    for (int i = 0; i < m->size; i++) {
      tcnt[i] = cnt[2 * i];
      scnt[i] = cnt[2 * i + 1];
      tdis[i] = (int)tt;
      sdis[i] = (int)st;
      tt += tcnt[i];
      st += scnt[i];
    }
    text = malloc((size_t)tt + 1);
    segs = malloc((size_t)st + sizeof(seg));
  }
  MPI_Gatherv(f->text, n[0], MPI_BYTE, text, tcnt, tdis, MPI_BYTE, 0, MPI_COMM_WORLD);
  MPI_Gatherv(f->segs, n[1], MPI_BYTE, segs, scnt, sdis, MPI_BYTE, 0, MPI_COMM_WORLD);
  if (m->rank == 0) {
    seg *s = (seg *)segs;
    for (int i = 0; i < m->size; i++)
      for (int j = 0; j < scnt[i] / (int)sizeof(seg); j++)
        s[sdis[i] / (int)sizeof(seg) + j].off += (uint64_t)tdis[i];
    free(f->text);
    free(f->segs);
    f->text = text;
    f->ntext = (uint64_t)tt;
    f->segs = s;
    f->nseg = (uint64_t)st / sizeof(seg);
  }
  free(cnt);
  free(tcnt);
  free(tdis);
  free(scnt);
  free(sdis);
  return 0;
#else
  (void)m;
  (void)f;
  return 0;
#endif
}

/* ------------------------------------------------------------------------- */
/* Printing                                                                  */

static const char *onoff(int b) { return b ? "on" : "off"; }

/* The data-parallel sharding column ("do"): off, on (the distributed optimizer), z2, z3. */
static const char *sharding(const sc_parallel *p) {
  static const char *const n[4] = {"off", "on", "z2", "z3"};
  return n[sc_parallel_zero(p) & 3u];
}

static void describe(char *buf, size_t cap, const sc_parallel *p) {
  int n = snprintf(buf, cap, "tp %u pp %u dp %u cp %u mb %u %s%s%.0u rc %s sp %s do %s", p->tp,
                   p->pp, p->dp, p->cp, p->micro_batch, sc_cli_schedule_name(p->schedule),
                   p->schedule == SC_SCHED_INTERLEAVED ? " vp " : "",
                   p->schedule == SC_SCHED_INTERLEAVED ? p->virtual_stages : 0u,
                   sc_recompute_name(p->recompute), onoff(p->sequence_parallel), sharding(p));
  if (sc_parallel_ep(p) * sc_parallel_etp(p) > 1 && n > 0 && (size_t)n < cap)
    snprintf(buf + n, cap - (size_t)n, " ep %u etp %u", sc_parallel_ep(p), sc_parallel_etp(p));
}

static void print_counts(FILE *out, const sc_sweep_result *r) {
  fprintf(out, "space %llu configurations: %llu predicted, %llu pruned (bound above the top %u)",
          (unsigned long long)r->space, (unsigned long long)r->predicted,
          (unsigned long long)r->pruned, r->top_k);
  for (int i = 0; i < SC_SWEEP_NSKIP; i++)
    if (r->skipped[i])
      fprintf(out, ", %llu %s", (unsigned long long)r->skipped[i],
              sc_sweep_skip_name((sc_sweep_skip)i));
  fprintf(out, "\n");
}

/* What a table row adds with --objective or several GPU counts: the GPU count (when more
 * than one), and with a token budget its days, GPU-hours, energy and cost. */
typedef struct extra_cols {
  int on, gpus, training;
} extra_cols;

static void training_header(FILE *out, const extra_cols *e) {
  if (e->training) fprintf(out, " | %8s %10s %9s %12s", "days", "GPU-hours", "MWh", "cost");
}

static void training_cols(FILE *out, const extra_cols *e, const sc_result *x) {
  if (!e->training) return;
  fprintf(out, " | %8.2f %10.0f", x->time_to_train_s / 86400.0, x->gpu_hours);
  if (x->board_power_w > 0) fprintf(out, " %9.3f", x->energy_j / 3.6e9);
  else fprintf(out, " %9s", "-");
  if (x->price_per_gpu_hour > 0) fprintf(out, " %12.2f", x->cost);
  else fprintf(out, " %12s", "-");
}

static void print_top(FILE *out, const sc_sweep_result *r, const extra_cols *e) {
  fprintf(out, "%4s %10s %5s %7s  ", "rank", "iter(ms)", "MFU%", "TFLOP/s");
  if (e->gpus) fprintf(out, "%-6s", "gpus");
  fprintf(out, "%-4s %-4s %-5s %-4s %-4s %-11s %-9s %-3s %-3s %8s | %9s %8s %8s %8s %8s %8s %8s",
          "tp", "pp", "dp", "cp", "mb", "schedule", "recompute", "sp", "do", "mem(GiB)",
          "compute", "tp", "cp", "dp", "p2p", "bubble", "optim");
  training_header(out, e);
  fprintf(out, "\n");
  for (uint32_t i = 0; i < r->ntop; i++) {
    const sc_result *x = &r->top[i].result;
    const sc_parallel *p = &x->parallel;
    const sc_sched_breakdown *b = &x->breakdown;
    char sched[24];
    if (p->schedule == SC_SCHED_INTERLEAVED)
      snprintf(sched, sizeof sched, "interl. v%u", p->virtual_stages);
    else
      snprintf(sched, sizeof sched, "%s", sc_cli_schedule_name(p->schedule));
    fprintf(out, "%4u %10.2f %5.1f %7.1f  ", i + 1, x->iteration_s * 1e3, x->mfu * 100,
            x->model_tflops_per_gpu);
    if (e->gpus) fprintf(out, "%-6u", x->gpus);
    fprintf(out,
            "%-4u %-4u %-5u %-4u %-4u %-11s %-9s %-3s %-3s %8.1f | %9.2f "
            "%8.2f %8.2f %8.2f %8.2f %8.2f %8.2f",
            p->tp, p->pp,
            p->dp, p->cp, p->micro_batch, sched, sc_recompute_name(p->recompute),
            onoff(p->sequence_parallel), sharding(p),
            x->memory.total_bytes / 1073741824.0,
            (b->compute_fwd_s + b->compute_recompute_s + b->compute_bwd_s) * 1e3,
            b->tp_exposed_s * 1e3, b->cp_exposed_s * 1e3, b->dp_exposed_s * 1e3,
            b->p2p_exposed_s * 1e3, b->bubble_s * 1e3, b->optimizer_s * 1e3);
    training_cols(out, e, x);
    fprintf(out, "\n");
  }
  if (r->ntop == 0) fprintf(out, "(no configuration fits)\n");
  /* a mixture of experts: the expert degrees of each row */
  for (uint32_t i = 0; i < r->ntop; i++) {
    const sc_parallel *p = &r->top[i].result.parallel;
    if (sc_parallel_ep(p) * sc_parallel_etp(p) > 1)
      fprintf(out, "%4u ep %u etp %u (edp %u)\n", i + 1, sc_parallel_ep(p), sc_parallel_etp(p),
              sc_parallel_edp(p));
  }
}

static void json_counts(FILE *out, const sc_sweep_result *r) {
  fprintf(out, "\"space\": %llu, \"predicted\": %llu, \"pruned\": %llu, \"skipped\": {",
          (unsigned long long)r->space, (unsigned long long)r->predicted,
          (unsigned long long)r->pruned);
  for (int i = 0; i < SC_SWEEP_NSKIP; i++)
    fprintf(out, "%s\"%s\": %llu", i ? ", " : "", sc_sweep_skip_name((sc_sweep_skip)i),
            (unsigned long long)r->skipped[i]);
  fprintf(out, "}");
}

/* ------------------------------------------------------------------------- */
/* Plot: best time against the first --vary, one line per value of the others */

static void svg_text(FILE *f, const char *s) {
  for (; *s; s++) {
    if (*s == '<') fputs("&lt;", f);
    else if (*s == '>') fputs("&gt;", f);
    else if (*s == '&') fputs("&amp;", f);
    else if (*s == '"') fputs("&quot;", f);
    else fputc(*s, f);
  }
}

static double nice_step(double span, int want) {
  double raw = span / want;
  double p10 = pow(10.0, floor(log10(raw)));
  double m = raw / p10;
  return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p10;
}

/* best_s[i] * scale is drawn (in the unit ylabel names). */
static int write_plot(const char *path, const sc_vary *v, uint32_t nv, const double *best_s,
                      uint32_t nvar, double scale, const char *ylabel, const char *title,
                      sc_error *err) {
  static const char *const colours[] = {"#0072B2", "#D55E00", "#009E73", "#CC79A7",
                                        "#E69F00", "#56B4E9", "#000000", "#F0E442"};
  sc_afile af; /* a temporary renamed over path once whole: a failure keeps the old file */
  int rc = sc_afile_open(&af, path, err);
  if (rc != SC_OK) return rc;
  FILE *f = af.f;
  const double W = 720, H = 440, L = 80, R = 200, T = 50, B = 70;
  double pw = W - L - R, ph = H - T - B;
  uint32_t nx = v[0].nvalues, nser = nvar / nx;
  double ymax = 0;
  for (uint32_t i = 0; i < nvar; i++)
    if (isfinite(best_s[i]) && best_s[i] * scale > ymax) ymax = best_s[i] * scale;
  if (!(ymax > 0)) ymax = 1;
  double step = nice_step(ymax, 5);
  double ytop = ceil(ymax / step) * step;
  fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
             "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%.0f\" "
             "height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\">\n"
             "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
          W, H, W, H);
  fprintf(f, "<text x=\"%.0f\" y=\"28\" font-size=\"15\" text-anchor=\"middle\">", W / 2);
  svg_text(f, title);
  fprintf(f, "</text>\n");
  /* axes and y ticks */
  fprintf(f, "<g stroke=\"#333\" stroke-width=\"1\"><line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
             "y2=\"%.1f\"/><line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/></g>\n",
          L, T, L, T + ph, L, T + ph, L + pw, T + ph);
  for (double y = 0; y <= ytop + step * 1e-9; y += step) {
    double py = T + ph - ph * y / ytop;
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", L, py,
            L + pw, py);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\">%g</text>\n",
            L - 6, py + 4, y);
  }
  fprintf(f, "<text x=\"18\" y=\"%.1f\" font-size=\"12\" text-anchor=\"middle\" "
             "transform=\"rotate(-90 18 %.1f)\">",
          T + ph / 2, T + ph / 2);
  svg_text(f, ylabel);
  fprintf(f, "</text>\n");
  /* x positions: the values of the first --vary, evenly spaced */
  for (uint32_t i = 0; i < nx; i++) {
    double px = L + (nx > 1 ? pw * i / (nx - 1) : pw / 2);
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>\n", px,
            T + ph, px, T + ph + 5);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"middle\">", px,
            T + ph + 18);
    svg_text(f, v[0].text[i]);
    fprintf(f, "</text>\n");
  }
  fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" text-anchor=\"middle\">", L + pw / 2,
          T + ph + 44);
  svg_text(f, v[0].field);
  fprintf(f, "</text>\n");
  /* one series per combination of the other --vary (variant index = x + nx * series) */
  for (uint32_t s = 0; s < nser; s++) {
    const char *col = colours[s % (sizeof colours / sizeof colours[0])];
    fprintf(f,
            "<polyline class=\"series\" fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"",
            col);
    for (uint32_t i = 0; i < nx; i++) {
      double t = best_s[s * nx + i];
      if (!isfinite(t)) continue;
      double px = L + (nx > 1 ? pw * i / (nx - 1) : pw / 2);
      fprintf(f, "%.1f,%.1f ", px, T + ph - ph * t * scale / ytop);
    }
    fprintf(f, "\"/>\n");
    for (uint32_t i = 0; i < nx; i++) {
      double t = best_s[s * nx + i];
      if (!isfinite(t)) continue;
      double px = L + (nx > 1 ? pw * i / (nx - 1) : pw / 2);
      fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"%s\"/>\n", px,
              T + ph - ph * t * scale / ytop, col);
    }
    /* legend: the other fields' values of this series */
    char lab[256] = "";
    size_t k = 0;
    uint32_t rest = s;
    for (uint32_t j = 1; j < nv && k < sizeof lab; j++) {
      uint32_t vi = rest % v[j].nvalues;
      rest /= v[j].nvalues;
      k += (size_t)snprintf(lab + k, sizeof lab - k, "%s%s=%s", j > 1 ? ", " : "", v[j].field,
                            v[j].text[vi]);
    }
    if (nv == 1) snprintf(lab, sizeof lab, "best configuration");
    double ly = T + 14 + 18.0 * s;
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
               "stroke-width=\"2\"/>\n", L + pw + 12, ly, L + pw + 30, ly, col);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\">", L + pw + 34, ly + 4);
    svg_text(f, lab);
    fprintf(f, "</text>\n");
  }
  fprintf(f, "</svg>\n");
  return sc_afile_commit(&af, err);
}

/* ------------------------------------------------------------------------- */

typedef struct sweep_args {
  sc_cli_job job;
  sc_sweep_space space[MAX_GPU_COUNTS]; /* one per GPU count */
  uint32_t gpus[MAX_GPU_COUNTS], ngpus;  /* --gpus N or N1,N2,... */
  sc_sweep_objective objective;
  int objective_given;
  int have_tp, have_pp, have_cp, have_mb, have_sched, have_vp, have_rc, have_sp, have_do;
  uint32_t ep[SC_SWEEP_MAX_CHOICES], etp[SC_SWEEP_MAX_CHOICES], nep, netp;
  uint32_t tp[SC_SWEEP_MAX_CHOICES], pp[SC_SWEEP_MAX_CHOICES], cp[SC_SWEEP_MAX_CHOICES],
      mb[SC_SWEEP_MAX_CHOICES], vp[SC_SWEEP_MAX_CHOICES];
  uint32_t ntp, npp, ncp, nmb, nvp, nrc, nsp, ndo, nsk;
  sc_schedule_kind sk[5];
  sc_recompute rc[3];
  int sp[2], dopt[4];
  uint32_t top, threads;
  int json, csv, no_prune, exact;
  sc_vary vary[MAX_VARY];
  uint32_t nvary;
  const char *plot;
} sweep_args;

/* The fixed job keys a sweep accepts (the dimensions are parsed here). */
static int fixed_key(const char *name) {
  static const char *const ok[] = {
      "model", "topology", "hardware", "gpus", "global-batch", "global_batch", "seq-len",
      "seq_len", "dtype", "flash-attention", "no-flash-attention", "overlap-grad-reduce",
      "no-overlap-grad-reduce", "overlap-param-gather", "no-overlap-param-gather",
      "overlap-tp-comm", "no-overlap-tp-comm", "estimator", "algo", "tokens",
      "price-per-gpu-hour", "power-fraction", "pue"};
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
    if (strcmp(name, ok[i]) == 0) return 1;
  return 0;
}

static int parse_args(int argc, char **argv, sweep_args *a, int *help) {
  sc_error err;
  sc_error_clear(&err);
  *help = 0;
  a->top = 10;
  a->threads = 1;
  for (int i = 1; i < argc; i++) {
    const char *s = argv[i];
    char name[64];
    const char *val = NULL, *eq;
    if (strcmp(s, "--help") == 0 || strcmp(s, "-h") == 0) {
      *help = 1;
      return 0;
    }
    if (strncmp(s, "--", 2) != 0) return sc_cli_usage_error("sweep", "unexpected '%s'", s);
    eq = strchr(s, '=');
    snprintf(name, sizeof name, "%.*s", eq ? (int)(eq - s - 2) : (int)strlen(s + 2), s + 2);
    if (eq) val = eq + 1;
    if (strcmp(name, "json") == 0) { a->json = 1; continue; }
    if (strcmp(name, "csv") == 0) { a->csv = 1; continue; }
    if (strcmp(name, "no-prune") == 0) { a->no_prune = 1; continue; }
    if (strcmp(name, "exact") == 0) { a->exact = 1; continue; }
    if (strcmp(name, "allow-oom") == 0) { a->job.opts.allow_oom = 1; continue; }
    if (strcmp(name, "dp") == 0)
      return sc_cli_usage_error("sweep", "--dp is derived from --gpus / (tp*pp*cp); sweep "
                                         "--tp, --pp, --cp instead");
    static const char *const own[] = {"tp", "pp", "cp", "ep", "etp", "micro-batch",
                                      "virtual-stages",
                                      "schedule", "recompute", "sequence-parallel",
                                      "distributed-optimizer", "zero-stage", "top",
                                      "threads", "vary",
                                      "plot", "objective"};
    int known = fixed_key(name);
    for (size_t k = 0; k < sizeof own / sizeof own[0]; k++) known |= strcmp(name, own[k]) == 0;
    if (!known) {
      if (sc_cli_job_known(name))
        return sc_cli_usage_error("sweep", "option '--%s' is not a sweep option", name);
      return sc_cli_usage_error("sweep", "unknown option '--%s'", name);
    }
    int boolean = fixed_key(name) && sc_cli_job_is_bool(name);
    if (!boolean && val == NULL) {
      if (i + 1 >= argc) return sc_cli_usage_error("sweep", "option '--%s' needs a value", name);
      val = argv[++i];
    }
    if (strcmp(name, "tp") == 0) {
      if (parse_u32_list(name, val, a->tp, &a->ntp)) return 2;
      a->have_tp = 1;
      continue;
    }
    if (strcmp(name, "pp") == 0) {
      if (parse_u32_list(name, val, a->pp, &a->npp)) return 2;
      a->have_pp = 1;
      continue;
    }
    if (strcmp(name, "cp") == 0) {
      if (parse_u32_list(name, val, a->cp, &a->ncp)) return 2;
      a->have_cp = 1;
      continue;
    }
    if (strcmp(name, "ep") == 0) {
      if (parse_u32_list(name, val, a->ep, &a->nep)) return 2;
      continue;
    }
    if (strcmp(name, "etp") == 0) {
      if (parse_u32_list(name, val, a->etp, &a->netp)) return 2;
      continue;
    }
    if (strcmp(name, "micro-batch") == 0) {
      if (parse_u32_list(name, val, a->mb, &a->nmb)) return 2;
      a->have_mb = 1;
      continue;
    }
    if (strcmp(name, "virtual-stages") == 0) {
      if (parse_u32_list(name, val, a->vp, &a->nvp)) return 2;
      for (uint32_t k = 0; k < a->nvp; k++)
        if (a->vp[k] < 2 || a->vp[k] > SC_SCHED_MAX_VP)
          return sc_cli_usage_error("sweep", "--virtual-stages: %u must be in [2, %d]", a->vp[k],
                                    SC_SCHED_MAX_VP);
      a->have_vp = 1;
      continue;
    }
    if (strcmp(name, "schedule") == 0) {
      char w[6][32];
      int k = words(val, w, 5);
      if (k < 0)
        return sc_cli_usage_error(
            "sweep", "--schedule: '%s' is not a list of gpipe, 1f1b, interleaved, zb-h1, "
            "dualpipe", val);
      for (int j = 0; j < k; j++)
        if (sc_schedule_kind_parse(w[j], &a->sk[j]) != SC_OK)
          return sc_cli_usage_error("sweep", "--schedule: '%s' is not gpipe, 1f1b, "
                                    "interleaved, zb-h1 or dualpipe", w[j]);
      a->nsk = (uint32_t)k;
      a->have_sched = 1;
      continue;
    }
    if (strcmp(name, "recompute") == 0) {
      char w[4][32];
      int k = words(val, w, 3);
      if (k < 0)
        return sc_cli_usage_error("sweep",
                                  "--recompute: '%s' is not a list of none, selective, full", val);
      for (int j = 0; j < k; j++)
        if (sc_recompute_parse(w[j], &a->rc[j]) != SC_OK)
          return sc_cli_usage_error("sweep", "--recompute: '%s' is not none, selective or full",
                                    w[j]);
      a->nrc = (uint32_t)k;
      a->have_rc = 1;
      continue;
    }
    if (strcmp(name, "sequence-parallel") == 0) {
      if (parse_onoff(name, val, a->sp, &a->nsp)) return 2;
      a->have_sp = 1;
      continue;
    }
    if (strcmp(name, "distributed-optimizer") == 0 || strcmp(name, "zero-stage") == 0) {
      if (a->have_do)
        return sc_cli_usage_error("sweep", "--%s: the data-parallel sharding is already given "
                                  "(--distributed-optimizer or --zero-stage, once)", name);
      if (name[0] == 'd') {
        if (parse_onoff(name, val, a->dopt, &a->ndo)) return 2;
      } else {
        char w[4][32];
        int k = words(val, w, 4);
        if (k < 0) return sc_cli_usage_error("sweep", "--zero-stage: '%s' is not a list of 0-3", val);
        for (int j = 0; j < k; j++) {
          if (w[j][0] < '0' || w[j][0] > '3' || w[j][1] != '\0')
            return sc_cli_usage_error("sweep", "--zero-stage: '%s' is not 0, 1, 2 or 3", w[j]);
          a->dopt[j] = w[j][0] - '0';
          for (int i = 0; i < j; i++)
            if (a->dopt[i] == a->dopt[j])
              return sc_cli_usage_error("sweep", "--zero-stage: '%s' repeats a value", val);
        }
        a->ndo = (uint32_t)k;
      }
      a->have_do = 1;
      continue;
    }
    if (strcmp(name, "top") == 0 || strcmp(name, "threads") == 0) {
      uint32_t x[2], n = 0;
      if (parse_u32_list(name, val, x, &n)) return 2;
      if (n != 1) return sc_cli_usage_error("sweep", "--%s: one positive integer", name);
      if (strcmp(name, "threads") == 0) {
        if (x[0] > MAX_THREADS)
          return sc_cli_usage_error("sweep", "--threads: at most %d", MAX_THREADS);
        a->threads = x[0];
      } else {
        if (x[0] > 10000) return sc_cli_usage_error("sweep", "--top: at most 10000");
        a->top = x[0];
      }
      continue;
    }
    if (strcmp(name, "vary") == 0) {
      if (a->nvary >= MAX_VARY) return sc_cli_usage_error("sweep", "at most %d --vary", MAX_VARY);
      if (sc_vary_parse(val, &a->vary[a->nvary], &err) != SC_OK)
        return sc_cli_usage_error("sweep", "%s", err.msg);
      a->nvary++;
      continue;
    }
    if (strcmp(name, "plot") == 0) { a->plot = val; continue; }
    if (strcmp(name, "objective") == 0) {
      if (sc_sweep_objective_parse(val, &a->objective, &err) != SC_OK)
        return sc_cli_usage_error("sweep", "--objective: '%s' is not time, cost or energy", val);
      a->objective_given = 1;
      continue;
    }
    if (strcmp(name, "gpus") == 0 && strchr(val, ',') != NULL) { /* several GPU counts */
      if (parse_u32_list(name, val, a->gpus, &a->ngpus)) return 2;
      if (a->ngpus > MAX_GPU_COUNTS)
        return sc_cli_usage_error("sweep", "--gpus: more than %d GPU counts", MAX_GPU_COUNTS);
      for (uint32_t j = 0; j < a->ngpus; j++)
        for (uint32_t k = 0; k < j; k++)
          if (a->gpus[j] == a->gpus[k])
            return sc_cli_usage_error("sweep", "--gpus: '%s' repeats %u", val, a->gpus[j]);
      a->job.gpus = a->gpus[0];
      continue;
    }
    int st = sc_cli_job_set(&a->job, name, val, &err);
    if (st == SC_OK && strcmp(name, "gpus") == 0) a->ngpus = 0; /* one count, given last */
    if (st != SC_OK) return sc_cli_usage_error("sweep", "%s", err.msg);
  }
  if (a->json && a->csv) return sc_cli_usage_error("sweep", "--json and --csv exclude each other");
  if (a->job.model[0] == '\0') return sc_cli_usage_error("sweep", "--model is required");
  if (a->job.topology[0] == '\0') return sc_cli_usage_error("sweep", "--topology is required");
  if (a->job.gpus == 0) return sc_cli_usage_error("sweep", "--gpus is required");
  if (a->ngpus == 0) {
    a->gpus[0] = a->job.gpus;
    a->ngpus = 1;
  }
  if (a->objective != SC_SWEEP_OBJ_TIME && !(a->job.opts.token_budget > 0))
    return sc_cli_usage_error("sweep", "--objective %s needs --tokens (the token budget whose "
                              "%s is ranked)", sc_sweep_objective_name(a->objective),
                              sc_sweep_objective_name(a->objective));
  if (a->objective == SC_SWEEP_OBJ_COST && !(a->job.opts.price_per_gpu_hour > 0))
    return sc_cli_usage_error("sweep", "--objective cost needs --price-per-gpu-hour (a price "
                              "> 0)");
  if (a->job.par.global_batch == 0)
    return sc_cli_usage_error("sweep", "--global-batch is required");
  if (a->plot && a->nvary == 0) return sc_cli_usage_error("sweep", "--plot needs --vary");
  if (a->threads > 1 && a->job.opts.estimator != SC_ESTIMATOR_ANALYTICAL)
    return sc_cli_usage_error("sweep", "--threads > 1 needs --estimator analytical (the fitted "
                                       "residual models are not shared between threads)");
  if (a->have_vp && a->have_sched) {
    int inter = 0;
    for (uint32_t k = 0; k < a->nsk; k++) inter |= a->sk[k] == SC_SCHED_INTERLEAVED;
    if (!inter)
      return sc_cli_usage_error("sweep", "--virtual-stages needs 'interleaved' in --schedule");
  }
  return 0;
}

static int build_space(sweep_args *a, const sc_model *m, uint32_t g, sc_error *err) {
  sc_sweep_space *s = &a->space[g];
  int rc = sc_sweep_space_defaults(s, m, a->gpus[g], a->job.par.global_batch,
                                   a->job.seq_given ? a->job.par.seq_len : 0, err);
  if (rc != SC_OK) return rc;
  /* fixed options from the job */
  s->base.dtype = a->job.par.dtype;
  s->base.flash_attention = a->job.par.flash_attention;
  s->base.overlap_grad_reduce = a->job.par.overlap_grad_reduce;
  s->base.overlap_param_gather = a->job.par.overlap_param_gather;
  s->base.overlap_tp_comm = a->job.par.overlap_tp_comm;
  if (a->have_tp) { s->ntp = a->ntp; memcpy(s->tp, a->tp, sizeof a->tp); }
  if (a->have_pp) { s->npp = a->npp; memcpy(s->pp, a->pp, sizeof a->pp); }
  if (a->have_cp) { s->ncp = a->ncp; memcpy(s->cp, a->cp, sizeof a->cp); }
  if (a->have_mb) { s->nmb = a->nmb; memcpy(s->mb, a->mb, sizeof a->mb); }
  if (a->nep) { s->nep = a->nep; memcpy(s->ep, a->ep, sizeof a->ep); }
  if (a->netp) { s->netp = a->netp; memcpy(s->etp, a->etp, sizeof a->etp); }
  if (a->have_sched || a->have_vp) {
    uint32_t n = 0;
    static const sc_schedule_kind all[3] = {SC_SCHED_GPIPE, SC_SCHED_1F1B, SC_SCHED_INTERLEAVED};
    const sc_schedule_kind *ks = a->have_sched ? a->sk : all;
    uint32_t nk = a->have_sched ? a->nsk : 3;
    static const uint32_t dvp[5] = {2, 3, 4, 6, 8};
    const uint32_t *vps = a->have_vp ? a->vp : dvp;
    uint32_t nvps = a->have_vp ? a->nvp : 5;
    for (uint32_t k = 0; k < nk; k++) {
      if (ks[k] != SC_SCHED_INTERLEAVED) {
        if (n < SC_SWEEP_MAX_CHOICES) s->sched[n++] = (sc_sweep_sched){ks[k], 1};
      } else {
        for (uint32_t j = 0; j < nvps && n < SC_SWEEP_MAX_CHOICES; j++)
          s->sched[n++] = (sc_sweep_sched){SC_SCHED_INTERLEAVED, vps[j]};
      }
    }
    s->nsched = n;
  }
  if (a->have_rc) { s->nrecompute = a->nrc; memcpy(s->recompute, a->rc, sizeof a->rc); }
  if (a->have_sp) { s->nsp = a->nsp; s->sp[0] = a->sp[0]; s->sp[1] = a->sp[1]; }
  if (a->have_do) {
    s->ndo = a->ndo;
    for (uint32_t i = 0; i < a->ndo; i++) s->dopt[i] = a->dopt[i];
  }
  return SC_OK;
}

static void json_num(FILE *out, double v) {
  if (isfinite(v)) fprintf(out, "%.12g", v);
  else fputs("null", out);
}

/* "objective": its name and the training inputs it is counted with (JSON, no newline). */
static void json_objective(FILE *out, const sweep_args *a) {
  const sc_predict_opts *po = &a->job.opts;
  fprintf(out, "\"objective\": ");
  sc_json_string(out, sc_sweep_objective_name(a->objective));
  fprintf(out, ", \"token_budget\": ");
  json_num(out, po->token_budget);
  fprintf(out, ", \"power_fraction\": ");
  json_num(out, po->power_fraction > 0 ? po->power_fraction : 1.0);
  fprintf(out, ", \"pue\": ");
  json_num(out, po->pue > 0 ? po->pue : 1.0);
  fprintf(out, ", \"price_per_gpu_hour\": ");
  json_num(out, po->price_per_gpu_hour);
  fprintf(out, ",\n");
}

/* The table's line saying what ranks the configurations. */
static void print_objective(FILE *out, const sweep_args *a) {
  const sc_predict_opts *po = &a->job.opts;
  switch (a->objective) {
  case SC_SWEEP_OBJ_COST:
    fprintf(out, "ranked by cost: %g tokens at %g per GPU-hour\n", po->token_budget,
            po->price_per_gpu_hour);
    break;
  case SC_SWEEP_OBJ_ENERGY:
    fprintf(out, "ranked by energy: %g tokens at %g of the board's power, PUE %g\n",
            po->token_budget, po->power_fraction > 0 ? po->power_fraction : 1.0,
            po->pue > 0 ? po->pue : 1.0);
    break;
  default:
    fprintf(out, "ranked by iteration time\n");
  }
}

/* Sweep every GPU count of a into *out: one space after the other, a configuration's index
 * its position in the concatenation (the first count's space first), the top lists merged
 * by the objective, the counts and space sizes summed, the JSON/CSV text of the k-th count
 * after the (k-1)-th's (emit's unit_base). */
static int sweep_gpu_counts(sweep_args *a, sc_registry *const *regs, const sc_model *m,
                            const sc_topology *t, const sc_device *dev, const sc_sweep_opts *o,
                            emit_ctx *emit, sc_sweep_result *out, sc_error *err) {
  uint64_t offset = 0;
  memset(out, 0, sizeof *out);
  out->top_k = o->top_k;
  out->objective = o->objective;
  for (uint32_t g = 0; g < a->ngpus; g++) {
    sc_sweep_result one;
    if (emit != NULL) emit->unit_base = (uint64_t)g << GPU_UNIT_SHIFT;
    int rc = sc_sweep_run(regs, a->threads, m, t, dev, &a->space[g], o, &one, err);
    if (rc != SC_OK) return rc;
    for (uint32_t i = 0; i < one.ntop; i++) one.top[i].index += offset;
    rc = sc_sweep_result_merge(out, &one, err);
    out->space += one.space;
    out->elapsed_s += one.elapsed_s;
    offset += one.space;
    sc_sweep_result_free(&one);
    if (rc != SC_OK) return rc;
  }
  return SC_OK;
}

int sc_cli_sweep(int argc, char **argv) {
  sweep_args *a = calloc(1, sizeof *a);
  sc_registry *regs[MAX_THREADS] = {0};
  sc_model model;
  sc_topology topo0, topo;
  sc_device dev0, dev;
  sc_error err;
  mpi_state mpi;
  int help = 0, rc = 1, st;
  emit_ctx *emit = NULL;
  double *best_s = NULL;
  sc_sweep_result *vres = NULL;
  sc_residuals *resid = NULL, *cresid = NULL;
  uint32_t nvar = 1;

  if (a == NULL) return 1;
  sc_error_clear(&err);
  sc_cli_job_init(&a->job);
  st = parse_args(argc, argv, a, &help);
  if (help) {
    sweep_usage(stdout);
    free(a);
    return 0;
  }
  if (st != 0) {
    free(a);
    return 2;
  }
  mpi_start(&mpi, &argc, &argv);
  FILE *out = stdout;
  int failed = 0;
  if (sc_model_load(a->job.model, &model, &err) != SC_OK ||
      sc_topology_load(a->job.topology, &topo0, &err) != SC_OK)
    failed = 1;
  for (uint32_t g = 0; !failed && g < a->ngpus; g++)
    if (build_space(a, &model, g, &err) != SC_OK) failed = 1;
  for (uint32_t i = 0; !failed && i < a->threads; i++)
    if (sc_cli_registry_open(&regs[i], &err) != SC_OK) failed = 1;
  if (!failed && sc_hardware_load(regs[0], a->job.hardware[0] ? a->job.hardware : topo0.hardware,
                                  &dev0, &err) != SC_OK)
    failed = 1;
  /* energy: the device must state its board power (cost and tokens: checked as usage) */
  if (!failed && sc_sweep_objective_check(a->objective, &a->job.opts, &dev0, &err) != SC_OK)
    failed = 1;
  if (!failed && a->job.opts.estimator != SC_ESTIMATOR_ANALYTICAL) { /* hybrid, learned */
    if (sc_residuals_for_hardware(a->job.hardware[0] ? a->job.hardware : topo0.hardware,
                                  dev0.name, regs[0], a->job.opts.estimator, &resid,
                                  &err) != SC_OK)
      failed = 1;
    a->job.opts.residuals = resid;
    if (!failed && sc_residuals_for_topology(topo0.path, topo0.name, NULL, 0,
                                             a->job.opts.estimator, &cresid, &err) != SC_OK)
      failed = 1;
    a->job.opts.coll_residuals = cresid;
  }
  for (uint32_t j = 0; j < a->nvary; j++) nvar *= a->vary[j].nvalues;
  /* Check every variant applies before the first search. */
  for (uint32_t v = 0; !failed && v < nvar; v++) {
    uint32_t rest = v;
    dev = dev0;
    topo = topo0;
    for (uint32_t j = 0; j < a->nvary && !failed; j++) {
      if (sc_vary_apply(&a->vary[j], rest % a->vary[j].nvalues, &dev, &topo, &err) != SC_OK)
        failed = 1;
      rest /= a->vary[j].nvalues;
    }
  }
  if (mpi_any(&mpi, failed)) {
    if (failed) sc_cli_fail(&err);
    goto done;
  }

  sc_sweep_opts o;
  sc_sweep_opts_defaults(&o);
  o.top_k = a->top;
  o.prune = !a->no_prune;
  o.exact = a->exact;
  o.predict = a->job.opts;
  o.rank = (uint32_t)mpi.rank;
  o.nranks = (uint32_t)mpi.size;
  o.objective = a->objective;
  /* --objective or several GPU counts: the GPU count and training columns, "objective" */
  extra_cols ext = {a->objective_given || a->ngpus > 1, a->ngpus > 1, 0};
  ext.training = ext.on && a->job.opts.token_budget > 0;
  int all = (a->json || a->csv) && a->nvary == 0;
  if (all) {
    emit = calloc(1, sizeof *emit);
    if (emit == NULL || emit_open(emit, a->threads, a->json) != 0) {
      sc_error_set(&err, SC_ENOMEM, "sweep: out of memory");
      failed = 1;
    }
    if (emit != NULL) emit->csv_training = ext.on;
    o.visit = emit_visit;
    o.visit_ud = emit;
  }
  best_s = calloc(nvar, sizeof *best_s);
  vres = calloc(nvar, sizeof *vres);
  if (best_s == NULL || vres == NULL) {
    sc_error_set(&err, SC_ENOMEM, "sweep: out of memory");
    failed = 1;
  }
  for (uint32_t v = 0; v < nvar && !failed; v++) {
    uint32_t rest = v;
    dev = dev0;
    topo = topo0;
    for (uint32_t j = 0; j < a->nvary; j++) {
      sc_vary_apply(&a->vary[j], rest % a->vary[j].nvalues, &dev, &topo, &err);
      rest /= a->vary[j].nvalues;
    }
    if (a->nvary > 0)
      for (uint32_t i = 0; i < a->threads; i++) sc_registry_memo_clear(regs[i]);
    if (a->ngpus == 1) {
      if (sc_sweep_run(regs, a->threads, &model, &topo, &dev, &a->space[0], &o, &vres[v],
                       &err) != SC_OK)
        failed = 1;
    } else if (sweep_gpu_counts(a, regs, &model, &topo, &dev, &o, emit, &vres[v], &err) !=
               SC_OK) {
      failed = 1;
    }
    if (failed) break;
    best_s[v] = vres[v].ntop ? sc_sweep_objective_value(&vres[v].top[0].result, a->objective)
                             : INFINITY;
  }
  if (mpi_any(&mpi, failed)) {
    if (failed) sc_cli_fail(&err);
    goto done;
  }
  for (uint32_t v = 0; v < nvar && !failed; v++) {
    if (mpi_gather_result(&mpi, &vres[v], &err) != SC_OK) failed = 1;
    best_s[v] = vres[v].ntop ? sc_sweep_objective_value(&vres[v].top[0].result, a->objective)
                             : INFINITY;
  }
  flat fl;
  memset(&fl, 0, sizeof fl);
  if (all && !failed) {
    if (emit_close(emit) != 0 || flatten(emit, &fl) != 0) {
      sc_error_set(&err, SC_ENOMEM, "sweep: out of memory (output)");
      failed = 1;
    }
  }
  if (mpi_any(&mpi, failed)) {
    if (failed) sc_cli_fail(&err);
    free(fl.text);
    free(fl.segs);
    goto done;
  }
  if (all) mpi_gather_flat(&mpi, &fl);
  if (mpi.rank != 0) {
    free(fl.text);
    free(fl.segs);
    rc = 0;
    goto done;
  }

  /* rank 0 prints */
  const sc_sweep_result *r = &vres[0];
  const sc_sweep_space *s0 = &a->space[0];
  char gpus_txt[MAX_GPU_COUNTS * 11 + 1];
  size_t gl = 0;
  for (uint32_t g = 0; g < a->ngpus; g++)
    gl += (size_t)snprintf(gpus_txt + gl, sizeof gpus_txt - gl, "%s%u", g ? "," : "",
                           a->gpus[g]);
  if (a->nvary == 0) {
    if (a->csv) {
      if (csv_row(out, NULL, ext.on, &err) != SC_OK) failed = 1;
      write_segments(out, &fl, 0);
    } else if (a->json) {
      fprintf(out, "{\n\"schema_version\": %d,\n\"model\": ", SC_REPORT_SCHEMA_VERSION);
      sc_json_string(out, model.name);
      fprintf(out, ",\n\"topology\": ");
      sc_json_string(out, topo0.name);
      fprintf(out, ",\n\"hardware\": ");
      sc_json_string(out, dev0.name);
      if (a->ngpus > 1) fprintf(out, ",\n\"gpus\": [%s]", gpus_txt);
      else fprintf(out, ",\n\"gpus\": %u", s0->gpus);
      fprintf(out, ",\n\"global_batch\": %u,\n\"seq_len\": %u,\n", s0->base.global_batch,
              s0->base.seq_len);
      if (ext.on) json_objective(out, a);
      json_counts(out, r);
      fprintf(out, ",\n\"top\": [");
      for (uint32_t i = 0; i < r->ntop; i++)
        fprintf(out, "%s%llu", i ? ", " : "", (unsigned long long)r->top[i].index);
      fprintf(out, "],\n\"configurations\": [\n");
      write_segments(out, &fl, 1);
      fprintf(out, "]\n}\n");
    } else {
      fprintf(out, "%s on %s (%s): %s GPUs, global batch %u, seq %u, %s, %s estimator%s\n",
              model.name, topo0.name, dev0.name, gpus_txt, s0->base.global_batch,
              s0->base.seq_len, sc_dtype_name(s0->base.dtype),
              sc_estimator_name(a->job.opts.estimator),
              a->job.estimator_given ? "" : " (the sweep's default: its exact fast search; "
                                            "--estimator hybrid adds fitted residuals)");
      if (ext.on) print_objective(out, a);
      print_counts(out, r);
      fprintf(out, "%.3f s with %u thread%s x %d rank%s: %.0f configurations/s, %.0f "
                   "predicted+pruned/s\n\n",
              r->elapsed_s, a->threads, a->threads > 1 ? "s" : "", mpi.size,
              mpi.size > 1 ? "s" : "", r->elapsed_s > 0 ? (double)r->space / r->elapsed_s : 0.0,
              r->elapsed_s > 0 ? (double)(r->predicted + r->pruned) / r->elapsed_s : 0.0);
      print_top(out, r, &ext);
      fprintf(out, "\ntimes per iteration in ms; breakdown of the critical stage: compute, "
                   "exposed TP/CP/DP/P2P communication, bubble, optimizer\n");
      if (ext.training)
        fprintf(out, "days, GPU-hours, energy (MWh) and cost of training on --tokens (as "
                     "predict counts them; '-': no board power or price)\n");
    }
  } else {
    /* co-design table */
    if (a->csv) {
      for (uint32_t j = 0; j < a->nvary; j++) fprintf(out, "%s,", a->vary[j].field);
      if (csv_row(out, NULL, ext.on, &err) != SC_OK) failed = 1;
    } else if (a->json) {
      fprintf(out, "{\n\"schema_version\": %d,\n\"vary\": [", SC_REPORT_SCHEMA_VERSION);
      for (uint32_t j = 0; j < a->nvary; j++) {
        fprintf(out, "%s", j ? ", " : "");
        sc_json_string(out, a->vary[j].field);
      }
      fprintf(out, "],\n");
      if (ext.on) {
        fprintf(out, "\"gpus\": [%s],\n", gpus_txt);
        json_objective(out, a);
      }
      fprintf(out, "\"variants\": [\n");
    } else {
      fprintf(out, "%s on %s (%s): %s GPUs, global batch %u, seq %u: best of %llu "
                   "configurations per variant\n",
              model.name, topo0.name, dev0.name, gpus_txt, s0->base.global_batch,
              s0->base.seq_len, (unsigned long long)r->space);
      if (ext.on) print_objective(out, a);
      fprintf(out, "\n");
      for (uint32_t j = 0; j < a->nvary; j++) fprintf(out, "%-22s ", a->vary[j].field);
      fprintf(out, "%10s %8s %6s", ext.on ? "iter(ms)" : "best(ms)", "vs first", "MFU%");
      if (ext.gpus) fprintf(out, " %5s", "gpus");
      training_header(out, &ext);
      fprintf(out, "%s  %s\n", ext.training ? " |" : "", "best configuration");
    }
    for (uint32_t v = 0; v < nvar && !failed; v++) {
      const sc_sweep_result *x = &vres[v];
      uint32_t rest = v;
      char cfg[160] = "(no configuration fits)";
      if (x->ntop) describe(cfg, sizeof cfg, &x->top[0].result.parallel);
      if (a->json) {
        fprintf(out, "%s{\"values\": [", v ? ",\n" : "");
        for (uint32_t j = 0; j < a->nvary; j++) {
          fprintf(out, "%s", j ? ", " : "");
          sc_json_string(out, a->vary[j].text[rest % a->vary[j].nvalues]);
          rest /= a->vary[j].nvalues;
        }
        fprintf(out, "], ");
        json_counts(out, x);
        fprintf(out, ", \"best\": ");
        if (x->ntop) sc_report_json(out, &x->top[0].result, &err);
        else fprintf(out, "null");
        fprintf(out, "}");
        continue;
      }
      for (uint32_t j = 0; j < a->nvary; j++) {
        const char *t = a->vary[j].text[rest % a->vary[j].nvalues];
        rest /= a->vary[j].nvalues;
        if (a->csv) fprintf(out, "%s,", t);
        else fprintf(out, "%-22s ", t);
      }
      if (a->csv) {
        if (x->ntop) csv_row(out, &x->top[0].result, ext.on, &err);
        else fprintf(out, "\n");
        continue;
      }
      if (x->ntop) {
        const sc_result *b = &x->top[0].result;
        fprintf(out, "%10.2f %+7.1f%% %6.1f", b->iteration_s * 1e3,
                isfinite(best_s[0]) ? (best_s[v] / best_s[0] - 1) * 100 : 0.0, b->mfu * 100);
        if (ext.gpus) fprintf(out, " %5u", b->gpus);
        training_cols(out, &ext, b);
        fprintf(out, "%s  %s\n", ext.training ? " |" : "", cfg);
      } else {
        fprintf(out, "%10s %8s %6s  %s\n", "-", "-", "-", cfg);
      }
    }
    if (ext.on && !a->json && !a->csv)
      fprintf(out, "\nbest by %s; vs first: its change in %s from the first variant\n",
              sc_sweep_objective_name(a->objective),
              a->objective == SC_SWEEP_OBJ_TIME ? "iteration time"
              : a->objective == SC_SWEEP_OBJ_COST ? "the cost of --tokens"
                                                  : "the energy of --tokens");
    if (a->json) fprintf(out, "\n]\n}\n");
    if (a->plot) {
      char title[512];
      static const char *const what[SC_SWEEP_NOBJ] = {"best iteration time",
                                                      "lowest cost of --tokens",
                                                      "lowest energy of --tokens"};
      static const char *const ylab[SC_SWEEP_NOBJ] = {"best iteration time (ms)",
                                                      "lowest cost", "lowest energy (MWh)"};
      static const double scale[SC_SWEEP_NOBJ] = {1e3, 1.0, 1.0 / 3.6e9};
      snprintf(title, sizeof title, "%s on %s GPUs of %s: %s", model.name, gpus_txt,
               topo0.name, what[a->objective]);
      if (write_plot(a->plot, a->vary, a->nvary, best_s, nvar, scale[a->objective],
                     ylab[a->objective], title, &err) != SC_OK)
        failed = 1;
    }
  }
  free(fl.text);
  free(fl.segs);
  if (fflush(out) != 0) {
    sc_error_set(&err, SC_EIO, "sweep: write error on standard output");
    failed = 1;
  }
  rc = failed ? sc_cli_fail(&err) : 0;
done:
  if (emit) {
    emit_free(emit);
    free(emit);
  }
  for (uint32_t v = 0; vres && v < nvar; v++) sc_sweep_result_free(&vres[v]);
  free(vres);
  free(best_s);
  for (uint32_t i = 0; i < MAX_THREADS; i++) sc_registry_free(regs[i]);
  sc_residuals_free(resid);
  sc_residuals_free(cresid);
  mpi_stop(&mpi);
  free(a);
  return rc;
}

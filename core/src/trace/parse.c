/*
 * Streaming reader of Kineto Chrome-trace JSON: gzread in chunks -> yajl callbacks -> the
 * events kept (sc__tev), names interned. No DOM: memory follows the events kept.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <yajl/yajl_parse.h>
#include <zlib.h>

#include "common/slurp.h"
#include "stepcast/stepcast.h"
#include "trace/trace_int.h"

#define SC__CHUNK (1u << 18)
#define SC__MAXDEPTH 512

const char *sc_trace_kind_name(sc_trace_kind k) {
  static const char *const n[SC_TRACE_KIND_COUNT] = {
      "cpu_op", "user_annotation", "cuda_runtime", "kernel", "gpu_memcpy", "gpu_memset",
      "cuda_sync"};
  return (unsigned)k < SC_TRACE_KIND_COUNT ? n[k] : "?";
}

/* ---- string pool ---- */

static uint64_t hash_bytes(const char *s, size_t len) {
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  for (size_t i = 0; i < len; i++) {
    h ^= (unsigned char)s[i];
    h *= 1099511628211ull;
  }
  return h;
}

static int rehash(sc_trace *t) {
  size_t cap = t->caphash ? t->caphash * 2 : 1024;
  uint32_t *h = calloc(cap, sizeof *h);
  if (h == NULL) return SC_ENOMEM;
  for (size_t i = 0; i < t->caphash; i++) {
    if (t->hash[i] == 0) continue;
    const char *s = t->pool + t->hash[i] - 1;
    size_t j = hash_bytes(s, strlen(s)) & (cap - 1);
    while (h[j] != 0) j = (j + 1) & (cap - 1);
    h[j] = t->hash[i];
  }
  free(t->hash);
  t->hash = h;
  t->caphash = cap;
  return SC_OK;
}

int sc__trace_intern(sc_trace *t, const char *s, size_t len, uint32_t *off) {
  if ((t->nhash + 1) * 2 > t->caphash && rehash(t) != SC_OK) return SC_ENOMEM;
  size_t j = hash_bytes(s, len) & (t->caphash - 1);
  while (t->hash[j] != 0) {
    const char *p = t->pool + t->hash[j] - 1;
    if (strncmp(p, s, len) == 0 && p[len] == '\0') {
      *off = t->hash[j] - 1;
      return SC_OK;
    }
    j = (j + 1) & (t->caphash - 1);
  }
  if (t->npool + len + 1 > t->cappool) {
    size_t cap = t->cappool ? t->cappool : 4096;
    while (cap < t->npool + len + 1) cap *= 2;
    if (cap >= UINT32_MAX) return SC_ENOMEM;
    char *p = realloc(t->pool, cap);
    if (p == NULL) return SC_ENOMEM;
    t->pool = p;
    t->cappool = cap;
  }
  memcpy(t->pool + t->npool, s, len);
  t->pool[t->npool + len] = '\0';
  *off = (uint32_t)t->npool;
  t->hash[j] = (uint32_t)t->npool + 1;
  t->npool += len + 1;
  t->nhash++;
  return SC_OK;
}

/* ---- parser state ---- */

typedef enum {
  CTX_TOP = 0, CTX_EVENTS, CTX_EVENT, CTX_ARGS, CTX_DIST, CTX_DEVPROPS, CTX_DEVPROP, CTX_SKIP
} ctx_kind;

typedef struct pstate {
  sc_trace *t;
  sc_error *err;
  int rc;
  yajl_handle h;
  uint64_t base;              /* bytes of JSON before the current chunk */
  uint8_t ctx[SC__MAXDEPTH];
  int depth;                  /* entries in ctx */
  int skip;                   /* nesting inside a skipped value below ctx[depth-1] */
  char key[64];
  size_t keylen;
  int saw_events, saw_top;
  int last_skip;              /* index of the last skipped kind, -1 */
  uint64_t devprop_index;
  /* the event being read */
  sc__tev cur;
  char ph[8];
  char cat[48];
  char *name;
  size_t namelen, namecap;
  int has_name, has_ts, has_dur;
  int drop;                   /* ph and cat known and not kept: ignore the rest */
  int has_ph, has_cat;
  double in_nelems, out_nelems, dtype_bytes;
  int64_t arg_stream, arg_device; /* args.stream / args.device, -1 when absent */
  sc__tcoll coll;             /* collective metadata of the event's args */
  int has_coll;               /* one of its keys was read */
  int legacy;                 /* its category is a PyTorch 1.8-1.9 name ("Kernel", ...) */
} pstate;

static uint64_t offset(const pstate *p) {
  return p->base + (uint64_t)yajl_get_bytes_consumed(p->h);
}

static int fail(pstate *p, int code, const char *what) {
  if (p->rc == SC_OK) {
    p->rc = code;
    sc_error_set(p->err, code, "%s: byte %llu: %s", p->t->path,
                 (unsigned long long)offset(p), what);
  }
  return 0;
}

static int wrong_type(pstate *p, const char *expected) {
  char buf[160];
  snprintf(buf, sizeof buf, "event %llu: key '%s': expected %s",
           (unsigned long long)p->t->info.events, p->key, expected);
  return fail(p, SC_EPARSE, buf);
}

static void reset_event(pstate *p) {
  memset(&p->cur, 0, sizeof p->cur);
  p->cur.corr = -1;
  p->cur.wait_corr = -1;
  p->cur.wait_stream = -1;
  p->cur.pid = -1;
  p->cur.tid = -1;
  p->ph[0] = p->cat[0] = '\0';
  p->namelen = 0;
  p->has_name = p->has_ts = p->has_dur = 0;
  p->drop = p->has_ph = p->has_cat = 0;
  p->in_nelems = p->out_nelems = p->dtype_bytes = 0;
  p->arg_stream = p->arg_device = -1;
  p->coll.seq = -1;
  p->coll.name = p->coll.pg = SC__NONE;
  p->coll.peer = -1;
  p->coll.group_size = 0;
  p->has_coll = 0;
  p->legacy = 0;
}

/* Microseconds with optional fraction/exponent -> integer nanoseconds. */
static int us_to_ns(const char *s, size_t len, int64_t *out) {
  char buf[64];
  if (len == 0 || len >= sizeof buf) return -1;
  memcpy(buf, s, len);
  buf[len] = '\0';
  if (memchr(buf, 'e', len) == NULL && memchr(buf, 'E', len) == NULL) {
    size_t i = 0;
    int neg = 0;
    int64_t ip = 0, fp = 0;
    if (buf[0] == '-') { neg = 1; i = 1; }
    for (; i < len && buf[i] != '.'; i++) {
      if (ip > (INT64_MAX / 10 - 10) / 1000) return -1;
      ip = ip * 10 + (buf[i] - '0');
    }
    if (i < len) {
      int nd = 0;
      for (i++; i < len && nd < 4; i++, nd++) fp = fp * 10 + (buf[i] - '0');
      while (nd < 4) { fp *= 10; nd++; }
      fp = (fp + 5) / 10; /* round to ns */
    }
    *out = (ip * 1000 + fp) * (neg ? -1 : 1);
    return 0;
  }
  errno = 0;
  double v = strtod(buf, NULL) * 1e3;
  if (errno != 0 || !isfinite(v) || fabs(v) > 9e18) return -1;
  *out = llround(v);
  return 0;
}

static int to_i64(const char *s, size_t len, int64_t *out) {
  int64_t ns;
  if (us_to_ns(s, len, &ns) != 0) return -1;
  *out = ns / 1000; /* integral fields: drop any fraction */
  return 0;
}

static double dtype_size(const char *s, size_t len) {
  static const struct { const char *n; double b; } tab[] = {
      {"Float", 4}, {"Double", 8}, {"Half", 2}, {"BFloat16", 2}, {"Int", 4},
      {"Long", 8},  {"Byte", 1},   {"Char", 1}, {"Bool", 1},     {"Short", 2},
      {"Float8_e4m3fn", 1}, {"Float8_e5m2", 1}};
  for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++) {
    if (strlen(tab[i].n) == len && memcmp(tab[i].n, s, len) == 0) return tab[i].b;
  }
  return 0;
}

/* The kept kind of the event being read from its ph and cat; -1 when it is skipped.
 * Kineto of PyTorch 1.8-1.9 wrote other category names: "Operator" (CPU operators and
 * the ProfilerStep#N span), "Runtime", "Kernel", "Memcpy", "Memset" (its output_json.cpp;
 * the TensorBoard plugin reads both); *legacy is set for those. */
static int cat_kind(const char *c, int *legacy) {
  *legacy = 0;
  switch (c[0]) {
  case 'c':
    if (strcmp(c, "cpu_op") == 0) return SC_TRACE_CPU_OP;
    if (strcmp(c, "cuda_runtime") == 0 || strcmp(c, "cuda_driver") == 0) return SC_TRACE_RUNTIME;
    if (strcmp(c, "cuda_sync") == 0) return SC_TRACE_SYNC;
    return -1;
  case 'u': return strcmp(c, "user_annotation") == 0 ? SC_TRACE_ANNOTATION : -1;
  case 'k': return strcmp(c, "kernel") == 0 ? SC_TRACE_KERNEL : -1;
  case 'g':
    if (strcmp(c, "gpu_memcpy") == 0) return SC_TRACE_MEMCPY;
    if (strcmp(c, "gpu_memset") == 0) return SC_TRACE_MEMSET;
    return -1;
  case 'O': *legacy = 1; return strcmp(c, "Operator") == 0 ? SC_TRACE_CPU_OP : -1;
  case 'R': *legacy = 1; return strcmp(c, "Runtime") == 0 ? SC_TRACE_RUNTIME : -1;
  case 'K': *legacy = 1; return strcmp(c, "Kernel") == 0 ? SC_TRACE_KERNEL : -1;
  case 'M':
    *legacy = 1;
    if (strcmp(c, "Memcpy") == 0) return SC_TRACE_MEMCPY;
    if (strcmp(c, "Memset") == 0) return SC_TRACE_MEMSET;
    return -1;
  default: return -1;
  }
}

static int event_kind(pstate *p) {
  if (p->ph[0] != 'X' || p->ph[1] != '\0') return -1;
  return cat_kind(p->cat, &p->legacy);
}

/* A pid or tid written as a string (PyTorch 1.8-1.9 wrote every tid so: "123" for a
 * thread, "stream 7" for a GPU stream): its integer, else an id of its own per distinct
 * string (-2 - its pool offset), so that two named threads stay two. */
static int str_id(sc_trace *t, const char *s, size_t len, int64_t *out) {
  char buf[32];
  const char *d = s;
  size_t l = len;
  if (l > 7 && memcmp(d, "stream ", 7) == 0) {
    d += 7;
    l -= 7;
  }
  if (l > 0 && l < sizeof buf) {
    memcpy(buf, d, l);
    buf[l] = '\0';
    char *end;
    errno = 0;
    long long v = strtoll(buf, &end, 10);
    if (*end == '\0' && errno == 0 && (buf[0] == '-' || (buf[0] >= '0' && buf[0] <= '9'))) {
      *out = v;
      return SC_OK;
    }
  }
  uint32_t off;
  if (sc__trace_intern(t, s, len, &off) != SC_OK) return SC_ENOMEM;
  *out = -2 - (int64_t)off;
  return SC_OK;
}

/* The type an args key this reader uses must have; NULL for a key it does not read. */
static const char *arg_expect(const char *k) {
  static const struct { const char *key, *type; } tab[] = {
      {"correlation", "an integer"}, {"stream", "an integer"}, {"device", "an integer"},
      {"wait_on_stream", "an integer"}, {"wait_on_cuda_event_record_corr_id", "an integer"},
      {"Group size", "an integer"}, {"Seq", "an integer"}, {"Src Rank", "an integer"},
      {"Dst Rank", "an integer"}, {"In msg nelems", "a number"},
      {"Out msg nelems", "a number"}, {"cuda_sync_kind", "a string"},
      {"Collective name", "a string"}, {"Process Group Name", "a string or a number"}};
  for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++) {
    if (strcmp(k, tab[i].key) == 0) return tab[i].type;
  }
  return NULL;
}

static int cur_ctx(const pstate *p) { return p->depth > 0 ? p->ctx[p->depth - 1] : -1; }

/* A scalar arrived: number (num != NULL), string (str != NULL), or other (bool/null). */
static int scalar(pstate *p, const char *num, size_t nlen, const char *str, size_t slen) {
  if (p->skip > 0) return 1;
  int c = cur_ctx(p);
  if (c < 0) return fail(p, SC_EPARSE, "the document is not a JSON object");
  if (c == CTX_TOP && strcmp(p->key, "traceEvents") == 0)
    return fail(p, SC_EPARSE, "key 'traceEvents': expected an array");
  if (c == CTX_EVENTS) {
    char buf[96];
    snprintf(buf, sizeof buf, "traceEvents[%llu]: expected an object",
             (unsigned long long)p->t->info.events);
    return fail(p, SC_EPARSE, buf);
  }
  if (c == CTX_EVENT) {
    const char *k = p->key;
    if (strcmp(k, "ph") == 0) {
      if (str == NULL) return wrong_type(p, "a string");
      size_t n = slen < sizeof p->ph - 1 ? slen : sizeof p->ph - 1;
      memcpy(p->ph, str, n);
      p->ph[n] = '\0';
      p->has_ph = 1;
      if (p->ph[0] != 'X' || p->ph[1] != '\0') p->drop = 1;
      else if (p->has_cat) p->drop = event_kind(p) < 0;
    } else if (strcmp(k, "cat") == 0) {
      if (str == NULL) return wrong_type(p, "a string");
      size_t n = slen < sizeof p->cat - 1 ? slen : sizeof p->cat - 1;
      memcpy(p->cat, str, n);
      p->cat[n] = '\0';
      p->has_cat = 1;
      if (p->has_ph) p->drop = event_kind(p) < 0;
    } else if (p->drop) {
      return 1; /* an event of a kind not kept: counted at its end, not read */
    } else if (strcmp(k, "name") == 0) {
      if (str == NULL) return wrong_type(p, "a string");
      if (slen + 1 > p->namecap) {
        size_t cap = p->namecap ? p->namecap : 256;
        while (cap < slen + 1) cap *= 2;
        char *nb = realloc(p->name, cap);
        if (nb == NULL) return fail(p, SC_ENOMEM, "out of memory");
        p->name = nb;
        p->namecap = cap;
      }
      memcpy(p->name, str, slen);
      p->namelen = slen;
      p->has_name = 1;
    } else if (strcmp(k, "ts") == 0 || strcmp(k, "dur") == 0) {
      int64_t v;
      if (num == NULL) return wrong_type(p, "a number");
      if (us_to_ns(num, nlen, &v) != 0) return wrong_type(p, "a number of microseconds");
      if (k[0] == 't') { p->cur.ts_ns = v; p->has_ts = 1; }
      else { p->cur.dur_ns = v; p->has_dur = 1; }
    } else if (strcmp(k, "pid") == 0 || strcmp(k, "tid") == 0) {
      int64_t v = -1;
      if (num != NULL && to_i64(num, nlen, &v) != 0) return wrong_type(p, "an integer");
      if (str != NULL && str_id(p->t, str, slen, &v) != SC_OK)
        return fail(p, SC_ENOMEM, "out of memory");
      if (k[0] == 'p') p->cur.pid = v; else p->cur.tid = v;
    }
    return 1;
  }
  if (c == CTX_ARGS) {
    const char *k = p->key;
    int64_t v;
    if (p->drop) return 1;
    /* most args are of no interest: filter on the lengths of those that are */
    switch (p->keylen) {
    case 3: case 5: case 6: case 8: case 10: case 11: case 13: case 14: case 15: case 18:
    case 33: break;
    default: return 1;
    }
    if (strcmp(k, "stream") == 0 && str != NULL) {
      /* ROCm writes runtime calls' streams as strings ("0x0") */
      char buf[32];
      size_t l = slen < sizeof buf - 1 ? slen : sizeof buf - 1;
      memcpy(buf, str, l);
      buf[l] = '\0';
      char *end;
      errno = 0;
      long long sv = strtoll(buf, &end, 0);
      p->arg_stream = (*end == '\0' && errno == 0 && l > 0) ? sv : -1;
    } else if (strcmp(k, "correlation") == 0 || strcmp(k, "stream") == 0 ||
        strcmp(k, "device") == 0 || strcmp(k, "wait_on_stream") == 0 ||
        strcmp(k, "wait_on_cuda_event_record_corr_id") == 0 || strcmp(k, "Group size") == 0 ||
        strcmp(k, "Seq") == 0 || strcmp(k, "Src Rank") == 0 || strcmp(k, "Dst Rank") == 0) {
      if (num == NULL) return wrong_type(p, "an integer");
      if (to_i64(num, nlen, &v) != 0) return wrong_type(p, "an integer");
      if (k[0] == 'c') p->cur.corr = v;
      else if (k[0] == 's') p->arg_stream = v;
      else if (k[0] == 'd') p->arg_device = v;
      else if (k[0] == 'G') {
        p->coll.group_size = v > 0 && v < UINT32_MAX ? (uint32_t)v : 0;
        p->has_coll = 1;
      } else if (k[0] == 'S' && k[1] == 'e') {
        p->coll.seq = v >= 0 ? v : -1;
        p->has_coll = 1;
      } else if (k[0] == 'S' || k[0] == 'D') {
        p->coll.peer = v >= 0 && v <= INT32_MAX ? (int32_t)v : -1;
        p->has_coll = 1;
      } else if (strcmp(k, "wait_on_stream") == 0)
        p->cur.wait_stream = v >= INT32_MIN && v <= INT32_MAX ? (int32_t)v : -1;
      else p->cur.wait_corr = v;
    } else if (strcmp(k, "In msg nelems") == 0 || strcmp(k, "Out msg nelems") == 0) {
      if (num == NULL) return wrong_type(p, "a number");
      double d = strtod(num, NULL);
      if (k[0] == 'I') p->in_nelems = d; else p->out_nelems = d;
    } else if (strcmp(k, "Collective name") == 0 || strcmp(k, "Process Group Name") == 0) {
      /* the group's name is a string ("0"); a number is read as its text */
      const char *txt = str != NULL ? str : num;
      size_t tl = str != NULL ? slen : nlen;
      if (txt == NULL || (k[0] == 'C' && str == NULL))
        return wrong_type(p, k[0] == 'C' ? "a string" : "a string or a number");
      uint32_t off;
      if (sc__trace_intern(p->t, txt, tl, &off) != SC_OK) return fail(p, SC_ENOMEM, "out of memory");
      if (k[0] == 'C') p->coll.name = off; else p->coll.pg = off;
      p->has_coll = 1;
    } else if (strcmp(k, "dtype") == 0 && str != NULL) {
      p->dtype_bytes = dtype_size(str, slen);
    } else if (strcmp(k, "cuda_sync_kind") == 0) {
      if (str == NULL) return wrong_type(p, "a string");
      if (slen == 11 && memcmp(str, "Stream Sync", 11) == 0) p->cur.sync = SC__SYNC_STREAM;
      else if (slen == 10 && memcmp(str, "Event Sync", 10) == 0) p->cur.sync = SC__SYNC_EVENT;
      else if (slen == 12 && memcmp(str, "Context Sync", 12) == 0) p->cur.sync = SC__SYNC_CONTEXT;
      else if (slen == 17 && memcmp(str, "Stream Wait Event", 17) == 0)
        p->cur.sync = SC__SYNC_WAIT_EVENT;
    }
    return 1;
  }
  if (c == CTX_DIST) {
    int64_t v;
    if (num != NULL && to_i64(num, nlen, &v) == 0) {
      if (strcmp(p->key, "rank") == 0) p->t->info.rank = (int32_t)v;
      else if (strcmp(p->key, "world_size") == 0) p->t->info.world_size = (int32_t)v;
    }
    return 1;
  }
  if (c == CTX_DEVPROP && p->devprop_index == 0 && strcmp(p->key, "name") == 0 && str) {
    size_t n = slen < sizeof p->t->info.device_name - 1 ? slen : sizeof p->t->info.device_name - 1;
    memcpy(p->t->info.device_name, str, n);
    p->t->info.device_name[n] = '\0';
  }
  return 1;
}

static int cb_null(void *ctx) { return scalar(ctx, NULL, 0, NULL, 0); }
static int cb_bool(void *ctx, int b) { (void)b; return scalar(ctx, NULL, 0, NULL, 0); }
static int cb_number(void *ctx, const char *s, size_t l) { return scalar(ctx, s, l, NULL, 0); }
static int cb_string(void *ctx, const unsigned char *s, size_t l) {
  return scalar(ctx, NULL, 0, (const char *)s, l);
}

static int cb_key(void *ctx, const unsigned char *s, size_t l) {
  pstate *p = ctx;
  if (p->skip > 0) return 1;
  size_t n = l < sizeof p->key - 1 ? l : sizeof p->key - 1;
  memcpy(p->key, s, n);
  p->key[n] = '\0';
  p->keylen = l;
  return 1;
}

static int push(pstate *p, int c) {
  if (p->depth >= SC__MAXDEPTH) return fail(p, SC_EPARSE, "nesting too deep");
  p->ctx[p->depth++] = (uint8_t)c;
  return 1;
}

static int cb_start_map(void *ctx) {
  pstate *p = ctx;
  if (p->skip > 0) { p->skip++; return 1; }
  int c = cur_ctx(p);
  if (c < 0) { p->saw_top = 1; return push(p, CTX_TOP); }
  if (c == CTX_TOP && strcmp(p->key, "traceEvents") == 0)
    return fail(p, SC_EPARSE, "key 'traceEvents': expected an array");
  if (c == CTX_TOP && strcmp(p->key, "distributedInfo") == 0) return push(p, CTX_DIST);
  if (c == CTX_EVENTS) { reset_event(p); return push(p, CTX_EVENT); }
  if (c == CTX_EVENT && p->drop) { p->skip = 1; return 1; }
  if (c == CTX_EVENT && strcmp(p->key, "args") == 0) return push(p, CTX_ARGS);
  if (c == CTX_ARGS && !p->drop && arg_expect(p->key) != NULL)
    return wrong_type(p, arg_expect(p->key));
  if (c == CTX_DEVPROPS) return push(p, CTX_DEVPROP);
  if (c == CTX_EVENT && (strcmp(p->key, "ts") == 0 || strcmp(p->key, "dur") == 0))
    return wrong_type(p, "a number");
  if (c == CTX_EVENT && strcmp(p->key, "name") == 0) return wrong_type(p, "a string");
  p->skip = 1;
  return 1;
}

static int cb_start_array(void *ctx) {
  pstate *p = ctx;
  if (p->skip > 0) { p->skip++; return 1; }
  int c = cur_ctx(p);
  if (c < 0) return fail(p, SC_EPARSE, "the document is not a JSON object");
  if (c == CTX_TOP && strcmp(p->key, "traceEvents") == 0) {
    p->saw_events = 1;
    return push(p, CTX_EVENTS);
  }
  if (c == CTX_TOP && strcmp(p->key, "deviceProperties") == 0) return push(p, CTX_DEVPROPS);
  if (c == CTX_EVENTS) {
    char buf[96];
    snprintf(buf, sizeof buf, "traceEvents[%llu]: expected an object",
             (unsigned long long)p->t->info.events);
    return fail(p, SC_EPARSE, buf);
  }
  if (c == CTX_EVENT && strcmp(p->key, "args") == 0) return wrong_type(p, "an object");
  if (c == CTX_ARGS && !p->drop && arg_expect(p->key) != NULL)
    return wrong_type(p, arg_expect(p->key));
  if (c == CTX_EVENT && (strcmp(p->key, "ts") == 0 || strcmp(p->key, "dur") == 0))
    return wrong_type(p, "a number");
  if (c == CTX_EVENT && strcmp(p->key, "name") == 0) return wrong_type(p, "a string");
  p->skip = 1;
  return 1;
}

static int count_skip(pstate *p) {
  sc_trace *t = p->t;
  char kind[64];
  const char *ph = p->ph[0] ? p->ph : "-", *cat = p->cat[0] ? p->cat : "-";
  size_t lp = strlen(ph), lc = strlen(cat);
  memcpy(kind, ph, lp);
  kind[lp] = '/';
  memcpy(kind + lp + 1, cat, lc + 1); /* ph < 8 and cat < 48 bytes: fits in 64 */
  t->info.skipped++;
  if (p->last_skip >= 0 && strcmp(t->skip_kind[p->last_skip], kind) == 0) {
    t->skip_count[p->last_skip]++;
    return 1;
  }
  for (size_t i = 0; i < t->nskip; i++) {
    if (strcmp(t->skip_kind[i], kind) == 0) {
      t->skip_count[i]++;
      p->last_skip = (int)i;
      return 1;
    }
  }
  if (t->nskip >= 256) { t->skip_count[t->nskip - 1]++; return 1; } /* "other" bucket */
  if (t->nskip == t->capskip) {
    size_t cap = t->capskip ? t->capskip * 2 : 16;
    char **k = realloc(t->skip_kind, cap * sizeof *k);
    if (k == NULL) return fail(p, SC_ENOMEM, "out of memory");
    t->skip_kind = k;
    uint64_t *c = realloc(t->skip_count, cap * sizeof *c);
    if (c == NULL) return fail(p, SC_ENOMEM, "out of memory");
    t->skip_count = c;
    t->capskip = cap;
  }
  size_t n = strlen(kind);
  if ((t->skip_kind[t->nskip] = malloc(n + 1)) == NULL) return fail(p, SC_ENOMEM, "out of memory");
  memcpy(t->skip_kind[t->nskip], kind, n + 1);
  t->skip_count[t->nskip++] = 1;
  return 1;
}

static int finish_event(pstate *p) {
  sc_trace *t = p->t;
  int kind = event_kind(p);
  t->info.events++;
  if (kind < 0) return count_skip(p);
  if (!p->has_ts || !p->has_dur || !p->has_name) {
    char buf[128];
    snprintf(buf, sizeof buf, "event %llu (%s): missing key '%s'",
             (unsigned long long)t->info.events - 1, p->cat,
             !p->has_ts ? "ts" : !p->has_dur ? "dur" : "name");
    return fail(p, SC_EPARSE, buf);
  }
  if (p->cur.dur_ns < 0) {
    char buf[96];
    snprintf(buf, sizeof buf, "event %llu: key 'dur': negative duration",
             (unsigned long long)t->info.events - 1);
    return fail(p, SC_EPARSE, buf);
  }
  /* PyTorch 1.8-1.9 recorded the step as an operator */
  if (kind == SC_TRACE_CPU_OP && p->namelen >= 13 && memcmp(p->name, "ProfilerStep#", 13) == 0)
    kind = SC_TRACE_ANNOTATION;
  p->cur.kind = (uint8_t)kind;
  if (kind == SC_TRACE_KERNEL || kind == SC_TRACE_MEMCPY || kind == SC_TRACE_MEMSET ||
      kind == SC_TRACE_SYNC) {
    /* GPU work: the device and the stream name the lane */
    if (p->arg_device >= 0) p->cur.pid = p->arg_device;
    if (p->arg_stream >= 0 || kind == SC_TRACE_SYNC) p->cur.tid = p->arg_stream;
  }
  double nel = p->in_nelems > p->out_nelems ? p->in_nelems : p->out_nelems;
  p->cur.coll_bytes = nel * p->dtype_bytes;
  if (sc__trace_intern(t, p->name, p->namelen, &p->cur.name) != SC_OK)
    return fail(p, SC_ENOMEM, "out of memory");
  if (t->nev == t->capev) {
    size_t cap = t->capev ? t->capev * 2 : 4096;
    sc__tev *e = realloc(t->ev, cap * sizeof *e);
    if (e == NULL) return fail(p, SC_ENOMEM, "out of memory");
    t->ev = e;
    t->capev = cap;
  }
  if (p->has_coll) {
    if (t->ncoll == t->capcoll) {
      size_t cap = t->capcoll ? t->capcoll * 2 : 256;
      if (cap >= UINT32_MAX) return fail(p, SC_ENOMEM, "out of memory");
      sc__tcoll *c = realloc(t->coll, cap * sizeof *c);
      if (c == NULL) return fail(p, SC_ENOMEM, "out of memory");
      t->coll = c;
      t->capcoll = cap;
    }
    t->coll[t->ncoll++] = p->coll;
    p->cur.coll = (uint32_t)t->ncoll;
  }
  t->ev[t->nev++] = p->cur;
  t->info.by_kind[kind]++;
  t->info.kept++;
  if (p->legacy) t->info.legacy++;
  return 1;
}

static int cb_end_map(void *ctx) {
  pstate *p = ctx;
  if (p->skip > 0) { p->skip--; return 1; }
  int c = cur_ctx(p);
  p->depth--;
  if (c == CTX_EVENT) return finish_event(p);
  if (c == CTX_DEVPROP) p->devprop_index++;
  return 1;
}

static int cb_end_array(void *ctx) {
  pstate *p = ctx;
  if (p->skip > 0) { p->skip--; return 1; }
  p->depth--;
  return 1;
}

static const yajl_callbacks callbacks = {cb_null,      cb_bool,      NULL,       NULL,
                                         cb_number,    cb_string,    cb_start_map,
                                         cb_key,       cb_end_map,   cb_start_array,
                                         cb_end_array};

/* ---- driver ---- */

static int new_trace(const char *path, sc_trace **out, sc_error *err) {
  sc_trace *t = calloc(1, sizeof *t);
  if (t == NULL) return sc_error_set(err, SC_ENOMEM, "%s: out of memory", path);
  size_t n = strlen(path);
  t->path = malloc(n + 1);
  if (t->path == NULL) {
    free(t);
    return sc_error_set(err, SC_ENOMEM, "%s: out of memory", path);
  }
  memcpy(t->path, path, n + 1);
  t->info.rank = -1;
  *out = t;
  return SC_OK;
}

void sc_trace_free(sc_trace *t) {
  if (t == NULL) return;
  for (size_t i = 0; i < t->nskip; i++) free(t->skip_kind[i]);
  free(t->skip_kind);
  free(t->skip_count);
  free(t->ev);
  free(t->coll);
  free(t->pool);
  free(t->hash);
  free(t->path);
  free(t);
}

static int yajl_fail(pstate *p, yajl_status st, const unsigned char *buf, size_t len) {
  if (p->rc != SC_OK) return p->rc; /* our own callback refused */
  (void)st;
  unsigned char *m = yajl_get_error(p->h, 0, buf, len);
  char msg[200];
  snprintf(msg, sizeof msg, "malformed JSON: %s", m ? (const char *)m : "?");
  for (char *c = msg; *c; c++) {
    if (*c == '\n' || *c == '\r') *c = ' ';
  }
  size_t l = strlen(msg);
  while (l > 0 && msg[l - 1] == ' ') msg[--l] = '\0';
  if (m) yajl_free_error(p->h, m);
  fail(p, SC_EPARSE, msg);
  return p->rc;
}

typedef int (*read_fn)(void *src, unsigned char *buf, size_t cap, size_t *got, sc_error *err,
                       const char *path, uint64_t at);

static int run_parse(sc_trace *t, read_fn rd, void *src, sc_error *err) {
  pstate p;
  memset(&p, 0, sizeof p);
  p.t = t;
  p.err = err;
  p.rc = SC_OK;
  p.last_skip = -1;
  p.h = yajl_alloc(&callbacks, NULL, &p);
  unsigned char *buf = malloc(SC__CHUNK);
  int rc = SC_OK;
  if (p.h != NULL) yajl_config(p.h, yajl_dont_validate_strings, 1);
  if (p.h == NULL || buf == NULL) {
    rc = sc_error_set(err, SC_ENOMEM, "%s: out of memory", t->path);
    goto done;
  }
  for (;;) {
    size_t got = 0;
    rc = rd(src, buf, SC__CHUNK, &got, err, t->path, p.base);
    if (rc != SC_OK) goto done;
    if (got == 0) break;
    yajl_status st = yajl_parse(p.h, buf, got);
    if (st != yajl_status_ok) {
      rc = yajl_fail(&p, st, buf, got);
      goto done;
    }
    p.base += got;
    if (p.base > SC_TRACE_INPUT_MAX) { /* an endless stream: refused, not all memory */
      rc = sc_error_set(err, SC_ELIMIT, "%s: more than %llu GiB of JSON, the cap on a trace "
                        "(SC_TRACE_INPUT_MAX; an endless stream?)", t->path,
                        (unsigned long long)(SC_TRACE_INPUT_MAX >> 30));
      goto done;
    }
  }
  {
    yajl_status st = yajl_complete_parse(p.h);
    if (st != yajl_status_ok) {
      if (p.rc == SC_OK && !p.saw_top && p.base == 0) {
        p.rc = sc_error_set(err, SC_EPARSE, "%s: byte 0: empty input, expected a JSON object",
                            t->path);
      } else if (p.rc == SC_OK) {
        /* premature end: the offset is the end of the data */
        p.rc = sc_error_set(err, SC_EPARSE, "%s: byte %llu: truncated JSON (premature end "
                            "of input)", t->path, (unsigned long long)p.base);
      }
      rc = p.rc;
      goto done;
    }
  }
  if (!p.saw_top) {
    rc = sc_error_set(err, SC_EPARSE, "%s: byte %llu: empty input, expected a JSON object",
                      t->path, (unsigned long long)p.base);
  } else if (!p.saw_events) {
    rc = sc_error_set(err, SC_EPARSE, "%s: byte %llu: no 'traceEvents' array in the "
                      "top-level object", t->path, (unsigned long long)p.base);
  }
  t->info.json_bytes = p.base;
done:
  if (p.h) yajl_free(p.h);
  free(buf);
  free(p.name);
  return rc;
}

static int gz_read(void *src, unsigned char *buf, size_t cap, size_t *got, sc_error *err,
                   const char *path, uint64_t at) {
  gzFile f = src;
  int n = gzread(f, buf, (unsigned)cap);
  if (n < 0) {
    int zerr = 0;
    const char *m = gzerror(f, &zerr);
    return sc_error_set(err, SC_EIO, "%s: byte %llu: gzip stream %s (%s)", path,
                        (unsigned long long)at,
                        zerr == Z_BUF_ERROR ? "truncated" : "corrupt", m ? m : "?");
  }
  *got = (size_t)n;
  if (n == 0) {
    int zerr = 0;
    const char *m = gzerror(f, &zerr);
    if (zerr != Z_OK && zerr != Z_STREAM_END)
      return sc_error_set(err, SC_EIO, "%s: byte %llu: gzip stream %s (%s)", path,
                          (unsigned long long)at,
                          zerr == Z_BUF_ERROR ? "truncated" : "corrupt", m ? m : "?");
  }
  return SC_OK;
}

int sc_trace_load(const char *path, sc_trace **out, sc_error *err) {
  if (out == NULL) return sc_error_set(err, SC_EINVAL, "sc_trace_load: out is NULL");
  *out = NULL;
  if (path == NULL) return sc_error_set(err, SC_EINVAL, "sc_trace_load: path is NULL");
  gzFile f = gzopen(path, "rb");
  if (f == NULL)
    return sc_error_set(err, SC_EIO, "%s: cannot open: %s", path,
                        errno ? strerror(errno) : "gzopen failed");
  gzbuffer(f, SC__CHUNK);
  sc_trace *t = NULL;
  int rc = new_trace(path, &t, err);
  if (rc == SC_OK) rc = run_parse(t, gz_read, f, err);
  gzclose(f);
  if (rc != SC_OK) {
    sc_trace_free(t);
    return rc;
  }
  *out = t;
  return SC_OK;
}

typedef struct mem_src {
  const unsigned char *p;
  size_t len, at;
} mem_src;

static int mem_read(void *src, unsigned char *buf, size_t cap, size_t *got, sc_error *err,
                    const char *path, uint64_t at) {
  (void)err;
  (void)path;
  (void)at;
  mem_src *m = src;
  size_t n = m->len - m->at < cap ? m->len - m->at : cap;
  memcpy(buf, m->p + m->at, n);
  m->at += n;
  *got = n;
  return SC_OK;
}

int sc_trace_load_mem(const char *name, const void *json, size_t len, sc_trace **out,
                      sc_error *err) {
  if (out == NULL) return sc_error_set(err, SC_EINVAL, "sc_trace_load_mem: out is NULL");
  *out = NULL;
  if (json == NULL && len > 0)
    return sc_error_set(err, SC_EINVAL, "sc_trace_load_mem: json is NULL");
  sc_trace *t = NULL;
  int rc = new_trace(name ? name : "<memory>", &t, err);
  if (rc != SC_OK) return rc;
  mem_src m = {json, len, 0};
  rc = run_parse(t, mem_read, &m, err);
  if (rc != SC_OK) {
    sc_trace_free(t);
    return rc;
  }
  *out = t;
  return SC_OK;
}

void sc_trace_get_info(const sc_trace *t, sc_trace_info *out) {
  if (t == NULL || out == NULL) return;
  *out = t->info;
  out->skipped_kinds = t->nskip;
}

int sc_trace_skipped_kind(const sc_trace *t, size_t i, const char **kind, uint64_t *count) {
  if (t == NULL || i >= t->nskip) return SC_ENOTFOUND;
  if (kind) *kind = t->skip_kind[i];
  if (count) *count = t->skip_count[i];
  return SC_OK;
}

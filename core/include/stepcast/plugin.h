/*
 * stepcast plugin SDK: the whole contract between the stepcast runtime and a plugin.
 *
 * A plugin is a shared object exporting one function, sc_plugin_entry_v1(), that returns a
 * pointer to a constant descriptor. The descriptor starts with sc_plugin_header (common to
 * all kinds) and continues with the payload of its kind: an operator family
 * (sc_op_plugin), a collective algorithm (sc_coll_plugin) or a hardware target
 * (sc_hw_plugin). A plugin needs this header alone: it includes only the C standard library.
 *
 * Rules the loader enforces (each refusal names the file and the reason):
 *   - header.abi_major == SC_PLUGIN_ABI_MAJOR;
 *   - header.abi_minor <= SC_PLUGIN_ABI_MINOR: the structures exchanged with the runtime
 *     (sc_device, filled by a hardware plugin in the runtime's buffer; sc_op_desc,
 *     sc_coll_desc, sc_estimate) carry no size, so a plugin built against a newer minor,
 *     where they may have grown, could write or read past the runtime's copies;
 *   - header.size >= the size that kind had at ABI minor 0 (SC_*_PLUGIN_MIN_SIZE);
 *   - header.flags == 0 (reserved for later use);
 *   - header.name is a non-empty identifier ([A-Za-z0-9_.-]+);
 *   - no two plugins of one kind with one name and one priority (the higher priority wins).
 *
 * Units are SI and carried in names: time_s, bytes, flops, bw_Bps, flops_per_s.
 * Everything a plugin receives is borrowed for the duration of the call.
 * Plugins are built with hidden visibility; only the entry symbol is exported.
 */
#ifndef STEPCAST_PLUGIN_H
#define STEPCAST_PLUGIN_H

#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------- */
/* ABI version                                                               */

#define SC_PLUGIN_ABI_MAJOR 1
#define SC_PLUGIN_ABI_MINOR 2

/* ------------------------------------------------------------------------- */
/* Status codes: one table for the whole project (libuv style).              */
/* Functions return int: SC_OK (0) or one of the negative codes below.       */

#define SC_ERRNO_MAP(XX)                                                      \
  XX(EINVAL,      -1, "invalid argument")                                     \
  XX(ENOMEM,      -2, "out of memory")                                        \
  XX(EIO,         -3, "input/output error")                                   \
  XX(EPARSE,      -4, "parse error")                                          \
  XX(ESPEC,       -5, "invalid specification")                                \
  XX(ENOTFOUND,   -6, "not found")                                            \
  XX(EABI,        -7, "plugin ABI mismatch")                                  \
  XX(EPLUGIN,     -8, "plugin refused")                                       \
  XX(EUNSUPPORTED,-9, "not supported")                                        \
  XX(ERANGE,     -10, "value out of range")                                   \
  XX(ENOFIT,     -11, "does not fit in device memory")                        \
  XX(EEXIST,     -12, "already exists")                                       \
  XX(ECONFIG,    -13, "impossible configuration")                             \
  XX(ELIMIT,     -14, "limit exceeded")

typedef enum {
  SC_OK = 0,
#define SC__ERRNO_ENUM(name, val, msg) SC_##name = val,
  SC_ERRNO_MAP(SC__ERRNO_ENUM)
#undef SC__ERRNO_ENUM
  SC__ERRNO_LAST = -15
} sc_status;

/* Details of a failure: the status code and a one-line message that names the
 * file, line and key (or the parameter) at fault, e.g.
 * "models/gpt3.toml:12:1: key 'heads': must divide 'hidden' (12288 % 97 != 0)". */
#define SC_ERROR_MSG_MAX 512
typedef struct sc_error {
  int code;
  char msg[SC_ERROR_MSG_MAX];
} sc_error;

/* ------------------------------------------------------------------------- */
/* Common vocabulary                                                         */

typedef enum {
  SC_DTYPE_FP32 = 0,
  SC_DTYPE_TF32,
  SC_DTYPE_BF16,
  SC_DTYPE_FP16,
  SC_DTYPE_FP8,
  SC_DTYPE_INT8,
  SC_DTYPE_COUNT
} sc_dtype;

/* "fp32", "tf32", "bf16", "fp16", "fp8", "int8"; "?" outside the enum. Also the keys of
 * peak_flops_per_s in hardware files and the spellings of --dtype. */
static inline const char *sc_dtype_name(sc_dtype d) {
  static const char *const names[SC_DTYPE_COUNT] = {"fp32", "tf32", "bf16",
                                                    "fp16", "fp8",  "int8"};
  return ((unsigned)d < (unsigned)SC_DTYPE_COUNT) ? names[d] : "?";
}

/* The ranges a number of a hardware or topology file (and a sweep --vary value) must lie
 * in, by unit: far wider than any device or network built or planned, narrow enough that an
 * exponent typo (mem_bw_Bps = 3.35e-12 for 3.35e12) is refused instead of predicted from.
 * The spec loaders, the hardware plugins and sweep --vary all read them from here. */
#define SC_RANGE_FLOPS_MIN 1e3 /* FLOP/s */
#define SC_RANGE_FLOPS_MAX 1e19
#define SC_RANGE_BPS_MIN 1e3 /* bytes per second */
#define SC_RANGE_BPS_MAX 1e16
#define SC_RANGE_BYTES_MIN 1 /* bytes */
#define SC_RANGE_BYTES_MAX 1e16
#define SC_RANGE_SECONDS_MAX 1 /* seconds (from 0) */
#define SC_RANGE_EFFICIENCY_MIN 1e-4 /* fractions of a peak (up to 1) */
#define SC_RANGE_STR_(x) #x
#define SC_RANGE_STR(x) SC_RANGE_STR_(x) /* "1e3" of SC_RANGE_BPS_MIN, for messages */

/* The range of a number named prefix + key, read from the unit in its name: FLOP/s (a key
 * or table named *flops_per_s*), bytes per second (*_Bps), bytes (*_bytes), seconds (*_s).
 * 0 when the name gives no unit (counts, fractions, multiples). */
static inline int sc_unit_range(const char *prefix, const char *key, double *lo, double *hi,
                                const char **unit) {
  size_t n = strlen(key);
#define SC__ENDS(suf) (n >= sizeof(suf) - 1 && strcmp(key + n - (sizeof(suf) - 1), suf) == 0)
  if (strstr(prefix, "flops_per_s") != NULL || strstr(key, "flops_per_s") != NULL) {
    *lo = SC_RANGE_FLOPS_MIN, *hi = SC_RANGE_FLOPS_MAX, *unit = "FLOP/s";
  } else if (SC__ENDS("_Bps")) {
    *lo = SC_RANGE_BPS_MIN, *hi = SC_RANGE_BPS_MAX, *unit = "B/s";
  } else if (SC__ENDS("_bytes")) {
    *lo = SC_RANGE_BYTES_MIN, *hi = SC_RANGE_BYTES_MAX, *unit = "bytes";
  } else if (SC__ENDS("_s")) {
    *lo = 0, *hi = SC_RANGE_SECONDS_MAX, *unit = "s";
  } else {
    return 0;
  }
#undef SC__ENDS
  return 1;
}

/* What limited an estimate. */
typedef enum {
  SC_BOUND_COMPUTE = 0, /* flops / achievable flops dominated */
  SC_BOUND_MEMORY,      /* bytes / achievable memory bandwidth dominated */
  SC_BOUND_LATENCY,     /* fixed launch or network latency dominated */
  SC_BOUND_BANDWIDTH,   /* a network tier's bandwidth dominated (collectives) */
  SC_BOUND_COUNT
} sc_bound;

#define SC_MAX_FEATURES 16 /* features a plugin may hand to the residual regressor */
#define SC_OP_MAX_DIMS 8   /* shape dimensions of one operator */
#define SC_MAX_TIERS 8     /* network tiers of one topology */
#define SC_KERNEL_RATE_FAMILIES 12 /* operator families with per-kernel rates on one device */
#define SC_KERNEL_RATE_VARIANTS 16 /* variants per family with a per-kernel rate */
#define SC_ROW_RATE_WIDTHS 8       /* row widths of sc_device.row_rate: 64 x 2^i columns */
#define SC_ROW_RATE_COLS0 64.0     /* the narrowest of them */
#define SC_CACHE_CURVE_POINTS 24   /* working sets of sc_device.cache_miss_ws_bytes */

/* ------------------------------------------------------------------------- */
/* Host services: what the runtime offers every plugin (passed to init).     */

/* An opaque table of a spec file (a TOML table). Lookups through sc_host. */
typedef struct sc_table sc_table;

typedef enum { SC_LOG_ERROR = 0, SC_LOG_WARN, SC_LOG_INFO, SC_LOG_DEBUG } sc_log_level;

typedef struct sc_host {
  uint32_t size; /* sizeof(sc_host) as the runtime built it; fields past it are absent */
  uint16_t abi_major, abi_minor;
  /* printf-style logging, attributed to the plugin by name. */
  void (*log)(sc_log_level level, const char *plugin, const char *fmt, ...)
#if defined(__GNUC__)
      __attribute__((format(printf, 3, 4)))
#endif
      ;
  /* Allocation that the runtime accounts for (same contract as malloc/free). */
  void *(*alloc)(size_t bytes);
  void (*free)(void *ptr);
  /* Reading a plugin's own table of a spec file. Each returns SC_OK, SC_ENOTFOUND when
   * the key is absent (err untouched), or SC_ESPEC when it has the wrong type or range,
   * with err->msg naming "file:line:col: key 'a.b'". Keys may be dotted ("peak.bf16").
   * Strings and tables are borrowed from the document and live as long as it does. */
  int (*table_number)(const sc_table *t, const char *key, double *out, sc_error *err);
  int (*table_integer)(const sc_table *t, const char *key, int64_t *out, sc_error *err);
  int (*table_string)(const sc_table *t, const char *key, const char **out, sc_error *err);
  int (*table_bool)(const sc_table *t, const char *key, int *out, sc_error *err);
  int (*table_table)(const sc_table *t, const char *key, const sc_table **out, sc_error *err);
  /* Where a key sits, "file:line:col", for a plugin's own error messages. */
  const char *(*table_where)(const sc_table *t, const char *key);
  /* Added at ABI 1.0 after table_where (check host->size before use): the i-th key of t
   * in document order, i from 0; SC_OK with *key borrowed, SC_ENOTFOUND past the last
   * key. Lets a plugin reject keys it does not know. */
  int (*table_key)(const sc_table *t, size_t i, const char **key);
} sc_host;

/* ------------------------------------------------------------------------- */
/* Device: what a hardware plugin produces and operator plugins consume.     */
/* No size field: the runtime allocates it and refuses plugins of a newer ABI minor, whose
 * sc_device may be larger (docs/plugins.md, "ABI rules"). Fields are only appended, so a
 * plugin of an older minor fills a prefix; the runtime zeroes the rest first. */

typedef struct sc_device {
  char name[64];                            /* e.g. "a100-sxm4-40gb" */
  char kind[32];                            /* the hardware plugin: "gpu", "cpu", ... */
  double peak_flops_per_s[SC_DTYPE_COUNT];  /* dense peak per dtype; 0 = unsupported */
  double mem_bytes;                         /* device memory capacity */
  double mem_bw_Bps;                        /* peak device-memory bandwidth */
  double l2_bytes;                          /* last-level on-chip cache */
  uint32_t compute_units;                   /* SMs or CUs (or cores for a CPU) */
  /* Roofline derating with a physical meaning, same for every row of a device. */
  double flops_efficiency;                  /* achievable fraction of peak FLOP/s (0,1] */
  double mem_efficiency;                    /* achievable fraction of peak bandwidth (0,1] */
  double launch_s;                          /* fixed per-kernel launch/overhead time */
  /* Tensor-core tile (for tile quantisation): a GEMM dimension not a multiple wastes work. */
  uint32_t tile_m, tile_n, tile_k;
  /* Appended at ABI 1.0 (0 = not stated; a hardware plugin that predates them leaves them 0,
   * since the host zeroes the device first). Matrix-multiply efficiency per dtype: the
   * achievable fraction of peak_flops_per_s[d] for GEMMs in that type (a measured maximum
   * achievable matmul rate over the peak); 0 = flops_efficiency. Fused attention: the
   * achievable fraction of the peak of the attention's dtype for the forward and backward
   * kernels at long sequences; 0 = the matmul efficiency of that dtype. */
  double matmul_efficiency[SC_DTYPE_COUNT];
  double attention_fwd_efficiency, attention_bwd_efficiency;
  /* Appended at ABI 1.0 (0 = not stated: peak_flops_per_s[fp32]): the fp32 rate of the
   * vector families (norm, softmax, element-wise, embedding, cross-entropy, optimizer) when
   * it differs from the fp32 peak, e.g. a CPU whose fp32 peak is its sgemm rate while these
   * kernels are scalar C loops (measured by `stepcast sample` on a layer-norm forward). */
  double vector_flops_per_s;
  /* Appended at ABI 1.0 (0 = not stated: every operator at mem_bw_Bps * mem_efficiency):
   * the bandwidth of operators whose data stay in the on-chip caches; with it, the share
   * bytes / (bytes + l2_bytes) of an operator's traffic goes at the DRAM rate and the rest at
   * this one (a smooth hit rate; e.g. STREAM Add on L1-resident arrays). */
  double cache_bw_Bps;
  /* Appended at ABI 1.0 (empty family = not stated): the measured arithmetic rate of single
   * kernels, per operator family and variant, in that plugin's FLOP count. A CPU's vector
   * kernels are C loops whose rates differ by kernel (a vectorised map, a serial reduction,
   * an expf per element), so one vector_flops_per_s misplaces the turn from compute- to
   * memory-bound; `stepcast sample` measures each on a cache-resident shape. Read through
   * sc_device_kernel_rate. */
  struct {
    char family[32];
    double flops_per_s[SC_KERNEL_RATE_VARIANTS]; /* by variant index; 0 = not stated */
  } kernel_rates[SC_KERNEL_RATE_FAMILIES];
  /* Appended at ABI 1.0 (0 = no): 1 when the device's caches read a line from memory before
   * a store that does not update data just read (write-allocate, as x86 CPUs do) and its
   * mem_bw_Bps is STREAM Add's count (12 bytes per element while 16 moved). Operators that
   * state their freshly written bytes then pay them twice at 4/3 of mem_bw_Bps; in-place
   * updates and pure reads move only their bytes (docs/operators.md). */
  int write_allocate;
  /* Appended at ABI 1.0 (0 = not stated: every kernel overlaps its arithmetic with its
   * memory traffic, the roofline's max). A row kernel that passes over each row more than
   * once (a norm: statistics, then the output) overlaps the two only while a row's working
   * set stays in the core's L1 data cache, l1_bytes: the out-of-order core then runs ahead
   * into the next rows. Past it each row waits for its own data, and the kernel adds
   * row_exposure times the smaller of its compute and memory times (per family and variant,
   * >= 0, measured by `stepcast sample` on rows wider than the L1 over data past the
   * last-level cache: 0 = still overlapped, 1 = the two in sequence, above 1 = slower still,
   * e.g. later passes that re-read the row from L2). The added share ramps from 0 at a
   * per-row working set of l1_bytes / 4 to all of it at 5 l1_bytes / 4 (docs/operators.md).
   * Read through sc_device_row_exposure; a family whose kernel pays it at every row width
   * (the causal softmax: measured on rows of 128 to 1600 columns alike) reads the stated
   * multiple whole through sc_device_exposure. */
  double l1_bytes;
  struct {
    char family[32];
    double multiple[SC_KERNEL_RATE_VARIANTS]; /* by variant index; 0 = overlaps fully */
  } row_exposure[SC_KERNEL_RATE_FAMILIES];
  /* Appended at ABI 1.0 (empty family = not stated: a row kernel runs at its stated rate
   * whatever its width). A row kernel's arithmetic rate depends on the row's width: on a CPU
   * a norm's per-row reductions are serial chains, and rows narrow enough for the
   * out-of-order window to hold a whole row run two rows' chains at once. row_rate states, per
   * family and variant, the multiple of the kernel's stated rate (kernel_rates, measured on
   * rows of one width: 1024 columns for the norms, 256 for the softmax) at widths of
   * SC_ROW_RATE_COLS0 x 2^i columns (i < SC_ROW_RATE_WIDTHS: 64 .. 8192), 0 = not stated
   * there; measured by `stepcast sample` on cache-resident rows.
   * Read through sc_device_row_rate. */
  struct {
    char family[32];
    double multiple[SC_KERNEL_RATE_VARIANTS][SC_ROW_RATE_WIDTHS]; /* [variant][log2(cols/64)] */
  } row_rate[SC_KERNEL_RATE_FAMILIES];
  /* Appended at ABI 1.0 (0 = not stated: a GEMM's operand traffic overlaps its arithmetic,
   * the roofline's max). A CPU BLAS copies (packs) its operands into blocked buffers and
   * reads and writes C between the arithmetic of its blocks; the part of that traffic that
   * misses the core's caches is not hidden behind the arithmetic. A GEMM then adds, per
   * product, g * ws / gemm_exposed_bw_Bps seconds, with ws = e * (m*k + k*n + m*n) its
   * operand bytes and g = ws / (ws + gemm_exposed_knee_bytes) the share exposed (half at the
   * knee). Both are measured by `stepcast sample` on GEMMs with one dimension of 16 at
   * working sets from below the level-2 cache to past the last-level one, and the fp32 peak
   * then excludes the 2048^3 GEMM's own exposed traffic (docs/operators.md). Both must be
   * stated for the term to apply. */
  double gemm_exposed_bw_Bps;
  double gemm_exposed_knee_bytes;
  /* Appended at ABI 1.0 (0 points = not stated: the smooth share footprint / (footprint +
   * l2_bytes)). The share of an operator's traffic that misses the caches, measured by
   * working set: at cache_miss_ws_bytes[i] (increasing) the share cache_miss_share[i]
   * (non-decreasing, in [0, 1]) goes at the DRAM rate and the rest at cache_bw_Bps. A shared
   * or virtualised last-level cache holds less than its nominal size, and a STREAM-sized
   * working set should get the STREAM rate; `stepcast sample` measures the curve with STREAM
   * Add from inside the level-1 cache to past the last-level one (docs/operators.md). Needs
   * cache_bw_Bps. Read through sc_device_miss_share. */
  uint32_t cache_miss_points;
  double cache_miss_ws_bytes[SC_CACHE_CURVE_POINTS];
  double cache_miss_share[SC_CACHE_CURVE_POINTS];
  /* Appended at ABI 1.0 (0 = not stated: a causal attention computes half its score matrix).
   * The tile of the device's fused attention kernel: blocks of attention_block_q query rows,
   * each against its visible keys rounded up to a multiple of attention_block_k (0 = 1). A
   * causal block computes its diagonal tiles whole and masks them, so short sequences do more
   * than half the work (sc_device_attention_causal_share). */
  uint32_t attention_block_q, attention_block_k;
  /* Appended at ABI 1.0 (0 points = not stated: a zero-fill is priced by the memory rates
   * and cache_miss_share, as a streaming write). The rate at which the device zero-fills a
   * buffer (memset, zero_()), measured by its size: at fill_bytes[i] (increasing) fill_bw_Bps[i]
   * bytes per second. A C library's memset switches from cached to non-temporal stores near
   * the last-level cache's size, so the rate neither follows STREAM's nor falls monotonically
   * with the size (docs/operators.md, "Zero-fills"). `stepcast sample` measures it from
   * 1/512 to 4 times the last-level cache. Read through sc_device_fill_bw. */
  uint32_t fill_points;
  double fill_bytes[SC_CACHE_CURVE_POINTS];
  double fill_bw_Bps[SC_CACHE_CURVE_POINTS];
  /* Appended at ABI 1.0 (0 = not stated: in-place traffic moves at 4/3 of mem_bw_Bps on a
   * write-allocate device, its bytes without the read-for-ownership STREAM Add pays). The
   * memory rate of an in-place read-modify-write stream, a += b (12 bytes counted per
   * element, as STREAM's): the traffic of an operator that writes only lines it has read
   * (fresh = 0: the embedding backward's gradient accumulation, the optimizer) goes to memory
   * at this rate instead. Two read streams and a write-back run faster than STREAM Add's
   * three reads and a write: on the Zen 4 guest about 1.5 x its mem_bw_Bps, not 4/3
   * (docs/operators.md, "In-place updates"). `stepcast sample` measures it before, through
   * and after its plan, as mem_bw_Bps. */
  double rmw_bw_Bps;
  /* Appended at ABI 1.0 (0 points = not stated: a gather's rows stream as its bytes). The
   * time a gather of rows at random places (an embedding lookup, the scatter of its backward)
   * spends per row beyond its streaming roofline, by the working set its rows and output
   * keep: each row starts where the prefetcher has no stream, so its first lines wait for the
   * level the row lives in (not page walks: on 2 MiB pages the Zen 4 guest gathers at the
   * same rate, docs/learned.md). At
   * gather_ws_bytes[i] (increasing) gather_row_s[i] seconds per row (non-decreasing, >= 0).
   * On the Zen 4 guest about 0 up to 2 MB, 18-51 ns at 12.6-16.8 MB and 44-149 ns past the
   * L3, for 1 KiB rows (docs/operators.md, "Gathers"). `stepcast sample` measures it with embedding
   * lookups of 1 KiB rows from 1/512 to 4 times the last-level cache, as the excess over the
   * roofline of the file it writes. Read through sc_device_gather_row_s. */
  uint32_t gather_points;
  double gather_ws_bytes[SC_CACHE_CURVE_POINTS];
  double gather_row_s[SC_CACHE_CURVE_POINTS];
  /* Appended at ABI 1.0 (0 points = not stated: a cold buffer fills at the fill curve's
   * last rate, past the caches). The zero-fill rate of a cold buffer (SC_OP_COLD: last
   * touched long before, its lines in memory), by its size: at fill_cold_bytes[i]
   * (increasing) fill_cold_bw_Bps[i] bytes per second. Below a C library's non-temporal
   * threshold memset's ordinary stores read each line before writing it, so a cold 8 MB
   * fill runs at about a third of the warm rate on the Zen 4 guest; past it the stores
   * bypass the caches and cold and warm agree (docs/operators.md, "Cold parameters").
   * `stepcast sample` measures it as the fill curve, each call after an eviction. Read
   * through sc_device_fill_cold_bw. */
  uint32_t fill_cold_points;
  double fill_cold_bytes[SC_CACHE_CURVE_POINTS];
  double fill_cold_bw_Bps[SC_CACHE_CURVE_POINTS];
  /* Appended at ABI 1.0 (0 = not stated: every GEMM at the aligned matmul efficiency). The
   * fraction of peak of a GEMM with a dimension that is not a whole number of 16-byte
   * vectors (m, n or k not a multiple of 16 / dtype bytes: a vocabulary of 50257): the
   * library cannot use its aligned tensor-core kernels and falls back to one with narrow
   * loads (cuBLAS 13 on Hopper: CUTLASS's sm75 mma.m16n8k8 kernel at about an eighth of the
   * bf16 peak, docs/operators.md, "Unaligned GEMMs"). */
  double matmul_unaligned_efficiency;
  /* Appended at ABI 1.2 (0 = not stated). The board's power limit in watts (the
   * datasheet's maximum thermal design power): what a training run's energy is counted
   * at, the convention of Meta's Llama model cards ("peak power capacity per GPU device");
   * it prices no operator. */
  double board_power_w;
} sc_device;

/* A curve of n >= 1 points (x increasing, > 0) at x = at: y interpolated linearly in log2(x)
 * between the points, the nearest point's y beyond them. */
static inline double sc__curve_log2(const double *x, const double *y, uint32_t n, double at) {
  if (!(at > x[0])) return y[0];
  if (at >= x[n - 1]) return y[n - 1];
  uint32_t i = 1;
  while (i < n - 1 && x[i] < at) i++;
  double f = log2(at / x[i - 1]) / log2(x[i] / x[i - 1]);
  return y[i - 1] + f * (y[i] - y[i - 1]);
}

/* The zero-fill rate of a buffer of bytes on dev, bytes per second: dev->fill_bw_Bps
 * interpolated linearly in log2(bytes) between the stated sizes, the nearest stated rate
 * beyond them; 0 when dev states none. */
static inline double sc_device_fill_bw(const sc_device *dev, double bytes) {
  uint32_t n = dev->fill_points;
  if (n > SC_CACHE_CURVE_POINTS) n = SC_CACHE_CURVE_POINTS;
  return n > 0 ? sc__curve_log2(dev->fill_bytes, dev->fill_bw_Bps, n, bytes) : 0.0;
}

/* The zero-fill rate of a cold buffer of bytes on dev (sc_device.fill_cold_bw_Bps),
 * interpolated as sc_device_fill_bw; 0 when dev states none. */
static inline double sc_device_fill_cold_bw(const sc_device *dev, double bytes) {
  uint32_t n = dev->fill_cold_points;
  if (n > SC_CACHE_CURVE_POINTS) n = SC_CACHE_CURVE_POINTS;
  return n > 0 ? sc__curve_log2(dev->fill_cold_bytes, dev->fill_cold_bw_Bps, n, bytes) : 0.0;
}

/* The time per row that a gather of rows at random places spends on dev beyond its streaming
 * roofline, for a working set of footprint bytes: dev->gather_row_s interpolated linearly in
 * log2(footprint) between the stated sizes, the nearest beyond them; 0 when dev states none. */
static inline double sc_device_gather_row_s(const sc_device *dev, double footprint) {
  uint32_t n = dev->gather_points;
  if (n > SC_CACHE_CURVE_POINTS) n = SC_CACHE_CURVE_POINTS;
  return n > 0 ? sc__curve_log2(dev->gather_ws_bytes, dev->gather_row_s, n, footprint) : 0.0;
}

/* The expected number of distinct rows among draws rows drawn uniformly at random, with
 * replacement, from rows rows: rows (1 - (1 - 1/rows)^draws); 0 when either is < 1. An
 * embedding lookup's tokens touch this many of its table's rows. */
static inline double sc_expected_distinct(double draws, double rows) {
  if (!(draws >= 1.0) || !(rows >= 1.0)) return 0.0;
  return rows * -expm1(draws * log1p(-1.0 / rows));
}

/* The share of a causal attention's seq_q x seq_k score matrix that dev's fused kernel
 * computes (the matmul work; docs/operators.md): 1/2 when dev states no attention tile, else
 * the sum over blocks of attention_block_q query rows of their rows times their visible keys
 * (the block's last row + seq_k - seq_q, the mask aligned to the last key), rounded up to
 * attention_block_k, at least 1 and at most seq_k, over seq_q x seq_k. */
static inline double sc_device_attention_causal_share(const sc_device *dev, double seq_q,
                                                      double seq_k) {
  double bq = dev->attention_block_q, bk = dev->attention_block_k > 0 ? dev->attention_block_k : 1;
  if (!(bq > 0.0) || !(seq_q >= 1.0) || !(seq_k >= 1.0)) return 0.5;
  double sum = 0.0;
  if (seq_q / bq > 65536.0) { /* many blocks: the sum in closed form, keys rounded up by half
                               * a key tile on average */
    double v = 1.0 - (seq_q - bq - (bk - 1.0)) / (2.0 * seq_k);
    return v < 1.0 ? v : 1.0;
  }
  for (double r0 = 0.0; r0 < seq_q; r0 += bq) {
    double r1 = r0 + bq < seq_q ? r0 + bq : seq_q;
    double keys = ceil((r1 + seq_k - seq_q) / bk) * bk;
    if (keys < 1.0) keys = 1.0;
    if (keys > seq_k) keys = seq_k;
    sum += (r1 - r0) * keys;
  }
  return sum / (seq_q * seq_k);
}

/* The share of the traffic of an operator with a working set of footprint bytes that goes
 * at the DRAM rate on dev, when dev states a cache rate above its DRAM rate and a cache size
 * or curve: the stated curve interpolated linearly in log2(footprint) between its points, the
 * nearest point's share beyond them; else footprint / (footprint + l2_bytes). 1 (every byte
 * from DRAM) when the device states no cache rate. */
static inline double sc_device_miss_share(const sc_device *dev, double footprint) {
  double dram = dev->mem_bw_Bps * dev->mem_efficiency;
  if (!(dev->cache_bw_Bps > dram)) return 1.0;
  uint32_t n = dev->cache_miss_points;
  if (n > SC_CACHE_CURVE_POINTS) n = SC_CACHE_CURVE_POINTS;
  if (n > 0) return sc__curve_log2(dev->cache_miss_ws_bytes, dev->cache_miss_share, n, footprint);
  if (!(dev->l2_bytes > 0.0)) return 1.0;
  return footprint > 0.0 ? footprint / (footprint + dev->l2_bytes) : 0.0;
}

/* The time a GEMM of batch products, each of ws_bytes operand bytes (e * (m*k + k*n + m*n)),
 * adds on dev past the roofline's max (see gemm_exposed_bw_Bps above), in seconds; 0 when
 * the device does not state gemm_exposed_bw_Bps and gemm_exposed_knee_bytes. */
static inline double sc_device_gemm_exposed_s(const sc_device *dev, double batch,
                                              double ws_bytes) {
  if (!(dev->gemm_exposed_bw_Bps > 0.0) || !(dev->gemm_exposed_knee_bytes > 0.0) ||
      !(ws_bytes > 0.0) || !(batch > 0.0))
    return 0.0;
  double g = ws_bytes / (ws_bytes + dev->gemm_exposed_knee_bytes);
  return batch * g * ws_bytes / dev->gemm_exposed_bw_Bps;
}

/* The stated rate of (family, variant) on dev, or 0 when none is stated. */
static inline double sc_device_kernel_rate(const sc_device *dev, const char *family,
                                           uint32_t variant) {
  if (family == NULL || variant >= SC_KERNEL_RATE_VARIANTS) return 0.0;
  for (int i = 0; i < SC_KERNEL_RATE_FAMILIES && dev->kernel_rates[i].family[0] != '\0'; i++) {
    if (strcmp(dev->kernel_rates[i].family, family) == 0)
      return dev->kernel_rates[i].flops_per_s[variant];
  }
  return 0.0;
}

/* The stated row_exposure multiple of kernel (family, variant) on dev, whole (no ramp); 0
 * when the device states none or no l1_bytes. */
static inline double sc_device_exposure(const sc_device *dev, const char *family,
                                        uint32_t variant) {
  if (family == NULL || variant >= SC_KERNEL_RATE_VARIANTS || !(dev->l1_bytes > 0.0))
    return 0.0;
  for (int i = 0; i < SC_KERNEL_RATE_FAMILIES && dev->row_exposure[i].family[0] != '\0'; i++)
    if (strcmp(dev->row_exposure[i].family, family) == 0)
      return dev->row_exposure[i].multiple[variant];
  return 0.0;
}

/* The multiple of min(compute, memory) time that a row kernel (family, variant) with a per-row
 * working set of row_bytes adds to the roofline's max on dev: its stated row_exposure times
 * the ramp clamp(row_bytes / l1_bytes - 1/4, 0, 1); 0 when the device states neither. */
static inline double sc_device_row_exposure(const sc_device *dev, const char *family,
                                            uint32_t variant, double row_bytes) {
  if (!(row_bytes > 0.0) || !(dev->l1_bytes > 0.0)) return 0.0;
  double r = row_bytes / dev->l1_bytes - 0.25;
  r = r < 0.0 ? 0.0 : (r > 1.0 ? 1.0 : r);
  return sc_device_exposure(dev, family, variant) * r;
}

/* The multiple of the stated rate of row kernel (family, variant) on dev at rows of cols
 * columns: dev->row_rate interpolated linearly in log2(cols) between the stated widths, the
 * nearest stated value beyond them; 1 when the device states none for the kernel. */
static inline double sc_device_row_rate(const sc_device *dev, const char *family,
                                        uint32_t variant, double cols) {
  if (family == NULL || variant >= SC_KERNEL_RATE_VARIANTS || !(cols > 0.0)) return 1.0;
  for (int i = 0; i < SC_KERNEL_RATE_FAMILIES && dev->row_rate[i].family[0] != '\0'; i++) {
    if (strcmp(dev->row_rate[i].family, family) != 0) continue;
    const double *m = dev->row_rate[i].multiple[variant];
    double x = log2(cols / SC_ROW_RATE_COLS0); /* the position on the widths */
    int lo = -1, hi = -1;
    for (int j = 0; j < SC_ROW_RATE_WIDTHS; j++) {
      if (!(m[j] > 0.0)) continue;
      if ((double)j <= x) lo = j;
      if ((double)j >= x && hi < 0) hi = j;
    }
    if (lo < 0 && hi < 0) return 1.0;
    if (lo < 0) return m[hi];
    if (hi < 0 || hi == lo) return m[lo];
    return m[lo] + (x - lo) / (double)(hi - lo) * (m[hi] - m[lo]);
  }
  return 1.0;
}

/* The achievable fraction of peak for dense matrix multiplies in dtype d. */
static inline double sc_device_matmul_efficiency(const sc_device *dev, sc_dtype d) {
  if ((unsigned)d < SC_DTYPE_COUNT && dev->matmul_efficiency[d] > 0.0)
    return dev->matmul_efficiency[d];
  return dev->flops_efficiency;
}

/* ------------------------------------------------------------------------- */
/* Operators                                                                 */

/* One operator instance with per-GPU shapes. The meaning of dims[] is defined by its family
 * and documented in docs/plugins.md; e.g. gemm: {batch, m, n, k}. variant selects a form
 * within the family (e.g. attention: flash forward, flash backward, ...), family-defined. */
typedef struct sc_op_desc {
  const char *family;           /* "gemm", "attention", "norm", ... */
  uint32_t variant;             /* family-defined sub-kind */
  sc_dtype dtype;
  uint32_t ndims;
  int64_t dims[SC_OP_MAX_DIMS];
  /* Appended at ABI 1.0 (0: none): SC_OP_* bits saying how the operator runs within the
   * step. A plugin that has no use for one prices the operator as without it. */
  uint32_t flags;
} sc_op_desc;

/* sc_op_desc.flags: the operator's parameters (a table it reads, the gradients it fills and
 * accumulates into) were last touched a whole training step before, and everything the
 * step did since has evicted them: they come from memory, not from a cache. The workload
 * sets it on the embedding's lookups and backwards; `stepcast sample` measures its plan
 * back to back on the same buffers (warm, no flag) and sets it on the cold fill curve's
 * fills, which the cpu plugin's measure then times one call at a time after an eviction.
 * The embedding prices a cold table at a working set past every cache the device
 * describes and its zero-fill at the cold fill rate (docs/operators.md, "Cold
 * parameters"). */
#define SC_OP_COLD 1u
/* sc_op_desc.flags: an embedding whose ids come in order (learned positions: 0, 1, 2, ...),
 * so that its rows are one stream and none starts where the prefetcher has none: no gather
 * curve time (docs/operators.md, "Gathers"). The workload sets it on the position
 * embedding's lookup and backward. */
#define SC_OP_ROWS_IN_ORDER 2u

/* What an estimator returns for one operator or collective. */
typedef struct sc_estimate {
  double time_s;                /* analytical (roofline / alpha-beta) time */
  double flops;                 /* floating-point operations performed */
  double bytes;                 /* bytes moved (memory for ops, per-GPU wire bytes for collectives) */
  sc_bound bound;               /* what limited it */
  double busbw_Bps;             /* collectives: nccl-tests bus bandwidth; ops: 0 */
  int32_t bound_tier;           /* collectives: index of the limiting tier; ops: -1 */
  uint32_t nfeatures;
  double features[SC_MAX_FEATURES]; /* inputs to the residual regressor */
} sc_estimate;

/* A measurement of one operator on the live device (hardware plugins that can sample). */
typedef struct sc_measurement {
  double median_s;
  double min_s;
  double max_s;
  double p10_s, p90_s;
  uint32_t reps;
} sc_measurement;

/* ------------------------------------------------------------------------- */
/* Collectives                                                               */

typedef enum {
  SC_COLL_ALLREDUCE = 0,
  SC_COLL_ALLGATHER,
  SC_COLL_REDUCESCATTER,
  SC_COLL_ALLTOALL,
  SC_COLL_BROADCAST,
  SC_COLL_SENDRECV,
  SC_COLL_COUNT
} sc_coll_kind;

/* How a group spans one tier of the topology. Tiers are innermost first (e.g. 0 = NVLink
 * inside a node, 1 = leaf switches, 2 = spine). ranks is how many distinct members of the
 * group this tier joins at its level (product over tiers = group size). */
typedef struct sc_tier_span {
  uint32_t ranks;               /* fan-out of the group at this tier (1 = not crossed) */
  double bw_Bps;                /* per-GPU bandwidth each way on this tier */
  double latency_s;             /* one-hop latency of this tier */
  double oversubscription;      /* >= 1: bandwidth divided by this when the tier is loaded */
  uint32_t sharing;             /* groups sharing this tier's links at once (>= 1) */
} sc_tier_span;

typedef struct sc_coll_desc {
  sc_coll_kind kind;
  double bytes;                 /* message size per rank as nccl-tests counts it */
  sc_dtype dtype;
  uint32_t nranks;              /* group size */
  uint32_t ntiers;
  sc_tier_span tiers[SC_MAX_TIERS];
} sc_coll_desc;

/* ------------------------------------------------------------------------- */
/* Descriptors                                                               */

typedef enum {
  SC_PLUGIN_KIND_OP = 1,
  SC_PLUGIN_KIND_COLLECTIVE = 2,
  SC_PLUGIN_KIND_HARDWARE = 3
} sc_plugin_kind;

typedef struct sc_plugin_header {
  uint16_t abi_major;           /* SC_PLUGIN_ABI_MAJOR the plugin was built against */
  uint16_t abi_minor;           /* SC_PLUGIN_ABI_MINOR the plugin was built against */
  uint32_t size;                /* sizeof the whole descriptor (header + payload) */
  uint32_t kind;                /* sc_plugin_kind */
  uint32_t flags;               /* reserved: must be 0 */
  const char *name;             /* unique within its kind, e.g. "gemm", "allreduce.ring" */
  const char *version;          /* the plugin's own version, e.g. "1.0.0" */
  int32_t priority;             /* higher wins on a name clash; built-ins use 0 */
  /* Optional. init() runs once after loading; a non-zero return refuses the plugin with
   * err->msg. *state is handed back to every call and to fini(). */
  int (*init)(const sc_host *host, void **state, sc_error *err);
  void (*fini)(void *state);
} sc_plugin_header;

/* An operator family. estimate() is pure: same inputs, same output. */
typedef struct sc_op_plugin {
  sc_plugin_header hdr;         /* kind = SC_PLUGIN_KIND_OP; name = the family */
  uint32_t nfeatures;
  const char *const *feature_names; /* nfeatures names, documented in docs/plugins.md */
  /* Roofline estimate of op on dev. Returns SC_OK, or SC_EINVAL / SC_EUNSUPPORTED with err
   * naming the parameter (e.g. "gemm: dims[2] (n) must be > 0"). */
  int (*estimate)(void *state, const sc_device *dev, const sc_op_desc *op,
                  sc_estimate *out, sc_error *err);
  /* ABI 1.1. Bit j (SC_FEATURE(j)) set: feature j measures the operator's scale, a total
   * that grows without bound as the operator grows (FLOPs, bytes, element, row, token and
   * vocabulary counts, a GEMM's m, n and k); clear: its shape, which stays in the range a
   * sample covers (a ratio, a flag, a row width, a head dimension, a count of products).
   * A hybrid residual reads the shape features alone, so that what it learned on the
   * sampled shapes carries to larger ones (docs/learned.md, "Scale and shape features");
   * a learned model, which predicts the time itself, reads every feature. A plugin built
   * against ABI 1.0 has no such field: sc_op_scale_features gives 0 (every feature read). */
  uint32_t scale_features;
} sc_op_plugin;

/* The bit of feature j in sc_op_plugin.scale_features. */
#define SC_FEATURE(j) (1u << (j))

/* op's scale_features, 0 for a descriptor of ABI 1.0 (too small to hold the field). */
static inline uint32_t sc_op_scale_features(const sc_op_plugin *op) {
  return op->hdr.size >= offsetof(sc_op_plugin, scale_features) + sizeof(uint32_t)
             ? op->scale_features
             : 0u;
}

/* A collective algorithm for one or more collective kinds. */
typedef struct sc_coll_plugin {
  sc_plugin_header hdr;         /* kind = SC_PLUGIN_KIND_COLLECTIVE */
  const char *algorithm;        /* "ring", "tree", "direct", ... */
  uint32_t kinds_mask;          /* bit (1u << sc_coll_kind) for each kind it answers */
  uint32_t nfeatures;
  const char *const *feature_names;
  int (*estimate)(void *state, const sc_coll_desc *coll, sc_estimate *out, sc_error *err);
} sc_coll_plugin;

/* A hardware target: turns a hardware spec table into a device, and may measure operators
 * on the live device (the host CPU, a GPU where present). */
typedef struct sc_hw_plugin {
  sc_plugin_header hdr;         /* kind = SC_PLUGIN_KIND_HARDWARE; name = the device kind */
  /* Fill *dev from table t (the whole hardware file); errors name file:line:key. */
  int (*describe)(void *state, const sc_host *host, const sc_table *t, sc_device *dev,
                  sc_error *err);
  /* Optional (NULL when the device cannot be reached from here): time op on the live
   * device with warm-up and repetitions for at least min_reps and up to budget_s. */
  int (*measure)(void *state, const sc_device *dev, const sc_op_desc *op, uint32_t min_reps,
                 double budget_s, sc_measurement *out, sc_error *err);
} sc_hw_plugin;

/* Smallest descriptor sizes accepted: those of ABI 1.0 (the loader refuses smaller ones;
 * sc_op_plugin has grown by scale_features since). */
#define SC_OP_PLUGIN_MIN_SIZE   (offsetof(sc_op_plugin, scale_features))
#define SC_COLL_PLUGIN_MIN_SIZE (sizeof(sc_coll_plugin))
#define SC_HW_PLUGIN_MIN_SIZE   (sizeof(sc_hw_plugin))

/* ------------------------------------------------------------------------- */
/* The entry point                                                           */

typedef const sc_plugin_header *(*sc_plugin_entry_fn)(void);

#define SC_PLUGIN_ENTRY_SYMBOL "sc_plugin_entry_v1"

#if defined(__GNUC__)
#define SC_PLUGIN_VISIBLE __attribute__((visibility("default")))
#else
#define SC_PLUGIN_VISIBLE
#endif

/* Define a plugin's entry: SC_PLUGIN_ENTRY(gemm) { return &desc.hdr; }
 * Built as a module it exports sc_plugin_entry_v1; built with SC_PLUGIN_STATIC (the
 * runtime's own tests link every built-in statically) it becomes sc_plugin_entry_<id>_v1
 * so that many plugins can live in one program. */
#if defined(SC_PLUGIN_STATIC)
#define SC_PLUGIN_ENTRY(id) const sc_plugin_header *sc_plugin_entry_##id##_v1(void)
#else
#define SC_PLUGIN_ENTRY(id) \
  SC_PLUGIN_VISIBLE const sc_plugin_header *sc_plugin_entry_v1(void)
#endif

/* Fill the common header: SC_PLUGIN_HEADER(sc_op_plugin, SC_PLUGIN_KIND_OP, "gemm", "1.0.0")
 * (priority 0, no init/fini), or SC_PLUGIN_HEADER_FULL(...) with a priority and init/fini
 * (re-designating .hdr.priority after SC_PLUGIN_HEADER trips -Woverride-init). */
#define SC_PLUGIN_HEADER_FULL(type, kind_, name_, version_, priority_, init_, fini_) \
  { .abi_major = SC_PLUGIN_ABI_MAJOR, .abi_minor = SC_PLUGIN_ABI_MINOR,       \
    .size = (uint32_t)sizeof(type), .kind = (kind_), .flags = 0,              \
    .name = (name_), .version = (version_), .priority = (priority_),          \
    .init = (init_), .fini = (fini_) }
#define SC_PLUGIN_HEADER(type, kind_, name_, version_)                        \
  SC_PLUGIN_HEADER_FULL(type, kind_, name_, version_, 0, NULL, NULL)

/* For plugins (which do not link libstepcast): set err to code and a formatted message,
 * return code. err may be NULL. */
static inline int sc_plugin_fail(sc_error *err, int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static inline int sc_plugin_fail(sc_error *err, int code, const char *fmt, ...) {
  if (err != NULL) {
    va_list ap;
    va_start(ap, fmt);
    err->code = code;
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
  }
  return code;
}

#ifdef __cplusplus
}
#endif
#endif /* STEPCAST_PLUGIN_H */

/*
 * The plugin runtime: loading, refusals (each names the file and the reason), priorities,
 * lookups, host services, discovery and the estimate memo. Fixture plugins are built by
 * tests/plugin/CMakeLists.txt into SC_PLUGIN_FIXTURE_DIR/{good,bad,extra,example}.
 * Numbers are derived by hand in the comments; tolerances are stated where used.
 */
#include <check.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "plugin/registry_int.h"
#include "sc_config.h"
#include "spec/table.h"
#include "stepcast/ops.h"
#include "stepcast/stepcast.h"
#include "toml/toml.h"

/* ------------------------------------------------------------------------- */
/* Helpers                                                                   */

static const char *fixture_dir(void) {
  const char *d = getenv("SC_PLUGIN_FIXTURE_DIR");
  return (d != NULL && d[0] != '\0') ? d : SC_PLUGIN_FIXTURE_DIR;
}

/* FIXTURE_DIR/sub/name in a rotating static buffer (up to 8 live at once). */
static const char *fx(const char *sub, const char *name) {
  static char bufs[8][1024];
  static int next = 0;
  char *b = bufs[next++ % 8];
  snprintf(b, sizeof bufs[0], "%s/%s/%s", fixture_dir(), sub, name);
  return b;
}

static char logbuf[65536];
static size_t loglen;
static void capture_log(sc_log_level level, const char *who, const char *msg, void *ud) {
  int n;
  (void)ud;
  if (loglen >= sizeof logbuf) return;
  n = snprintf(logbuf + loglen, sizeof logbuf - loglen, "[%d] %s: %s\n", (int)level, who, msg);
  if (n > 0) loglen += (size_t)n;
  if (loglen > sizeof logbuf) loglen = sizeof logbuf;
}

static sc_registry *new_reg(int verbose) {
  sc_registry *reg = NULL;
  sc_error err;
  loglen = 0;
  logbuf[0] = '\0';
  ck_assert_int_eq(sc_registry_new(&reg, &err), SC_OK);
  sc_registry_set_log(reg, capture_log, NULL);
  sc__registry_set_verbose(reg, verbose);
  return reg;
}

/* The row whose path is path; fails the test when absent. */
static sc_plugin_info row_of(const sc_registry *reg, const char *path) {
  sc_plugin_info info;
  for (size_t i = 0; i < sc_registry_count(reg); i++) {
    ck_assert_int_eq(sc_registry_info(reg, i, &info), SC_OK);
    if (strcmp(info.path, path) == 0) return info;
  }
  ck_abort_msg("no listing row for %s", path);
  return info;
}

static sc_device test_device(void) {
  sc_device d;
  memset(&d, 0, sizeof d);
  strcpy(d.name, "testgpu");
  strcpy(d.kind, "fix.gpu");
  d.peak_flops_per_s[SC_DTYPE_BF16] = 100e12;
  d.flops_efficiency = 0.5;
  d.mem_bw_Bps = 1e12;
  d.mem_efficiency = 0.8;
  d.launch_s = 5e-6;
  return d;
}

static sc_op_desc gemm_op(const char *family, int64_t m, int64_t n, int64_t k) {
  sc_op_desc op;
  memset(&op, 0, sizeof op);
  op.family = family;
  op.dtype = SC_DTYPE_BF16;
  op.ndims = 3;
  op.dims[0] = m;
  op.dims[1] = n;
  op.dims[2] = k;
  return op;
}

#define REL_TOL 1e-12
#define ck_assert_rel(got, want)                                                            \
  ck_assert_msg(fabs((got) - (want)) <= REL_TOL * fabs(want), "%s = %.17g, want %.17g",    \
                #got, (double)(got), (double)(want))

/* ------------------------------------------------------------------------- */
/* Static plugins defined here (the "linked statically" path)                */

static unsigned count_calls;
static int count_estimate(void *state, const sc_device *dev, const sc_op_desc *op,
                          sc_estimate *out, sc_error *err) {
  (void)state;
  (void)dev;
  count_calls++;
  if (op->ndims < 1 || op->dims[0] <= 0) {
    return sc_plugin_fail(err, SC_EINVAL, "test.count: dims[0] must be > 0");
  }
  /* time_s = dims[0] * 1 us + variant * 1 ms: distinct questions, distinct answers. */
  out->time_s = (double)op->dims[0] * 1e-6 + (double)op->variant * 1e-3;
  out->flops = (double)op->dims[0];
  out->nfeatures = 1;
  out->features[0] = (double)op->dims[0];
  return SC_OK;
}
static const char *const count_features[] = {"n"};
static const sc_op_plugin count_plugin = {
    .hdr = SC_PLUGIN_HEADER(sc_op_plugin, SC_PLUGIN_KIND_OP, "test.count", "0.1"),
    .nfeatures = 1,
    .feature_names = count_features,
    .estimate = count_estimate,
};
static const sc_plugin_header *count_entry(void) { return &count_plugin.hdr; }

/* A built-in "fix.scale" at priority 0 answering a constant 1 s. */
static int const_estimate(void *state, const sc_device *dev, const sc_op_desc *op,
                          sc_estimate *out, sc_error *err) {
  (void)state;
  (void)dev;
  (void)op;
  (void)err;
  out->time_s = 1.0;
  return SC_OK;
}
static const sc_op_plugin builtin_scale = {
    .hdr = SC_PLUGIN_HEADER(sc_op_plugin, SC_PLUGIN_KIND_OP, "fix.scale", "0.0.1"),
    .estimate = const_estimate,
};
static const sc_plugin_header *builtin_scale_entry(void) { return &builtin_scale.hdr; }
static const sc_plugin_header *null_entry(void) { return NULL; }

/* ------------------------------------------------------------------------- */
/* Loading good plugins                                                      */

START_TEST(test_load_good) {
  sc_registry *reg = new_reg(0);
  sc_error err;
  sc_plugin_info info;
  const sc_op_plugin *op;
  const sc_coll_plugin *colls[4];
  const char *pop = fx("good", "fix-op.so"), *pcoll = fx("good", "fix-coll.so"),
             *phw = fx("good", "fix-hw.so");
  ck_assert_int_eq(sc_registry_load_file(reg, pop, &err), SC_OK);
  ck_assert_int_eq(sc_registry_load_file(reg, pcoll, &err), SC_OK);
  ck_assert_int_eq(sc_registry_load_file(reg, phw, &err), SC_OK);
  ck_assert_uint_eq(sc_registry_count(reg), 3);

  info = row_of(reg, pop);
  ck_assert_int_eq(info.kind, SC_PLUGIN_KIND_OP);
  ck_assert_str_eq(info.name, "fix.scale");
  ck_assert_str_eq(info.version, "1.0.0");
  ck_assert_uint_eq(info.abi_major, SC_PLUGIN_ABI_MAJOR);
  ck_assert_uint_eq(info.abi_minor, SC_PLUGIN_ABI_MINOR);
  ck_assert_int_eq(info.priority, 0);
  ck_assert_int_eq(info.status, SC_PLUGIN_LOADED);
  ck_assert_str_eq(info.reason, "");
  info = row_of(reg, pcoll);
  ck_assert_int_eq(info.kind, SC_PLUGIN_KIND_COLLECTIVE);
  ck_assert_str_eq(info.name, "fix.allreduce.flat");
  info = row_of(reg, phw);
  ck_assert_int_eq(info.kind, SC_PLUGIN_KIND_HARDWARE);
  ck_assert_str_eq(info.name, "fix.gpu");

  op = sc_registry_op(reg, "fix.scale");
  ck_assert_ptr_nonnull(op);
  ck_assert_str_eq(op->hdr.version, "1.0.0");
  ck_assert_ptr_null(sc_registry_op(reg, "fix.gpu"));   /* kinds do not mix */
  ck_assert_ptr_null(sc_registry_op(reg, "nope"));
  ck_assert_ptr_nonnull(sc_registry_coll(reg, SC_COLL_ALLREDUCE, "flat"));
  ck_assert_ptr_nonnull(sc_registry_coll(reg, SC_COLL_ALLGATHER, "flat"));
  ck_assert_ptr_null(sc_registry_coll(reg, SC_COLL_ALLTOALL, "flat"));
  ck_assert_ptr_null(sc_registry_coll(reg, SC_COLL_ALLREDUCE, "ring"));
  ck_assert_uint_eq(sc_registry_colls(reg, SC_COLL_ALLREDUCE, colls, 4), 1);
  ck_assert_uint_eq(sc_registry_colls(reg, SC_COLL_ALLTOALL, colls, 4), 0);
  ck_assert_uint_eq(sc_registry_colls(reg, SC_COLL_COUNT, colls, 4), 0);
  ck_assert_ptr_nonnull(sc_registry_hw(reg, "fix.gpu"));
  ck_assert_ptr_null(sc_registry_hw(reg, "fix.scale"));
  /* init ran: state exists and the host log reached our callback, attributed by name. */
  ck_assert_ptr_nonnull(sc_registry_state(reg, &op->hdr));
  ck_assert_ptr_nonnull(strstr(logbuf, "fix.scale: init (version 1.0.0)"));
  ck_assert_ptr_null(sc_registry_state(reg, &sc_registry_hw(reg, "fix.gpu")->hdr));
  sc_registry_free(reg);
}
END_TEST

/* The host's alloc is accounted: the fixture's init allocates its 16-byte state through
 * it and fini frees it. */
START_TEST(test_host_alloc_accounting) {
  size_t base = sc__plugin_alloc_live_bytes();
  sc_registry *reg = new_reg(0);
  sc_error err;
  ck_assert_int_eq(sc_registry_load_file(reg, fx("good", "fix-op.so"), &err), SC_OK);
  ck_assert_uint_eq(sc__plugin_alloc_live_bytes(), base + 16);
  sc_registry_free(reg);
  ck_assert_uint_eq(sc__plugin_alloc_live_bytes(), base);
}
END_TEST

/* ------------------------------------------------------------------------- */
/* Refusals                                                                  */

typedef struct bad_case {
  const char *sub, *file;
  int code;
  const char *reason[2]; /* substrings the reason must contain */
} bad_case;

static const bad_case bad_cases[] = {
    {"bad", "abi-major.so", SC_EABI, {"ABI major 2", "ABI 1.2"}},
    {"bad", "small.so", SC_EABI, {"op descriptor size", "is smaller than"}},
    {"bad", "no-entry.so", SC_EPLUGIN, {"no entry symbol 'sc_plugin_entry_v1'", NULL}},
    {"bad", "flags.so", SC_EPLUGIN, {"flags 0x4 must be 0", NULL}},
    {"bad", "undefined.so", SC_EPLUGIN, {"dlopen failed: ", "sc_fixture_not_defined"}},
    {"bad", "init-fail.so", SC_EPLUGIN,
     {"init failed (SC_ESPEC)", "fixture.toml:3:1: key 'peak': must be > 0"}},
    {"bad", "null-entry.so", SC_EPLUGIN, {"returned NULL", NULL}},
    {"bad", "bad-name.so", SC_EPLUGIN, {"name 'bad name!' is not", NULL}},
    {"bad", "no-estimate.so", SC_EPLUGIN, {"no estimate function", NULL}},
    {"bad", "many-features.so", SC_EPLUGIN, {"nfeatures 17 exceeds SC_MAX_FEATURES (16)", NULL}},
    {"bad", "bad-kind.so", SC_EPLUGIN, {"unknown kind 9", NULL}},
    {"bad", "null-version.so", SC_EPLUGIN, {"version is NULL", NULL}},
    {"bad", "coll-bad-mask.so", SC_EPLUGIN, {"kinds_mask 0x40000000", NULL}},
    {"bad", "not-elf.so", SC_EPLUGIN, {"dlopen failed: ", NULL}},
    {"bad", "does-not-exist.so", SC_EPLUGIN, {"cannot access: No such file or directory", NULL}},
    {"", "", SC_EPLUGIN, {"not a regular file", NULL}}, /* the fixture folder itself */
};
#define NBAD (sizeof bad_cases / sizeof bad_cases[0])

START_TEST(test_refusal) {
  const bad_case *c = &bad_cases[_i];
  sc_registry *reg = new_reg(1);
  sc_error err;
  sc_plugin_info info;
  char path[1024];
  if (c->file[0] == '\0') {
    snprintf(path, sizeof path, "%s", fixture_dir());
  } else {
    snprintf(path, sizeof path, "%s", fx(c->sub, c->file));
  }
  err.code = SC_OK;
  err.msg[0] = '\0';
  ck_assert_int_eq(sc_registry_load_file(reg, path, &err), c->code);
  ck_assert_int_eq(err.code, c->code);
  /* "FILE: reason" */
  ck_assert_msg(strncmp(err.msg, path, strlen(path)) == 0 && err.msg[strlen(path)] == ':',
                "message '%s' does not start with the file", err.msg);
  ck_assert_uint_eq(sc_registry_count(reg), 1);
  info = row_of(reg, path);
  ck_assert_int_eq(info.status, SC_PLUGIN_REFUSED);
  for (int k = 0; k < 2; k++) {
    if (c->reason[k] != NULL) {
      ck_assert_msg(strstr(info.reason, c->reason[k]) != NULL, "reason '%s' lacks '%s'",
                    info.reason, c->reason[k]);
      ck_assert_ptr_nonnull(strstr(err.msg, c->reason[k]));
    }
  }
  /* Verbose narration names the file and says it was refused. */
  ck_assert_ptr_nonnull(strstr(logbuf, "refused"));
  ck_assert_ptr_nonnull(strstr(logbuf, path));
  /* Nothing active, and the registry still works. */
  ck_assert_ptr_null(sc_registry_op(reg, "fix.scale"));
  ck_assert_int_eq(sc_registry_load_file(reg, fx("good", "fix-op.so"), &err), SC_OK);
  ck_assert_ptr_nonnull(sc_registry_op(reg, "fix.scale"));
  sc_registry_free(reg);
}
END_TEST

/* A plugin built against a newer minor of ABI 1 is refused, naming both ABIs (issue 34):
 * the structures it shares with the runtime (sc_device above all, which a hardware plugin
 * fills in the runtime's buffer) carry no size, and a newer minor may have appended to
 * them. An op descriptor here; the hardware fixture hw-newer in test_newer_minor_hw. */
typedef struct newer_op {
  sc_op_plugin op;
  double appended_at_minor_9[8];
} newer_op;
static const newer_op newer = {
    .op = {.hdr = {.abi_major = SC_PLUGIN_ABI_MAJOR, .abi_minor = 9,
                   .size = (uint32_t)sizeof(newer_op), .kind = SC_PLUGIN_KIND_OP,
                   .name = "test.newer", .version = "9.0"},
           .estimate = const_estimate},
};
static const sc_plugin_header *newer_entry(void) { return &newer.op.hdr; }

START_TEST(test_newer_minor_refused) {
  sc_registry *reg = new_reg(0);
  sc_error err;
  sc_plugin_info info;
  char want[128];
  ck_assert_int_eq(sc_registry_add_entry(reg, newer_entry, "builtin:newer", &err), SC_EABI);
  snprintf(want, sizeof want, "ABI %d.9 is newer than this stepcast's ABI %d.%d",
           SC_PLUGIN_ABI_MAJOR, SC_PLUGIN_ABI_MAJOR, SC_PLUGIN_ABI_MINOR);
  ck_assert_msg(strstr(err.msg, want) != NULL, "%s", err.msg);
  info = row_of(reg, "builtin:newer");
  ck_assert_int_eq(info.status, SC_PLUGIN_REFUSED);
  ck_assert_uint_eq(info.abi_minor, 9);
  ck_assert_ptr_null(sc_registry_op(reg, "test.newer"));
  sc_registry_free(reg);
}
END_TEST

/* A hardware plugin built against the next minor, whose sc_device would be larger than the
 * runtime's (the fixture writes one byte past the runtime's sc_device when asked to
 * describe: ASan would catch it), is refused before it is ever asked. */
START_TEST(test_newer_minor_hw) {
  sc_registry *reg = new_reg(0);
  sc_error err;
  const char *f = fx("extra", "hw-newer.so");
  ck_assert_int_eq(sc_registry_load_file(reg, f, &err), SC_EABI);
  ck_assert_ptr_nonnull(strstr(err.msg, f));
  ck_assert_ptr_nonnull(strstr(err.msg, "is newer than this stepcast's ABI"));
  ck_assert_int_eq(row_of(reg, f).status, SC_PLUGIN_REFUSED);
  ck_assert_ptr_null(sc_registry_hw(reg, "fix.gpu.next"));
  sc_registry_free(reg);
}
END_TEST

/* A plugin built against ABI 1.0 (its op descriptor ends before scale_features) loads,
 * and states no scale features (whatever lies past its descriptor). */
typedef struct minor0_op {
  sc_op_plugin op;
} minor0_op;
static const minor0_op minor0 = {
    .op = {.hdr = {.abi_major = SC_PLUGIN_ABI_MAJOR, .abi_minor = 0,
                   .size = (uint32_t)offsetof(sc_op_plugin, scale_features),
                   .kind = SC_PLUGIN_KIND_OP, .name = "test.minor0", .version = "1.0"},
           .estimate = const_estimate, .scale_features = 0xffu},
};
static const sc_plugin_header *minor0_entry(void) { return &minor0.op.hdr; }

START_TEST(test_minor0_accepted) {
  sc_registry *reg = new_reg(0);
  sc_error err;
  ck_assert_int_eq(sc_registry_add_entry(reg, minor0_entry, "builtin:minor0", &err), SC_OK);
  ck_assert_int_eq(row_of(reg, "builtin:minor0").status, SC_PLUGIN_LOADED);
  const sc_op_plugin *op = sc_registry_op(reg, "test.minor0");
  ck_assert_ptr_nonnull(op);
  ck_assert_uint_eq(sc_op_scale_features(op), 0);
  sc_registry_free(reg);
}
END_TEST

/* An op plugin whose scale_features marks a feature it does not have is refused. */
static const sc_op_plugin bad_scale = {
    .hdr = SC_PLUGIN_HEADER(sc_op_plugin, SC_PLUGIN_KIND_OP, "test.bad_scale", "1.0"),
    .nfeatures = 1,
    .feature_names = count_features,
    .estimate = const_estimate,
    .scale_features = SC_FEATURE(0) | SC_FEATURE(3),
};
static const sc_plugin_header *bad_scale_entry(void) { return &bad_scale.hdr; }

START_TEST(test_scale_features_past_nfeatures) {
  sc_registry *reg = new_reg(0);
  sc_error err;
  ck_assert_int_eq(sc_registry_add_entry(reg, bad_scale_entry, "builtin:bad_scale", &err),
                   SC_EPLUGIN);
  ck_assert_msg(strstr(err.msg, "scale_features 0x9 marks features past nfeatures 1") != NULL,
                "%s", err.msg);
  ck_assert_ptr_null(sc_registry_op(reg, "test.bad_scale"));
  sc_registry_free(reg);
}
END_TEST

/* Plugins that fail after a partial read still show what could be read. */
START_TEST(test_refusal_listing_fields) {
  sc_registry *reg = new_reg(0);
  sc_error err;
  sc_plugin_info info;
  sc_registry_load_file(reg, fx("bad", "flags.so"), &err);
  sc_registry_load_file(reg, fx("bad", "abi-major.so"), &err);
  sc_registry_load_file(reg, fx("bad", "no-entry.so"), &err);
  info = row_of(reg, fx("bad", "flags.so"));
  ck_assert_int_eq(info.kind, SC_PLUGIN_KIND_OP);
  ck_assert_str_eq(info.name, "fix.scale");
  ck_assert_str_eq(info.version, "1.0.0");
  ck_assert_uint_eq(info.abi_major, 1);
  info = row_of(reg, fx("bad", "abi-major.so"));
  ck_assert_uint_eq(info.abi_major, 2);
  ck_assert_str_eq(info.name, ""); /* not read past an unknown ABI */
  info = row_of(reg, fx("bad", "no-entry.so"));
  ck_assert_int_eq(info.kind, 0);
  ck_assert_str_eq(info.name, "");
  sc_registry_free(reg);
}
END_TEST

START_TEST(test_null_entry_static) {
  sc_registry *reg = new_reg(0);
  sc_error err;
  sc_plugin_info info;
  ck_assert_int_eq(sc_registry_add_entry(reg, NULL, "builtin:none", &err), SC_EPLUGIN);
  ck_assert_str_eq(err.msg, "builtin:none: entry function is NULL");
  ck_assert_int_eq(sc_registry_add_entry(reg, null_entry, "builtin:null", &err), SC_EPLUGIN);
  ck_assert_ptr_nonnull(strstr(err.msg, "builtin:null: entry sc_plugin_entry_v1 returned NULL"));
  info = row_of(reg, "builtin:null");
  ck_assert_int_eq(info.status, SC_PLUGIN_REFUSED);
  /* NULL arguments are errors, not crashes. */
  ck_assert_int_eq(sc_registry_load_file(reg, NULL, &err), SC_EINVAL);
  ck_assert_int_eq(sc_registry_load_file(NULL, "x.so", &err), SC_EINVAL);
  ck_assert_int_eq(sc_registry_add_entry(NULL, count_entry, "x", &err), SC_EINVAL);
  ck_assert_int_eq(sc_registry_info(reg, 99, &info), SC_EINVAL);
  ck_assert_uint_eq(sc_registry_count(NULL), 0);
  ck_assert_ptr_null(sc_registry_op(NULL, "x"));
  sc_registry_free(NULL);
  sc_registry_free(reg);
}
END_TEST

START_TEST(test_collision_same_priority) {
  sc_registry *reg = new_reg(0);
  sc_error err;
  sc_plugin_info info;
  const char *a = fx("good", "fix-op.so"), *b = fx("extra", "op-dup.so");
  ck_assert_int_eq(sc_registry_load_file(reg, a, &err), SC_OK);
  ck_assert_int_eq(sc_registry_load_file(reg, b, &err), SC_EPLUGIN);
  info = row_of(reg, b);
  ck_assert_int_eq(info.status, SC_PLUGIN_REFUSED);
  ck_assert_str_eq(info.version, "1.0.1");
  ck_assert_ptr_nonnull(strstr(info.reason, "collides with"));
  ck_assert_ptr_nonnull(strstr(info.reason, a));
  ck_assert_ptr_nonnull(strstr(info.reason, "same priority 0"));
  /* The first stays active. */
  ck_assert_int_eq(row_of(reg, a).status, SC_PLUGIN_LOADED);
  ck_assert_str_eq(sc_registry_op(reg, "fix.scale")->hdr.version, "1.0.0");
  sc_registry_free(reg);
}
END_TEST

START_TEST(test_load_same_file_twice) {
  sc_registry *reg = new_reg(0);
  sc_error err;
  char tmpl[] = "/tmp/sc_plugin_test_XXXXXX", link[1100];
  const char *a = fx("good", "fix-op.so");
  ck_assert_int_eq(sc_registry_load_file(reg, a, &err), SC_OK);
  ck_assert_int_eq(sc_registry_load_file(reg, a, &err), SC_EPLUGIN);
  ck_assert_ptr_nonnull(strstr(err.msg, "already loaded from"));
  /* Through a symbolic link: the same file. */
  ck_assert_ptr_nonnull(mkdtemp(tmpl));
  snprintf(link, sizeof link, "%s/alias.so", tmpl);
  ck_assert_int_eq(symlink(a, link), 0);
  ck_assert_int_eq(sc_registry_load_file(reg, link, &err), SC_EPLUGIN);
  ck_assert_ptr_nonnull(strstr(err.msg, "already loaded from"));
  unlink(link);
  rmdir(tmpl);
  /* A static entry twice shares one descriptor: refused too. */
  ck_assert_int_eq(sc_registry_add_entry(reg, count_entry, "builtin:count", &err), SC_OK);
  ck_assert_int_eq(sc_registry_add_entry(reg, count_entry, "builtin:count2", &err),
                   SC_EPLUGIN);
  ck_assert_ptr_nonnull(strstr(err.msg, "already loaded from builtin:count"));
  ck_assert_uint_eq(sc_registry_count(reg), 5);
  /* Still one active plugin per name, still working. */
  ck_assert_ptr_nonnull(sc_registry_op(reg, "fix.scale"));
  sc_registry_free(reg);
}
END_TEST

/* ------------------------------------------------------------------------- */
/* Priorities                                                                */

START_TEST(test_override_builtin) {
  sc_registry *reg = new_reg(0);
  sc_error err;
  sc_estimate est;
  sc_plugin_info info;
  sc_device dev = test_device();
  sc_op_desc op = gemm_op("fix.scale", 4096, 4096, 4096);
  const char *hi = fx("extra", "op-hi.so");
  ck_assert_int_eq(sc_registry_add_entry(reg, builtin_scale_entry, "builtin:test_scale", &err),
                   SC_OK);
  ck_assert_int_eq(sc_registry_estimate_op(reg, &dev, &op, &est, &err), SC_OK);
  ck_assert_double_eq(est.time_s, 1.0);
  /* A plugin of higher priority takes over; the built-in is listed as overridden. */
  ck_assert_int_eq(sc_registry_load_file(reg, hi, &err), SC_OK);
  info = row_of(reg, "builtin:test_scale");
  ck_assert_int_eq(info.status, SC_PLUGIN_OVERRIDDEN);
  ck_assert_ptr_nonnull(strstr(info.reason, "overridden by"));
  ck_assert_ptr_nonnull(strstr(info.reason, hi));
  ck_assert_ptr_nonnull(strstr(info.reason, "priority 10 > 0"));
  info = row_of(reg, hi);
  ck_assert_int_eq(info.status, SC_PLUGIN_LOADED);
  ck_assert_int_eq(info.priority, 10);
  ck_assert_str_eq(sc_registry_op(reg, "fix.scale")->hdr.version, "2.0.0");
  /* The memo forgot the built-in's answer: op-hi answers with SCALE = 2:
   * flops 2*4096^3 = 137438953472 at 100e12*0.5 -> 2.74877906944e-3 s (compute bound:
   * bytes 2*3*4096^2 = 100663296 at 0.8e12 -> 1.2582912e-4 s), *2 + 5e-6 launch. */
  ck_assert_int_eq(sc_registry_estimate_op(reg, &dev, &op, &est, &err), SC_OK);
  ck_assert_rel(est.time_s, 2.0 * 2.74877906944e-3 + 5e-6);
  ck_assert_int_eq(est.bound, SC_BOUND_COMPUTE);
  /* A later lower-priority one is overridden on arrival (fix-op, priority 0, collides with
   * the built-in's priority 0: refused by the one-name-one-priority rule). */
  ck_assert_int_eq(sc_registry_load_file(reg, fx("good", "fix-op.so"), &err), SC_EPLUGIN);
  ck_assert_ptr_nonnull(strstr(err.msg, "collides with builtin:test_scale"));
  sc_registry_free(reg);
}
END_TEST

START_TEST(test_override_order_independent) {
  sc_registry *reg = new_reg(0);
  sc_error err;
  sc_plugin_info info;
  const char *hi = fx("extra", "op-hi.so"), *lo = fx("good", "fix-op.so");
  ck_assert_int_eq(sc_registry_load_file(reg, hi, &err), SC_OK);
  ck_assert_int_eq(sc_registry_load_file(reg, lo, &err), SC_OK);
  info = row_of(reg, lo);
  ck_assert_int_eq(info.status, SC_PLUGIN_OVERRIDDEN);
  ck_assert_str_eq(info.version, "1.0.0");
  ck_assert_ptr_nonnull(strstr(info.reason, hi));
  ck_assert_str_eq(sc_registry_op(reg, "fix.scale")->hdr.version, "2.0.0");
  /* Both initialised: an operator family's lower plugin is kept loaded to answer what the
   * higher one declines (SC_EUNSUPPORTED; test_decline_fallback). */
  ck_assert_ptr_nonnull(strstr(logbuf, "init (version 1.0.0)"));
  ck_assert_ptr_nonnull(strstr(logbuf, "init (version 2.0.0)"));
  /* One takeover, the later lower plugin displaced by the earlier higher one. */
  {
    sc_plugin_override o;
    ck_assert_uint_eq(sc_registry_override_count(reg), 1);
    ck_assert_int_eq(sc_registry_override(reg, 0, &o), SC_OK);
    ck_assert_str_eq(o.name, "fix.scale");
    ck_assert_str_eq(o.by_path, hi);
    ck_assert_int_eq(o.by_priority, 10);
    ck_assert_str_eq(o.from_path, lo);
    ck_assert_int_eq(o.from_priority, 0);
    ck_assert_int_eq(sc_registry_override(reg, 1, &o), SC_EINVAL);
  }
  sc_registry_free(reg);
}
END_TEST

/* ------------------------------------------------------------------------- */
/* Built-ins (static entries)                                                */

typedef struct sc__builtin {
  const char *origin;
  sc_plugin_entry_fn entry;
} sc__builtin;
extern const sc__builtin sc__builtin_plugins[];

START_TEST(test_builtins) {
  sc_registry *reg = new_reg(0);
  sc_error err;
  size_t n = 0;
  err.code = SC_OK;
  err.msg[0] = '\0';
  while (sc__builtin_plugins[n].entry != NULL) n++;
  ck_assert_msg(sc_registry_add_builtins(reg, &err) == SC_OK, "builtins refused: %s",
                err.msg);
  ck_assert_uint_eq(sc_registry_count(reg), n);
  for (size_t i = 0; i < n; i++) {
    sc_plugin_info info;
    ck_assert_int_eq(sc_registry_info(reg, i, &info), SC_OK);
    ck_assert_str_eq(info.path, sc__builtin_plugins[i].origin);
    ck_assert_int_eq(strncmp(info.path, "builtin:", 8), 0);
    ck_assert_msg(info.status == SC_PLUGIN_LOADED, "%s: %s", info.path, info.reason);
    if (info.kind == SC_PLUGIN_KIND_OP) {
      ck_assert_ptr_nonnull(sc_registry_op(reg, info.name));
    } else if (info.kind == SC_PLUGIN_KIND_HARDWARE) {
      ck_assert_ptr_nonnull(sc_registry_hw(reg, info.name));
    }
  }
  /* Adding them again refuses every one (same descriptors) and says which. */
  if (n > 0) {
    ck_assert_int_eq(sc_registry_add_builtins(reg, &err), SC_EPLUGIN);
    ck_assert_ptr_nonnull(strstr(err.msg, "already loaded from builtin:"));
  }
  sc_registry_free(reg);
}
END_TEST

/* A third-party plugin with priority 100 replaces the built-in "gemm" (plugins/ops/gemm.c,
 * linked statically), and the listing says so. */
START_TEST(test_override_real_builtin) {
  sc_registry *reg = new_reg(0);
  sc_error err;
  sc_plugin_info info;
  const sc_op_plugin *before;
  const char *over = fx("extra", "gemm-override.so");
  ck_assert_int_eq(sc_registry_add_builtins(reg, &err), SC_OK);
  before = sc_registry_op(reg, "gemm");
  ck_assert_msg(before != NULL, "no built-in gemm: plugins/ops/gemm.c missing?");
  info = row_of(reg, "builtin:ops_gemm");
  ck_assert_int_eq(info.status, SC_PLUGIN_LOADED);
  ck_assert_int_eq(sc_registry_load_file(reg, over, &err), SC_OK);
  info = row_of(reg, "builtin:ops_gemm");
  ck_assert_int_eq(info.status, SC_PLUGIN_OVERRIDDEN);
  ck_assert_ptr_nonnull(strstr(info.reason, over));
  ck_assert_ptr_nonnull(strstr(info.reason, "priority 100 > 0"));
  ck_assert_int_eq(row_of(reg, over).status, SC_PLUGIN_LOADED);
  ck_assert_ptr_ne(sc_registry_op(reg, "gemm"), before);
  ck_assert_int_eq(sc_registry_op(reg, "gemm")->hdr.priority, 100);
  sc_registry_free(reg);
}
END_TEST

/* ------------------------------------------------------------------------- */
/* Estimates and the memo                                                    */

START_TEST(test_memo_op) {
  sc_registry *reg = new_reg(0);
  sc_error err;
  sc_estimate a, b;
  uint64_t hits, lookups;
  sc_device dev = test_device();
  sc_op_desc op = gemm_op("test.count", 1000, 1, 1);
  ck_assert_int_eq(sc_registry_add_entry(reg, count_entry, "builtin:count", &err), SC_OK);
  count_calls = 0;
  ck_assert_int_eq(sc_registry_estimate_op(reg, &dev, &op, &a, &err), SC_OK);
  ck_assert_int_eq(sc_registry_estimate_op(reg, &dev, &op, &b, &err), SC_OK);
  ck_assert_uint_eq(count_calls, 1);
  sc_registry_memo_stats(reg, &hits, &lookups);
  ck_assert_uint_eq(hits, 1);
  ck_assert_uint_eq(lookups, 2);
  ck_assert_int_eq(memcmp(&a, &b, sizeof a), 0);
  ck_assert_double_eq_tol(a.time_s, 1e-3, 1e-18); /* 1000 * 1 us */
  ck_assert_int_eq(a.bound_tier, -1);
  ck_assert_uint_eq(a.nfeatures, 1);
  /* Dims past ndims are not part of the question. */
  op.dims[5] = 77;
  ck_assert_int_eq(sc_registry_estimate_op(reg, &dev, &op, &b, &err), SC_OK);
  ck_assert_uint_eq(count_calls, 1);
  /* Each part of the description makes a different question. */
  op.dims[0] = 1001;
  ck_assert_int_eq(sc_registry_estimate_op(reg, &dev, &op, &b, &err), SC_OK);
  ck_assert_uint_eq(count_calls, 2);
  ck_assert_double_eq_tol(b.time_s, 1.001e-3, 1e-18);
  op.dims[0] = 1000;
  op.variant = 1;
  ck_assert_int_eq(sc_registry_estimate_op(reg, &dev, &op, &b, &err), SC_OK);
  ck_assert_uint_eq(count_calls, 3);
  ck_assert_double_eq_tol(b.time_s, 1e-3 + 1e-3, 1e-18);
  op.variant = 0;
  op.dtype = SC_DTYPE_FP16;
  ck_assert_int_eq(sc_registry_estimate_op(reg, &dev, &op, &b, &err), SC_OK);
  ck_assert_uint_eq(count_calls, 4);
  op.dtype = SC_DTYPE_BF16;
  op.ndims = 2;
  ck_assert_int_eq(sc_registry_estimate_op(reg, &dev, &op, &b, &err), SC_OK);
  ck_assert_uint_eq(count_calls, 5);
  op.ndims = 3;
  op.flags = SC_OP_COLD; /* cold parameters: another question */
  ck_assert_int_eq(sc_registry_estimate_op(reg, &dev, &op, &b, &err), SC_OK);
  ck_assert_uint_eq(count_calls, 6);
  op.flags = 0;
  strcpy(dev.name, "othergpu");
  ck_assert_int_eq(sc_registry_estimate_op(reg, &dev, &op, &b, &err), SC_OK);
  ck_assert_uint_eq(count_calls, 7);
  /* Back to the first question: a hit. */
  strcpy(dev.name, "testgpu");
  ck_assert_int_eq(sc_registry_estimate_op(reg, &dev, &op, &b, &err), SC_OK);
  ck_assert_uint_eq(count_calls, 7);
  sc_registry_memo_stats(reg, &hits, &lookups);
  ck_assert_uint_eq(hits, 3);
  ck_assert_uint_eq(lookups, 10);
  /* Clearing forgets. */
  sc_registry_memo_clear(reg);
  ck_assert_int_eq(sc_registry_estimate_op(reg, &dev, &op, &b, &err), SC_OK);
  ck_assert_uint_eq(count_calls, 8);
  sc_registry_free(reg);
}
END_TEST

/* Thousands of distinct shapes grow the table; every one is then a hit with its own
 * answer (no false hits across growth). */
START_TEST(test_memo_growth) {
  sc_registry *reg = new_reg(0);
  sc_error err;
  sc_estimate e;
  uint64_t hits, lookups;
  sc_device dev = test_device();
  const int N = 20000;
  ck_assert_int_eq(sc_registry_add_entry(reg, count_entry, "builtin:count", &err), SC_OK);
  count_calls = 0;
  for (int pass = 0; pass < 2; pass++) {
    for (int i = 1; i <= N; i++) {
      sc_op_desc op = gemm_op("test.count", i, 3, 5);
      ck_assert_int_eq(sc_registry_estimate_op(reg, &dev, &op, &e, &err), SC_OK);
      ck_assert_double_eq_tol(e.time_s, (double)i * 1e-6, 1e-15);
      ck_assert_double_eq(e.features[0], (double)i);
    }
  }
  ck_assert_uint_eq(count_calls, (unsigned)N);
  sc_registry_memo_stats(reg, &hits, &lookups);
  ck_assert_uint_eq(hits, (uint64_t)N);
  ck_assert_uint_eq(lookups, 2 * (uint64_t)N);
  sc_registry_free(reg);
}
END_TEST

/* Two keys whose hashes we force equal must still compare unequal. */
START_TEST(test_memo_exact_compare) {
  sc__memo m;
  sc_estimate e1, e2, out;
  const char k1[] = "key-one", k2[] = "key-two";
  memset(&m, 0, sizeof m);
  memset(&e1, 0, sizeof e1);
  memset(&e2, 0, sizeof e2);
  e1.time_s = 1;
  e2.time_s = 2;
  ck_assert_int_eq(sc__memo_insert(&m, k1, sizeof k1, 42, &e1), SC_OK);
  ck_assert_int_eq(sc__memo_find(&m, k2, sizeof k2, 42, &out), 0);
  ck_assert_int_eq(sc__memo_insert(&m, k2, sizeof k2, 42, &e2), SC_OK);
  ck_assert_int_eq(sc__memo_find(&m, k1, sizeof k1, 42, &out), 1);
  ck_assert_double_eq(out.time_s, 1);
  ck_assert_int_eq(sc__memo_find(&m, k2, sizeof k2, 42, &out), 1);
  ck_assert_double_eq(out.time_s, 2);
  /* Shorter key with the same prefix and hash: no hit. */
  ck_assert_int_eq(sc__memo_find(&m, k1, 3, 42, &out), 0);
  /* The hash spreads small changes. */
  ck_assert(sc__memo_hash(k1, sizeof k1) != sc__memo_hash(k2, sizeof k2));
  ck_assert(sc__memo_hash(k1, 3) != sc__memo_hash(k1, 4));
  sc__memo_free(&m);
}
END_TEST

START_TEST(test_estimate_errors) {
  sc_registry *reg = new_reg(0);
  sc_error err;
  sc_estimate e;
  uint64_t hits;
  sc_device dev = test_device();
  sc_op_desc op = gemm_op("nope", 1, 1, 1);
  ck_assert_int_eq(sc_registry_add_entry(reg, count_entry, "builtin:count", &err), SC_OK);
  ck_assert_int_eq(sc_registry_estimate_op(reg, &dev, &op, &e, &err), SC_ENOTFOUND);
  ck_assert_str_eq(err.msg, "no plugin for operator family 'nope'");
  op.family = NULL;
  ck_assert_int_eq(sc_registry_estimate_op(reg, &dev, &op, &e, &err), SC_EINVAL);
  op.family = "test.count";
  op.ndims = SC_OP_MAX_DIMS + 1;
  ck_assert_int_eq(sc_registry_estimate_op(reg, &dev, &op, &e, &err), SC_EINVAL);
  ck_assert_ptr_nonnull(strstr(err.msg, "ndims 9 exceeds SC_OP_MAX_DIMS"));
  ck_assert_int_eq(sc_registry_estimate_op(reg, NULL, &op, &e, &err), SC_EINVAL);
  ck_assert_int_eq(sc_registry_estimate_op(reg, &dev, &op, NULL, &err), SC_EINVAL);
  /* The plugin's own error comes through and is not memoised. */
  op.ndims = 1;
  op.dims[0] = 0;
  count_calls = 0;
  ck_assert_int_eq(sc_registry_estimate_op(reg, &dev, &op, &e, &err), SC_EINVAL);
  ck_assert_str_eq(err.msg, "test.count: dims[0] must be > 0");
  ck_assert_int_eq(sc_registry_estimate_op(reg, &dev, &op, &e, &err), SC_EINVAL);
  ck_assert_uint_eq(count_calls, 2);
  sc_registry_memo_stats(reg, &hits, NULL);
  ck_assert_uint_eq(hits, 0);
  sc_registry_free(reg);
}
END_TEST

static sc_coll_desc two_tier(uint32_t r0, double bw0, double lat0, uint32_t r1, double bw1,
                             double lat1, double bytes) {
  sc_coll_desc c;
  memset(&c, 0, sizeof c);
  c.kind = SC_COLL_ALLREDUCE;
  c.bytes = bytes;
  c.dtype = SC_DTYPE_BF16;
  c.nranks = r0 * r1;
  c.ntiers = 2;
  c.tiers[0] = (sc_tier_span){r0, bw0, lat0, 1.0, 1};
  c.tiers[1] = (sc_tier_span){r1, bw1, lat1, 1.0, 1};
  return c;
}

START_TEST(test_memo_coll) {
  sc_registry *reg = new_reg(0);
  sc_error err;
  sc_estimate a, b;
  uint64_t hits, lookups;
  const sc_coll_plugin *flat;
  sc_coll_desc c = two_tier(8, 100e9, 2e-6, 4, 25e9, 5e-6, 1e9);
  ck_assert_int_eq(sc_registry_load_file(reg, fx("good", "fix-coll.so"), &err), SC_OK);
  flat = sc_registry_coll(reg, SC_COLL_ALLREDUCE, "flat");
  ck_assert_ptr_nonnull(flat);
  /* fix.allreduce.flat: 2e-6 + 5e-6 + 1e9 / 25e9 = 0.040007 s. */
  ck_assert_int_eq(sc_registry_estimate_coll(reg, flat, &c, &a, &err), SC_OK);
  ck_assert_rel(a.time_s, 0.040007);
  ck_assert_int_eq(sc_registry_estimate_coll(reg, flat, &c, &b, &err), SC_OK);
  ck_assert_int_eq(memcmp(&a, &b, sizeof a), 0);
  sc_registry_memo_stats(reg, &hits, &lookups);
  ck_assert_uint_eq(hits, 1);
  ck_assert_uint_eq(lookups, 2);
  /* Tiers past ntiers do not matter; every used field does. */
  c.tiers[5].ranks = 9;
  ck_assert_int_eq(sc_registry_estimate_coll(reg, flat, &c, &b, &err), SC_OK);
  c.tiers[1].bw_Bps = 50e9;
  ck_assert_int_eq(sc_registry_estimate_coll(reg, flat, &c, &b, &err), SC_OK);
  ck_assert_rel(b.time_s, 7e-6 + 0.02);
  c.tiers[1].bw_Bps = 25e9;
  c.kind = SC_COLL_ALLGATHER;
  ck_assert_int_eq(sc_registry_estimate_coll(reg, flat, &c, &b, &err), SC_OK);
  c.kind = SC_COLL_ALLREDUCE;
  c.bytes = 2e9;
  ck_assert_int_eq(sc_registry_estimate_coll(reg, flat, &c, &b, &err), SC_OK);
  sc_registry_memo_stats(reg, &hits, &lookups);
  ck_assert_uint_eq(hits, 2);
  ck_assert_uint_eq(lookups, 6);
  /* A kind the algorithm does not answer, and bad arguments. */
  c.kind = SC_COLL_ALLTOALL;
  ck_assert_int_eq(sc_registry_estimate_coll(reg, flat, &c, &b, &err), SC_EUNSUPPORTED);
  ck_assert_ptr_nonnull(strstr(err.msg, "does not answer"));
  c.kind = SC_COLL_COUNT;
  ck_assert_int_eq(sc_registry_estimate_coll(reg, flat, &c, &b, &err), SC_EINVAL);
  c.kind = SC_COLL_ALLREDUCE;
  c.ntiers = SC_MAX_TIERS + 1;
  ck_assert_int_eq(sc_registry_estimate_coll(reg, flat, &c, &b, &err), SC_EINVAL);
  ck_assert_int_eq(sc_registry_estimate_coll(reg, NULL, &c, &b, &err), SC_EINVAL);
  sc_registry_free(reg);
}
END_TEST

/* ------------------------------------------------------------------------- */
/* Host services: a hardware plugin reads its table through sc_host.           */

START_TEST(test_host_tables) {
  static const char good[] =
      "name = \"fixture-gpu\"\n"
      "peak_bf16_tflops = 312\n"
      "[memory]\n"
      "bytes = 42949672960\n"
      "bw_GBps = 1555.0\n";
  static const char bad[] =
      "name = \"fixture-gpu\"\n"
      "peak_bf16_tflops = \"lots\"\n";
  sc_registry *reg = new_reg(0);
  sc_error err;
  sc_toml_doc *doc = NULL;
  sc_device dev;
  const sc_hw_plugin *hw;
  ck_assert_int_eq(sc_registry_load_file(reg, fx("good", "fix-hw.so"), &err), SC_OK);
  hw = sc_registry_hw(reg, "fix.gpu");
  ck_assert_ptr_nonnull(hw);
  ck_assert_int_eq(sc__toml_parse(good, sizeof good - 1, "fix.toml", &doc, &err), SC_OK);
  ck_assert_int_eq(hw->describe(sc_registry_state(reg, &hw->hdr), sc_registry_host(reg),
                                sc__table_of(doc->root), &dev, &err),
                   SC_OK);
  ck_assert_str_eq(dev.name, "fixture-gpu");
  ck_assert_double_eq(dev.peak_flops_per_s[SC_DTYPE_BF16], 312e12);
  ck_assert_double_eq(dev.mem_bytes, 42949672960.0);
  ck_assert_double_eq_tol(dev.mem_bw_Bps, 1555e9, 1e-3);
  /* describe() was called directly (as the spec loader does): its log still arrives. */
  ck_assert_msg(strstr(logbuf, "fix.gpu: described 'fixture-gpu' at fix.toml:") != NULL,
                "log: %s", logbuf);
  sc__toml_free(doc);
  doc = NULL;
  /* A wrong type: the message names file:line:col and the key. */
  ck_assert_int_eq(sc__toml_parse(bad, sizeof bad - 1, "fix.toml", &doc, &err), SC_OK);
  ck_assert_int_eq(hw->describe(NULL, sc_registry_host(reg), sc__table_of(doc->root), &dev,
                                &err),
                   SC_ESPEC);
  ck_assert_msg(strstr(err.msg, "fix.toml:2:") != NULL &&
                    strstr(err.msg, "peak_bf16_tflops") != NULL,
                "message: %s", err.msg);
  sc__toml_free(doc);
  /* The host table advertises the fields the runtime fills. */
  ck_assert_uint_eq(sc_registry_host(reg)->size, sizeof(sc_host));
  ck_assert_ptr_nonnull(sc_registry_host(reg)->table_key);
  sc_registry_free(reg);
}
END_TEST

/* ------------------------------------------------------------------------- */
/* Discovery                                                                 */

START_TEST(test_discover_empty_elements) {
  sc_registry *reg = new_reg(1);
  sc_error err;
  char list[4096];
  /* Empty first, middle and last elements, and the same folder twice. */
  snprintf(list, sizeof list, ":%s/good::%s/good/:", fixture_dir(), fixture_dir());
  ck_assert_int_eq(sc__registry_discover_in(reg, list, NULL, NULL, 0, &err), SC_OK);
  ck_assert_uint_eq(sc_registry_count(reg), 3);
  for (size_t i = 0; i < 3; i++) {
    sc_plugin_info info;
    sc_registry_info(reg, i, &info);
    ck_assert_msg(info.status == SC_PLUGIN_LOADED, "%s: %s", info.path, info.reason);
  }
  /* Name order within a folder. */
  {
    sc_plugin_info i0, i1, i2;
    sc_registry_info(reg, 0, &i0);
    sc_registry_info(reg, 1, &i1);
    sc_registry_info(reg, 2, &i2);
    ck_assert_ptr_nonnull(strstr(i0.path, "/fix-coll.so"));
    ck_assert_ptr_nonnull(strstr(i1.path, "/fix-hw.so"));
    ck_assert_ptr_nonnull(strstr(i2.path, "/fix-op.so"));
  }
  ck_assert_ptr_nonnull(strstr(logbuf, "element 0 is empty"));
  ck_assert_ptr_nonnull(strstr(logbuf, "element 2 is empty"));
  ck_assert_ptr_nonnull(strstr(logbuf, "element 4 is empty"));
  ck_assert_ptr_nonnull(strstr(logbuf, "already scanned"));
  sc_registry_free(reg);
  /* Only colons, and an empty string: nothing found, nothing broken. */
  reg = new_reg(0);
  ck_assert_int_eq(sc__registry_discover_in(reg, ":::", NULL, NULL, 0, &err), SC_OK);
  ck_assert_int_eq(sc__registry_discover_in(reg, "", NULL, NULL, 0, &err), SC_OK);
  ck_assert_int_eq(sc__registry_discover_in(reg, "/no/such/folder", NULL, NULL, 0, &err),
                   SC_OK);
  ck_assert_uint_eq(sc_registry_count(reg), 0);
  sc_registry_free(reg);
}
END_TEST

/* A folder of bad plugins: every one refused with a reason, none crashes discovery. */
START_TEST(test_discover_bad_folder) {
  sc_registry *reg = new_reg(1);
  sc_error err;
  char list[2048];
  size_t n;
  snprintf(list, sizeof list, "%s/bad", fixture_dir());
  ck_assert_int_eq(sc__registry_discover_in(reg, list, NULL, NULL, 0, &err), SC_OK);
  n = sc_registry_count(reg);
  ck_assert_uint_eq(n, 14); /* 13 fixture modules + not-elf.so */
  for (size_t i = 0; i < n; i++) {
    sc_plugin_info info;
    sc_registry_info(reg, i, &info);
    ck_assert_int_eq(info.status, SC_PLUGIN_REFUSED);
    ck_assert_msg(info.reason[0] != '\0', "%s: empty reason", info.path);
    ck_assert_ptr_nonnull(strstr(logbuf, info.path));
  }
  sc_registry_free(reg);
}
END_TEST

/* The real entry point: environment, the build tree's folder, --plugin files. */
START_TEST(test_discover_env_and_extra) {
  sc_registry *reg;
  sc_error err;
  char list[2048];
  const char *extra[2];
  sc_plugin_info info;
  snprintf(list, sizeof list, "%s/good:", fixture_dir());
  setenv("STEPCAST_PLUGIN_PATH", list, 1);
  setenv("STEPCAST_PLUGINS_VERBOSE", "1", 1);
  loglen = 0;
  ck_assert_int_eq(sc_registry_new(&reg, &err), SC_OK);
  sc_registry_set_log(reg, capture_log, NULL);
  extra[0] = fx("extra", "op-hi.so");
  ck_assert_int_eq(sc_registry_discover(reg, extra, 1, &err), SC_OK);
  /* This suite runs from the build tree: its plugin folder was chosen and scanned. */
  ck_assert_ptr_nonnull(strstr(logbuf, "runs from the build tree"));
  ck_assert_ptr_nonnull(strstr(logbuf, SC_PLUGIN_BUILD_DIR));
  ck_assert_str_eq(sc_registry_op(reg, "fix.scale")->hdr.version, "2.0.0");
  info = row_of(reg, fx("good", "fix-op.so"));
  ck_assert_int_eq(info.status, SC_PLUGIN_OVERRIDDEN);
  /* A --plugin file that is already loaded is not an error; a missing one is, by name. */
  extra[0] = fx("good", "fix-op.so");
  extra[1] = "/no/such/plugin.so";
  ck_assert_int_eq(sc_registry_discover(reg, extra, 2, &err), SC_EPLUGIN);
  ck_assert_ptr_nonnull(strstr(err.msg, "/no/such/plugin.so: cannot access"));
  sc_registry_free(reg);
}
END_TEST

START_TEST(test_default_dir) {
  char dir[4096], why[4096];
  ck_assert_int_eq(sc__plugin_default_dir(dir, sizeof dir, why, sizeof why), SC_OK);
  ck_assert_str_eq(dir, SC_PLUGIN_BUILD_DIR);
}
END_TEST

/* ------------------------------------------------------------------------- */
/* The SDK example: Rabenseifner's all-reduce                                */

START_TEST(test_example_rabenseifner) {
  sc_registry *reg = new_reg(0);
  sc_error err;
  sc_estimate e;
  const sc_coll_plugin *rab;
  const double n = 1073741824.0; /* 1 GiB */
  sc_coll_desc c;
  ck_assert_int_eq(
      sc_registry_load_file(reg, fx("example", "allreduce-rabenseifner.so"), &err), SC_OK);
  rab = sc_registry_coll(reg, SC_COLL_ALLREDUCE, "rabenseifner");
  ck_assert_ptr_nonnull(rab);
  /* One flat tier of 8: Thakur et al. 2005, T = 2 lg p a + 2 (p-1)/p n b
   * = 2*3*1e-6 + 2*(7/8)*n/100e9. */
  memset(&c, 0, sizeof c);
  c.kind = SC_COLL_ALLREDUCE;
  c.bytes = n;
  c.nranks = 8;
  c.ntiers = 1;
  c.tiers[0] = (sc_tier_span){8, 100e9, 1e-6, 1.0, 1};
  ck_assert_int_eq(sc_registry_estimate_coll(reg, rab, &c, &e, &err), SC_OK);
  ck_assert_rel(e.time_s, 6e-6 + 1.75 * n / 100e9);
  ck_assert_rel(e.bytes, 1.75 * n);
  ck_assert_rel(e.busbw_Bps, 1.75 * n / e.time_s);
  ck_assert_int_eq(e.bound, SC_BOUND_BANDWIDTH);
  ck_assert_int_eq(e.bound_tier, 0);
  /* Two tiers, 4 inside a node (100 GB/s, 1 us) x 2 nodes (25 GB/s, 5 us): the first
   * halving step (n/2 at distance 4) crosses nodes, the next two (n/4, n/8) stay inside;
   * the all-gather mirrors it. T = 2 * (5e-6 + 2*1e-6 + n/2/25e9 + n/4/100e9 + n/8/100e9). */
  c = two_tier(4, 100e9, 1e-6, 2, 25e9, 5e-6, n);
  ck_assert_int_eq(sc_registry_estimate_coll(reg, rab, &c, &e, &err), SC_OK);
  ck_assert_rel(e.time_s, 2.0 * (7e-6 + n / 2 / 25e9 + n / 4 / 100e9 + n / 8 / 100e9));
  ck_assert_int_eq(e.bound_tier, 1);
  /* Oversubscription 2 on the outer tier halves its bandwidth. */
  c.tiers[1].oversubscription = 2.0;
  ck_assert_int_eq(sc_registry_estimate_coll(reg, rab, &c, &e, &err), SC_OK);
  ck_assert_rel(e.time_s, 2.0 * (7e-6 + n / 2 / 12.5e9 + n / 4 / 100e9 + n / 8 / 100e9));
  /* Malformed inputs: clear errors. */
  c = two_tier(3, 100e9, 1e-6, 2, 25e9, 5e-6, n);
  ck_assert_int_eq(sc_registry_estimate_coll(reg, rab, &c, &e, &err), SC_EUNSUPPORTED);
  ck_assert_ptr_nonnull(strstr(err.msg, "tiers[0].ranks = 3 is not a power of two"));
  c = two_tier(4, 100e9, 1e-6, 2, 25e9, 5e-6, n);
  c.nranks = 16;
  ck_assert_int_eq(sc_registry_estimate_coll(reg, rab, &c, &e, &err), SC_EINVAL);
  ck_assert_ptr_nonnull(strstr(err.msg, "nranks 16 != product of tier ranks 8"));
  c = two_tier(4, 100e9, 1e-6, 2, 0.0, 5e-6, n);
  ck_assert_int_eq(sc_registry_estimate_coll(reg, rab, &c, &e, &err), SC_EINVAL);
  /* Fewer bytes than ranks, and none at all (the runtime's latency probe): every step
   * still pays its latency, the bandwidth term continues the formula (issue 34: "bytes 0 <
   * nranks 8" broke every predict and comm). 4 bytes on 4 x 2:
   * T = 2 * (7e-6 + 2/25e9 + 1/100e9 + 0.5/100e9); 0 bytes: 2 * 7e-6. */
  c = two_tier(4, 100e9, 1e-6, 2, 25e9, 5e-6, 4.0);
  ck_assert_int_eq(sc_registry_estimate_coll(reg, rab, &c, &e, &err), SC_OK);
  ck_assert_rel(e.time_s, 2.0 * (7e-6 + 2.0 / 25e9 + 1.0 / 100e9 + 0.5 / 100e9));
  ck_assert_int_eq(e.bound, SC_BOUND_LATENCY);
  c = two_tier(4, 100e9, 1e-6, 2, 25e9, 5e-6, 0.0);
  ck_assert_int_eq(sc_registry_estimate_coll(reg, rab, &c, &e, &err), SC_OK);
  ck_assert_rel(e.time_s, 14e-6);
  c.bytes = -1.0;
  ck_assert_int_eq(sc_registry_estimate_coll(reg, rab, &c, &e, &err), SC_EINVAL);
  c = two_tier(4, 100e9, 1e-6, 2, 25e9, 5e-6, n);
  c.kind = SC_COLL_ALLGATHER;
  ck_assert_int_eq(sc_registry_estimate_coll(reg, rab, &c, &e, &err), SC_EUNSUPPORTED);
  sc_registry_free(reg);
}
END_TEST

/* ------------------------------------------------------------------------- */
/* The SDK example SwiGLU: a plugin for part of a built-in family            */

static sc_device ew_device(void) {
  sc_device d = test_device();
  d.peak_flops_per_s[SC_DTYPE_FP32] = 20e12; /* the built-in prices vector ops at fp32 */
  return d;
}

static sc_op_desc ew_op(uint32_t variant, int64_t n) {
  sc_op_desc op;
  memset(&op, 0, sizeof op);
  op.family = "elementwise";
  op.variant = variant;
  op.dtype = SC_DTYPE_BF16;
  op.ndims = 1;
  op.dims[0] = n;
  return op;
}

/* docs/examples/plugin/swiglu.c is named "elementwise" at priority 10 (the name the workload
 * asks for: a plugin named "swiglu" is never called) and prices the SwiGLU variants alone,
 * declining the others with SC_EUNSUPPORTED: the registry then asks the built-in it
 * overrides, whichever was loaded first (_i = 0: the built-ins first; 1: the example). */
START_TEST(test_decline_fallback) {
  sc_registry *ref = new_reg(0), *reg;
  sc_error err;
  sc_estimate e, want;
  sc_plugin_override o;
  sc_device dev = ew_device();
  const char *sw = fx("example", "swiglu.so");
  sc_op_desc gelu = ew_op(SC_EW_GELU_FWD, 1000000), fwd = ew_op(SC_EW_SWIGLU_FWD, 1000000);
  sc_op_desc bwd = ew_op(SC_EW_SWIGLU_BWD, 1000000);
  ck_assert_int_eq(sc_registry_add_builtins(ref, &err), SC_OK);
  ck_assert_int_eq(sc_registry_estimate_op(ref, &dev, &gelu, &want, &err), SC_OK);
  reg = new_reg(1);
  if (_i == 0) {
    ck_assert_int_eq(sc_registry_add_builtins(reg, &err), SC_OK);
    ck_assert_msg(sc_registry_load_file(reg, sw, &err) == SC_OK, "%s", err.msg);
  } else {
    ck_assert_msg(sc_registry_load_file(reg, sw, &err) == SC_OK, "%s", err.msg);
    ck_assert_int_eq(sc_registry_add_builtins(reg, &err), SC_OK);
  }
  ck_assert_int_eq(row_of(reg, sw).status, SC_PLUGIN_LOADED);
  ck_assert_int_eq(row_of(reg, "builtin:ops_elementwise").status, SC_PLUGIN_OVERRIDDEN);
  /* SwiGLU by the example (eager PyTorch): 1e6 bf16 elements, 5 * 2 bytes each and 2
   * kernels forward, 9 * 2 bytes and 3 kernels backward, at 1e12 * 0.8 B/s and 5 us a
   * kernel: 10e6 / 0.8e12 + 2 * 5e-6 = 22.5 us; 18e6 / 0.8e12 + 3 * 5e-6 = 37.5 us. */
  ck_assert_int_eq(sc_registry_estimate_op(reg, &dev, &fwd, &e, &err), SC_OK);
  ck_assert_rel(e.time_s, 22.5e-6);
  ck_assert_rel(e.bytes, 10e6);
  ck_assert_int_eq(sc_registry_estimate_op(reg, &dev, &bwd, &e, &err), SC_OK);
  ck_assert_rel(e.time_s, 37.5e-6);
  ck_assert_rel(e.bytes, 18e6);
  /* GeLU declined: the built-in's answer, as without the example. */
  ck_assert_int_eq(sc_registry_estimate_op(reg, &dev, &gelu, &e, &err), SC_OK);
  ck_assert_rel(e.time_s, want.time_s);
  ck_assert_rel(e.bytes, want.bytes);
  ck_assert_ptr_nonnull(strstr(logbuf, "declined variant 0"));
  /* The takeover is on record, for the CLI's warning. */
  ck_assert_uint_eq(sc_registry_override_count(reg), 1);
  ck_assert_int_eq(sc_registry_override(reg, 0, &o), SC_OK);
  ck_assert_int_eq(o.kind, SC_PLUGIN_KIND_OP);
  ck_assert_str_eq(o.name, "elementwise");
  ck_assert_str_eq(o.by_path, sw);
  ck_assert_int_eq(o.by_priority, 10);
  ck_assert_str_eq(o.from_path, "builtin:ops_elementwise");
  /* Without a plugin below, a decline is the error it is. */
  sc_registry_free(reg);
  reg = new_reg(0);
  ck_assert_int_eq(sc_registry_load_file(reg, sw, &err), SC_OK);
  ck_assert_int_eq(sc_registry_estimate_op(reg, &dev, &gelu, &e, &err), SC_EUNSUPPORTED);
  ck_assert_ptr_nonnull(strstr(err.msg, "swiglu: variant 0 is not SwiGLU"));
  sc_registry_free(reg);
  sc_registry_free(ref);
}
END_TEST

/* A collective of another name offering the built-in ring's algorithm at a higher priority
 * takes "ring" over for all-reduce (sc_registry_coll answers with it): on record. */
static int const_coll(void *state, const sc_coll_desc *c, sc_estimate *out, sc_error *err) {
  (void)state;
  (void)c;
  (void)err;
  out->time_s = 1.0;
  return SC_OK;
}
static const sc_coll_plugin ring2 = {
    .hdr = SC_PLUGIN_HEADER_FULL(sc_coll_plugin, SC_PLUGIN_KIND_COLLECTIVE, "test.ring2",
                                 "1.0", 5, NULL, NULL),
    .algorithm = "ring",
    .kinds_mask = 1u << SC_COLL_ALLREDUCE,
    .estimate = const_coll,
};
static const sc_plugin_header *ring2_entry(void) { return &ring2.hdr; }

START_TEST(test_override_algorithm) {
  sc_registry *reg = new_reg(0);
  sc_error err;
  sc_plugin_override o;
  int found = 0;
  ck_assert_int_eq(sc_registry_add_builtins(reg, &err), SC_OK);
  ck_assert_uint_eq(sc_registry_override_count(reg), 0); /* the built-ins take nothing over */
  ck_assert_int_eq(sc_registry_add_entry(reg, ring2_entry, "builtin:ring2", &err), SC_OK);
  ck_assert_ptr_eq(sc_registry_coll(reg, SC_COLL_ALLREDUCE, "ring"), &ring2);
  for (size_t i = 0; i < sc_registry_override_count(reg); i++) {
    ck_assert_int_eq(sc_registry_override(reg, i, &o), SC_OK);
    ck_assert_int_eq(o.kind, SC_PLUGIN_KIND_COLLECTIVE);
    ck_assert_str_eq(o.name, "ring");
    ck_assert_str_eq(o.by_path, "builtin:ring2");
    ck_assert_int_eq(o.by_priority, 5);
    if (strcmp(o.from_path, "builtin:collectives_allreduce_ring") == 0) found = 1;
  }
  ck_assert_msg(found, "no takeover of allreduce.ring on record");
  sc_registry_free(reg);
}
END_TEST

/* ------------------------------------------------------------------------- */
/* Loading the plugin folder maps no CUDA library                            */

/* 1 when /proc/self/maps names a file containing needle. */
static int mapped(const char *needle) {
  char line[4096];
  int hit = 0;
  FILE *f = fopen("/proc/self/maps", "r");
  ck_assert_ptr_nonnull(f);
  while (fgets(line, sizeof line, f) != NULL) {
    if (strstr(line, needle) != NULL) hit = 1;
  }
  fclose(f);
  return hit;
}

/* Issue 34: every command that discovers plugins loaded the cuda plugin and with it cuBLAS
 * (541 MB: 0.2 s and 211 MiB per command on a machine without a GPU). The build tree's
 * plugin folder, discovered as the CLI does, with the cuda plugin among its plugins where it
 * is built (SC_TEST_HAVE_CUDA): no libcublas, libcublasLt or libcudart in this process. */
START_TEST(test_no_cuda_mapped) {
  sc_registry *reg = new_reg(0);
  sc_error err;
  ck_assert_int_eq(mapped("libcublas"), 0);
  ck_assert_int_eq(sc__registry_discover_in(reg, NULL, SC_PLUGIN_BUILD_DIR, NULL, 0, &err),
                   SC_OK);
#if defined(SC_TEST_HAVE_CUDA)
  ck_assert_msg(sc_registry_hw(reg, "cuda") != NULL, "the cuda plugin did not load from %s",
                SC_PLUGIN_BUILD_DIR);
#endif
  ck_assert_ptr_nonnull(sc_registry_hw(reg, "gpu"));
  ck_assert_msg(!mapped("libcublas"), "libcublas is mapped after loading the plugin folder");
  ck_assert_msg(!mapped("libcudart"), "libcudart is mapped after loading the plugin folder");
  sc_registry_free(reg);
}
END_TEST

/* Copy file src to dst (a plugin into a temporary folder). */
static void copy_file(const char *src, const char *dst) {
  char buf[65536];
  size_t n;
  FILE *in = fopen(src, "rb"), *out = fopen(dst, "wb");
  ck_assert_ptr_nonnull(in);
  ck_assert_ptr_nonnull(out);
  while ((n = fread(buf, 1, sizeof buf, in)) > 0) ck_assert_uint_eq(fwrite(buf, 1, n, out), n);
  fclose(in);
  ck_assert_int_eq(fclose(out), 0);
}

/* Issue 34: STEPCAST_PLUGIN_PATH elements that are relative paths are ignored with a
 * warning naming them (not resolved against the working directory); a folder writable by
 * everyone without the sticky bit, or owned by another non-root user, and a plugin file
 * writable by everyone or owned by another user, are skipped with a warning (ssh's
 * StrictModes). The suite runs as root, which may chown to any uid. */
START_TEST(test_discover_unsafe) {
  sc_registry *reg;
  sc_error err;
  char tmpl[] = "/tmp/sc-plugin-unsafe-XXXXXX", dir[512], so[600], cwd[4096], list[1200];
  char *base = mkdtemp(tmpl);
  ck_assert_ptr_nonnull(base);
  snprintf(dir, sizeof dir, "%s/p", base);
  ck_assert_int_eq(mkdir(dir, 0755), 0);
  snprintf(so, sizeof so, "%s/fix-op.so", dir);
  copy_file(fx("good", "fix-op.so"), so);
  ck_assert_int_eq(chmod(so, 0755), 0);
  /* Safe: loads. */
  reg = new_reg(0);
  ck_assert_int_eq(sc__registry_discover_in(reg, dir, NULL, NULL, 0, &err), SC_OK);
  ck_assert_uint_eq(sc_registry_count(reg), 1);
  ck_assert_ptr_null(strstr(logbuf, "[1] plugins"));
  sc_registry_free(reg);
  /* Relative: "p" from inside base would find the same folder; ignored with a warning. */
  ck_assert_ptr_nonnull(getcwd(cwd, sizeof cwd));
  ck_assert_int_eq(chdir(base), 0);
  reg = new_reg(0);
  ck_assert_int_eq(sc__registry_discover_in(reg, "/no/such:p:./p", NULL, NULL, 0, &err), SC_OK);
  ck_assert_int_eq(chdir(cwd), 0);
  ck_assert_uint_eq(sc_registry_count(reg), 0);
  ck_assert_ptr_nonnull(strstr(logbuf, "[1] plugins: STEPCAST_PLUGIN_PATH element 1 'p' is a "
                                       "relative path: ignored"));
  ck_assert_ptr_nonnull(strstr(logbuf, "element 2 './p' is a relative path"));
  sc_registry_free(reg);
  /* A folder writable by everyone, no sticky bit: skipped; with the sticky bit: scanned. */
  ck_assert_int_eq(chmod(dir, 0777), 0);
  reg = new_reg(0);
  ck_assert_int_eq(sc__registry_discover_in(reg, dir, NULL, NULL, 0, &err), SC_OK);
  ck_assert_uint_eq(sc_registry_count(reg), 0);
  snprintf(list, sizeof list, "[1] plugins: plugin folder %s (STEPCAST_PLUGIN_PATH) skipped: "
           "writable by every user (mode 0777, no sticky bit)", dir);
  ck_assert_msg(strstr(logbuf, list) != NULL, "%s", logbuf);
  sc_registry_free(reg);
  ck_assert_int_eq(chmod(dir, 01777), 0);
  reg = new_reg(0);
  ck_assert_int_eq(sc__registry_discover_in(reg, dir, NULL, NULL, 0, &err), SC_OK);
  ck_assert_uint_eq(sc_registry_count(reg), 1);
  sc_registry_free(reg);
  ck_assert_int_eq(chmod(dir, 0755), 0);
  /* A plugin file writable by everyone: skipped. */
  ck_assert_int_eq(chmod(so, 0777), 0);
  reg = new_reg(0);
  ck_assert_int_eq(sc__registry_discover_in(reg, dir, NULL, NULL, 0, &err), SC_OK);
  ck_assert_uint_eq(sc_registry_count(reg), 0);
  snprintf(list, sizeof list, "[1] plugins: plugin %s skipped: writable by every user", so);
  ck_assert_msg(strstr(logbuf, list) != NULL, "%s", logbuf);
  sc_registry_free(reg);
  ck_assert_int_eq(chmod(so, 0755), 0);
  /* Owned by another user (not root, not us): the file, then the folder. */
  if (geteuid() == 0) {
    ck_assert_int_eq(chown(so, 4242, 4242), 0);
    reg = new_reg(0);
    ck_assert_int_eq(sc__registry_discover_in(reg, dir, NULL, NULL, 0, &err), SC_OK);
    ck_assert_uint_eq(sc_registry_count(reg), 0);
    ck_assert_ptr_nonnull(strstr(logbuf, "skipped: owned by another user (uid 4242"));
    sc_registry_free(reg);
    ck_assert_int_eq(chown(so, 0, 0), 0);
    ck_assert_int_eq(chown(dir, 4242, 4242), 0);
    reg = new_reg(0);
    ck_assert_int_eq(sc__registry_discover_in(reg, dir, NULL, NULL, 0, &err), SC_OK);
    ck_assert_uint_eq(sc_registry_count(reg), 0);
    snprintf(list, sizeof list, "plugin folder %s (STEPCAST_PLUGIN_PATH) skipped: owned by "
             "another user (uid 4242", dir);
    ck_assert_ptr_nonnull(strstr(logbuf, list));
    sc_registry_free(reg);
  }
  ck_assert_int_eq(unlink(so), 0);
  ck_assert_int_eq(rmdir(dir), 0);
  ck_assert_int_eq(rmdir(base), 0);
}
END_TEST

static Suite *plugin_suite(void) {
  Suite *s = suite_create("plugin");
  TCase *tc = tcase_create("load");
  tcase_add_test(tc, test_load_good);
  tcase_add_test(tc, test_host_alloc_accounting);
  tcase_add_loop_test(tc, test_refusal, 0, (int)NBAD);
  tcase_add_test(tc, test_refusal_listing_fields);
  tcase_add_test(tc, test_newer_minor_refused);
  tcase_add_test(tc, test_newer_minor_hw);
  tcase_add_test(tc, test_minor0_accepted);
  tcase_add_test(tc, test_scale_features_past_nfeatures);
  tcase_add_test(tc, test_null_entry_static);
  tcase_add_test(tc, test_collision_same_priority);
  tcase_add_test(tc, test_load_same_file_twice);
  tcase_add_test(tc, test_override_builtin);
  tcase_add_test(tc, test_override_order_independent);
  tcase_add_test(tc, test_builtins);
  tcase_add_test(tc, test_override_real_builtin);
  suite_add_tcase(s, tc);
  tc = tcase_create("estimate");
  tcase_add_test(tc, test_memo_op);
  tcase_add_test(tc, test_memo_growth);
  tcase_add_test(tc, test_memo_exact_compare);
  tcase_add_test(tc, test_estimate_errors);
  tcase_add_test(tc, test_memo_coll);
  tcase_add_test(tc, test_host_tables);
  tcase_add_test(tc, test_example_rabenseifner);
  tcase_add_loop_test(tc, test_decline_fallback, 0, 2);
  tcase_add_test(tc, test_override_algorithm);
  suite_add_tcase(s, tc);
  tc = tcase_create("discover");
  tcase_add_test(tc, test_discover_empty_elements);
  tcase_add_test(tc, test_discover_bad_folder);
  tcase_add_test(tc, test_discover_env_and_extra);
  tcase_add_test(tc, test_default_dir);
  tcase_add_test(tc, test_no_cuda_mapped);
  tcase_add_test(tc, test_discover_unsafe);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(plugin_suite());
  int failed;
  srunner_run_all(sr, CK_NORMAL);
  failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

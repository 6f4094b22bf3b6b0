/*
 * Trace-driven mode (docs/trace.md): parsing Kineto traces (counts, correlation, cross-
 * stream event edges), replay against the measured ProfilerStep spans, what-if edits on
 * hand-built traces whose replayed times are derived by hand, and malformed input.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sc_config.h"
#include "stepcast/comm.h"
#include "stepcast/stepcast.h"
#include "stepcast/estimate.h"
#include "stepcast/trace.h"

static char data_path[1024];

static const char *data(const char *name) {
  const char *d = getenv("SC_TEST_DATA");
  static char buf[1200];
  if (d == NULL) {
    snprintf(data_path, sizeof data_path, "%s/tests/data", SC_SOURCE_DIR);
    d = data_path;
  }
  snprintf(buf, sizeof buf, "%s/trace/%s", d, name);
  return buf;
}

static sc_trace *load(const char *name) {
  sc_trace *t = NULL;
  sc_error err = {0};
  int rc = sc_trace_load(data(name), &t, &err);
  ck_assert_msg(rc == SC_OK, "%s: %s", name, err.msg);
  return t;
}

static sc_trace *load_mem(const char *json) {
  sc_trace *t = NULL;
  sc_error err = {0};
  int rc = sc_trace_load_mem("mem.json", json, strlen(json), &t, &err);
  ck_assert_msg(rc == SC_OK, "%s", err.msg);
  return t;
}

/* Replay and return the result; the iteration named `name` of rank `rank` in *it. */
static sc_trace_result *replay(sc_trace **t, size_t n, const sc_trace_edits *ed) {
  sc_trace_result *r = NULL;
  sc_error err = {0};
  int rc = sc_trace_replay(t, n, ed, &r, &err);
  ck_assert_msg(rc == SC_OK, "%s", err.msg);
  return r;
}

static const sc_trace_iter *iter(const sc_trace_result *r, const char *name, int rank) {
  size_t n;
  const sc_trace_iter *it = sc_trace_result_iters(r, &n);
  for (size_t i = 0; i < n; i++) {
    if (strcmp(it[i].name, name) == 0 && it[i].rank == rank) return &it[i];
  }
  ck_abort_msg("no iteration %s of rank %d", name, rank);
  return NULL;
}

/* ---- parsing real fixtures ---- */

START_TEST(parse_event_sync_counts) {
  /* Counted with Python's json module on the same file: 92 traceEvents; X events:
   * cpu_op 10, user_annotation 1, cuda_runtime 12, kernel 4, gpu_memcpy 1, cuda_sync 4;
   * the rest (14 f, 7 s, 36 M, 2 i, 1 X/Trace) skipped = 60. */
  sc_trace *t = load("event_sync.json.gz");
  sc_trace_info in;
  sc_trace_get_info(t, &in);
  ck_assert_uint_eq(in.events, 92);
  ck_assert_uint_eq(in.by_kind[SC_TRACE_CPU_OP], 10);
  ck_assert_uint_eq(in.by_kind[SC_TRACE_ANNOTATION], 1);
  ck_assert_uint_eq(in.by_kind[SC_TRACE_RUNTIME], 12);
  ck_assert_uint_eq(in.by_kind[SC_TRACE_KERNEL], 4);
  ck_assert_uint_eq(in.by_kind[SC_TRACE_MEMCPY], 1);
  ck_assert_uint_eq(in.by_kind[SC_TRACE_MEMSET], 0);
  ck_assert_uint_eq(in.by_kind[SC_TRACE_SYNC], 4);
  ck_assert_uint_eq(in.kept, 32);
  ck_assert_uint_eq(in.skipped, 60);
  ck_assert_int_eq(in.rank, 0);
  ck_assert_str_eq(in.device_name, "NVIDIA A100-PG509-200");
  const char *kind;
  uint64_t count, sum = 0;
  for (size_t i = 0; sc_trace_skipped_kind(t, i, &kind, &count) == SC_OK; i++) sum += count;
  ck_assert_uint_eq(sum, 60);
  ck_assert_int_eq(sc_trace_skipped_kind(t, in.skipped_kinds, &kind, &count), SC_ENOTFOUND);
  sc_trace_free(t);
}
END_TEST

START_TEST(parse_plain_equals_gzip) {
  sc_trace *a = load("event_sync.json.gz"), *b = load("event_sync.json");
  sc_trace_info ia, ib;
  sc_trace_get_info(a, &ia);
  sc_trace_get_info(b, &ib);
  ck_assert_uint_eq(ia.events, ib.events);
  ck_assert_uint_eq(ia.kept, ib.kept);
  ck_assert_uint_eq(ia.json_bytes, ib.json_bytes);
  for (int k = 0; k < SC_TRACE_KIND_COUNT; k++) ck_assert_uint_eq(ia.by_kind[k], ib.by_kind[k]);
  sc_trace_free(a);
  sc_trace_free(b);
}
END_TEST

START_TEST(graph_correlation_and_syncs) {
  /* event_sync: 4 kernels + 1 memcpy, each launched by a runtime call of the same
   * correlation id (1482, 1495, 1505, 1511, 1526): 5 launch edges; one stream (7): 4
   * stream edges. Blocking calls: the synchronous DtoH (pageable) memcpy, the
   * cudaStreamSynchronize (on the memcpy), the cudaEventSynchronize on record 1533 (the
   * spin kernel), and cudaDeviceSynchronize (one stream): 4 sync edges, plus the
   * cudaEventQuery's "Event Sync" record which does not block (not an edge). */
  sc_trace *t = load("event_sync.json.gz");
  sc_trace_result *r = replay(&t, 1, NULL);
  sc_trace_graph_info g;
  sc_trace_result_graph(r, &g);
  ck_assert_uint_eq(g.launch_edges, 5);
  ck_assert_uint_eq(g.stream_edges, 4);
  ck_assert_uint_eq(g.event_edges, 0);
  ck_assert_uint_eq(g.nodes, 28);
  ck_assert_msg(g.sync_edges == 4 || g.sync_edges == 5, "sync edges %llu",
                (unsigned long long)g.sync_edges);
  sc_trace_result_free(r);
  sc_trace_free(t);
}
END_TEST

START_TEST(graph_cross_stream_event) {
  /* event_sync_multi_stream: cudaStreamWaitEvent (correlation 1389) makes stream 24 wait
   * on record 1385 of stream 20 (its "Stream Wait Event" cuda_sync record): the gemm of
   * correlation 1413 on stream 24 depends on the gemm of correlation 27 on stream 20. One
   * cross-stream edge, as HTA's critical-path analysis finds. Three kernels, each on its
   * own stream, each launched: 3 launch edges (+ 3 memsets' launches). */
  sc_trace *t = load("event_sync_multi_stream.json.gz");
  sc_trace_result *r = replay(&t, 1, NULL);
  sc_trace_graph_info g;
  sc_trace_result_graph(r, &g);
  ck_assert_uint_eq(g.event_edges, 1);
  ck_assert_uint_eq(g.launch_edges, 6);
  sc_trace_result_free(r);
  sc_trace_free(t);
}
END_TEST

/* Replay with measured durations reproduces every span within 2 %. */
static void replay_within(sc_trace **t, size_t n, size_t min_iters) {
  sc_trace_result *r = replay(t, n, NULL);
  size_t ni;
  const sc_trace_iter *it = sc_trace_result_iters(r, &ni);
  ck_assert_uint_ge(ni, min_iters);
  for (size_t i = 0; i < ni; i++) {
    double e = fabs(it[i].replayed_s - it[i].measured_s) / it[i].measured_s;
    ck_assert_msg(e <= 0.02, "%s rank %d: measured %.6f s replayed %.6f s", it[i].name,
                  it[i].rank, it[i].measured_s, it[i].replayed_s);
    double sum = it[i].compute_s + it[i].comm_exposed_s + it[i].memory_s + it[i].idle_s;
    ck_assert_msg(fabs(sum - it[i].replayed_s) <= 1e-9 + 1e-9 * it[i].replayed_s,
                  "breakdown %.9f != %.9f", sum, it[i].replayed_s);
    /* Lumos's four parts sum to the span too; its compute is the HTA compute */
    double lum = it[i].exposed_compute_s + it[i].overlapped_s + it[i].exposed_comm_s +
                 it[i].other_s;
    ck_assert_msg(fabs(lum - it[i].replayed_s) <= 1e-9 + 1e-9 * it[i].replayed_s,
                  "Lumos breakdown %.9f != %.9f", lum, it[i].replayed_s);
    ck_assert_msg(fabs(it[i].exposed_compute_s + it[i].overlapped_s - it[i].compute_s) <=
                      1e-9 + 1e-9 * it[i].replayed_s, "compute %.9f", it[i].compute_s);
    ck_assert_msg(isnan(it[i].comm_overlap_pct) ||
                      (it[i].comm_overlap_pct >= 0 && it[i].comm_overlap_pct <= 100),
                  "overlap %g %%", it[i].comm_overlap_pct);
  }
  sc_trace_result_free(r);
}

START_TEST(replay_fixtures) {
  const char *files[] = {"event_sync.json.gz", "event_sync.json",
                         "event_sync_multi_stream.json.gz", "simple_add.json.gz"};
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    sc_trace *t = load(files[i]);
    replay_within(&t, 1, 1);
    sc_trace_free(t);
  }
  /* ProfilerStep#100 of event_sync: 3154 us measured */
  sc_trace *t = load("event_sync.json.gz");
  sc_trace_result *r = replay(&t, 1, NULL);
  const sc_trace_iter *it = iter(r, "ProfilerStep#100", 0);
  ck_assert_msg(fabs(it->measured_s - 3.154e-3) < 1e-12, "%.9f", it->measured_s);
  sc_trace_result_free(r);
  sc_trace_free(t);
}
END_TEST

START_TEST(replay_real_traces) {
  /* The larger HTA traces, when ../shared/data is present (not copied into the tree). */
  const char *dirs[] = {SC_SOURCE_DIR "/../shared/data/traces/hta/trace_diff/control/"
                                      "control.json.gz",
                        SC_SOURCE_DIR "/../shared/data/traces/hta/trace_diff/test/test.json.gz",
                        SC_SOURCE_DIR "/../shared/data/traces/hta/nccl_parser_config/"
                                      "nccl_data.json.gz"};
  for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
    sc_trace *t = NULL;
    sc_error err = {0};
    if (sc_trace_load(dirs[i], &t, &err) != SC_OK) continue; /* not here: skipped */
    replay_within(&t, 1, 3);
    sc_trace_free(t);
  }
  sc_trace *two[2] = {NULL, NULL};
  sc_error err = {0};
  if (sc_trace_load(SC_SOURCE_DIR "/../shared/data/traces/hta/trace_filter/sampled_rank-0.json.gz",
                    &two[0], &err) == SC_OK &&
      sc_trace_load(SC_SOURCE_DIR "/../shared/data/traces/hta/trace_filter/sampled_rank-1.json.gz",
                    &two[1], &err) == SC_OK) {
    replay_within(two, 2, 4);
  }
  sc_trace_free(two[0]);
  sc_trace_free(two[1]);
}
END_TEST

/* ---- hand-built traces: replayed times derived by hand ---- */

#define HEAD "{\"traceEvents\": ["
#define TAIL "]}"
#define CPU(cat, name, ts, dur) \
  "{\"ph\":\"X\",\"cat\":\"" cat "\",\"name\":\"" name "\",\"pid\":1,\"tid\":1,\"ts\":" #ts \
  ",\"dur\":" #dur "}"
#define RT(name, ts, dur, corr) \
  "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"" name "\",\"pid\":1,\"tid\":1,\"ts\":" #ts \
  ",\"dur\":" #dur ",\"args\":{\"correlation\":" #corr "}}"
#define KER(name, ts, dur, stream, corr) \
  "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"" name "\",\"pid\":0,\"tid\":" #stream \
  ",\"ts\":" #ts ",\"dur\":" #dur ",\"args\":{\"device\":0,\"stream\":" #stream \
  ",\"correlation\":" #corr "}}"

/* Devices whose only difference is a bf16 peak twice as high in `to`. */
static void two_devices(sc_device *from, sc_device *to) {
  memset(from, 0, sizeof *from);
  snprintf(from->name, sizeof from->name, "slow");
  from->peak_flops_per_s[SC_DTYPE_BF16] = 1e14;
  from->mem_bw_Bps = 1e12;
  from->flops_efficiency = from->mem_efficiency = 1.0;
  *to = *from;
  snprintf(to->name, sizeof to->name, "fast");
  to->peak_flops_per_s[SC_DTYPE_BF16] = 2e14;
}

START_TEST(whatif_sync_hardware) {
  /* Step [0,120]: launch [0,5] of a bf16 GEMM that runs [10,110] on stream 7, then
   * cudaStreamSynchronize [10,115] waiting for it (tail 115 - 110 = 5 us).
   * Hardware twice as fast in bf16: the GEMM lasts 50 us: start = launch 0 + 10 = 10,
   * end 60; the sync ends at 60 + 5 = 65; the step ends 5 us later: 70 us. */
  const char *j = HEAD CPU("user_annotation", "ProfilerStep#1", 0, 120) ","
      RT("cudaLaunchKernel", 0, 5, 1) ","
      KER("ampere_bf16_s16816gemm_bf16_128x128", 10, 100, 7, 1) ","
      RT("cudaStreamSynchronize", 10, 105, 2) TAIL;
  sc_trace *t = load_mem(j);
  sc_trace_result *r = replay(&t, 1, NULL);
  const sc_trace_iter *it = iter(r, "ProfilerStep#1", 0);
  ck_assert_msg(fabs(it->replayed_s - 120e-6) < 1e-12, "%.9g", it->replayed_s);
  /* GPU busy [10,110] inside [0,120]: compute 100 us, idle 20 us */
  ck_assert_msg(fabs(it->compute_s - 100e-6) < 1e-12, "%.9g", it->compute_s);
  ck_assert_msg(fabs(it->idle_s - 20e-6) < 1e-12, "%.9g", it->idle_s);
  sc_trace_result_free(r);
  sc_device a, b;
  two_devices(&a, &b);
  sc_trace_edits ed;
  memset(&ed, 0, sizeof ed);
  ed.hw_from = &a;
  ed.hw_to = &b;
  ed.default_dtype = SC_DTYPE_BF16;
  r = replay(&t, 1, &ed);
  it = iter(r, "ProfilerStep#1", 0);
  ck_assert_msg(fabs(it->replayed_s - 70e-6) < 1e-12, "%.9g", it->replayed_s);
  ck_assert_msg(fabs(it->compute_s - 50e-6) < 1e-12, "%.9g", it->compute_s);
  sc_trace_result_free(r);
  /* the same device both sides: unchanged */
  ed.hw_to = &a;
  r = replay(&t, 1, &ed);
  ck_assert_msg(fabs(iter(r, "ProfilerStep#1", 0)->replayed_s - 120e-6) < 1e-12, "same hw");
  sc_trace_result_free(r);
  sc_trace_free(t);
}
END_TEST

START_TEST(whatif_inferred_wait) {
  /* No cuda_sync records. Stream 7: bf16 GEMM [10,210] launched at 0; stream 11: a
   * kernel [12,14] launched at 2 (launch-to-start 10 us for both: the rank's median of
   * {10, 10, 206}). Stream 9: kernel B [212,232] launched at 6: 206 us after
   * its launch, unexplained; GEMM ended 2 us before it on another stream (<= 10 us): an
   * inferred edge GEMM -> B with lag 2 us. cudaDeviceSynchronize [15,240] waits for both
   * (tail 8 us); the step [0,300] ends 60 us after it. GEMM twice as fast: [10,110];
   * B starts 112, ends 132; the sync ends 140; the step 200 us. */
  const char *j = HEAD CPU("user_annotation", "ProfilerStep#1", 0, 300) ","
      RT("cudaLaunchKernel", 0, 5, 1) "," RT("cudaLaunchKernel", 6, 4, 2) ","
      RT("cudaLaunchKernel", 2, 1, 4) "," RT("cudaDeviceSynchronize", 15, 225, 3) ","
      KER("ampere_bf16_s16816gemm_bf16_128x128", 10, 200, 7, 1) ","
      KER("void at::native::vectorized_elementwise_kernel<4>", 12, 2, 11, 4) ","
      KER("void at::native::vectorized_elementwise_kernel<4>", 212, 20, 9, 2) TAIL;
  sc_trace *t = load_mem(j);
  sc_trace_result *r = replay(&t, 1, NULL);
  sc_trace_graph_info g;
  sc_trace_result_graph(r, &g);
  ck_assert_uint_eq(g.inferred_edges, 1);
  ck_assert_msg(fabs(iter(r, "ProfilerStep#1", 0)->replayed_s - 300e-6) < 1e-12, "measured");
  sc_trace_result_free(r);
  sc_device a, b;
  two_devices(&a, &b);
  sc_trace_edits ed;
  memset(&ed, 0, sizeof ed);
  ed.hw_from = &a;
  ed.hw_to = &b;
  r = replay(&t, 1, &ed);
  double got = iter(r, "ProfilerStep#1", 0)->replayed_s;
  ck_assert_msg(fabs(got - 200e-6) < 1e-12, "%.9g", got);
  sc_trace_result_free(r);
  sc_trace_free(t);
}
END_TEST

START_TEST(whatif_collective_last_arrival) {
  /* Rank 0: launch [90,95], NCCL all-reduce [100,300]. Rank 1: launch [0,5] of a bf16
   * GEMM [10,200], launch [20,25], the all-reduce [200,300] after it on stream 7.
   * One collective; ranks' clocks agree (ends equal: offset 0). Last arrival 200, so the
   * all-reduce itself lasts 100 us. GEMM twice as fast: it ends at 10 + 95 = 105; rank 1
   * arrives at 105 (stream order, lag 0), rank 0 at 100: both end at 105 + 100 = 205.
   * Rank 0's span (no ProfilerStep: first to last event) 90..300 = 210 us becomes
   * 90..205 = 115 us; rank 1's 0..300 becomes 0..205. */
  const char *r0 = HEAD RT("cudaLaunchKernel", 90, 5, 11) ","
      KER("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*)", 100, 200, 9, 11) TAIL;
  const char *r1 = HEAD RT("cudaLaunchKernel", 0, 5, 1) ","
      KER("ampere_bf16_s16816gemm_bf16_128x128", 10, 190, 7, 1) ","
      RT("cudaLaunchKernel", 20, 5, 2) ","
      KER("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*)", 200, 100, 7, 2) TAIL;
  sc_trace *t[2] = {load_mem(r0), load_mem(r1)};
  sc_trace_result *r = replay(t, 2, NULL);
  sc_trace_graph_info g;
  sc_trace_result_graph(r, &g);
  ck_assert_uint_eq(g.collectives, 1);
  /* no process group or sequence number: by order, and the ends agree (offset 0) */
  ck_assert_uint_eq(g.coll_by_order, 1);
  ck_assert_uint_eq(g.coll_by_key, 0);
  ck_assert_uint_eq(g.order_refused, 0);
  ck_assert_msg(fabs(iter(r, "trace", 0)->replayed_s - 210e-6) < 1e-12, "rank 0 measured");
  sc_trace_result_free(r);
  sc_device a, b;
  two_devices(&a, &b);
  sc_trace_edits ed;
  memset(&ed, 0, sizeof ed);
  ed.hw_from = &a;
  ed.hw_to = &b;
  r = replay(t, 2, &ed);
  ck_assert_msg(fabs(iter(r, "trace", 0)->replayed_s - 115e-6) < 1e-12, "%.9g",
                iter(r, "trace", 0)->replayed_s);
  ck_assert_msg(fabs(iter(r, "trace", 1)->replayed_s - 205e-6) < 1e-12, "%.9g",
                iter(r, "trace", 1)->replayed_s);
  sc_trace_result_free(r);
  sc_trace_free(t[0]);
  sc_trace_free(t[1]);
}
END_TEST

START_TEST(whatif_collective_mismatch) {
  const char *r0 = HEAD KER("ncclKernel_AllReduce_RING_LL_Sum_float(x)", 100, 200, 9, 11) TAIL;
  const char *r1 = HEAD KER("ncclKernel_AllGather_RING_LL_Sum_float(x)", 100, 200, 9, 11) TAIL;
  sc_trace *t[2] = {load_mem(r0), load_mem(r1)};
  sc_trace_result *r = NULL;
  sc_error err = {0};
  ck_assert_int_eq(sc_trace_replay(t, 2, NULL, &r, &err), SC_ECONFIG);
  ck_assert_ptr_null(r);
  ck_assert_msg(strstr(err.msg, "not of one job") != NULL, "%s", err.msg);
  sc_trace_free(t[0]);
  sc_trace_free(t[1]);
}
END_TEST

START_TEST(whatif_overlap) {
  /* Step [0,300]. Stream 7: GEMM [10,110] then a GEMM [110,210]; stream 9: all-reduce
   * [20,120] overlapping them; cudaDeviceSynchronize [5,215] waits for both streams
   * (tail 215 - 210 = 5). Serialised on stream 7 in measured start order: GEMM 10..110,
   * all-reduce 110..210 (its stream predecessor is binding, lag 0), GEMM 210..310; the
   * sync ends at 315 and the step (85 us after it) at 400 us. */
  const char *j = HEAD CPU("user_annotation", "ProfilerStep#1", 0, 300) ","
      RT("cudaLaunchKernel", 0, 2, 1) "," RT("cudaLaunchKernel", 2, 1, 2) ","
      RT("cudaLaunchKernel", 3, 1, 3) "," RT("cudaDeviceSynchronize", 5, 210, 4) ","
      KER("sm80_xmma_gemm_bf16bf16", 10, 100, 7, 1) ","
      KER("ncclKernel_AllReduce_RING_LL_Sum_float(x)", 20, 100, 9, 2) ","
      KER("sm80_xmma_gemm_bf16bf16", 110, 100, 7, 3) TAIL;
  sc_trace *t = load_mem(j);
  sc_trace_result *r = replay(&t, 1, NULL);
  const sc_trace_iter *it = iter(r, "ProfilerStep#1", 0);
  ck_assert_msg(fabs(it->replayed_s - 300e-6) < 1e-12, "%.9g", it->replayed_s);
  ck_assert_msg(fabs(it->comm_exposed_s) < 1e-12, "all-reduce hidden: %.9g",
                it->comm_exposed_s);
  sc_trace_result_free(r);
  sc_trace_edits ed;
  memset(&ed, 0, sizeof ed);
  ed.serialize_comm = 1;
  r = replay(&t, 1, &ed);
  it = iter(r, "ProfilerStep#1", 0);
  ck_assert_msg(fabs(it->replayed_s - 400e-6) < 1e-12, "%.9g", it->replayed_s);
  ck_assert_msg(fabs(it->comm_exposed_s - 100e-6) < 1e-12, "%.9g", it->comm_exposed_s);
  sc_trace_result_free(r);
  sc_trace_free(t);
}
END_TEST

START_TEST(whatif_dp) {
  /* An all-reduce of 64 MiB (In msg nelems 16777216 floats) measured 1000 us on 8 GPUs;
   * dp 8 -> 16 on dgx-a100-superpod: 1000 us * predicted(16) / predicted(8), the
   * predictions taken from sc_comm_estimate here. */
  const char *j = HEAD CPU("user_annotation", "ProfilerStep#1", 0, 2000) ","
      "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"ncclKernel_AllReduce_RING_LL_Sum_float\","
      "\"pid\":0,\"tid\":9,\"ts\":100,\"dur\":1000,\"args\":{\"stream\":9,\"device\":0,"
      "\"In msg nelems\":16777216,\"Out msg nelems\":16777216,\"dtype\":\"Float\","
      "\"Group size\":8,\"correlation\":1}},"
      RT("cudaLaunchKernel", 50, 5, 1) "," RT("cudaDeviceSynchronize", 60, 1045, 2) TAIL;
  sc_trace *t = load_mem(j);
  sc_registry *reg = NULL;
  sc_error err = {0};
  ck_assert_int_eq(sc_registry_new(&reg, &err), SC_OK);
  ck_assert_msg(sc_registry_add_builtins(reg, &err) == SC_OK, "%s", err.msg);
  sc_topology topo;
  ck_assert_msg(sc_topology_load(SC_SOURCE_DIR "/topologies/dgx-a100-superpod.toml", &topo,
                                 &err) == SC_OK, "%s", err.msg);
  double p[2];
  uint32_t n[2] = {8, 16};
  for (int i = 0; i < 2; i++) {
    sc_coll_desc c;
    sc_estimate e;
    memset(&c, 0, sizeof c);
    ck_assert_int_eq(sc_comm_group_flat(&topo, n[i], &c, &err), SC_OK);
    c.kind = SC_COLL_ALLREDUCE;
    c.bytes = 16777216.0 * 4;
    c.dtype = SC_DTYPE_BF16;
    ck_assert_msg(sc_comm_estimate(reg, &topo, &c, "auto", &e, NULL, &err) == SC_OK, "%s",
                  err.msg);
    p[i] = e.time_s;
  }
  sc_trace_edits ed;
  memset(&ed, 0, sizeof ed);
  ed.dp_from = 8;
  ed.dp_to = 16;
  ed.topology = &topo;
  ed.reg = reg;
  sc_trace_result *r = replay(&t, 1, &ed);
  /* the sync (tail 5 us after the all-reduce's end at 1100) ends at 100 + 1000 * ratio
   * + 5; the step ends 895 us after the sync: 2000 + 1000 * (ratio - 1) us. */
  double want = 2000e-6 + 1000e-6 * (p[1] / p[0] - 1);
  double got = iter(r, "ProfilerStep#1", 0)->replayed_s;
  ck_assert_msg(fabs(got - want) < 1e-9 * want + 1e-12, "got %.9g want %.9g", got, want);
  ck_assert_msg(p[1] > p[0], "a larger group costs more: %.9g %.9g", p[0], p[1]);
  sc_trace_result_free(r);
  /* --estimator hybrid: both predictions through the topology's collective residuals; a
   * linear model 0.1 * log2_ranks multiplies the 8-rank time by e^0.3 and the 16-rank one
   * by e^0.4, so the ratio grows by e^0.1 */
  {
    sc_resid_model m;
    sc_residuals res;
    memset(&m, 0, sizeof m);
    memset(&res, 0, sizeof res);
    snprintf(m.family, sizeof m.family, "allreduce");
    m.kind = SC_RESID_LINEAR;
    m.target = SC_TARGET_HYBRID;
    m.active = 1;
    m.nfeatures = sc_coll_resid_nfeatures();
    for (uint32_t k = 0; k < m.nfeatures; k++) m.scale[k] = 1.0;
    m.coef[1] = 0.1; /* log2_ranks */
    m.ngroups = 2; /* fitted on both group shapes (8 ranks in one node, 16 over two) */
    m.group_ranks[0] = 8;
    m.group_nodes[0] = 1;
    m.group_ranks[1] = 16;
    m.group_nodes[1] = 2;
    snprintf(res.device, sizeof res.device, "dgx-a100-superpod");
    res.n = 1;
    res.models = &m;
    ed.estimator = SC_ESTIMATOR_HYBRID;
    ed.coll_residuals = &res;
    r = replay(&t, 1, &ed);
    want = 2000e-6 + 1000e-6 * (p[1] / p[0] * exp(0.1) - 1);
    got = iter(r, "ProfilerStep#1", 0)->replayed_s;
    ck_assert_msg(fabs(got - want) < 1e-9 * want + 1e-12, "hybrid: got %.9g want %.9g", got,
                  want);
    sc_trace_result_free(r);
    ed.coll_residuals = NULL;
    ed.estimator = SC_ESTIMATOR_ANALYTICAL;
  }
  /* missing topology: a clear error */
  ed.topology = NULL;
  r = NULL;
  ck_assert_int_eq(sc_trace_replay(&t, 1, &ed, &r, &err), SC_ECONFIG);
  ck_assert_msg(strstr(err.msg, "topology") != NULL, "%s", err.msg);
  sc_registry_free(reg);
  sc_trace_free(t);
}
END_TEST

START_TEST(classify_table) {
  ck_assert_int_eq(sc_trace_classify(SC_TRACE_KERNEL, "ampere_sgemm_128x64_nn"), SC_KFAM_GEMM);
  ck_assert_int_eq(sc_trace_classify(SC_TRACE_KERNEL, "flash_fwd_kernel<...>"),
                   SC_KFAM_ATTENTION);
  ck_assert_int_eq(sc_trace_classify(SC_TRACE_KERNEL, "void at::native::(anonymous "
                                                      "namespace)::vectorized_layer_norm_kernel"),
                   SC_KFAM_NORM);
  ck_assert_int_eq(sc_trace_classify(SC_TRACE_KERNEL, "multi_tensor_apply_kernel<Adam>"),
                   SC_KFAM_OPTIMIZER);
  ck_assert_int_eq(sc_trace_classify(SC_TRACE_KERNEL, "ncclKernel_AllReduce_RING_LL_Sum_float"),
                   SC_KFAM_COMM);
  ck_assert_int_eq(sc_trace_classify(SC_TRACE_KERNEL, "void at::native::vectorized_elementwise"
                                                      "_kernel<4, FillFunctor>"),
                   SC_KFAM_ELEMENTWISE);
  ck_assert_int_eq(sc_trace_classify(SC_TRACE_MEMCPY, "Memcpy DtoH"), SC_KFAM_MEMCPY);
  /* NCCL >= 2.19 and RCCL name some kernels without their collective; MSCCL's own */
  ck_assert_int_eq(sc_trace_classify(SC_TRACE_KERNEL, "ncclDevKernel_Generic_4("
                                                      "ncclDevKernelArgsStorage<4096ul>)"),
                   SC_KFAM_COMM);
  ck_assert_int_eq(sc_trace_classify(SC_TRACE_KERNEL, "mscclKernel_Sum_bf16_LL128"),
                   SC_KFAM_COMM);
  ck_assert_str_eq(sc_trace_family_name(SC_KFAM_ATTENTION), "attention");
}
END_TEST

/* ---- malformed input: one-line errors ---- */

static void fails_mem(const char *json, int code, const char *needle) {
  sc_trace *t = (sc_trace *)1;
  sc_error err = {0};
  int rc = sc_trace_load_mem("bad.json", json, strlen(json), &t, &err);
  ck_assert_msg(rc == code, "rc %d (%s) for %s", rc, err.msg, json);
  ck_assert_ptr_null(t);
  ck_assert_msg(strstr(err.msg, needle) != NULL, "'%s' lacks '%s'", err.msg, needle);
  ck_assert_msg(strchr(err.msg, '\n') == NULL, "not one line: %s", err.msg);
  ck_assert_msg(strncmp(err.msg, "bad.json: byte ", 15) == 0, "no offset: %s", err.msg);
}

START_TEST(malformed_inputs) {
  fails_mem("{\"traceEvents\": [{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"ts\":\"abc\","
            "\"dur\":1}]}", SC_EPARSE, "key 'ts': expected a number");
  fails_mem("{\"traceEvents\": [{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":7,\"ts\":1,"
            "\"dur\":1}]}", SC_EPARSE, "key 'name': expected a string");
  fails_mem("{\"traceEvents\": [{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"ts\":1,"
            "\"dur\":1,\"args\":[1]}]}", SC_EPARSE, "key 'args': expected an object");
  fails_mem("{\"traceEvents\": [{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"ts\":1,"
            "\"dur\":1,\"args\":{\"correlation\":\"x\"}}]}", SC_EPARSE,
            "key 'correlation': expected an integer");
  fails_mem("{\"traceEvents\": [{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"ts\":1}]}",
            SC_EPARSE, "missing key 'dur'");
  /* the collective metadata: a sequence number that is not one, a named collective's name */
  fails_mem("{\"traceEvents\": [{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"record_param_comms\","
            "\"ts\":1,\"dur\":1,\"args\":{\"Seq\":\"x\"}}]}", SC_EPARSE,
            "event 0: key 'Seq': expected an integer");
  fails_mem("{\"traceEvents\": [{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"ts\":1,"
            "\"dur\":1,\"args\":{\"Collective name\":3}}]}", SC_EPARSE,
            "key 'Collective name': expected a string");
  fails_mem("{\"traceEvents\": [{\"ph\":\"X\",\"cat\":\"Kernel\",\"name\":\"k\",\"ts\":1,"
            "\"dur\":1,\"args\":{\"Dst Rank\":[1]}}]}", SC_EPARSE,
            "key 'Dst Rank': expected an integer");
  fails_mem("{\"traceEvents\": [{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"ts\":1,"
            "\"dur\":-3}]}", SC_EPARSE, "negative duration");
  fails_mem("{\"traceEvents\": {}}", SC_EPARSE, "key 'traceEvents': expected an array");
  fails_mem("{\"traceEvents\": [3]}", SC_EPARSE, "traceEvents[0]: expected an object");
  fails_mem("{\"schemaVersion\": 1}", SC_EPARSE, "no 'traceEvents' array");
  fails_mem("[1, 2]", SC_EPARSE, "not a JSON object");
  fails_mem("", SC_EPARSE, "empty input");
  fails_mem("{\"traceEvents\": [{\"ph\":\"X\",}]}", SC_EPARSE, "malformed JSON");
  /* truncated in the middle: the offset is the end of the data, 22 bytes */
  fails_mem("{\"traceEvents\": [{\"ph\"", SC_EPARSE, "byte 22: truncated JSON");
}
END_TEST

START_TEST(malformed_files) {
  sc_trace *t = NULL;
  sc_error err = {0};
  ck_assert_int_eq(sc_trace_load(data("truncated.json.gz"), &t, &err), SC_EIO);
  ck_assert_ptr_null(t);
  ck_assert_msg(strstr(err.msg, "gzip stream truncated") != NULL, "%s", err.msg);
  ck_assert_msg(strstr(err.msg, ": byte ") != NULL, "%s", err.msg);
  ck_assert_msg(strchr(err.msg, '\n') == NULL, "%s", err.msg);
  /* truncated.json is the first 5000 bytes of event_sync.json */
  ck_assert_int_eq(sc_trace_load(data("truncated.json"), &t, &err), SC_EPARSE);
  ck_assert_msg(strstr(err.msg, "byte 5000: truncated JSON") != NULL, "%s", err.msg);
  ck_assert_int_eq(sc_trace_load(data("no-such-file.json"), &t, &err), SC_EIO);
  ck_assert_msg(strstr(err.msg, "cannot open") != NULL, "%s", err.msg);
  ck_assert_int_eq(sc_trace_replay(NULL, 0, NULL, NULL, &err), SC_EINVAL);
}
END_TEST

/* ---- the layers edit (docs/trace.md, "Changing the number of layers") ---- */

/* Replay t edited to `to` layers; the span `name` of rank 0 in *out. */
static void layers_replay(sc_trace *t, uint32_t to, const char *name, sc_trace_iter *out,
                          sc_trace_layers_info *li) {
  sc_trace *e = NULL;
  sc_error err = {0};
  int rc = sc_trace_edit_layers(t, to, &e, li, &err);
  ck_assert_msg(rc == SC_OK, "%s", err.msg);
  sc_trace_result *r = replay(&e, 1, NULL);
  *out = *iter(r, name, 0);
  sc_trace_result_free(r);
  sc_trace_free(e);
}

START_TEST(layers_synthetic) {
  /* layers4.json (gen_layers.py): 4 forward and 4 backward units, GPU-bound; every layer
   * adds 418 us on the GPU's critical path: N layers take measured + (N - 4) * 418 us. */
  sc_trace *t = load("layers4.json");
  sc_trace_result *r = replay(&t, 1, NULL);
  double base = iter(r, "ProfilerStep#1", 0)->replayed_s;
  sc_trace_result_free(r);
  ck_assert_msg(fabs(base - 1791e-6) < 1e-9, "%.9f", base);
  const uint32_t to[] = {1, 2, 3, 4, 5, 6, 12};
  for (size_t i = 0; i < sizeof to / sizeof to[0]; i++) {
    sc_trace_iter it;
    sc_trace_layers_info li;
    layers_replay(t, to[i], "ProfilerStep#1", &it, &li);
    ck_assert_uint_eq(li.layers, 4);
    ck_assert_uint_eq(li.unit_ops, 2);
    ck_assert_uint_eq(li.blocks, 2);
    ck_assert_uint_eq(li.iterations, 1);
    ck_assert_int_eq(li.by_module, 0);
    double want = base + ((double)to[i] - 4.0) * 418e-6;
    ck_assert_msg(fabs(it.replayed_s - want) < 1e-9, "%u layers: %.9f s, want %.9f s",
                  to[i], it.replayed_s, want);
    /* all of the GPU's busy time is compute: the units' kernels come and go */
    ck_assert_msg(it.compute_s > 0 && it.comm_exposed_s == 0, "%u", to[i]);
  }
  sc_trace_free(t);
}
END_TEST

START_TEST(layers_module_bucketed) {
  /* Step [0,415]: three "nn.Module: Block_i" annotations [10+30i, 30+30i], each an
   * aten::mm launching a 100 us bf16 GEMM on stream 7 ([20,120], [122,222], [224,324]);
   * then a launch at 92 of an all-reduce on stream 20 [300,400] (outside the units, after
   * them: a bucketed gradient collective) and cudaDeviceSynchronize [100,410] (tail 10).
   * N blocks: unit window 30 us CPU, 102 us GPU; the all-reduce starts (N - 3) * 102 us
   * later and lasts 100 N / 3 us: the step ends at 415 + (N - 3) * 102 + 100 (N/3 - 1) us
   * (durations rounded to the ns). */
  const char *json = HEAD
      CPU("user_annotation", "ProfilerStep#1", 0, 415) ","
      CPU("user_annotation", "nn.Module: Block_0", 10, 20) ","
      CPU("cpu_op", "aten::mm", 12, 15) "," RT("cudaLaunchKernel", 14, 5, 1) ","
      KER("ampere_bf16_gemm", 20, 100, 7, 1) ","
      CPU("user_annotation", "nn.Module: Block_1", 40, 20) ","
      CPU("cpu_op", "aten::mm", 42, 15) "," RT("cudaLaunchKernel", 44, 5, 2) ","
      KER("ampere_bf16_gemm", 122, 100, 7, 2) ","
      CPU("user_annotation", "nn.Module: Block_2", 70, 20) ","
      CPU("cpu_op", "aten::mm", 72, 15) "," RT("cudaLaunchKernel", 74, 5, 3) ","
      KER("ampere_bf16_gemm", 224, 100, 7, 3) ","
      RT("cudaLaunchKernel", 92, 5, 9) ","
      KER("ncclKernel_AllReduce_RING_LL_Sum_float", 300, 100, 20, 9) ","
      RT("cudaDeviceSynchronize", 100, 310, 10) TAIL;
  sc_trace *t = load_mem(json);
  sc_trace_result *r = replay(&t, 1, NULL);
  ck_assert_msg(fabs(iter(r, "ProfilerStep#1", 0)->replayed_s - 415e-6) < 1e-12, "base");
  sc_trace_result_free(r);
  const struct { uint32_t n; double us; } cases[] = {
      {1, 415 - 204 - 66.667}, {2, 415 - 102 - 33.333}, {3, 415}, {5, 415 + 204 + 66.667},
      {6, 415 + 306 + 100}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    sc_trace_iter it;
    sc_trace_layers_info li;
    layers_replay(t, cases[i].n, "ProfilerStep#1", &it, &li);
    ck_assert_uint_eq(li.layers, 3);
    ck_assert_uint_eq(li.unit_ops, 1);
    ck_assert_uint_eq(li.blocks, 1);
    ck_assert_int_eq(li.by_module, 1);
    ck_assert_uint_eq(li.scaled_comm, cases[i].n == 3 ? 0 : 1);
    ck_assert_msg(fabs(it.replayed_s - cases[i].us * 1e-6) < 1.5e-9, "%u: %.9f s, want %.9f",
                  cases[i].n, it.replayed_s, cases[i].us * 1e-6);
  }
  sc_trace_free(t);
}
END_TEST

START_TEST(layers_real_trace) {
  /* simple_add (HTA): a unit of 2 operators repeated 3 times, twice per iteration. Same
   * count: the replay exactly; the predicted time grows with N. Likewise the larger
   * ns_resolution trace (a unit of 19 operators, 5 times) when ../shared/data is here. */
  const char *files[] = {NULL, SC_SOURCE_DIR "/../shared/data/traces/hta/ns_resolution_trace/"
                                             "rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"};
  const uint32_t L[] = {3, 5};
  for (size_t f = 0; f < 2; f++) {
    sc_trace *t = NULL;
    sc_error err = {0};
    if (f == 0) t = load("simple_add.json.gz");
    else if (sc_trace_load(files[f], &t, &err) != SC_OK) continue; /* not here: skipped */
    sc_trace_result *r = replay(&t, 1, NULL);
    size_t ni;
    const sc_trace_iter *it = sc_trace_result_iters(r, &ni);
    ck_assert_uint_gt(ni, 0);
    double prev = 0;
    for (uint32_t n = 1; n <= L[f] + 3; n++) {
      sc_trace *e = NULL;
      sc_trace_layers_info li;
      ck_assert_msg(sc_trace_edit_layers(t, n, &e, &li, &err) == SC_OK, "%s", err.msg);
      ck_assert_uint_eq(li.layers, L[f]);
      sc_trace_result *w = replay(&e, 1, NULL);
      size_t nw;
      const sc_trace_iter *wi = sc_trace_result_iters(w, &nw);
      ck_assert_uint_eq(nw, ni);
      double sum = 0;
      for (size_t i = 0; i < ni; i++) {
        ck_assert_str_eq(wi[i].name, it[i].name);
        if (n == L[f])
          ck_assert_msg(wi[i].replayed_s == it[i].replayed_s, "%s: %.9f vs %.9f", it[i].name,
                        wi[i].replayed_s, it[i].replayed_s);
        sum += wi[i].replayed_s;
      }
      ck_assert_msg(n == 1 || sum > prev, "file %zu: %u layers: %.9f s <= %.9f s", f, n, sum,
                    prev);
      prev = sum;
      sc_trace_result_free(w);
      sc_trace_free(e);
    }
    sc_trace_result_free(r);
    sc_trace_free(t);
  }
}
END_TEST

START_TEST(layers_refused) {
  sc_trace *t = load("event_sync.json.gz"), *e = NULL;
  sc_error err = {0};
  /* event_sync: no operator sequence launching GPU work repeats */
  ck_assert_int_eq(sc_trace_edit_layers(t, 2, &e, NULL, &err), SC_ECONFIG);
  ck_assert_ptr_null(e);
  ck_assert_msg(strstr(err.msg, "event_sync.json.gz: ProfilerStep#100: no repeating "
                       "per-layer unit") != NULL, "%s", err.msg);
  ck_assert_msg(strchr(err.msg, '\n') == NULL, "%s", err.msg);
  ck_assert_int_eq(sc_trace_edit_layers(t, 0, &e, NULL, &err), SC_EINVAL);
  ck_assert_int_eq(sc_trace_edit_layers(NULL, 2, &e, NULL, &err), SC_EINVAL);
  ck_assert_int_eq(sc_trace_edit_layers(t, 2, NULL, NULL, &err), SC_EINVAL);
  sc_trace_free(t);
  /* two identical operators in a row that launch nothing are no layers */
  t = load_mem(HEAD CPU("cpu_op", "aten::view", 0, 5) "," CPU("cpu_op", "aten::view", 10, 5)
               "," CPU("cpu_op", "aten::mm", 20, 5) "," RT("cudaLaunchKernel", 21, 2, 1) ","
               KER("gemm", 25, 10, 7, 1) TAIL);
  ck_assert_int_eq(sc_trace_edit_layers(t, 2, &e, NULL, &err), SC_ECONFIG);
  ck_assert_msg(strstr(err.msg, "mem.json: the trace: no repeating") != NULL, "%s", err.msg);
  sc_trace_free(t);
  /* iterations that disagree on the count */
  t = load_mem(HEAD CPU("user_annotation", "ProfilerStep#1", 0, 100) ","
               CPU("cpu_op", "aten::mm", 10, 5) "," RT("cudaLaunchKernel", 11, 2, 1) ","
               KER("gemm", 15, 10, 7, 1) ","
               CPU("cpu_op", "aten::mm", 20, 5) "," RT("cudaLaunchKernel", 21, 2, 2) ","
               KER("gemm", 27, 10, 7, 2) ","
               CPU("user_annotation", "ProfilerStep#2", 100, 100) ","
               CPU("cpu_op", "aten::mm", 110, 5) "," RT("cudaLaunchKernel", 111, 2, 3) ","
               KER("gemm", 115, 10, 7, 3) ","
               CPU("cpu_op", "aten::mm", 120, 5) "," RT("cudaLaunchKernel", 121, 2, 4) ","
               KER("gemm", 127, 10, 7, 4) ","
               CPU("cpu_op", "aten::mm", 130, 5) "," RT("cudaLaunchKernel", 131, 2, 5) ","
               KER("gemm", 139, 10, 7, 5) TAIL);
  ck_assert_int_eq(sc_trace_edit_layers(t, 4, &e, NULL, &err), SC_ECONFIG);
  ck_assert_msg(strstr(err.msg, "ProfilerStep#2 repeats its unit 3 times but the first "
                       "iteration 2 times") != NULL, "%s", err.msg);
  sc_trace_free(t);
}
END_TEST

/* ---- issue 33: every trace read or refused; the breakdowns users know ---- */

#define NEAR(a, b) (fabs((a) - (b)) < 1e-12)
#define CK_NEAR(got, want) ck_assert_msg(NEAR(got, want), "%s = %.12g, want %.12g", #got, \
                                         (double)(got), (double)(want))

START_TEST(legacy_categories) {
  /* legacy_1_8.json: Kineto as PyTorch 1.8 wrote it (output_json.cpp of the time, and the
   * TensorBoard plugin's tests): "Operator", "Runtime", "Kernel", "Memcpy", "Memset"
   * categories, every tid a string ("123", "stream 7"), ProfilerStep#1 an operator.
   * Step [50, 450]: memcpy [235, 245], sgemm [285, 335], memset [360, 365], the NLL
   * kernel [380, 395] on stream 7: compute 50 + 15 = 65 us, copies 10 + 5 = 15 us, idle
   * 400 - 80 = 320 us; Lumos: exposed compute 65, other 335; HTA: non-compute 15, no
   * communication (overlap undefined). */
  sc_trace *t = load("legacy_1_8.json");
  sc_trace_info in;
  sc_trace_get_info(t, &in);
  ck_assert_uint_eq(in.events, 19);
  ck_assert_uint_eq(in.kept, 12);
  ck_assert_uint_eq(in.legacy, 12);
  ck_assert_uint_eq(in.by_kind[SC_TRACE_CPU_OP], 3);
  ck_assert_uint_eq(in.by_kind[SC_TRACE_ANNOTATION], 1); /* the step */
  ck_assert_uint_eq(in.by_kind[SC_TRACE_RUNTIME], 4);
  ck_assert_uint_eq(in.by_kind[SC_TRACE_KERNEL], 2);
  ck_assert_uint_eq(in.by_kind[SC_TRACE_MEMCPY], 1);
  ck_assert_uint_eq(in.by_kind[SC_TRACE_MEMSET], 1);
  sc_trace_result *r = replay(&t, 1, NULL);
  const sc_trace_iter *it = iter(r, "ProfilerStep#1", 0);
  CK_NEAR(it->measured_s, 400e-6);
  CK_NEAR(it->replayed_s, 400e-6);
  CK_NEAR(it->compute_s, 65e-6);
  CK_NEAR(it->memory_s, 15e-6);
  CK_NEAR(it->idle_s, 320e-6);
  CK_NEAR(it->exposed_compute_s, 65e-6);
  CK_NEAR(it->overlapped_s, 0);
  CK_NEAR(it->exposed_comm_s, 0);
  CK_NEAR(it->other_s, 335e-6);
  ck_assert_msg(isnan(it->comm_overlap_pct), "%g", it->comm_overlap_pct);
  sc_trace_graph_info g;
  sc_trace_result_graph(r, &g);
  ck_assert_uint_eq(g.launch_edges, 4); /* correlation ids as in current traces */
  ck_assert_uint_eq(g.stream_edges, 3);
  /* threads "123" and "456" stay two threads: the timeline names both */
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  ck_assert_ptr_nonnull(f);
  sc_error err = {0};
  ck_assert_int_eq(sc_trace_timeline(f, r, &err), SC_OK);
  fclose(f);
  ck_assert_msg(strstr(buf, "\"tid\": 123,") != NULL && strstr(buf, "\"tid\": 456,") != NULL,
                "%s", buf);
  free(buf);
  sc_trace_result_free(r);
  sc_trace_free(t);
  /* a current trace's cpu_op ProfilerStep#N (as PyTorch 1.9 wrote it) is a step too */
  t = load_mem(HEAD CPU("cpu_op", "ProfilerStep#7", 0, 50) "," RT("cudaLaunchKernel", 1, 2, 1)
               "," KER("gemm", 10, 20, 7, 1) TAIL);
  r = replay(&t, 1, NULL);
  CK_NEAR(iter(r, "ProfilerStep#7", 0)->replayed_s, 50e-6);
  sc_trace_result_free(r);
  sc_trace_free(t);
}
END_TEST

/* sc_trace_replay of one file refuses with code and a one-line message holding needle. */
static void replay_refused(sc_trace *t, const char *needle) {
  sc_trace_result *r = (sc_trace_result *)1;
  sc_error err = {0};
  ck_assert_int_eq(sc_trace_replay(&t, 1, NULL, &r, &err), SC_EPARSE);
  ck_assert_ptr_null(r);
  ck_assert_msg(strstr(err.msg, needle) != NULL, "'%s' lacks '%s'", err.msg, needle);
  ck_assert_msg(strchr(err.msg, '\n') == NULL, "not one line: %s", err.msg);
}

START_TEST(nothing_to_replay) {
  /* no GPU activity: refused naming the file and the categories it did not read */
  sc_trace *t = load("no_gpu.json");
  replay_refused(t, "no_gpu.json: no GPU kernel, memcpy or memset events to replay (2 of 4 "
                    "events kept; complete events of categories not read: X/Python 1;");
  sc_trace_free(t);
  /* a trace of another profiler: nothing kept */
  t = load_mem(HEAD "{\"ph\":\"X\",\"cat\":\"gpu_op\",\"name\":\"k\",\"ts\":1,\"dur\":2}" TAIL);
  replay_refused(t, "mem.json: no GPU kernel, memcpy or memset events to replay (0 of 1 "
                    "events kept; complete events of categories not read: X/gpu_op 1;");
  sc_trace_free(t);
  /* kernels, but none inside the step: not a 100 % idle step */
  t = load("outside_steps.json");
  replay_refused(t, "outside_steps.json: nothing to replay: no GPU work inside its 1 "
                    "ProfilerStep span");
  sc_trace_free(t);
  /* no step, and the events span no time */
  t = load_mem(HEAD KER("gemm", 10, 0, 7, 1) TAIL);
  replay_refused(t, "mem.json: nothing to replay: no ProfilerStep#N span and its events span "
                    "no time");
  sc_trace_free(t);
}
END_TEST

/* The collective prediction ratio of the dp edit, 8 -> 16 ranks of dgx-a100-superpod. */
static double dp_ratio(sc_registry *reg, const sc_topology *topo, sc_coll_kind kind,
                       double bytes) {
  double p[2];
  uint32_t n[2] = {8, 16};
  sc_error err = {0};
  for (int i = 0; i < 2; i++) {
    sc_coll_desc c;
    sc_estimate e;
    memset(&c, 0, sizeof c);
    ck_assert_int_eq(sc_comm_group_flat(topo, n[i], &c, &err), SC_OK);
    c.kind = kind;
    c.bytes = bytes;
    c.dtype = SC_DTYPE_BF16;
    ck_assert_msg(sc_comm_estimate(reg, topo, &c, "auto", &e, NULL, &err) == SC_OK, "%s",
                  err.msg);
    p[i] = e.time_s;
  }
  return p[1] / p[0];
}

START_TEST(rccl_generic_kinds) {
  /* rccl_generic.json: four ncclDevKernel_Generic_4 kernels back to back on stream 0
   * [100, 800], waited for by hipDeviceSynchronize (tail 10 us), the step ending 1190 us
   * after it. Their kinds: (a) all-gather from the enclosing record_param_comms' "Collective
   * name", 300 us, 16 MiB; (b) reduce-scatter from the kernel's own, 200 us, 16 MiB; (c)
   * broadcast from the enclosing nccl:broadcast annotation, 100 us, 1 MiB; (d) nothing
   * states one: guessed all-reduce, 100 us, 2 MiB. dp 8 -> 16: the step lasts 2000 us +
   * sum of dur * (ratio of its kind - 1). */
  sc_trace *t = load("rccl_generic.json");
  sc_registry *reg = NULL;
  sc_error err = {0};
  ck_assert_int_eq(sc_registry_new(&reg, &err), SC_OK);
  ck_assert_msg(sc_registry_add_builtins(reg, &err) == SC_OK, "%s", err.msg);
  sc_topology topo;
  ck_assert_msg(sc_topology_load(SC_SOURCE_DIR "/topologies/dgx-a100-superpod.toml", &topo,
                                 &err) == SC_OK, "%s", err.msg);
  const double mib = 1048576.0;
  double want = 2000e-6 + 300e-6 * (dp_ratio(reg, &topo, SC_COLL_ALLGATHER, 16 * mib) - 1) +
                200e-6 * (dp_ratio(reg, &topo, SC_COLL_REDUCESCATTER, 16 * mib) - 1) +
                100e-6 * (dp_ratio(reg, &topo, SC_COLL_BROADCAST, 1 * mib) - 1) +
                100e-6 * (dp_ratio(reg, &topo, SC_COLL_ALLREDUCE, 2 * mib) - 1);
  sc_trace_edits ed;
  memset(&ed, 0, sizeof ed);
  ed.dp_from = 8;
  ed.dp_to = 16;
  ed.topology = &topo;
  ed.reg = reg;
  sc_trace_result *r = replay(&t, 1, &ed);
  double got = iter(r, "ProfilerStep#1", 0)->replayed_s;
  ck_assert_msg(fabs(got - want) < 1e-9 * want, "got %.9g want %.9g", got, want);
  ck_assert_msg(got > 2000e-6 * 1.01, "the collectives were re-timed: %.9g", got);
  sc_trace_graph_info g;
  sc_trace_result_graph(r, &g);
  ck_assert_uint_eq(g.kind_guessed, 1);
  ck_assert_int_eq(g.kind_guessed_rank, 0);
  ck_assert_str_eq(g.kind_guessed_name, "ncclDevKernel_Generic_4");
  sc_trace_result_free(r);
  sc_registry_free(reg);
  sc_trace_free(t);
}
END_TEST

/* The span of rank `rank` of a two-rank replay. */
static sc_trace_iter two_rank_iter(sc_trace **t, const sc_trace_edits *ed, int rank,
                                   sc_trace_graph_info *g) {
  sc_trace_result *r = replay(t, 2, ed);
  sc_trace_iter it = *iter(r, "ProfilerStep#1", rank);
  if (g) sc_trace_result_graph(r, g);
  sc_trace_result_free(r);
  return it;
}

START_TEST(ranks_by_sequence) {
  /* seq_rank0/1.json (gen_ranks.py): group "0"'s all-reduce on stream 13 of rank 0 but 20
   * of rank 1, group "1"'s all-gather the other way round, a send / recv of group "0" on
   * stream 30; every kernel ncclDevKernel_Generic. By process group and sequence number
   * (and the pair of ranks for the send/recv): 3 collectives. Measured: rank 0 [100, 300]
   * all-reduce (waiting for rank 1's GEMM [10, 200]), [310, 450], [410, 500]: exposed
   * communication 200 + 190 = 390 us; rank 1: GEMM 190 us, communication 100 + 190.
   * Rank 1's GEMM twice as fast ends at 105: the all-reduce starts on both at 105 and ends
   * 100 us later, at 205: rank 0's communication 105 + 190 = 295 us (without the match,
   * its all-reduce would keep its measured 200 us: 390). */
  sc_trace *t[2] = {load("seq_rank0.json"), load("seq_rank1.json")};
  sc_trace_graph_info g;
  sc_trace_iter a = two_rank_iter(t, NULL, 0, &g), b = two_rank_iter(t, NULL, 1, NULL);
  ck_assert_uint_eq(g.coll_by_key, 3);
  ck_assert_uint_eq(g.coll_by_order, 0);
  ck_assert_uint_eq(g.collectives, 3);
  ck_assert_uint_eq(g.p2p_unpaired, 0);
  ck_assert_uint_eq(g.comm_alone, 0);
  ck_assert_uint_eq(g.kind_guessed, 0);
  CK_NEAR(a.replayed_s, 1000e-6);
  CK_NEAR(a.exposed_comm_s, 390e-6);
  CK_NEAR(a.other_s, 610e-6);
  CK_NEAR(b.replayed_s, 1000e-6);
  CK_NEAR(b.exposed_compute_s, 190e-6);
  CK_NEAR(b.exposed_comm_s, 290e-6);
  CK_NEAR(b.comm_overlap_pct, 0);
  sc_device from, to;
  two_devices(&from, &to);
  sc_trace_edits ed;
  memset(&ed, 0, sizeof ed);
  ed.hw_from = &from;
  ed.hw_to = &to;
  a = two_rank_iter(t, &ed, 0, NULL);
  b = two_rank_iter(t, &ed, 1, NULL);
  CK_NEAR(a.exposed_comm_s, 295e-6);
  CK_NEAR(a.other_s, 705e-6);
  CK_NEAR(b.exposed_compute_s, 95e-6);
  CK_NEAR(b.exposed_comm_s, 290e-6);
  CK_NEAR(b.other_s, 615e-6);
  sc_trace_free(t[0]);
  sc_trace_free(t[1]);
  /* the same groups with different collectives on the two ranks: not one job */
  const char *r0 = HEAD "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"ncclDevKernel_Generic\","
      "\"pid\":0,\"tid\":9,\"ts\":100,\"dur\":200,\"args\":{\"stream\":9,\"Process Group Name\":"
      "\"0\",\"Seq\":4,\"Collective name\":\"allreduce\"}}" TAIL;
  const char *r1 = HEAD "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"ncclDevKernel_Generic\","
      "\"pid\":0,\"tid\":9,\"ts\":100,\"dur\":200,\"args\":{\"stream\":9,\"Process Group Name\":"
      "\"0\",\"Seq\":4,\"Collective name\":\"allgather\"}}" TAIL;
  t[0] = load_mem(r0);
  t[1] = load_mem(r1);
  sc_trace_result *r = NULL;
  sc_error err = {0};
  ck_assert_int_eq(sc_trace_replay(t, 2, NULL, &r, &err), SC_ECONFIG);
  ck_assert_msg(strstr(err.msg, "process group '0' sequence 4: allreduce on mem.json but "
                       "allgather on mem.json; the traces are not of one job") != NULL, "%s",
                err.msg);
  sc_trace_free(t[0]);
  sc_trace_free(t[1]);
}
END_TEST

START_TEST(ranks_by_order) {
  /* order_rank0/1.json: the same job without process groups and sequence numbers. By the
   * order of the streams the all-reduce of one rank pairs with the all-gather of the other:
   * their ends (300 and 450 us) disagree by 150 us, more than 100 us: both pairs refused
   * (before: joined, 10 us of rank 0's exposed communication invented, 400 us); the
   * send/recv kernels name no peer: kept as measured. */
  sc_trace *t[2] = {load("order_rank0.json"), load("order_rank1.json")};
  sc_trace_graph_info g;
  sc_trace_iter a = two_rank_iter(t, NULL, 0, &g), b = two_rank_iter(t, NULL, 1, NULL);
  ck_assert_uint_eq(g.coll_by_key, 0);
  ck_assert_uint_eq(g.coll_by_order, 0);
  ck_assert_uint_eq(g.order_refused, 2);
  ck_assert_uint_eq(g.p2p_unpaired, 2);
  ck_assert_uint_eq(g.collectives, 0);
  ck_assert_uint_eq(g.kind_guessed, 0); /* nccl:all_reduce, nccl:all_gather annotations */
  CK_NEAR(a.exposed_comm_s, 390e-6);
  CK_NEAR(b.exposed_comm_s, 290e-6);
  sc_trace_free(t[0]);
  sc_trace_free(t[1]);
}
END_TEST

START_TEST(breakdown_lumos_hta) {
  /* Step [0, 200]: a GEMM [0, 100] on stream 7, an all-reduce [50, 150] on stream 9, a
   * memcpy [160, 170]. Lumos: exposed compute 50, overlapped 50, exposed communication 50,
   * other 50 (idle 40 + the copy 10). HTA: idle 40, compute 100, non-compute 60 (50 + 10),
   * communication overlapped 50 of its 100 us: 50 %. */
  const char *j = HEAD CPU("user_annotation", "ProfilerStep#1", 0, 200) ","
      KER("sm80_xmma_gemm_bf16bf16", 0, 100, 7, 1) ","
      KER("ncclKernel_AllReduce_RING_LL_Sum_float(x)", 50, 100, 9, 2) ","
      "{\"ph\":\"X\",\"cat\":\"gpu_memcpy\",\"name\":\"Memcpy DtoD\",\"pid\":0,\"tid\":7,"
      "\"ts\":160,\"dur\":10,\"args\":{\"device\":0,\"stream\":7}}" TAIL;
  sc_trace *t = load_mem(j);
  sc_trace_result *r = replay(&t, 1, NULL);
  const sc_trace_iter *it = iter(r, "ProfilerStep#1", 0);
  CK_NEAR(it->replayed_s, 200e-6);
  CK_NEAR(it->exposed_compute_s, 50e-6);
  CK_NEAR(it->overlapped_s, 50e-6);
  CK_NEAR(it->exposed_comm_s, 50e-6);
  CK_NEAR(it->other_s, 50e-6);
  CK_NEAR(it->idle_s, 40e-6);
  CK_NEAR(it->compute_s, 100e-6);
  CK_NEAR(it->comm_exposed_s + it->memory_s, 60e-6);
  ck_assert_msg(fabs(it->comm_overlap_pct - 50.0) < 1e-9, "%g", it->comm_overlap_pct);
  sc_trace_result_free(r);
  sc_trace_free(t);
}
END_TEST

static Suite *trace_suite(void) {
  Suite *s = suite_create("trace");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, parse_event_sync_counts);
  tcase_add_test(tc, parse_plain_equals_gzip);
  tcase_add_test(tc, graph_correlation_and_syncs);
  tcase_add_test(tc, graph_cross_stream_event);
  tcase_add_test(tc, replay_fixtures);
  tcase_add_test(tc, replay_real_traces);
  tcase_add_test(tc, whatif_sync_hardware);
  tcase_add_test(tc, whatif_inferred_wait);
  tcase_add_test(tc, whatif_collective_last_arrival);
  tcase_add_test(tc, whatif_collective_mismatch);
  tcase_add_test(tc, whatif_overlap);
  tcase_add_test(tc, whatif_dp);
  tcase_add_test(tc, classify_table);
  tcase_add_test(tc, malformed_inputs);
  tcase_add_test(tc, malformed_files);
  tcase_add_test(tc, layers_synthetic);
  tcase_add_test(tc, layers_module_bucketed);
  tcase_add_test(tc, layers_real_trace);
  tcase_add_test(tc, layers_refused);
  tcase_add_test(tc, legacy_categories);
  tcase_add_test(tc, nothing_to_replay);
  tcase_add_test(tc, rccl_generic_kinds);
  tcase_add_test(tc, ranks_by_sequence);
  tcase_add_test(tc, ranks_by_order);
  tcase_add_test(tc, breakdown_lumos_hta);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(trace_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

/*
 * embedding: lookup of token rows in a (vocab_rows x hidden) table, and its backward.
 * dims {tokens, hidden, vocab_rows}; variants SC_EMBED_FWD / SC_EMBED_BWD.
 * See docs/operators.md. With e = dtype bytes:
 *   forward:  bytes = tokens*hidden*2e (read the rows, write the output) + 8*tokens (int64
 *             ids); flops 0 (a vocabulary-parallel lookup's masking is not counted)
 *   backward: PyTorch's dense embedding backward zero-fills a vocab_rows x hidden gradient
 *             and scatter-adds the output gradient into it; Megatron then adds it into the
 *             fp32 main gradient. bytes = tokens*hidden*3e (read dy, read and write the
 *             gradient's rows) + 8*tokens (ids) + vocab_rows*hidden*(e [zero-fill] + e [read
 *             grad] + 8 [read and write fp32 main_grad]); flops = tokens*hidden +
 *             vocab_rows*hidden (the two additions)
 * Working set (for the cache hit rate): the forward's is the rows it touches, the expected
 * distinct ones of tokens drawn from vocab_rows (sc_expected_distinct; the same ids come back
 * to rows already read), and its output: e*hidden*(distinct + tokens) + 8*tokens; the
 * backward's is tokens*hidden*e + 8*tokens + vocab_rows*hidden*(e + 4), each table touched
 * twice. Both are gathers of tokens rows at random places: on a device that states a gather
 * curve (sc_device_gather_row_s) each row adds its measured time per row, in sequence with
 * the roofline (the curve is measured as the excess over it), at the working set the rows
 * are gathered from: the forward's above; the scatter's, the gradient table it updates and
 * the output gradient it reads (e*vocab_rows*hidden + e*tokens*hidden + 8*tokens).
 * The backward's zero-fill is a pass of its own, before the scatter and the accumulate, and
 * priced apart (sc__op_fill_s): at the device's measured fill rate for a table of that size
 * where it states one, else in the caches while the table fits the last-level cache and
 * streamed to memory past it (tests/bench/embed_sweep.c).
 * Cold (op->flags & SC_OP_COLD, set by the workload: in a training step the table and the
 * gradients were last touched a step before): every working set above, and the fill's,
 * past every cache the device describes (SC__OP_COLD_WS): the roofline's traffic at the
 * miss share, the rows at the gather curve's last point, the fill at the device's cold fill
 * rate (sc__op_fill_cold_s; the fill curve's last point where it states none)
 * (docs/operators.md, "Cold parameters"). `stepcast sample` measures warm, back to back, and prices warm. Ids in
 * order (op->flags & SC_OP_ROWS_IN_ORDER, the position embedding's): no gather curve time.
 * Arithmetic at the device's fp32 rate.
 */
#include "op_common.h"

static const char *const dim_names[] = {"tokens", "hidden", "vocab_rows"};
static const char *const feature_names[] = {"log10_bytes", "log10_tokens", "log2_hidden",
                                            "log10_vocab_rows", "backward"};
#define NFEATURES (sizeof feature_names / sizeof feature_names[0])

static int estimate(void *state, const sc_device *dev, const sc_op_desc *op, sc_estimate *out,
                    sc_error *err) {
  (void)state;
  int rc = sc__op_check(dev, op, out, "embedding", 3, dim_names, SC_EMBED_VARIANT_COUNT, 1, err);
  if (rc != SC_OK) return rc;
  double peak;
  rc = sc__op_vector_peak(dev, "embedding", op->variant, &peak, err);
  if (rc != SC_OK) return rc;
  double t = (double)op->dims[0], h = (double)op->dims[1], v = (double)op->dims[2];
  double e = sc__op_dtype_bytes(op->dtype);
  int bwd = op->variant == SC_EMBED_BWD;
  double flops, bytes, fill = 0.0;
  if (!bwd) {
    flops = 0.0;
    bytes = 2.0 * e * t * h + 8.0 * t;
  } else {
    flops = t * h + v * h;
    fill = e * v * h;
    bytes = 3.0 * e * t * h + 8.0 * t + v * h * (e + 8.0); /* after the fill */
  }
  /* working set: the forward's distinct rows and its output; the backward touches the
   * gradient table (filled, then read) and the fp32 main gradient (read, write). Cold
   * (SC_OP_COLD: in a training step, the table and the gradients last touched a step
   * before): past every cache, for the roofline, the fill and the rows alike. */
  const int cold = (op->flags & SC_OP_COLD) != 0;
  double ws = bwd ? e * t * h + 8.0 * t + v * h * (e + 4.0)
                  : e * h * (sc_expected_distinct(t, v) + t) + 8.0 * t;
  if (cold) ws = SC__OP_COLD_WS;
  /* fresh writes: the forward's output; the backward's scatter and accumulate write in
   * place */
  sc__op_roofline_mem(dev, peak, dev->flops_efficiency, 1.0, flops, bytes, ws,
                      bwd ? 0.0 : e * t * h, out);
  if (bwd) {
    out->time_s += cold ? sc__op_fill_cold_s(dev, fill) : sc__op_fill_s(dev, fill);
    out->bytes += fill;
    bytes += fill;
  }
  /* the rows' starts (0: no gather curve stated; none when the ids come in order) */
  if (!(op->flags & SC_OP_ROWS_IN_ORDER))
    out->time_s += t * sc_device_gather_row_s(dev, cold ? SC__OP_COLD_WS
                                                  : bwd ? e * (v + t) * h + 8.0 * t : ws);
  double f[NFEATURES] = {sc__op_log10(bytes), sc__op_log10(t), sc__op_log2(h), sc__op_log10(v),
                         (double)bwd};
  out->nfeatures = NFEATURES;
  for (size_t i = 0; i < NFEATURES; i++) out->features[i] = f[i];
  return SC_OK;
}

static const sc_op_plugin desc = {
    .hdr = SC_PLUGIN_HEADER(sc_op_plugin, SC_PLUGIN_KIND_OP, "embedding", "1.0.0"),
    .nfeatures = NFEATURES,
    .feature_names = feature_names,
    .estimate = estimate,
    /* bytes, tokens and table rows; the row width and the flag are shape */
    .scale_features = SC_FEATURE(0) | SC_FEATURE(1) | SC_FEATURE(3),
};

SC_PLUGIN_ENTRY(ops_embedding) { return &desc.hdr; }

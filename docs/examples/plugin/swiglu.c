/*
 * Example stepcast plugin: the SwiGLU activation (silu(gate) * up) as eager PyTorch runs it,
 * an operator plugin that takes over part of a built-in family.
 *
 * The built-in "elementwise" plugin prices SwiGLU as one fused kernel (Megatron's
 * bias_swiglu: read gate and up, write the product). A model written as HuggingFace's
 * LlamaMLP, down_proj(act_fn(gate_proj(x)) * up_proj(x)), run eagerly, launches one kernel
 * per PyTorch operation instead, and each of them goes through memory:
 *   forward:  silu(gate) -> s            read gate, write s            2 e bytes
 *             s * up -> out               read s and up, write out      3 e bytes
 *             = 5 e bytes, 2 kernels, 5 FLOPs (neg, exp, add, divide; product)
 *   backward: dout * up -> ds             read dout and up, write ds    3 e bytes
 *             dout * s -> dup             read dout and s, write dup    3 e bytes
 *             silu backward(gate, ds) -> dgate   read 2, write 1        3 e bytes
 *             = 9 e bytes, 3 kernels, 10 FLOPs
 * with e the dtype's bytes per element, every kernel memory bound:
 *   time_s = bytes / (mem_bw_Bps * mem_efficiency) + kernels * launch_s
 *
 * How it is selected. The runtime calls an operator plugin for the family NAME the workload
 * emits, never for a name of the plugin's choosing: a transformer's SwiGLU is the operator
 * family "elementwise" (stepcast/ops.h, SC_OP_ELEMENTWISE) with variant SC_EW_SWIGLU_FWD or
 * SC_EW_SWIGLU_BWD, dims = {elements of the h_ffn-wide product}. So this plugin is named
 * "elementwise", with a priority (10) above the built-in's (0): it is asked first for every
 * element-wise operator. It prices the two SwiGLU variants and declines the others with
 * SC_EUNSUPPORTED, and the runtime then asks the plugin it overrides (the built-in
 * "elementwise") for those. A plugin named "swiglu" would load but never be asked. stepcast
 * warns on stderr that it overrides the built-in family.
 *
 * Build (against an installed stepcast):
 *   cc -O2 -shared -fPIC -fvisibility=hidden $(pkg-config --cflags stepcast-plugin) \
 *      -o swiglu.so swiglu.c
 * or with CMake: see CMakeLists.txt beside this file.
 */
#include "stepcast/ops.h"
#include "stepcast/plugin.h"

static const char *const swiglu_features[] = {"bytes"};

static double swiglu_dtype_bytes(sc_dtype d) {
  switch (d) {
  case SC_DTYPE_FP32:
  case SC_DTYPE_TF32: return 4.0;
  case SC_DTYPE_FP8:
  case SC_DTYPE_INT8: return 1.0;
  default: return 2.0; /* bf16, fp16 */
  }
}

static int swiglu_estimate(void *state, const sc_device *dev, const sc_op_desc *op,
                           sc_estimate *out, sc_error *err) {
  double per_elem, flops_per_elem, kernels, n, bw;
  (void)state;
  if (op->variant == SC_EW_SWIGLU_FWD) {
    per_elem = 5.0;
    flops_per_elem = 5.0;
    kernels = 2.0;
  } else if (op->variant == SC_EW_SWIGLU_BWD) {
    per_elem = 9.0;
    flops_per_elem = 10.0;
    kernels = 3.0;
  } else { /* not ours: the runtime asks the plugin this one overrides */
    return sc_plugin_fail(err, SC_EUNSUPPORTED, "swiglu: variant %u is not SwiGLU",
                          (unsigned)op->variant);
  }
  if (op->ndims != 1 || op->dims[0] <= 0) /* dims = {elements} */
    return sc_plugin_fail(err, SC_EINVAL, "swiglu: dims[0] (elements) must be > 0");
  bw = dev->mem_bw_Bps * dev->mem_efficiency;
  if (!(bw > 0.0))
    return sc_plugin_fail(err, SC_EINVAL, "swiglu: device '%s' states no memory bandwidth",
                          dev->name);
  n = (double)op->dims[0];
  out->bytes = per_elem * swiglu_dtype_bytes(op->dtype) * n;
  out->flops = flops_per_elem * n;
  out->time_s = out->bytes / bw + kernels * dev->launch_s;
  out->bound = SC_BOUND_MEMORY;
  out->nfeatures = 1;
  out->features[0] = out->bytes;
  return SC_OK;
}

static const sc_op_plugin swiglu = {
    .hdr = SC_PLUGIN_HEADER_FULL(sc_op_plugin, SC_PLUGIN_KIND_OP, SC_OP_ELEMENTWISE,
                                 "0.1.0", /* priority */ 10, /* init */ NULL, /* fini */ NULL),
    .nfeatures = 1,
    .feature_names = swiglu_features,
    .estimate = swiglu_estimate,
    .scale_features = SC_FEATURE(0),
};

SC_PLUGIN_ENTRY(swiglu) { return &swiglu.hdr; }

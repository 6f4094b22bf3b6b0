/*
 * The tile of the cpu plugin's fused attention kernel (sc__cpu_attn_fwd and _bwd in
 * cpu_kernels.h): blocks of SC__CPU_ATTN_BLOCK query rows, each against exactly the keys its
 * last row may see. Shared with `stepcast sample` (core/cli/sample.c), which states it as
 * attention_block_q in the hardware files it writes and counts the attention
 * microbenchmark's work with it, as the attention plugin then does.
 */
#ifndef SC_PLUGINS_HARDWARE_CPU_ATTN_BLOCK_H
#define SC_PLUGINS_HARDWARE_CPU_ATTN_BLOCK_H

#define SC__CPU_ATTN_BLOCK 64

#endif /* SC_PLUGINS_HARDWARE_CPU_ATTN_BLOCK_H */

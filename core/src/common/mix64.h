/*
 * MurmurHash3's 64-bit finaliser: every input bit reaches every output bit. The hash of the
 * registry's estimate memo ends with it, and the collective and sweep memos use it alone.
 */
#ifndef SC_COMMON_MIX64_H
#define SC_COMMON_MIX64_H

#include <stdint.h>

static inline uint64_t sc__mix64(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return x;
}

#endif

/*
 * The estimate memo of the registry (see registry_int.h): a question (device + operator,
 * or algorithm + collective) is serialised field by field into a key, hashed, and looked
 * up in an open-addressing table. Serialising explicitly (no struct bytes) keeps padding
 * and unused dims/tiers out of the key, so equal questions give equal keys.
 */
#include <stdlib.h>
#include <string.h>

#include "common/mix64.h"
#include "plugin/registry_int.h"

/* ------------------------------------------------------------------------- */
/* Hash. Exactness never depends on it (keys are compared byte for byte), only speed does:
 * with 128-bit multiplication (GCC, Clang on 64-bit targets) 16 bytes per multiply, folded
 * high ^ low (the "mum" step of wyhash); otherwise 8 bytes per round of xxhash64's mix.
 * Either way murmur3's finaliser spreads the bits for the slot index and tag. */

#define SC__P1 0x9E3779B185EBCA87ull
#define SC__P2 0xC2B2AE3D27D4EB4Full
#define SC__P3 0xA0761D6478BD642Full
#define SC__P4 0xE7037ED1A0B428DBull

static inline uint64_t sc__rd64(const unsigned char *p) {
  uint64_t w;
  memcpy(&w, p, 8);
  return w;
}

#if defined(__SIZEOF_INT128__)
__extension__ typedef unsigned __int128 sc__u128;
static inline uint64_t sc__mum(uint64_t a, uint64_t b) {
  sc__u128 r = (sc__u128)a * b;
  return (uint64_t)r ^ (uint64_t)(r >> 64);
}
#else
static inline uint64_t sc__rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
static inline uint64_t sc__mum(uint64_t a, uint64_t b) {
  uint64_t h = sc__rotl(a * SC__P2, 31) * SC__P1;
  return sc__rotl(h ^ b, 27) * SC__P1 + sc__rotl(b * SC__P2, 29);
}
#endif

uint64_t sc__memo_hash(const void *key, size_t len) {
  const unsigned char *p = key;
  uint64_t h = SC__P3 ^ ((uint64_t)len * SC__P1);
  size_t i = 0;
  for (; i + 16 <= len; i += 16) {
    h = sc__mum(sc__rd64(p + i) ^ SC__P2, sc__rd64(p + i + 8) ^ h);
  }
  if (i < len) { /* keys built here are padded to 16 bytes; others get a copied tail */
    unsigned char tail[16] = {0};
    memcpy(tail, p + i, len - i);
    h = sc__mum(sc__rd64(tail) ^ SC__P4, sc__rd64(tail + 8) ^ h);
  }
  return sc__mix64(sc__mum(h ^ SC__P1, (uint64_t)len ^ SC__P4));
}

/* ------------------------------------------------------------------------- */
/* Keys                                                                      */

typedef struct sc__kbuf {
  unsigned char *p;
  size_t len, cap;
  int overflow;
} sc__kbuf;

static inline void sc__kput(sc__kbuf *b, const void *v, size_t n) {
  if (b->overflow || n > b->cap - b->len) {
    b->overflow = 1;
    return;
  }
  memcpy(b->p + b->len, v, n);
  b->len += n;
}
static inline void sc__kput_u32(sc__kbuf *b, uint32_t v) { sc__kput(b, &v, sizeof v); }
static inline void sc__kput_u64(sc__kbuf *b, uint64_t v) { sc__kput(b, &v, sizeof v); }
static inline void sc__kput_f64(sc__kbuf *b, double v) { sc__kput(b, &v, sizeof v); }
size_t sc__memo_key_op(unsigned char *buf, size_t cap, const sc_device *dev,
                       const sc_op_desc *op) {
  /* 'O', variant, dtype, ndims, flags, dims[ndims], device name + NUL, family + NUL. */
  uint32_t head[4];
  uint32_t nd = op->ndims <= SC_OP_MAX_DIMS ? op->ndims : SC_OP_MAX_DIMS;
  size_t dlen = strnlen(dev->name, sizeof dev->name);
  size_t flen = strlen(op->family);
  size_t nb = (size_t)nd * sizeof op->dims[0];
  size_t need = 1 + sizeof head + nb + dlen + 1 + flen + 1;
  size_t padded = (need + 15) & ~(size_t)15;
  unsigned char *p = buf;
  if (padded > cap) return 0;
  /* Zero padding to a multiple of 16 bytes (whole hash blocks). The content before it
   * decodes uniquely (ndims gives the dims' length, strings end at their NUL), so padding
   * never makes two questions equal. */
  memset(buf + padded - 16, 0, 16);
  head[0] = op->variant;
  head[1] = (uint32_t)op->dtype;
  head[2] = nd;
  head[3] = op->flags;
  *p++ = 'O';
  memcpy(p, head, sizeof head);
  p += sizeof head;
  memcpy(p, op->dims, nb);
  p += nb;
  memcpy(p, dev->name, dlen);
  p += dlen;
  *p++ = '\0';
  memcpy(p, op->family, flen + 1);
  return padded;
}

size_t sc__memo_key_coll(unsigned char *buf, size_t cap, const sc_coll_plugin *algo,
                         const sc_coll_desc *coll) {
  sc__kbuf b = {buf, 0, cap, 0};
  uint32_t nt = coll->ntiers <= SC_MAX_TIERS ? coll->ntiers : SC_MAX_TIERS;
  /* The algorithm is identified by its descriptor: exact, and stable while the registry
   * lives (active plugins are never unloaded before sc_registry_free). */
  sc__kput(&b, "C", 1);
  sc__kput_u64(&b, (uint64_t)(uintptr_t)algo);
  sc__kput_u32(&b, (uint32_t)coll->kind);
  sc__kput_u32(&b, (uint32_t)coll->dtype);
  sc__kput_u32(&b, coll->nranks);
  sc__kput_u32(&b, nt);
  sc__kput_f64(&b, coll->bytes);
  for (uint32_t t = 0; t < nt; t++) {
    const sc_tier_span *s = &coll->tiers[t];
    sc__kput_u32(&b, s->ranks);
    sc__kput_u32(&b, s->sharing);
    sc__kput_f64(&b, s->bw_Bps);
    sc__kput_f64(&b, s->latency_s);
    sc__kput_f64(&b, s->oversubscription);
  }
  /* Fixed layout for a given ntiers: zero padding to 16 bytes keeps keys distinct. */
  while (!b.overflow && (b.len & 15) != 0) sc__kput(&b, "", 1);
  return b.overflow ? 0 : b.len;
}

/* ------------------------------------------------------------------------- */
/* Table                                                                     */

int sc__memo_find(sc__memo *m, const void *key, size_t len, uint64_t hash, sc_estimate *out) {
  size_t mask, i;
  uint32_t tag = (uint32_t)(hash >> 32);
  m->lookups++;
  if (m->nslots == 0) return 0;
  mask = m->nslots - 1;
  for (i = (size_t)hash & mask;; i = (i + 1) & mask) {
    const sc__memo_slot s = m->slots[i];
    if (s.idx == 0) return 0;
    if (s.tag == tag) {
      const sc__memo_entry *e = &m->entries[s.idx - 1];
      if (e->hash == hash && e->key_len == len &&
          memcmp(m->keys + e->key_off, key, len) == 0) {
        *out = e->est;
        m->hits++;
        return 1;
      }
    }
  }
}

static void sc__memo_place(sc__memo_slot *slots, size_t nslots, uint64_t hash, uint32_t idx) {
  size_t mask = nslots - 1;
  size_t i = (size_t)hash & mask;
  while (slots[i].idx != 0) i = (i + 1) & mask;
  slots[i].tag = (uint32_t)(hash >> 32);
  slots[i].idx = idx;
}

static int sc__memo_grow_slots(sc__memo *m, size_t nslots) {
  sc__memo_slot *slots = calloc(nslots, sizeof *slots);
  if (slots == NULL) return SC_ENOMEM;
  for (size_t k = 0; k < m->n; k++) {
    sc__memo_place(slots, nslots, m->entries[k].hash, (uint32_t)(k + 1));
  }
  free(m->slots);
  m->slots = slots;
  m->nslots = nslots;
  return SC_OK;
}

int sc__memo_insert(sc__memo *m, const void *key, size_t len, uint64_t hash,
                    const sc_estimate *est) {
  sc__memo_entry *e;
  if (len > SC__MEMO_KEY_MAX) return SC_EINVAL;
  if (m->n >= SC__MEMO_MAX_ENTRIES) {
    sc__memo_clear(m);
    m->flushes++;
  }
  /* Keep the load factor at most 3/4. */
  if ((m->n + 1) * 4 > m->nslots * 3) {
    size_t nslots = m->nslots ? m->nslots * 2 : 1024;
    if (sc__memo_grow_slots(m, nslots) != SC_OK) return SC_ENOMEM;
  }
  if (m->n == m->cap) {
    size_t cap = m->cap ? m->cap * 2 : 256;
    sc__memo_entry *entries = realloc(m->entries, cap * sizeof *entries);
    if (entries == NULL) return SC_ENOMEM;
    m->entries = entries;
    m->cap = cap;
  }
  if (len > m->keys_cap - m->keys_len) {
    size_t cap = m->keys_cap ? m->keys_cap : 16384;
    unsigned char *keys;
    while (len > cap - m->keys_len) cap *= 2;
    keys = realloc(m->keys, cap);
    if (keys == NULL) return SC_ENOMEM;
    m->keys = keys;
    m->keys_cap = cap;
  }
  memcpy(m->keys + m->keys_len, key, len);
  e = &m->entries[m->n];
  e->hash = hash;
  e->key_off = m->keys_len;
  e->key_len = (uint32_t)len;
  e->est = *est;
  m->keys_len += len;
  m->n++;
  sc__memo_place(m->slots, m->nslots, hash, (uint32_t)m->n);
  return SC_OK;
}

void sc__memo_clear(sc__memo *m) {
  m->n = 0;
  m->keys_len = 0;
  if (m->slots != NULL) memset(m->slots, 0, m->nslots * sizeof *m->slots);
}

void sc__memo_free(sc__memo *m) {
  free(m->slots);
  free(m->entries);
  free(m->keys);
  memset(m, 0, sizeof *m);
}

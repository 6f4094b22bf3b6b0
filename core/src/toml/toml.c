/*
 * TOML 1.0.0 parser (https://toml.io/en/v1.0.0).
 *
 * One pass over the text, recursive descent with an explicit depth guard
 * (SC_TOML_MAX_DEPTH). Before parsing, the whole text is checked once for valid UTF-8 and
 * for control characters (forbidden everywhere in TOML except tab, and CR only as part of
 * CRLF), so the grammar code below deals with well-formed characters only.
 *
 * Every value is allocated as a tnode (below), whose first member is the public
 * sc_toml_value; the extra fields record how a table or array came to exist, which the
 * redefinition rules of the spec need:
 *   - a [header] defines a table once; prefixes of a header create "implicit" tables that a
 *     later header may define (once);
 *   - dotted keys create tables that only dotted keys of the same section may extend, and
 *     that no header may define (though a header may create sub-tables below them);
 *   - an inline table is closed at its '}': nothing may add keys to it afterwards;
 *   - [[header]] appends to arrays it created itself, never to a static array.
 * A value node is linked into its parent before its content is parsed, so on any error the
 * whole partial tree is reachable from the root and freed with it.
 */
#include "toml/toml.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/slurp.h"
#include "stepcast/common.h"

enum {
  TF_IMPLICIT = 1u, /* table created as a prefix of a [header] */
  TF_DEFINED = 2u,  /* table defined by its own [header] / [[header]] */
  TF_DOTTED = 4u,   /* table created by a dotted key */
  TF_SEALED = 8u,   /* inline table after its '}' */
  TF_AOT = 16u      /* array created by [[header]] */
};

typedef struct tnode {
  sc_toml_value v; /* first member: values are handed out as &node->v */
  unsigned flags;
  unsigned depth;  /* root table = 0 */
  size_t cap;      /* allocated items (ARRAY, TABLE) */
  uint32_t *hidx;  /* TABLE with many keys: open addressing, item index + 1, 0 = empty */
  size_t hcap;     /* power of two */
} tnode;

#define TN(val) ((tnode *)(void *)(val))
#define HASH_FROM 16 /* tables with at least this many keys get a hash index */

typedef struct {
  char *p;
  size_t len, cap;
} sbuf;

typedef struct {
  char *s; /* owned by the parser; tables get copies */
  size_t len;
  uint32_t line, col;
} keyseg;

typedef struct {
  const char *s;
  size_t n, i;
  uint32_t line;
  size_t line_start;
  const char *file;
  sc_error *err;
  tnode *root;
  keyseg *keys;
  size_t nkeys, kcap;
  sbuf sb;   /* string scratch */
  sbuf name; /* key names for messages */
  size_t ccol_ls, ccol_pos; /* col_of() cache: line start and offset of the last answer */
  uint32_t ccol;            /* ... and its column (0 = empty) */
} parser;

/* ------------------------------------------------------------------------- */
/* Small helpers                                                              */

static int sb_reserve(sbuf *b, size_t extra) {
  if (b->len + extra + 1 <= b->cap) return 0;
  size_t cap = b->cap != 0 ? b->cap : 64;
  while (cap < b->len + extra + 1) {
    if (cap > SIZE_MAX / 2) return -1;
    cap *= 2;
  }
  char *q = realloc(b->p, cap);
  if (q == NULL) return -1;
  b->p = q;
  b->cap = cap;
  return 0;
}

static int sb_putn(sbuf *b, const char *s, size_t n) {
  if (sb_reserve(b, n) != 0) return -1;
  if (n > 0) memcpy(b->p + b->len, s, n);
  b->len += n;
  b->p[b->len] = '\0';
  return 0;
}

static int sb_putc(sbuf *b, char c) { return sb_putn(b, &c, 1); }

static int sb_put_utf8(sbuf *b, uint32_t cp) {
  char u[4];
  size_t n;
  if (cp < 0x80) {
    u[0] = (char)cp;
    n = 1;
  } else if (cp < 0x800) {
    u[0] = (char)(0xC0 | (cp >> 6));
    u[1] = (char)(0x80 | (cp & 0x3F));
    n = 2;
  } else if (cp < 0x10000) {
    u[0] = (char)(0xE0 | (cp >> 12));
    u[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
    u[2] = (char)(0x80 | (cp & 0x3F));
    n = 3;
  } else {
    u[0] = (char)(0xF0 | (cp >> 18));
    u[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    u[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    u[3] = (char)(0x80 | (cp & 0x3F));
    n = 4;
  }
  return sb_putn(b, u, n);
}

static int is_digit(int c) { return c >= '0' && c <= '9'; }

static int is_bare(int c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || is_digit(c) || c == '_' ||
         c == '-';
}

static int hexval(int c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

static int peek(const parser *p) { return p->i < p->n ? (unsigned char)p->s[p->i] : -1; }

static int peek_at(const parser *p, size_t k) {
  return p->i + k < p->n ? (unsigned char)p->s[p->i + k] : -1;
}

static void skip_ws(parser *p) {
  while (p->i < p->n && (p->s[p->i] == ' ' || p->s[p->i] == '\t')) p->i++;
}

static int at_newline(const parser *p) {
  int c = peek(p);
  return c == '\n' || (c == '\r' && peek_at(p, 1) == '\n');
}

static void eat_newline(parser *p) {
  if (p->s[p->i] == '\r') p->i++;
  p->i++;
  p->line++;
  p->line_start = p->i;
}

/* The check pass guarantees no lone CR, so a comment ends at LF, CRLF or the end. */
static void skip_comment(parser *p) {
  while (p->i < p->n && !at_newline(p)) p->i++;
}

static void skip_ws_nl_comments(parser *p) {
  for (;;) {
    skip_ws(p);
    if (peek(p) == '#') {
      skip_comment(p);
    } else if (at_newline(p)) {
      eat_newline(p);
    } else {
      return;
    }
  }
}

/* 1-based column of byte offset pos on the current line, counted in characters. The last
 * answer is cached, so that a long line with many values costs linear time, not quadratic. */
static uint32_t col_of(parser *p, size_t pos) {
  if (pos > p->n) pos = p->n;
  if (pos < p->line_start) pos = p->line_start;
  if (p->ccol_ls != p->line_start || p->ccol_pos > pos || p->ccol == 0) {
    p->ccol_ls = p->line_start;
    p->ccol_pos = p->line_start;
    p->ccol = 1;
  }
  uint32_t col = p->ccol;
  for (size_t k = p->ccol_pos; k < pos; k++) {
    if (((unsigned char)p->s[k] & 0xC0) != 0x80) col++;
  }
  p->ccol_pos = pos;
  p->ccol = col;
  return col;
}

/* ------------------------------------------------------------------------- */
/* Errors                                                                     */

static int failv(parser *p, int code, uint32_t line, uint32_t col, const char *fmt,
                 va_list ap) {
  char what[SC_ERROR_MSG_MAX];
  vsnprintf(what, sizeof what, fmt, ap);
  return sc_error_set(p->err, code, "%s:%u:%u: %s", p->file, (unsigned)line, (unsigned)col,
                      what);
}

#if defined(__GNUC__)
#define SC__PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define SC__PRINTF(a, b)
#endif

static int fail_at(parser *p, int code, uint32_t line, uint32_t col, const char *fmt, ...)
    SC__PRINTF(5, 6);
static int fail_at(parser *p, int code, uint32_t line, uint32_t col, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  failv(p, code, line, col, fmt, ap);
  va_end(ap);
  return code;
}

/* A parse error at the current position. */
static int fail(parser *p, const char *fmt, ...) SC__PRINTF(2, 3);
static int fail(parser *p, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  failv(p, SC_EPARSE, p->line, col_of(p, p->i), fmt, ap);
  va_end(ap);
  return SC_EPARSE;
}

static int oom(parser *p) {
  return fail_at(p, SC_ENOMEM, p->line, col_of(p, p->i), "out of memory");
}

/* What is at the current position, for "expected X, found Y" (buf >= 16 bytes). */
static const char *found(parser *p, char *buf, size_t bufsz) {
  int c = peek(p);
  if (c < 0) return "end of input";
  if (at_newline(p)) return "end of line";
  if (c >= 0x20 && c < 0x7F) {
    snprintf(buf, bufsz, "'%c'", c);
  } else if (c >= 0xC0) {
    size_t len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
    if (p->i + len > p->n) len = p->n - p->i;
    snprintf(buf, bufsz, "'%.*s'", (int)len, p->s + p->i);
  } else {
    snprintf(buf, bufsz, "byte 0x%02X", (unsigned)c);
  }
  return buf;
}

#define FOUND(p) found((p), fbuf, sizeof fbuf)

/* The dotted name of the first k key segments, for messages. */
static const char *keyname(parser *p, size_t k) {
  p->name.len = 0;
  for (size_t j = 0; j < k && j < p->nkeys; j++) {
    if (j > 0 && sb_putc(&p->name, '.') != 0) return "?";
    for (size_t c = 0; c < p->keys[j].len; c++) { /* keep the message on one line */
      char ch = p->keys[j].s[c];
      if (sb_putc(&p->name, (unsigned char)ch < 0x20 || ch == 0x7F ? '?' : ch) != 0) {
        return "?";
      }
    }
  }
  return p->name.p != NULL ? p->name.p : "";
}

static const char *kind_name(const sc_toml_value *v) {
  if (v->type == SC_TOML_TABLE) {
    if (TN(v)->flags & TF_SEALED) return "an inline table";
    return "a table";
  }
  if (v->type == SC_TOML_ARRAY) {
    return (TN(v)->flags & TF_AOT) ? "an array of tables" : "an array";
  }
  switch (v->type) {
  case SC_TOML_STRING: return "a string";
  case SC_TOML_INTEGER: return "an integer";
  case SC_TOML_FLOAT: return "a float";
  case SC_TOML_BOOL: return "a boolean";
  default: return "a date/time";
  }
}

/* ------------------------------------------------------------------------- */
/* Nodes                                                                      */

static void free_value(sc_toml_value *v) {
  if (v == NULL) return;
  switch (v->type) {
  case SC_TOML_STRING: free(v->u.str.ptr); break;
  case SC_TOML_ARRAY:
    for (size_t k = 0; k < v->u.arr.len; k++) free_value(v->u.arr.items[k]);
    free(v->u.arr.items);
    break;
  case SC_TOML_TABLE:
    for (size_t k = 0; k < v->u.tab.len; k++) {
      free(v->u.tab.items[k].key);
      free_value(v->u.tab.items[k].value);
    }
    free(v->u.tab.items);
    free(TN(v)->hidx);
    break;
  default: break;
  }
  free(TN(v));
}

static tnode *new_node(parser *p, sc_toml_type t, uint32_t line, uint32_t col,
                       unsigned depth) {
  tnode *nd = calloc(1, sizeof *nd);
  if (nd == NULL) return NULL;
  nd->v.type = t;
  nd->v.line = line;
  nd->v.col = col;
  nd->depth = depth;
  if (t == SC_TOML_TABLE) nd->v.u.tab.file = p->file;
  return nd;
}

static void become_table(parser *p, tnode *nd) {
  nd->v.type = SC_TOML_TABLE;
  nd->v.u.tab.items = NULL;
  nd->v.u.tab.len = 0;
  nd->v.u.tab.file = p->file;
}

static uint64_t khash(const char *k, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t j = 0; j < n; j++) {
    h ^= (unsigned char)k[j];
    h *= 1099511628211ull;
  }
  return h;
}

static sc_toml_kv *tab_find(const tnode *t, const char *k, size_t n) {
  sc_toml_kv *items = t->v.u.tab.items;
  if (t->hidx != NULL) {
    size_t m = t->hcap - 1;
    size_t h = (size_t)khash(k, n) & m;
    for (;;) {
      uint32_t e = t->hidx[h];
      if (e == 0) return NULL;
      sc_toml_kv *kv = &items[e - 1];
      if (kv->key_len == n && memcmp(kv->key, k, n) == 0) return kv;
      h = (h + 1) & m;
    }
  }
  for (size_t j = 0; j < t->v.u.tab.len; j++) {
    if (items[j].key_len == n && memcmp(items[j].key, k, n) == 0) return &items[j];
  }
  return NULL;
}

static void hidx_put(tnode *t, size_t idx) {
  const sc_toml_kv *kv = &t->v.u.tab.items[idx];
  size_t m = t->hcap - 1;
  size_t h = (size_t)khash(kv->key, kv->key_len) & m;
  while (t->hidx[h] != 0) h = (h + 1) & m;
  t->hidx[h] = (uint32_t)(idx + 1);
}

/* Append key -> val to table t: copies the key of seg, takes val (freed on failure). */
static int tab_add(parser *p, tnode *t, keyseg *seg, tnode *val) {
  size_t len = t->v.u.tab.len;
  if (len >= UINT32_MAX - 1) {
    free_value(&val->v);
    return fail(p, "too many keys in one table");
  }
  if (len == t->cap) {
    size_t cap = t->cap != 0 ? t->cap * 2 : 8;
    sc_toml_kv *q = realloc(t->v.u.tab.items, cap * sizeof *q);
    if (q == NULL) {
      free_value(&val->v);
      return oom(p);
    }
    t->v.u.tab.items = q;
    t->cap = cap;
  }
  char *key = malloc(seg->len + 1);
  if (key == NULL) {
    free_value(&val->v);
    return oom(p);
  }
  memcpy(key, seg->s, seg->len + 1);
  sc_toml_kv *kv = &t->v.u.tab.items[len];
  kv->key = key;
  kv->key_len = seg->len;
  kv->line = seg->line;
  kv->col = seg->col;
  kv->value = &val->v;
  t->v.u.tab.len = len + 1;
  len++;
  if (len >= HASH_FROM) {
    if (t->hidx == NULL || len * 2 > t->hcap) {
      size_t hcap = 64;
      while (hcap < len * 4) hcap *= 2;
      uint32_t *h = calloc(hcap, sizeof *h);
      if (h == NULL) return oom(p); /* the entry is linked: the tree stays consistent */
      free(t->hidx);
      t->hidx = h;
      t->hcap = hcap;
      for (size_t j = 0; j < len; j++) hidx_put(t, j);
    } else {
      hidx_put(t, len - 1);
    }
  }
  return SC_OK;
}

static int arr_add(parser *p, tnode *a, tnode *item) {
  if (a->v.u.arr.len == a->cap) {
    size_t cap = a->cap != 0 ? a->cap * 2 : 4;
    sc_toml_value **q = realloc(a->v.u.arr.items, cap * sizeof *q);
    if (q == NULL) {
      free_value(&item->v);
      return oom(p);
    }
    a->v.u.arr.items = q;
    a->cap = cap;
  }
  a->v.u.arr.items[a->v.u.arr.len++] = &item->v;
  return SC_OK;
}

static int check_depth(parser *p, unsigned depth, uint32_t line, uint32_t col) {
  if (depth > SC_TOML_MAX_DEPTH) {
    return fail_at(p, SC_ELIMIT, line, col,
                   "tables and arrays nest deeper than %d levels", SC_TOML_MAX_DEPTH);
  }
  return SC_OK;
}

/* ------------------------------------------------------------------------- */
/* Text check: UTF-8 and control characters                                  */

static int check_text(parser *p) {
  const unsigned char *s = (const unsigned char *)p->s;
  size_t i = p->i;
  while (i < p->n) {
    unsigned c = s[i];
    if (c < 0x80) {
      if (c == '\n') {
        i++;
        p->line++;
        p->line_start = i;
        continue;
      }
      if (c == '\r') {
        if (i + 1 < p->n && s[i + 1] == '\n') {
          i++;
          continue;
        }
        return fail_at(p, SC_EPARSE, p->line, col_of(p, i),
                       "carriage return (U+000D) not followed by a line feed");
      }
      if ((c < 0x20 && c != '\t') || c == 0x7F) {
        return fail_at(p, SC_EPARSE, p->line, col_of(p, i),
                       "control character U+%04X is not allowed in TOML", c);
      }
      i++;
      continue;
    }
    size_t len;
    uint32_t cp, min;
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2, cp = c & 0x1F, min = 0x80;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3, cp = c & 0x0F, min = 0x800;
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4, cp = c & 0x07, min = 0x10000;
    } else {
      return fail_at(p, SC_EPARSE, p->line, col_of(p, i), "invalid UTF-8 byte 0x%02X", c);
    }
    if (i + len > p->n) {
      return fail_at(p, SC_EPARSE, p->line, col_of(p, i),
                     "truncated UTF-8 sequence at the end of input");
    }
    for (size_t k = 1; k < len; k++) {
      unsigned b = s[i + k];
      if ((b & 0xC0) != 0x80) {
        return fail_at(p, SC_EPARSE, p->line, col_of(p, i),
                       "invalid UTF-8 sequence (byte 0x%02X after 0x%02X)", b, c);
      }
      cp = (cp << 6) | (b & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
      return fail_at(p, SC_EPARSE, p->line, col_of(p, i),
                     "invalid UTF-8 sequence (overlong, surrogate or above U+10FFFF)");
    }
    i += len;
  }
  return SC_OK;
}

/* ------------------------------------------------------------------------- */
/* Strings                                                                    */

/* Start a string at p->i: empty p->sb, step over the opening delimiter (3 characters when
 * multi-line) and the newline that may follow a multi-line opener. */
static int string_open(parser *p, int ml) {
  p->sb.len = 0;
  if (sb_reserve(&p->sb, 0) != 0) return oom(p);
  p->sb.p[0] = '\0';
  p->i += ml ? 3 : 1;
  if (ml && at_newline(p)) eat_newline(p);
  return SC_OK;
}

/* At a quote character q of a string's own kind: a one-line string ends here; in a
 * multi-line one a run of 1-2 quotes is content, 3-5 end it (the extra 1-2 are content) and
 * more is an error naming what (e.g. "multi-line literal string"). *closed tells whether the
 * string ended. */
static int string_quote(parser *p, char q, int ml, const char *what, int *closed) {
  static const char two[2][3] = {"\"\"", "''"};
  const char *qq = two[q == '\''];
  size_t n = 0;
  *closed = 0;
  if (!ml) {
    p->i++;
    *closed = 1;
    return SC_OK;
  }
  while (p->i + n < p->n && p->s[p->i + n] == q) n++;
  if (n > 5) {
    p->i += 5;
    return fail(p, "too many quotes at the end of a %s", what);
  }
  if (sb_putn(&p->sb, qq, n < 3 ? n : n - 3) != 0) return oom(p);
  p->i += n;
  *closed = n >= 3;
  return SC_OK;
}

/* Basic string ("..." or multi-line """...""") at p->i, decoded into p->sb. */
static int parse_basic(parser *p, int ml) {
  char fbuf[16];
  uint32_t sline = p->line, scol = col_of(p, p->i);
  int rc = string_open(p, ml), closed;
  if (rc != SC_OK) return rc;
  for (;;) {
    if (p->i >= p->n) {
      return fail_at(p, SC_EPARSE, sline, scol, "unterminated string (no closing %s)",
                     ml ? "\"\"\"" : "'\"'");
    }
    char c = p->s[p->i];
    if (c == '"') {
      rc = string_quote(p, '"', ml, "multi-line string", &closed);
      if (rc != SC_OK || closed) return rc;
      continue;
    }
    if (c == '\\') {
      size_t epos = p->i;
      uint32_t ecol = col_of(p, epos);
      p->i++;
      int e = peek(p);
      char out = 0;
      switch (e) {
      case 'b': out = '\b'; break;
      case 't': out = '\t'; break;
      case 'n': out = '\n'; break;
      case 'f': out = '\f'; break;
      case 'r': out = '\r'; break;
      case '"': out = '"'; break;
      case '\\': out = '\\'; break;
      case 'u':
      case 'U': {
        int nd = e == 'u' ? 4 : 8;
        uint32_t cp = 0;
        p->i++;
        for (int k = 0; k < nd; k++) {
          int h = hexval(peek(p));
          if (h < 0) {
            return fail_at(p, SC_EPARSE, p->line, ecol,
                           "invalid escape: '\\%c' needs %d hex digits", e, nd);
          }
          cp = cp * 16 + (uint32_t)h;
          p->i++;
        }
        if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
          return fail_at(p, SC_EPARSE, p->line, ecol,
                         "invalid escape: U+%04X is not a Unicode scalar value",
                         (unsigned)cp);
        }
        if (sb_put_utf8(&p->sb, cp) != 0) return oom(p);
        continue;
      }
      default:
        if (ml && (e == ' ' || e == '\t' || e == '\n' || e == '\r')) {
          /* line-ending backslash: trim whitespace and newlines up to the next content */
          skip_ws(p);
          if (!at_newline(p)) {
            return fail_at(p, SC_EPARSE, p->line, ecol,
                           "invalid escape: '\\' followed by whitespace must end the line");
          }
          for (;;) {
            skip_ws(p);
            if (!at_newline(p)) break;
            eat_newline(p);
          }
          continue;
        }
        return fail_at(p, SC_EPARSE, p->line, ecol, "invalid escape sequence '\\' + %s",
                       FOUND(p));
      }
      if (sb_putc(&p->sb, out) != 0) return oom(p);
      p->i++;
      continue;
    }
    if (c == '\n' || c == '\r') {
      if (!ml) {
        return fail_at(p, SC_EPARSE, sline, scol,
                       "unterminated string (newline before the closing '\"')");
      }
      if (sb_putc(&p->sb, '\n') != 0) return oom(p);
      eat_newline(p);
      continue;
    }
    if (sb_putc(&p->sb, c) != 0) return oom(p);
    p->i++;
  }
}

/* Literal string ('...' or multi-line '''...''') at p->i, copied into p->sb. */
static int parse_literal(parser *p, int ml) {
  uint32_t sline = p->line, scol = col_of(p, p->i);
  int rc = string_open(p, ml), closed;
  if (rc != SC_OK) return rc;
  for (;;) {
    if (p->i >= p->n) {
      return fail_at(p, SC_EPARSE, sline, scol, "unterminated literal string (no closing %s)",
                     ml ? "'''" : "\"'\"");
    }
    char c = p->s[p->i];
    if (c == '\'') {
      rc = string_quote(p, '\'', ml, "multi-line literal string", &closed);
      if (rc != SC_OK || closed) return rc;
      continue;
    }
    if (c == '\n' || c == '\r') {
      if (!ml) {
        return fail_at(p, SC_EPARSE, sline, scol,
                       "unterminated literal string (newline before the closing \"'\")");
      }
      if (sb_putc(&p->sb, '\n') != 0) return oom(p);
      eat_newline(p);
      continue;
    }
    if (sb_putc(&p->sb, c) != 0) return oom(p);
    p->i++;
  }
}

/* ------------------------------------------------------------------------- */
/* Keys                                                                       */

static void keys_clear(parser *p) {
  for (size_t k = 0; k < p->nkeys; k++) free(p->keys[k].s);
  p->nkeys = 0;
}

/* A key (bare, quoted, dotted) at p->i into p->keys; leaves p->i after trailing blanks. */
static int parse_key(parser *p) {
  char fbuf[16];
  keys_clear(p);
  for (;;) {
    skip_ws(p);
    uint32_t line = p->line, col = col_of(p, p->i);
    int c = peek(p), rc;
    if (c == '"') {
      if (peek_at(p, 1) == '"' && peek_at(p, 2) == '"') {
        return fail(p, "a multi-line string cannot be a key");
      }
      if ((rc = parse_basic(p, 0)) != SC_OK) return rc;
    } else if (c == '\'') {
      if (peek_at(p, 1) == '\'' && peek_at(p, 2) == '\'') {
        return fail(p, "a multi-line string cannot be a key");
      }
      if ((rc = parse_literal(p, 0)) != SC_OK) return rc;
    } else if (c >= 0 && is_bare(c)) {
      size_t start = p->i;
      while (is_bare(peek(p))) p->i++;
      p->sb.len = 0;
      if (sb_putn(&p->sb, p->s + start, p->i - start) != 0) return oom(p);
    } else if (p->nkeys > 0) {
      return fail(p, "expected a key after '.', found %s", FOUND(p));
    } else {
      return fail(p, "expected a key, found %s", FOUND(p));
    }
    if (p->nkeys == p->kcap) {
      size_t cap = p->kcap != 0 ? p->kcap * 2 : 8;
      keyseg *q = realloc(p->keys, cap * sizeof *q);
      if (q == NULL) return oom(p);
      p->keys = q;
      p->kcap = cap;
    }
    keyseg *g = &p->keys[p->nkeys];
    g->s = malloc(p->sb.len + 1);
    if (g->s == NULL) return oom(p);
    memcpy(g->s, p->sb.p, p->sb.len + 1);
    g->len = p->sb.len;
    g->line = line;
    g->col = col;
    p->nkeys++;
    skip_ws(p);
    if (peek(p) != '.') return SC_OK;
    p->i++;
  }
}

/* ------------------------------------------------------------------------- */
/* Numbers, booleans, dates                                                   */

/* Digits of base 10 from t[*k] with '_' only between two digits; at least one digit.
 * Returns the number of characters consumed, or 0 when none. */
static size_t scan_dec(const char *t, size_t n, size_t *k) {
  size_t st = *k;
  if (*k >= n || !is_digit(t[*k])) return 0;
  while (*k < n) {
    if (is_digit(t[*k])) {
      (*k)++;
    } else if (t[*k] == '_' && *k + 1 < n && is_digit(t[*k + 1])) {
      (*k)++;
    } else {
      break;
    }
  }
  return *k - st;
}

static int parse_number(parser *p, tnode *val) {
  size_t start = p->i;
  uint32_t col = col_of(p, start);
  while (p->i < p->n) {
    char c = p->s[p->i];
    if (is_bare(c) || c == '.' || c == '+') {
      p->i++;
    } else {
      break;
    }
  }
  const char *t = p->s + start;
  size_t n = p->i - start, k = 0;
  int neg = 0, sign = 0;
#define BADNUM(why)                                                                   \
  fail_at(p, SC_EPARSE, p->line, col, "invalid number '%.*s': %s", (int)(n > 64 ? 64 : n), \
          t, why)
  if (n == 0) return BADNUM("expected a value");
  if (t[0] == '+' || t[0] == '-') {
    sign = 1;
    neg = t[0] == '-';
    k = 1;
  }
  if (n - k == 3 && (memcmp(t + k, "inf", 3) == 0 || memcmp(t + k, "nan", 3) == 0)) {
    val->v.type = SC_TOML_FLOAT;
    if (t[k] == 'i') {
      val->v.u.flt = neg ? -HUGE_VAL : HUGE_VAL;
    } else {
      val->v.u.flt = neg ? -NAN : NAN;
    }
    return SC_OK;
  }
  if (!sign && n >= 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'o' || t[1] == 'b')) {
    unsigned base = t[1] == 'x' ? 16 : t[1] == 'o' ? 8 : 2;
    uint64_t v = 0;
    int ndig = 0, prev_digit = 0;
    for (k = 2; k < n; k++) {
      int d = hexval(t[k]);
      if (t[k] == '_') {
        if (!prev_digit || k + 1 >= n || hexval(t[k + 1]) < 0) {
          return BADNUM("'_' must be between two digits");
        }
        prev_digit = 0;
        continue;
      }
      if (d < 0 || (unsigned)d >= base) return BADNUM("not a digit of its base");
      if (v > ((uint64_t)INT64_MAX - (uint64_t)d) / base) {
        return fail_at(p, SC_EPARSE, p->line, col,
                       "integer '%.*s' is out of range for a 64-bit signed integer",
                       (int)(n > 64 ? 64 : n), t);
      }
      v = v * base + (uint64_t)d;
      ndig++;
      prev_digit = 1;
    }
    if (ndig == 0) return BADNUM("no digits after the base prefix");
    val->v.type = SC_TOML_INTEGER;
    val->v.u.integer = (int64_t)v;
    return SC_OK;
  }
  size_t ist = k;
  size_t ilen = scan_dec(t, n, &k);
  if (ilen == 0) return BADNUM("expected a digit");
  if (t[ist] == '0' && ilen > 1) return BADNUM("leading zeros are not allowed");
  int is_float = 0;
  if (k < n && t[k] == '.') {
    k++;
    if (scan_dec(t, n, &k) == 0) return BADNUM("expected a digit after '.'");
    is_float = 1;
  }
  if (k < n && (t[k] == 'e' || t[k] == 'E')) {
    k++;
    if (k < n && (t[k] == '+' || t[k] == '-')) k++;
    if (scan_dec(t, n, &k) == 0) return BADNUM("expected a digit in the exponent");
    is_float = 1;
  }
  if (k != n) return BADNUM("unexpected character");
  if (is_float) {
    p->sb.len = 0;
    for (size_t j = 0; j < n; j++) {
      if (t[j] != '_' && sb_putc(&p->sb, t[j]) != 0) return oom(p);
    }
    errno = 0;
    char *end = NULL;
    double d = strtod(p->sb.p, &end);
    if (end != p->sb.p + p->sb.len) return BADNUM("not a float");
    if (errno == ERANGE && isinf(d)) {
      return fail_at(p, SC_EPARSE, p->line, col,
                     "float '%.*s' is out of range for a 64-bit float",
                     (int)(n > 64 ? 64 : n), t);
    }
    val->v.type = SC_TOML_FLOAT;
    val->v.u.flt = d;
    return SC_OK;
  }
  uint64_t mag = 0, lim = neg ? (uint64_t)INT64_MAX + 1u : (uint64_t)INT64_MAX;
  for (size_t j = ist; j < n; j++) {
    if (t[j] == '_') continue;
    uint64_t d = (uint64_t)(t[j] - '0');
    if (mag > (lim - d) / 10) {
      return fail_at(p, SC_EPARSE, p->line, col,
                     "integer '%.*s' is out of range for a 64-bit signed integer",
                     (int)(n > 64 ? 64 : n), t);
    }
    mag = mag * 10 + d;
  }
#undef BADNUM
  val->v.type = SC_TOML_INTEGER;
  if (neg) {
    val->v.u.integer = mag == (uint64_t)INT64_MAX + 1u ? INT64_MIN : -(int64_t)mag;
  } else {
    val->v.u.integer = (int64_t)mag;
  }
  return SC_OK;
}

static int rd_digits(const parser *p, size_t j, int nd, int *out) {
  int v = 0;
  if (j + (size_t)nd > p->n) return 0;
  for (int k = 0; k < nd; k++) {
    char c = p->s[j + (size_t)k];
    if (!is_digit(c)) return 0;
    v = v * 10 + (c - '0');
  }
  *out = v;
  return 1;
}

static int ch_at(const parser *p, size_t j) {
  return j < p->n ? (unsigned char)p->s[j] : -1;
}

static int looks_date(const parser *p, size_t j) {
  int d;
  return rd_digits(p, j, 4, &d) && ch_at(p, j + 4) == '-';
}

static int looks_time(const parser *p, size_t j) {
  int d;
  return rd_digits(p, j, 2, &d) && ch_at(p, j + 2) == ':';
}

static int days_in_month(int y, int m) {
  static const int dim[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (m == 2 && ((y % 4 == 0 && y % 100 != 0) || y % 400 == 0)) return 29;
  return dim[m - 1];
}

static int parse_datetime(parser *p, tnode *val) {
  sc_toml_datetime dt;
  memset(&dt, 0, sizeof dt);
  size_t j = p->i;
  uint32_t col = col_of(p, j);
  int has_date = 0;
  if (looks_date(p, j)) {
    if (!(rd_digits(p, j, 4, &dt.year) && ch_at(p, j + 4) == '-' &&
          rd_digits(p, j + 5, 2, &dt.month) && ch_at(p, j + 7) == '-' &&
          rd_digits(p, j + 8, 2, &dt.day))) {
      return fail_at(p, SC_EPARSE, p->line, col, "invalid date: expected YYYY-MM-DD");
    }
    if (dt.month < 1 || dt.month > 12) {
      return fail_at(p, SC_EPARSE, p->line, col, "invalid date: month %02d is not 01-12",
                     dt.month);
    }
    if (dt.day < 1 || dt.day > days_in_month(dt.year, dt.month)) {
      return fail_at(p, SC_EPARSE, p->line, col,
                     "invalid date: day %02d does not exist in %04d-%02d", dt.day, dt.year,
                     dt.month);
    }
    has_date = 1;
    j += 10;
    int c = ch_at(p, j);
    if (c == 'T' || c == 't') {
      j++;
    } else if (c == ' ' && looks_time(p, j + 1)) {
      j++;
    } else {
      val->v.type = SC_TOML_DATE_LOCAL;
      val->v.u.dt = dt;
      p->i = j;
      return SC_OK;
    }
  }
  if (!(rd_digits(p, j, 2, &dt.hour) && ch_at(p, j + 2) == ':' &&
        rd_digits(p, j + 3, 2, &dt.minute) && ch_at(p, j + 5) == ':' &&
        rd_digits(p, j + 6, 2, &dt.second))) {
    return fail_at(p, SC_EPARSE, p->line, col, "invalid time: expected HH:MM:SS");
  }
  if (dt.hour > 23 || dt.minute > 59 || dt.second > 60) {
    return fail_at(p, SC_EPARSE, p->line, col,
                   "invalid time %02d:%02d:%02d (hour 00-23, minute 00-59, second 00-60)",
                   dt.hour, dt.minute, dt.second);
  }
  j += 8;
  if (ch_at(p, j) == '.') {
    j++;
    if (!is_digit(ch_at(p, j))) {
      return fail_at(p, SC_EPARSE, p->line, col, "invalid time: expected a digit after '.'");
    }
    int32_t ns = 0;
    int nd = 0;
    while (is_digit(ch_at(p, j))) {
      if (nd < 9) ns = ns * 10 + (p->s[j] - '0');
      if (nd < 1000000) nd++;
      j++;
    }
    for (int k = nd; k < 9; k++) ns *= 10;
    dt.nanosecond = ns;
    dt.frac_digits = nd;
  }
  if (!has_date) {
    val->v.type = SC_TOML_TIME_LOCAL;
    val->v.u.dt = dt;
    p->i = j;
    return SC_OK;
  }
  int c = ch_at(p, j);
  if (c == 'Z' || c == 'z') {
    dt.offset_is_z = 1;
    j++;
    val->v.type = SC_TOML_DATETIME;
  } else if (c == '+' || c == '-') {
    int oh, om;
    if (!(rd_digits(p, j + 1, 2, &oh) && ch_at(p, j + 3) == ':' &&
          rd_digits(p, j + 4, 2, &om))) {
      return fail_at(p, SC_EPARSE, p->line, col, "invalid UTC offset: expected +HH:MM");
    }
    if (oh > 23 || om > 59) {
      return fail_at(p, SC_EPARSE, p->line, col,
                     "invalid UTC offset %c%02d:%02d (hour 00-23, minute 00-59)", c, oh, om);
    }
    dt.offset_minutes = (c == '-' ? -1 : 1) * (oh * 60 + om);
    j += 6;
    val->v.type = SC_TOML_DATETIME;
  } else {
    val->v.type = SC_TOML_DATETIME_LOCAL;
  }
  val->v.u.dt = dt;
  p->i = j;
  return SC_OK;
}

/* ------------------------------------------------------------------------- */
/* Values                                                                     */

static int parse_value(parser *p, tnode *val);
static int parse_keyval(parser *p, tnode *t);

static int set_string(parser *p, tnode *val) {
  char *s = malloc(p->sb.len + 1);
  if (s == NULL) return oom(p);
  memcpy(s, p->sb.p, p->sb.len + 1);
  val->v.type = SC_TOML_STRING;
  val->v.u.str.ptr = s;
  val->v.u.str.len = p->sb.len;
  return SC_OK;
}

static int parse_array(parser *p, tnode *a) {
  char fbuf[16];
  int rc = check_depth(p, a->depth, a->v.line, a->v.col);
  if (rc != SC_OK) return rc;
  a->v.type = SC_TOML_ARRAY;
  a->v.u.arr.items = NULL;
  a->v.u.arr.len = 0;
  p->i++; /* '[' */
  for (;;) {
    skip_ws_nl_comments(p);
    if (peek(p) == ']') {
      p->i++;
      return SC_OK;
    }
    tnode *item = new_node(p, SC_TOML_BOOL, p->line, col_of(p, p->i), a->depth + 1);
    if (item == NULL) return oom(p);
    if ((rc = arr_add(p, a, item)) != SC_OK) return rc;
    if ((rc = parse_value(p, item)) != SC_OK) return rc;
    skip_ws_nl_comments(p);
    int c = peek(p);
    if (c == ',') {
      p->i++;
    } else if (c == ']') {
      p->i++;
      return SC_OK;
    } else {
      return fail(p, "expected ',' or ']' after an array element, found %s", FOUND(p));
    }
  }
}

static int parse_inline(parser *p, tnode *t) {
  char fbuf[16];
  int rc = check_depth(p, t->depth, t->v.line, t->v.col);
  if (rc != SC_OK) return rc;
  become_table(p, t);
  p->i++; /* '{' */
  skip_ws(p);
  if (peek(p) == '}') {
    p->i++;
    t->flags |= TF_SEALED;
    return SC_OK;
  }
  for (;;) {
    skip_ws(p);
    if (at_newline(p) || peek(p) == '#') {
      return fail(p, "an inline table must be on one line (found %s before its '}')",
                  peek(p) == '#' ? "a comment" : "end of line");
    }
    if (peek(p) == '}') {
      return fail(p, "trailing comma in an inline table is not allowed in TOML 1.0.0");
    }
    if ((rc = parse_keyval(p, t)) != SC_OK) return rc;
    skip_ws(p);
    int c = peek(p);
    if (c == ',') {
      p->i++;
    } else if (c == '}') {
      p->i++;
      t->flags |= TF_SEALED;
      return SC_OK;
    } else if (at_newline(p)) {
      return fail(p, "an inline table must be on one line (found end of line before its '}')");
    } else {
      return fail(p, "expected ',' or '}' in an inline table, found %s", FOUND(p));
    }
  }
}

/* The value at p->i into val (already linked into its parent). */
static int parse_value(parser *p, tnode *val) {
  char fbuf[16];
  int rc;
  val->v.line = p->line;
  val->v.col = col_of(p, p->i);
  int c = peek(p);
  switch (c) {
  case '"':
    rc = parse_basic(p, peek_at(p, 1) == '"' && peek_at(p, 2) == '"');
    return rc != SC_OK ? rc : set_string(p, val);
  case '\'':
    rc = parse_literal(p, peek_at(p, 1) == '\'' && peek_at(p, 2) == '\'');
    return rc != SC_OK ? rc : set_string(p, val);
  case '[': return parse_array(p, val);
  case '{': return parse_inline(p, val);
  case 't':
    if (p->n - p->i >= 4 && memcmp(p->s + p->i, "true", 4) == 0) {
      val->v.type = SC_TOML_BOOL;
      val->v.u.boolean = 1;
      p->i += 4;
      return SC_OK;
    }
    break;
  case 'f':
    if (p->n - p->i >= 5 && memcmp(p->s + p->i, "false", 5) == 0) {
      val->v.type = SC_TOML_BOOL;
      val->v.u.boolean = 0;
      p->i += 5;
      return SC_OK;
    }
    break;
  case '+':
  case '-':
  case 'i':
  case 'n': return parse_number(p, val);
  default:
    if (is_digit(c)) {
      if (looks_date(p, p->i) || looks_time(p, p->i)) return parse_datetime(p, val);
      return parse_number(p, val);
    }
    break;
  }
  return fail(p, "expected a value, found %s", FOUND(p));
}

/* key = value into table t (the current section or an inline table). */
static int parse_keyval(parser *p, tnode *t) {
  char fbuf[16];
  int rc = parse_key(p);
  if (rc != SC_OK) return rc;
  if (peek(p) != '=') {
    return fail(p, "expected '=' after key '%s', found %s", keyname(p, p->nkeys), FOUND(p));
  }
  p->i++;
  skip_ws(p);
  tnode *tab = t;
  for (size_t k = 0; k + 1 < p->nkeys; k++) {
    keyseg *g = &p->keys[k];
    sc_toml_kv *kv = tab_find(tab, g->s, g->len);
    if (kv == NULL) {
      if ((rc = check_depth(p, tab->depth + 1, g->line, g->col)) != SC_OK) return rc;
      tnode *nt = new_node(p, SC_TOML_TABLE, g->line, g->col, tab->depth + 1);
      if (nt == NULL) return oom(p);
      nt->flags = TF_DOTTED;
      if ((rc = tab_add(p, tab, g, nt)) != SC_OK) return rc;
      tab = nt;
      continue;
    }
    tnode *v = TN(kv->value);
    if (v->v.type != SC_TOML_TABLE) {
      return fail_at(p, SC_EPARSE, g->line, g->col,
                     "key '%s' is %s (defined at %u:%u), not a table that a dotted key can "
                     "extend",
                     keyname(p, k + 1), kind_name(&v->v), (unsigned)kv->line,
                     (unsigned)kv->col);
    }
    if (v->flags & TF_SEALED) {
      return fail_at(p, SC_EPARSE, g->line, g->col,
                     "cannot add keys to inline table '%s' (defined at %u:%u)",
                     keyname(p, k + 1), (unsigned)v->v.line, (unsigned)v->v.col);
    }
    if (!(v->flags & TF_DOTTED)) {
      return fail_at(p, SC_EPARSE, g->line, g->col,
                     "cannot add keys to table '%s' with a dotted key: it is defined by a "
                     "[table] header (at %u:%u)",
                     keyname(p, k + 1), (unsigned)v->v.line, (unsigned)v->v.col);
    }
    tab = v;
  }
  keyseg *last = &p->keys[p->nkeys - 1];
  const sc_toml_kv *dup = tab_find(tab, last->s, last->len);
  if (dup != NULL) {
    return fail_at(p, SC_EPARSE, last->line, last->col,
                   "duplicate key '%s' (first defined at %u:%u)", keyname(p, p->nkeys),
                   (unsigned)dup->line, (unsigned)dup->col);
  }
  tnode *val = new_node(p, SC_TOML_BOOL, p->line, col_of(p, p->i), tab->depth + 1);
  if (val == NULL) return oom(p);
  if ((rc = tab_add(p, tab, last, val)) != SC_OK) return rc;
  return parse_value(p, val);
}

/* Consume blanks, an optional comment and the end of the line (or of the input). */
static int expect_eol(parser *p, const char *after) {
  char fbuf[16];
  skip_ws(p);
  if (peek(p) == '#') skip_comment(p);
  if (p->i >= p->n) return SC_OK;
  if (at_newline(p)) {
    eat_newline(p);
    return SC_OK;
  }
  return fail(p, "expected end of line after %s, found %s", after, FOUND(p));
}

/* [header] or [[header]] at p->i; *cur becomes the table that following keys go to. */
static int parse_header(parser *p, tnode **cur) {
  char fbuf[16];
  uint32_t hline = p->line, hcol = col_of(p, p->i);
  int aot = 0, rc;
  p->i++;
  if (peek(p) == '[') {
    aot = 1;
    p->i++;
  }
  if ((rc = parse_key(p)) != SC_OK) return rc;
  if (peek(p) != ']') {
    return fail(p, "expected '%s' to close the header of table '%s', found %s",
                aot ? "]]" : "]", keyname(p, p->nkeys), FOUND(p));
  }
  p->i++;
  if (aot) {
    if (peek(p) != ']') {
      return fail(p, "expected ']]' to close the header of array of tables '%s', found %s",
                  keyname(p, p->nkeys), FOUND(p));
    }
    p->i++;
  }
  tnode *tab = p->root;
  for (size_t k = 0; k + 1 < p->nkeys; k++) {
    keyseg *g = &p->keys[k];
    sc_toml_kv *kv = tab_find(tab, g->s, g->len);
    if (kv == NULL) {
      if ((rc = check_depth(p, tab->depth + 1, g->line, g->col)) != SC_OK) return rc;
      tnode *nt = new_node(p, SC_TOML_TABLE, g->line, g->col, tab->depth + 1);
      if (nt == NULL) return oom(p);
      nt->flags = TF_IMPLICIT;
      if ((rc = tab_add(p, tab, g, nt)) != SC_OK) return rc;
      tab = nt;
      continue;
    }
    tnode *v = TN(kv->value);
    if (v->v.type == SC_TOML_TABLE && !(v->flags & TF_SEALED)) {
      tab = v;
    } else if (v->v.type == SC_TOML_ARRAY && (v->flags & TF_AOT)) {
      tab = TN(v->v.u.arr.items[v->v.u.arr.len - 1]);
    } else {
      return fail_at(p, SC_EPARSE, g->line, g->col,
                     "key '%s' is %s (defined at %u:%u): a [table] header cannot extend it",
                     keyname(p, k + 1), kind_name(&v->v), (unsigned)kv->line,
                     (unsigned)kv->col);
    }
  }
  keyseg *last = &p->keys[p->nkeys - 1];
  sc_toml_kv *kv = tab_find(tab, last->s, last->len);
  const char *name = keyname(p, p->nkeys);
  if (!aot) {
    if (kv == NULL) {
      if ((rc = check_depth(p, tab->depth + 1, hline, hcol)) != SC_OK) return rc;
      tnode *nt = new_node(p, SC_TOML_TABLE, hline, hcol, tab->depth + 1);
      if (nt == NULL) return oom(p);
      nt->flags = TF_DEFINED;
      if ((rc = tab_add(p, tab, last, nt)) != SC_OK) return rc;
      *cur = nt;
    } else {
      tnode *v = TN(kv->value);
      if (v->v.type == SC_TOML_TABLE && v->flags == TF_IMPLICIT) {
        v->flags |= TF_DEFINED;
        v->v.line = hline;
        v->v.col = hcol;
        kv->line = last->line;
        kv->col = last->col;
        *cur = v;
      } else if (v->v.type == SC_TOML_TABLE && (v->flags & TF_DOTTED)) {
        return fail_at(p, SC_EPARSE, hline, hcol,
                       "table [%s] is already defined by dotted keys (at %u:%u)", name,
                       (unsigned)kv->line, (unsigned)kv->col);
      } else if (v->v.type == SC_TOML_TABLE && (v->flags & TF_SEALED)) {
        return fail_at(p, SC_EPARSE, hline, hcol,
                       "table [%s] is already defined as an inline table (at %u:%u)", name,
                       (unsigned)v->v.line, (unsigned)v->v.col);
      } else if (v->v.type == SC_TOML_TABLE) {
        return fail_at(p, SC_EPARSE, hline, hcol,
                       "table [%s] is defined more than once (first at %u:%u)", name,
                       (unsigned)v->v.line, (unsigned)v->v.col);
      } else {
        return fail_at(p, SC_EPARSE, hline, hcol,
                       "cannot define table [%s]: the key is already %s (at %u:%u)", name,
                       kind_name(&v->v), (unsigned)kv->line, (unsigned)kv->col);
      }
    }
  } else {
    tnode *arr;
    if (kv == NULL) {
      if ((rc = check_depth(p, tab->depth + 1, hline, hcol)) != SC_OK) return rc;
      arr = new_node(p, SC_TOML_ARRAY, hline, hcol, tab->depth + 1);
      if (arr == NULL) return oom(p);
      arr->flags = TF_AOT;
      if ((rc = tab_add(p, tab, last, arr)) != SC_OK) return rc;
    } else {
      arr = TN(kv->value);
      if (arr->v.type != SC_TOML_ARRAY || !(arr->flags & TF_AOT)) {
        return fail_at(p, SC_EPARSE, hline, hcol,
                       "cannot append to [[%s]]: the key is already %s (at %u:%u)", name,
                       kind_name(&arr->v), (unsigned)kv->line, (unsigned)kv->col);
      }
    }
    if ((rc = check_depth(p, arr->depth + 1, hline, hcol)) != SC_OK) return rc;
    tnode *elem = new_node(p, SC_TOML_TABLE, hline, hcol, arr->depth + 1);
    if (elem == NULL) return oom(p);
    elem->flags = TF_DEFINED;
    if ((rc = arr_add(p, arr, elem)) != SC_OK) return rc;
    *cur = elem;
  }
  return expect_eol(p, "a table header");
}

static int parse_document(parser *p) {
  tnode *cur = p->root;
  int rc;
  for (;;) {
    skip_ws(p);
    int c = peek(p);
    if (c < 0) return SC_OK;
    if (c == '#') {
      skip_comment(p);
      continue;
    }
    if (at_newline(p)) {
      eat_newline(p);
      continue;
    }
    if (c == '[') {
      rc = parse_header(p, &cur);
    } else {
      rc = parse_keyval(p, cur);
      if (rc == SC_OK) rc = expect_eol(p, "a value");
    }
    if (rc != SC_OK) return rc;
  }
}

/* ------------------------------------------------------------------------- */
/* Public API                                                                 */

int sc__toml_parse(const char *text, size_t len, const char *filename, sc_toml_doc **out,
                   sc_error *err) {
  const char *fname = filename != NULL ? filename : "<input>";
  if (out != NULL) *out = NULL;
  if (out == NULL || (text == NULL && len > 0)) {
    return sc_error_set(err, SC_EINVAL, "%s: sc__toml_parse: NULL %s", fname,
                        out == NULL ? "output" : "text");
  }
  sc_toml_doc *doc = calloc(1, sizeof *doc);
  if (doc == NULL) return sc_error_set(err, SC_ENOMEM, "%s: out of memory", fname);
  doc->filename = malloc(strlen(fname) + 1);
  if (doc->filename == NULL) {
    free(doc);
    return sc_error_set(err, SC_ENOMEM, "%s: out of memory", fname);
  }
  strcpy(doc->filename, fname);

  parser p;
  memset(&p, 0, sizeof p);
  p.s = text != NULL ? text : "";
  p.n = len;
  p.line = 1;
  p.file = doc->filename;
  p.err = err;
  if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0) { /* UTF-8 byte order mark */
    p.i = 3;
    p.line_start = 3;
  }
  int rc;
  p.root = new_node(&p, SC_TOML_TABLE, 1, 1, 0);
  if (p.root == NULL) {
    rc = sc_error_set(err, SC_ENOMEM, "%s: out of memory", fname);
  } else {
    p.root->flags = TF_DEFINED;
    doc->root = &p.root->v;
    size_t i0 = p.i, ls0 = p.line_start;
    rc = check_text(&p);
    if (rc == SC_OK) {
      p.i = i0;
      p.line = 1;
      p.line_start = ls0;
      p.ccol = 0;
      rc = parse_document(&p);
    }
  }
  keys_clear(&p);
  free(p.keys);
  free(p.sb.p);
  free(p.name.p);
  if (rc != SC_OK) {
    sc__toml_free(doc);
    return rc;
  }
  *out = doc;
  return SC_OK;
}

int sc__toml_parse_file(const char *path, sc_toml_doc **out, sc_error *err) {
  if (out != NULL) *out = NULL;
  if (path == NULL || out == NULL) {
    return sc_error_set(err, SC_EINVAL, "sc__toml_parse_file: NULL %s",
                        path == NULL ? "path" : "output");
  }
  char *buf = NULL;
  size_t len = 0;
  int rc = sc__slurp(path, SC_TEXT_INPUT_MAX, &buf, &len, err); /* capped: common/slurp.h */
  if (rc != SC_OK) return rc;
  rc = sc__toml_parse(buf, len, path, out, err);
  free(buf);
  return rc;
}

void sc__toml_free(sc_toml_doc *doc) {
  if (doc == NULL) return;
  free_value(doc->root);
  free(doc->filename);
  free(doc);
}

/* Linear search: works on any well-formed table, including ones built by hand. */
static const sc_toml_kv *find_n(const sc_toml_value *tab, const char *key, size_t n) {
  if (tab == NULL || key == NULL || tab->type != SC_TOML_TABLE) return NULL;
  for (size_t k = 0; k < tab->u.tab.len; k++) {
    const sc_toml_kv *kv = &tab->u.tab.items[k];
    if (kv->key_len == n && memcmp(kv->key, key, n) == 0) return kv;
  }
  return NULL;
}

const sc_toml_kv *sc__toml_find(const sc_toml_value *tab, const char *key) {
  if (key == NULL) return NULL;
  return find_n(tab, key, strlen(key));
}

const sc_toml_value *sc__toml_get(const sc_toml_value *tab, const char *key) {
  const sc_toml_kv *kv = sc__toml_find(tab, key);
  return kv != NULL ? kv->value : NULL;
}

const sc_toml_value *sc__toml_get_path(const sc_toml_value *tab, const char *path) {
  if (tab == NULL || path == NULL || *path == '\0') return NULL;
  const sc_toml_value *cur = tab;
  const char *s = path;
  for (;;) {
    const char *dot = strchr(s, '.');
    size_t n = dot != NULL ? (size_t)(dot - s) : strlen(s);
    if (n == 0) return NULL;
    const sc_toml_kv *kv = find_n(cur, s, n);
    if (kv == NULL) return NULL;
    cur = kv->value;
    if (dot == NULL) return cur;
    s = dot + 1;
  }
}

const char *sc__toml_type_name(sc_toml_type t) {
  switch (t) {
  case SC_TOML_TABLE: return "table";
  case SC_TOML_ARRAY: return "array";
  case SC_TOML_STRING: return "string";
  case SC_TOML_INTEGER: return "integer";
  case SC_TOML_FLOAT: return "float";
  case SC_TOML_BOOL: return "bool";
  case SC_TOML_DATETIME: return "datetime";
  case SC_TOML_DATETIME_LOCAL: return "datetime-local";
  case SC_TOML_DATE_LOCAL: return "date-local";
  case SC_TOML_TIME_LOCAL: return "time-local";
  }
  return "unknown";
}

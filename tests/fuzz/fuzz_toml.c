/*
 * libFuzzer target for the TOML parser: parse arbitrary bytes; on success encode the tree as
 * tagged JSON and walk it through the lookup helpers. Any crash, leak (LeakSanitizer) or
 * undefined behaviour (UBSan, no recovery) is a bug. Build: see docs/toml.md.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "toml/toml.h"

static void walk(const sc_toml_value *v, const sc_toml_value *root) {
  if (v->type == SC_TOML_TABLE) {
    for (size_t k = 0; k < v->u.tab.len; k++) {
      const sc_toml_kv *kv = &v->u.tab.items[k];
      if (v->u.tab.file == NULL || kv->line == 0 || kv->col == 0) abort();
      if (strlen(kv->key) == kv->key_len && sc__toml_get(v, kv->key) == NULL) abort();
      (void)sc__toml_get_path(root, kv->key);
      walk(kv->value, root);
    }
  } else if (v->type == SC_TOML_ARRAY) {
    for (size_t k = 0; k < v->u.arr.len; k++) walk(v->u.arr.items[k], root);
  } else if (v->type == SC_TOML_STRING) {
    if (v->u.str.ptr[v->u.str.len] != '\0') abort();
  }
  if (v->line == 0 || v->col == 0) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  sc_toml_doc *doc = NULL;
  sc_error err;
  int rc = sc__toml_parse((const char *)data, size, "fuzz.toml", &doc, &err);
  if (rc != SC_OK) {
    if (doc != NULL || strncmp(err.msg, "fuzz.toml:", 10) != 0) abort();
    if (rc != SC_EPARSE && rc != SC_ELIMIT && rc != SC_ENOMEM) abort();
    return 0;
  }
  walk(doc->root, doc->root);
  char *json = NULL;
  if (sc__toml_to_json(doc->root, &json, NULL) == SC_OK) free(json);
  sc__toml_free(doc);
  return 0;
}

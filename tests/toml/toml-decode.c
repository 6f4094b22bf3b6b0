/*
 * toml-decode: the decoder interface of toml-test (https://github.com/toml-lang/toml-test).
 * Reads a TOML document on stdin; on success prints its tagged JSON on stdout and exits 0;
 * on invalid input prints "<stdin>:line:col: message" on stderr and exits 1.
 */
#include <stdio.h>
#include <stdlib.h>

#include "toml/toml.h"

int main(void) {
  size_t len = 0, cap = 65536;
  char *buf = malloc(cap);
  if (buf == NULL) {
    fputs("toml-decode: out of memory\n", stderr);
    return 2;
  }
  for (;;) {
    if (len == cap) {
      char *q = realloc(buf, cap * 2);
      if (q == NULL) {
        free(buf);
        fputs("toml-decode: out of memory\n", stderr);
        return 2;
      }
      buf = q;
      cap *= 2;
    }
    size_t got = fread(buf + len, 1, cap - len, stdin);
    len += got;
    if (got == 0) break;
  }
  if (ferror(stdin)) {
    free(buf);
    fputs("toml-decode: cannot read stdin\n", stderr);
    return 2;
  }
  sc_toml_doc *doc = NULL;
  sc_error err = {0, ""};
  int rc = sc__toml_parse(buf, len, "<stdin>", &doc, &err);
  free(buf);
  if (rc != SC_OK) {
    fprintf(stderr, "%s\n", err.msg);
    return 1;
  }
  char *json = NULL;
  size_t jlen = 0;
  rc = sc__toml_to_json(doc->root, &json, &jlen);
  sc__toml_free(doc);
  if (rc != SC_OK) {
    fputs("toml-decode: out of memory\n", stderr);
    return 2;
  }
  fwrite(json, 1, jlen, stdout);
  fputc('\n', stdout);
  free(json);
  return 0;
}

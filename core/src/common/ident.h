/*
 * The identifier rule of the project's names: plugins, features, algorithms, devices and the
 * operator families a samples CSV names (a family is its operator plugin's name).
 */
#ifndef SC_COMMON_IDENT_H
#define SC_COMMON_IDENT_H

/* [A-Za-z0-9_.-]+: non-empty, ASCII letters, digits, '_', '.' and '-'. */
static inline int sc__is_identifier(const char *s) {
  if (s == NULL || *s == '\0') return 0;
  for (; *s != '\0'; s++) {
    unsigned char c = (unsigned char)*s;
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
          c == '_' || c == '.' || c == '-')) {
      return 0;
    }
  }
  return 1;
}

#endif

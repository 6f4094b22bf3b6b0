/* stepcast: the program. Dispatches to one subcommand per file in core/cli/. */
#include <stdarg.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

const char **sc_cli_plugin_files = NULL;
int sc_cli_nplugin_files = 0;

static const sc_cli_cmd commands[] = {
  {"predict", "predict one training iteration: time, breakdown, MFU, memory, timeline",
   sc_cli_predict},
  {"check", "validate spec files (model, hardware, topology, job) and print what they say",
   sc_cli_check},
  {"plugins", "list the plugins found, with kind, version, ABI, priority, path and status",
   sc_cli_plugins},
  {"comm", "predict nccl-tests collective times and bus bandwidth on a topology; "
           "--validate against published results",
   sc_cli_comm},
  {"ops", "list each pipeline stage's operators (shapes, FLOPs, bytes, estimated time), "
          "collectives and memory per GPU",
   sc_cli_ops},
  {"validate", "predict every row of a CSV of measured runs; error per row and MAPE",
   sc_cli_validate},
  {"sweep", "search every parallel configuration for the fastest; --vary a device or network",
   sc_cli_sweep},
  {"trace", "replay PyTorch profiler traces as a dependency graph (replay) and predict "
            "edits of them (whatif)",
   sc_cli_trace},
  {"sample", "measure operator families on the live device (host CPU) into a samples CSV",
   sc_cli_sample},
  {"fit", "fit residual models on samples; cross-validated MAPE of analytical, hybrid, learned",
   sc_cli_fit},
  {"estimate", "price operators or collectives with every estimator; error and MAPE against "
               "measured times",
   sc_cli_estimate},
};
static const size_t ncommands = sizeof commands / sizeof commands[0];

int sc_cli_hardware_beside(const char *samples, char *buf, size_t n) {
  const char *s = strrchr(samples, '/');
  size_t dl = s ? (size_t)(s - samples) : 0;
  if (s == NULL || dl == 0) return 0;
  snprintf(buf, n, "%.*s.toml", (int)dl, samples);
  return 1;
}

const char *sc_cli_list_unknown(const char *list, const char *const *known, size_t n,
                                size_t *len) {
  for (const char *p = list;; p++) {
    const size_t k = strcspn(p, ",");
    size_t i = 0;
    while (i < n && !(strlen(known[i]) == k && strncmp(p, known[i], k) == 0)) i++;
    if (i == n) {
      *len = k;
      return p;
    }
    p += k;
    if (*p == '\0') return NULL;
  }
}

/* Write msg on f as ONE line, without its line break, whatever text from an input file it
 * carries (a quoted CSV field, a job name, a command-line argument):
 * - a control character (below 0x20, and 0x7f) becomes \n, \r, \t or \xNN, so that no line
 *   break splits the message and no ESC sequence reaches the terminal;
 * - valid UTF-8 passes unchanged, except a C1 control (U+0080..U+009F, which terminals also
 *   obey) written \u00NN; a byte that is not part of valid UTF-8 is written \xNN;
 * - a library message that carries an XGBoost (dmlc) log, "[hh:mm:ss] file:line: what", keeps
 *   the first line of that log: the rest is XGBoost's context and stack trace. The same
 *   for a "Stack trace:" line without the stamp; trailing line breaks are dropped. */
static void put_one_line(FILE *f, const char *msg) {
  size_t n = strlen(msg);
  for (size_t i = 0; i + 11 <= n; i++) { /* "[hh:mm:ss] " */
    const char *t = msg + i;
    if (t[0] == '[' && isdigit((unsigned char)t[1]) && isdigit((unsigned char)t[2]) &&
        t[3] == ':' && isdigit((unsigned char)t[4]) && isdigit((unsigned char)t[5]) &&
        t[6] == ':' && isdigit((unsigned char)t[7]) && isdigit((unsigned char)t[8]) &&
        t[9] == ']' && t[10] == ' ') {
      const char *nl = strchr(t, '\n');
      if (nl != NULL) n = (size_t)(nl - msg);
      break;
    }
  }
  const char *st = strstr(msg, "\nStack trace:");
  if (st != NULL && (size_t)(st - msg) < n) n = (size_t)(st - msg);
  while (n > 0 && (msg[n - 1] == '\n' || msg[n - 1] == '\r')) n--;
  const unsigned char *s = (const unsigned char *)msg;
  for (size_t i = 0; i < n;) {
    const unsigned c = s[i];
    if (c < 0x80) {
      if (c == '\n') fputs("\\n", f);
      else if (c == '\r') fputs("\\r", f);
      else if (c == '\t') fputs("\\t", f);
      else if (c < 0x20 || c == 0x7f) fprintf(f, "\\x%02x", c);
      else fputc((int)c, f);
      i++;
      continue;
    }
    /* the length of a valid UTF-8 sequence at s + i (no overlong form, no surrogate, at
     * most U+10FFFF), 0 when there is none */
    size_t len = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3
               : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
    if (len > n - i) len = 0;
    for (size_t k = 1; k < len; k++) {
      const unsigned b = s[i + k];
      unsigned lo = 0x80, hi = 0xbf;
      if (k == 1 && c == 0xe0) lo = 0xa0;
      if (k == 1 && c == 0xed) hi = 0x9f;
      if (k == 1 && c == 0xf0) lo = 0x90;
      if (k == 1 && c == 0xf4) hi = 0x8f;
      if (b < lo || b > hi) len = 0;
    }
    if (len == 0) {
      fprintf(f, "\\x%02x", c);
      i++;
    } else if (c == 0xc2 && s[i + 1] < 0xa0) {
      fprintf(f, "\\u%04x", (unsigned)s[i + 1]);
      i += 2;
    } else {
      fwrite(s + i, 1, len, f);
      i += len;
    }
  }
}

/* One line on stderr: before, then fmt formatted (the whole of it, however long: a long
 * argument echoed is not cut) and escaped by put_one_line, then after and a line end. */
static void put_vline(const char *before, const char *after, const char *fmt, va_list ap) {
  va_list ap2;
  char small[1024], *msg = small;
  va_copy(ap2, ap);
  const int need = vsnprintf(small, sizeof small, fmt, ap);
  if (need < 0) small[0] = '\0';
  if (need >= (int)sizeof small) {
    char *big = malloc((size_t)need + 1);
    if (big != NULL) {
      vsnprintf(big, (size_t)need + 1, fmt, ap2);
      msg = big;
    }
  }
  va_end(ap2);
  fputs(before, stderr);
  put_one_line(stderr, msg);
  fputs(after, stderr);
  fputc('\n', stderr);
  if (msg != small) free(msg);
}

void sc_cli_eprintf(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  put_vline("", "", fmt, ap);
  va_end(ap);
}

int sc_cli_fail(const sc_error *err) {
  fputs("stepcast: ", stderr);
  put_one_line(stderr, err->msg[0] ? err->msg : sc_strerror(err->code));
  fputc('\n', stderr);
  return 1;
}

int sc_cli_usage_error(const char *cmd, const char *fmt, ...) {
  char before[96], after[128];
  va_list ap;
  snprintf(before, sizeof before, "stepcast %s: ", cmd);
  snprintf(after, sizeof after, " (see 'stepcast %s --help')", cmd);
  va_start(ap, fmt);
  put_vline(before, after, fmt, ap);
  va_end(ap);
  return 2;
}

/* 1 when the shell reads s as one word unquoted. */
static int shell_plain(const char *s) {
  if (*s == '\0') return 0;
  for (; *s; s++)
    if (!isalnum((unsigned char)*s) && strchr("_./=:,+@%-", *s) == NULL) return 0;
  return 1;
}

void sc_cli_command_line(int argc, char **argv, char *buf, size_t cap) {
  size_t n = (size_t)snprintf(buf, cap, "stepcast");
  for (int i = 0; i < argc && n + 2 < cap; i++) {
    const char *a = argv[i];
    if (shell_plain(a)) {
      int w = snprintf(buf + n, cap - n, " %s", a);
      if (w < 0) break;
      n += (size_t)w;
    } else { /* single-quoted, a quote inside as '\'' : the line can be pasted back */
      buf[n++] = ' ';
      if (n + 1 < cap) buf[n++] = '\'';
      for (; *a && n + 5 < cap; a++) {
        if (*a == '\'') {
          memcpy(buf + n, "'\\''", 4);
          n += 4;
        } else {
          buf[n++] = *a;
        }
      }
      if (n + 1 < cap) buf[n++] = '\'';
      buf[n] = '\0';
    }
    if (n >= cap) n = cap - 1;
  }
}

static void usage(FILE *out) {
  fprintf(out,
          "stepcast %s: predict the step time of distributed LLM training\n\n"
          "usage: stepcast [--plugin FILE]... <command> [options]\n"
          "       stepcast --help | --version\n\n"
          "commands:\n",
          sc_version());
  for (size_t i = 0; i < ncommands; i++) {
    fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
  }
  fprintf(out,
          "\n'stepcast <command> --help' describes a command's options.\n"
          "--plugin FILE (on any command) loads one more plugin; STEPCAST_PLUGIN_PATH lists\n"
          "more plugin folders; STEPCAST_PLUGINS_VERBOSE=1 narrates plugin discovery.\n");
}

/* Take every --plugin FILE / --plugin=FILE out of argv (wherever it stands). */
static int collect_plugin_flags(int *argc, char **argv) {
  int out = 0;
  sc_cli_plugin_files = calloc((size_t)*argc + 1, sizeof *sc_cli_plugin_files);
  if (sc_cli_plugin_files == NULL) return -1;
  for (int i = 0; i < *argc; i++) {
    if (strcmp(argv[i], "--plugin") == 0) {
      if (i + 1 >= *argc) return -1;
      sc_cli_plugin_files[sc_cli_nplugin_files++] = argv[++i];
    } else if (strncmp(argv[i], "--plugin=", 9) == 0) {
      sc_cli_plugin_files[sc_cli_nplugin_files++] = argv[i] + 9;
    } else {
      argv[out++] = argv[i];
    }
  }
  argv[out] = NULL;
  *argc = out;
  return 0;
}

int main(int argc, char **argv) {
  int rc;
  if (collect_plugin_flags(&argc, argv) != 0) {
    fprintf(stderr, "stepcast: --plugin needs a file\n");
    free(sc_cli_plugin_files);
    return 2;
  }
  if (argc < 2) {
    usage(stderr);
    rc = 2;
  } else if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
             strcmp(argv[1], "help") == 0) {
    usage(stdout);
    rc = 0;
  } else if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
    printf("stepcast %s (plugin ABI %d.%d)\n", sc_version(), SC_PLUGIN_ABI_MAJOR,
           SC_PLUGIN_ABI_MINOR);
    rc = 0;
  } else {
    rc = -1;
    for (size_t i = 0; i < ncommands; i++) {
      if (strcmp(argv[1], commands[i].name) == 0) {
        rc = commands[i].run(argc - 1, argv + 1);
        break;
      }
    }
    if (rc == -1) {
      fprintf(stderr, "stepcast: unknown command '%s' (see 'stepcast --help')\n", argv[1]);
      rc = 2;
    }
  }
  free(sc_cli_plugin_files);
  /* Every subcommand's standard output, checked in one place: a full disk or a closed pipe
   * must not pass for a complete CSV (fflush: what is still buffered; ferror: a write that
   * failed earlier). */
  errno = 0;
  if ((fflush(stdout) != 0 || ferror(stdout)) && rc == 0) { /* else the command said why */
    const int e = errno;
    fprintf(stderr, "stepcast: error writing standard output: %s\n",
            e ? strerror(e) : "write error");
    rc = 1;
  }
  return rc;
}

/* The stepcast program: shared pieces of the subcommands (core/cli/ only). */
#ifndef SC_CLI_H
#define SC_CLI_H

#include <stdio.h>

#include "stepcast/stepcast.h"

/* One subcommand: run() gets argv with argv[0] = the subcommand's name and returns the
 * process exit status (0 ok, 1 failure, 2 usage). */
typedef struct sc_cli_cmd {
  const char *name;
  const char *summary;
  int (*run)(int argc, char **argv);
} sc_cli_cmd;

/* Files given with --plugin FILE (any subcommand); collected by main() before dispatch. */
extern const char **sc_cli_plugin_files;
extern int sc_cli_nplugin_files;

/* Print "stepcast: <msg>" for err on stderr and return 1. */
int sc_cli_fail(const sc_error *err);
/* One line on stderr, formatted as printf does (no trailing newline in fmt), with what an
 * input file put in it (line breaks, terminal controls) escaped as sc_cli_fail does. */
void sc_cli_eprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Print "stepcast <cmd>: <printf message>" on stderr and return 2 (a usage error). */
int sc_cli_usage_error(const char *cmd, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* A registry for a subcommand: logs to stderr (information only with
 * STEPCAST_PLUGINS_VERBOSE=1), discovers plugins including the --plugin files. On failure
 * *out is NULL and err says why (a refused --plugin file names it). Free with
 * sc_registry_free. Defined in plugins.c. */
int sc_cli_registry_open(sc_registry **out, sc_error *err);

/* The first item of the comma-separated list that is none of known[0..n), an empty one
 * included, with its length in *len; NULL when every item is known. Defined in main.c. */
const char *sc_cli_list_unknown(const char *list, const char *const *known, size_t n,
                                size_t *len);

/* "stepcast <subcommand> <args...>" into buf (cut to cap - 1 bytes), for the headers of the
 * files a subcommand writes; argv as the subcommand received it. */
void sc_cli_command_line(int argc, char **argv, char *buf, size_t cap);

/* Subcommands (one file each). */
int sc_cli_check(int argc, char **argv);
int sc_cli_plugins(int argc, char **argv);
int sc_cli_comm(int argc, char **argv);
int sc_cli_ops(int argc, char **argv);
int sc_cli_predict(int argc, char **argv);
int sc_cli_validate(int argc, char **argv);
/* validate --memory FILE (validate_memory.c); NULL prints its help. */
int sc_cli_validate_memory(const char *file);
int sc_cli_sweep(int argc, char **argv);
int sc_cli_trace(int argc, char **argv);
int sc_cli_sample(int argc, char **argv);
int sc_cli_fit(int argc, char **argv);
int sc_cli_estimate(int argc, char **argv);
/* stepcast fit --test (estimate.c): score a residual set on a samples file, after fitting it
 * when --samples is given too. */
int sc_cli_fit_test(int argc, char **argv);

/* The hardware file of a samples file X/<name>/samples.csv: X/<name>.toml, into buf; 0 when
 * the path has no folder to name it by. */
int sc_cli_hardware_beside(const char *samples, char *buf, size_t n);

#endif

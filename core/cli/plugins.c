/*
 * `stepcast plugins`: every plugin considered, with kind, name, version, ABI, priority,
 * path and status (and why it was refused or overridden), as a table or as JSON.
 * Also the registry set-up every subcommand shares (sc_cli_registry_open).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "stepcast/report.h"

/* ------------------------------------------------------------------------- */
/* The shared registry set-up                                                */

static int sc__cli_verbose(void) {
  const char *v = getenv("STEPCAST_PLUGINS_VERBOSE");
  return v != NULL && v[0] != '\0' && strcmp(v, "0") != 0;
}

/* Errors and warnings always go to stderr; information (the discovery narration of
 * STEPCAST_PLUGINS_VERBOSE=1, plugins' own notes) only in verbose mode. */
static void sc__cli_log(sc_log_level level, const char *who, const char *msg, void *ud) {
  static const char *const names[] = {"error", "warning", "info", "debug"};
  (void)ud;
  if (level > SC_LOG_WARN && !sc__cli_verbose()) return;
  sc_cli_eprintf("stepcast: [%s] %s: %s",
          (unsigned)level < 4 ? names[level] : "log", who != NULL ? who : "?", msg);
}

/* One warning line on stderr per takeover (a plugin answering in place of another for a
 * family, algorithm or device kind): a plugin that changes predictions must say so. Once
 * per process: a threaded sweep opens one registry per thread, all alike. */
static void sc__cli_warn_overrides(const sc_registry *reg) {
  static int warned = 0;
  size_t n = sc_registry_override_count(reg);
  if (warned) return;
  warned = 1;
  for (size_t i = 0; i < n; i++) {
    sc_plugin_override o;
    if (sc_registry_override(reg, i, &o) != SC_OK) continue;
    if (o.kind == SC_PLUGIN_KIND_COLLECTIVE) {
      sc_cli_eprintf(
              "stepcast: [warning] plugins: %s (collective '%s', priority %d) takes over "
              "algorithm '%s' from '%s' of %s (priority %d)",
              o.by_path, o.by_name, (int)o.by_priority, o.name, o.from_name, o.from_path,
              (int)o.from_priority);
    } else {
      sc_cli_eprintf(
              "stepcast: [warning] plugins: %s (priority %d) overrides %s '%s' of %s "
              "(priority %d)",
              o.by_path, (int)o.by_priority,
              o.kind == SC_PLUGIN_KIND_OP ? "operator family" : "device kind", o.name,
              o.from_path, (int)o.from_priority);
    }
  }
}

int sc_cli_registry_open(sc_registry **out, sc_error *err) {
  sc_registry *reg = NULL;
  int rc = sc_registry_new(&reg, err);
  *out = NULL;
  if (rc != SC_OK) return rc;
  sc_registry_set_log(reg, sc__cli_log, NULL);
  rc = sc_registry_discover(reg, sc_cli_plugin_files, (size_t)sc_cli_nplugin_files, err);
  if (rc != SC_OK) {
    sc_registry_free(reg);
    return rc;
  }
  sc__cli_warn_overrides(reg);
  *out = reg;
  return SC_OK;
}

/* ------------------------------------------------------------------------- */
/* Listing                                                                   */

static const char *kind_word(sc_plugin_kind k) {
  switch (k) {
  case SC_PLUGIN_KIND_OP: return "op";
  case SC_PLUGIN_KIND_COLLECTIVE: return "collective";
  case SC_PLUGIN_KIND_HARDWARE: return "hardware";
  default: return "-";
  }
}

static const char *status_word(sc_plugin_status s) {
  switch (s) {
  case SC_PLUGIN_LOADED: return "loaded";
  case SC_PLUGIN_OVERRIDDEN: return "overridden";
  default: return "refused";
  }
}

static void print_json(FILE *out, const sc_registry *reg) {
  size_t n = sc_registry_count(reg);
  fprintf(out, "{\n  \"schema_version\": %d,\n  \"stepcast_version\": ", SC_REPORT_SCHEMA_VERSION);
  sc_json_string(out, sc_version());
  fprintf(out, ",\n  \"abi\": {\"major\": %d, \"minor\": %d},\n  \"plugins\": [",
          SC_PLUGIN_ABI_MAJOR, SC_PLUGIN_ABI_MINOR);
  for (size_t i = 0; i < n; i++) {
    sc_plugin_info p;
    if (sc_registry_info(reg, i, &p) != SC_OK) continue;
    fprintf(out, "%s\n    {\"kind\": ", i ? "," : "");
    if (p.kind == 0) {
      fputs("null", out);
    } else {
      sc_json_string(out, kind_word(p.kind));
    }
    fputs(", \"name\": ", out);
    sc_json_string(out, p.name);
    fputs(", \"version\": ", out);
    sc_json_string(out, p.version);
    fprintf(out, ", \"abi\": {\"major\": %u, \"minor\": %u}, \"priority\": %d, \"path\": ",
            (unsigned)p.abi_major, (unsigned)p.abi_minor, (int)p.priority);
    sc_json_string(out, p.path);
    fputs(", \"status\": ", out);
    sc_json_string(out, status_word(p.status));
    fputs(", \"reason\": ", out);
    sc_json_string(out, p.reason);
    fputc('}', out);
  }
  fprintf(out, "%s]\n}\n", n ? "\n  " : "");
}

static void print_table(FILE *out, const sc_registry *reg) {
  size_t n = sc_registry_count(reg);
  int wname = 4, wver = 7;
  size_t nloaded = 0, nover = 0, nref = 0;
  for (size_t i = 0; i < n; i++) {
    sc_plugin_info p;
    if (sc_registry_info(reg, i, &p) != SC_OK) continue;
    if ((int)strlen(p.name) > wname) wname = (int)strlen(p.name);
    if ((int)strlen(p.version) > wver) wver = (int)strlen(p.version);
  }
  fprintf(out, "%-10s  %-*s  %-*s  %-5s  %8s  %-10s  %s\n", "KIND", wname, "NAME", wver,
          "VERSION", "ABI", "PRIORITY", "STATUS", "PATH");
  for (size_t i = 0; i < n; i++) {
    sc_plugin_info p;
    char abi[16], prio[16];
    if (sc_registry_info(reg, i, &p) != SC_OK) continue;
    if (p.abi_major == 0 && p.abi_minor == 0 && p.kind == 0) {
      snprintf(abi, sizeof abi, "-");
    } else {
      snprintf(abi, sizeof abi, "%u.%u", (unsigned)p.abi_major, (unsigned)p.abi_minor);
    }
    if (p.kind == 0) {
      snprintf(prio, sizeof prio, "-");
    } else {
      snprintf(prio, sizeof prio, "%d", (int)p.priority);
    }
    fprintf(out, "%-10s  %-*s  %-*s  %-5s  %8s  %-10s  %s\n", kind_word(p.kind), wname,
            p.name[0] ? p.name : "-", wver, p.version[0] ? p.version : "-", abi, prio,
            status_word(p.status), p.path);
    if (p.status != SC_PLUGIN_LOADED) {
      fprintf(out, "%-10s  why: %s\n", "", p.reason);
    }
    nloaded += p.status == SC_PLUGIN_LOADED;
    nover += p.status == SC_PLUGIN_OVERRIDDEN;
    nref += p.status == SC_PLUGIN_REFUSED;
  }
  fprintf(out, "\n%zu loaded, %zu overridden, %zu refused (stepcast %s, plugin ABI %d.%d)\n",
          nloaded, nover, nref, sc_version(), SC_PLUGIN_ABI_MAJOR, SC_PLUGIN_ABI_MINOR);
}

static void plugins_help(FILE *out) {
  fprintf(out,
          "usage: stepcast [--plugin FILE]... plugins [--json]\n\n"
          "Lists every plugin considered: kind, name, version, ABI, priority, status (loaded,\n"
          "overridden by a higher priority, or refused and why) and path.\n\n"
          "  --json       print JSON instead of a table\n"
          "  --plugin F   load plugin file F too (any command)\n\n"
          "Plugins are searched in STEPCAST_PLUGIN_PATH (colon list), then the build tree's\n"
          "or the installation's plugin folder; STEPCAST_PLUGINS_VERBOSE=1 narrates each\n"
          "file considered on stderr. Exit status: 0, or 1 when a --plugin file was refused.\n");
}

int sc_cli_plugins(int argc, char **argv) {
  sc_registry *reg = NULL;
  sc_error err;
  int json = 0, rc;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--json") == 0) {
      json = 1;
    } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      plugins_help(stdout);
      return 0;
    } else {
      return sc_cli_usage_error("plugins", "unknown argument '%s'", argv[i]);
    }
  }
  rc = sc_registry_new(&reg, &err);
  if (rc != SC_OK) return sc_cli_fail(&err);
  sc_registry_set_log(reg, sc__cli_log, NULL);
  /* Discover, and list even when a --plugin file was refused: the listing says why. */
  err.code = SC_OK;
  err.msg[0] = '\0';
  rc = sc_registry_discover(reg, sc_cli_plugin_files, (size_t)sc_cli_nplugin_files, &err);
  if (rc == SC_ENOMEM) {
    sc_registry_free(reg);
    return sc_cli_fail(&err);
  }
  sc__cli_warn_overrides(reg);
  if (json) {
    print_json(stdout, reg);
  } else {
    print_table(stdout, reg);
  }
  sc_registry_free(reg);
  if (rc != SC_OK) return sc_cli_fail(&err);
  return 0;
}

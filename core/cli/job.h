/* A training job as the CLI reads it: from flags, from a TOML file ([job] table with the
 * same keys, '-' written '_'), or both (flags override the file). Shared by predict and
 * validate. */
#ifndef SC_CLI_JOB_H
#define SC_CLI_JOB_H

#include "stepcast/estimate.h"
#include "stepcast/predict.h"
#include "stepcast/stack.h"
#include "stepcast/stepcast.h"

typedef struct sc_cli_job {
  char model[SC_PATH_MAX];
  char topology[SC_PATH_MAX];
  char hardware[SC_PATH_MAX];   /* "" = the topology's */
  char stack[SC_PATH_MAX];      /* "" = none (one kernel per operator, the host keeps up) */
  char residuals[SC_PATH_MAX];  /* "" = the device's own (hardware/<device>/residuals/) */
  uint32_t gpus;                /* 0 = tp*pp*dp*cp */
  sc_parallel par;
  int given[4];                 /* tp, pp, dp, cp given explicitly */
  int seq_given;                /* seq_len given (else the model's max_seq) */
  int overlap_given[3];         /* overlap_grad_reduce, overlap_param_gather, overlap_tp_comm
                                 * stated (else the stack's, sc_stack_overlap_defaults) */
  uint32_t nstage_layers;       /* entries of --stage-layers (0: an even split) */
  uint32_t first_layers, last_layers; /* --first-stage-layers, --last-stage-layers (0: not
                                       * given); sc_cli_job_finish turns them into the split */
  int estimator_given;          /* --estimator (or the job file's) stated; else the default,
                                 * settled by sc_cli_job_residuals */
  char estimator_source[320];   /* why the estimator is the one used, for the output ("" when
                                 * stated) */
  sc_predict_opts opts;
  char algo[16];
  /* Where a job file set the model, topology, hardware, stack or residuals ("file:line:col:
   * key 'job.model'"); "" when a flag set it or nothing did (sc_cli_job_blame). */
  char where[5][SC_PATH_MAX + 48];
} sc_cli_job;

enum {
  SC_CLI_JOB_MODEL = 0,
  SC_CLI_JOB_TOPOLOGY,
  SC_CLI_JOB_HARDWARE,
  SC_CLI_JOB_STACK,
  SC_CLI_JOB_RESIDUALS
};

/* err (from loading what j names as `which`, SC_CLI_JOB_*) prefixed with the job file's
 * file:line:col and key when the file set it; returns err->code. */
int sc_cli_job_blame(const sc_cli_job *j, int which, sc_error *err);

/* The residual sets j's estimator prices with, for predict and check alike. With an
 * estimator stated: none for the analytical one (a residuals folder named then is refused);
 * else the operators' set j names (loaded and checked against dev) or the device's own
 * beside its hardware file (hw_path), and the topology's collective set when fitted. With
 * none stated, the default is the best the shipped files support: hybrid with the set j
 * names or the device's own where it has one that applies under the job's stack
 * (stack_name: the loaded stack's name, NULL for none), else analytical; j->opts.estimator
 * and j->estimator_source say which and why. *ops and *coll are NULL or owned by the caller
 * (sc_residuals_free); errors name the job file's key when it set it. */
int sc_cli_job_residuals(sc_cli_job *j, const char *hw_path, const sc_topology *topo,
                         const sc_device *dev, const sc_registry *reg, const char *stack_name,
                         sc_residuals **ops, sc_residuals **coll, sc_error *err);

/* 1 when residual set r applies under the stack named stack_name (NULL: none): r was fitted
 * without a stack, or under that one. */
int sc_cli_residuals_apply(const sc_residuals *r, const char *stack_name);

/* The default estimator's operator residuals: the device's own set beside its hardware file
 * (hw_path) when it has one that applies under stack_name, else *ops NULL (analytical); why,
 * in source (cap bytes). SC_OK unless the set is there and cannot be loaded or checked. */
int sc_cli_default_residuals(const char *hw_path, const sc_device *dev, const sc_registry *reg,
                             const char *stack_name, sc_residuals **ops, char *source,
                             size_t cap, sc_error *err);

/* Defaults: nothing named, sc_parallel_defaults, analytical, algo auto. */
void sc_cli_job_init(sc_cli_job *j);

/* Apply one option. name is the key without dashes in either spelling ("micro-batch" or
 * "micro_batch"); value is NULL for a boolean flag given bare. Returns SC_OK, SC_ENOTFOUND
 * for an unknown key, or SC_EINVAL with err naming the key and the bad value. */
int sc_cli_job_set(sc_cli_job *j, const char *name, const char *value, sc_error *err);

/* Is name (without dashes, either spelling, "no-" allowed before a boolean) a job key? */
int sc_cli_job_known(const char *name);

/* Is name (without dashes) a boolean job key ("sequence-parallel", "no-flash-attention")? */
int sc_cli_job_is_bool(const char *name);

/* Read a [job] table from a TOML file: every key must be a job key; errors name
 * file:line:col and the key. */
int sc_cli_job_load(sc_cli_job *j, const char *path, sc_error *err);

/* Complete the job: derive the one missing degree from gpus, default seq_len to the model's
 * max_seq, check gpus == tp*pp*dp*cp; errors name the parameter. */
int sc_cli_job_finish(sc_cli_job *j, const sc_model *m, sc_error *err);

/* What a prediction of a job needs, loaded by sc_cli_job_open; free with
 * sc_cli_job_inputs_free (what was loaded, also after a failure). */
typedef struct sc_cli_job_inputs {
  sc_model model;
  sc_topology topo;
  sc_device dev;
  sc_stack stack;       /* valid when the job names one (j->opts.stack points at it) */
  sc_registry *reg;
  sc_residuals *resid, *cresid;
} sc_cli_job_inputs;

/* Load j's model and topology, complete j (sc_cli_job_finish), open the registry, load the
 * device (j's hardware or the topology's) and j's stack (its overlap switches applied to
 * those j leaves unstated), and settle the residual sets (sc_cli_job_residuals) into
 * j->opts. Errors name the job file's key where it set the file. in must live as long as
 * j->opts is used (j->opts.stack points into it). */
int sc_cli_job_open(sc_cli_job *j, sc_cli_job_inputs *in, sc_error *err);
void sc_cli_job_inputs_free(sc_cli_job_inputs *in);

/* The CLI spelling of a schedule ("gpipe", "1f1b", "interleaved"); "?" outside the enum. */
const char *sc_cli_schedule_name(sc_schedule_kind k);

/* One line listing the job keys for --help. */
void sc_cli_job_help(FILE *out);

#endif

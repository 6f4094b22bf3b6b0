/* A job's inputs loaded for a prediction (job.h, sc_cli_job_open): apart from job.c, which
 * the job-file fuzzer compiles alone, because it opens the registry (plugins.c). */
#include <string.h>

#include "cli.h"
#include "job.h"

int sc_cli_job_open(sc_cli_job *j, sc_cli_job_inputs *in, sc_error *err) {
  memset(in, 0, sizeof *in);
  if (sc_model_load(j->model, &in->model, err) != SC_OK)
    return sc_cli_job_blame(j, SC_CLI_JOB_MODEL, err);
  if (sc_topology_load(j->topology, &in->topo, err) != SC_OK)
    return sc_cli_job_blame(j, SC_CLI_JOB_TOPOLOGY, err);
  int rc = sc_cli_job_finish(j, &in->model, err);
  if (rc == SC_OK) rc = sc_cli_registry_open(&in->reg, err);
  if (rc != SC_OK) return rc;
  const char *hw = j->hardware[0] ? j->hardware : in->topo.hardware;
  if (sc_hardware_load(in->reg, hw, &in->dev, err) != SC_OK)
    return j->hardware[0] ? sc_cli_job_blame(j, SC_CLI_JOB_HARDWARE, err) : err->code;
  if (j->stack[0] != '\0') {
    if (sc_stack_load(j->stack, &in->stack, err) != SC_OK)
      return sc_cli_job_blame(j, SC_CLI_JOB_STACK, err);
    j->opts.stack = &in->stack; /* sc_predict prices its attention kernel on this device */
    sc_stack_overlap_defaults(&in->stack, j->overlap_given, &j->par); /* the switches left */
  }
  rc = sc_cli_job_residuals(j, hw, &in->topo, &in->dev, in->reg,
                            j->stack[0] ? in->stack.name : NULL, &in->resid, &in->cresid, err);
  if (rc != SC_OK) return rc;
  j->opts.residuals = in->resid;
  j->opts.coll_residuals = in->cresid;
  j->opts.estimator_source = j->estimator_source;
  return SC_OK;
}

void sc_cli_job_inputs_free(sc_cli_job_inputs *in) {
  if (in == NULL) return;
  sc_residuals_free(in->resid);
  sc_residuals_free(in->cresid);
  sc_registry_free(in->reg);
  in->resid = in->cresid = NULL;
  in->reg = NULL;
}

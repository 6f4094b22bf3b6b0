/* How much of a pass's communication the compute stream waits for (docs/schedule.md,
 * "TP/CP overlap", "Sharded data parallelism"): shared by the schedule and the sweep's
 * lower bound, which must agree to the bit. */
#ifndef SC_SCHEDULE_EXPOSED_H
#define SC_SCHEDULE_EXPOSED_H

/* The exposed part of communication c of which `hide` may run under compute x. */
static inline double sc__exposed_part(double c, double hide, double x) {
  double over = hide - x;
  return (c - hide) + (over > 0.0 ? over : 0.0);
}

/* The same with the part that may hide a fraction f of c. */
static inline double sc__exposed(double c, double f, double x) {
  return sc__exposed_part(c, c * f, x);
}

/* TP communication c under overlap fraction f, of which `fixed` stays exposed whatever
 * the fraction (sc_sched_chunk.tp_fwd_fixed_s): f of the rest may hide under x. With
 * fixed 0 this is sc__exposed(c, f, x) to the bit. */
static inline double sc__exposed_tp(double c, double fixed, double f, double x) {
  return sc__exposed_part(c, f * (c - fixed), x);
}

#endif /* SC_SCHEDULE_EXPOSED_H */

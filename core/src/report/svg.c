/* SVG stacked bar chart of the iteration breakdown (stepcast/report.h). Hand-written SVG
 * 1.1: one horizontal bar for the critical stage split into one rect per term, a time axis
 * with "nice" ticks (1, 2, 5 x 10^k), a title and a legend with time and share. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "report/report_int.h"
#include "stepcast/report.h"
#include "stepcast/stepcast.h"

static void xml_text(FILE *out, const char *s) {
  for (; *s; s++) {
    switch (*s) {
    case '&': fputs("&amp;", out); break;
    case '<': fputs("&lt;", out); break;
    case '>': fputs("&gt;", out); break;
    case '"': fputs("&quot;", out); break;
    case '\'': fputs("&apos;", out); break;
    default:
      if ((unsigned char)*s >= 0x20 || *s == '\t') fputc(*s, out);
    }
  }
}

/* Tick step giving about `want` ticks over [0, span]. */
static double nice_step(double span, int want) {
  double raw = span / want;
  double p10 = pow(10.0, floor(log10(raw)));
  double m = raw / p10;
  double step = m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10;
  return step * p10;
}

/* Colours by meaning, so that no two terms of one chart share a colour: compute families
 * in cool colours (Okabe & Ito, "Color Universal Design", 2008, and Paul Tol's muted
 * scheme), communication in warm ones, the bubble in grey, the optimizer in black. */
static const char *const compute_palette[] = {"#0072B2", "#56B4E9", "#009E73", "#88CCEE",
                                              "#44AA99", "#117733", "#332288", "#6699CC",
                                              "#999933", "#AA4499", "#882255", "#DDCC77",
                                              "#661100", "#6A3D9A", "#1F78B4", "#B2DF8A"};

static const char *term_colour(const sc_report_term *t, size_t i) {
  static const struct { const char *key, *colour; } fixed[] = {
      {"tp_exposed", "#D55E00"}, {"cp_exposed", "#E69F00"}, {"dp_exposed", "#CC79A7"},
      {"p2p_exposed", "#F0E442"}, {"bubble", "#BBBBBB"},    {"optimizer", "#000000"}};
  for (size_t k = 0; k < sizeof fixed / sizeof fixed[0]; k++) {
    if (strcmp(t->key, fixed[k].key) == 0) return fixed[k].colour;
  }
  return compute_palette[i % (sizeof compute_palette / sizeof compute_palette[0])];
}

int sc_report_svg(FILE *out, const sc_result *r, sc_error *err) {
  if (out == NULL || r == NULL)
    return sc_error_set(err, SC_EINVAL, "report: svg: %s is NULL", out == NULL ? "out" : "result");
  if (!(r->iteration_s > 0) || !isfinite(r->iteration_s))
    return sc_error_set(err, SC_EINVAL, "report: svg: iteration_s = %g must be > 0",
                        r->iteration_s);
  int frc = sc__result_check_finite(r, "svg", err);
  if (frc != SC_OK) return frc;
  if (!isfinite(r->iteration_s * 1e3))
    return sc_error_set(err, SC_ERANGE, "report: svg: iteration_s = %g is too large to plot in "
                        "milliseconds", r->iteration_s);
  sc_report_term t[SC_REPORT_MAX_TERMS];
  size_t nt = sc_report_terms(&r->breakdown, t, SC_REPORT_MAX_TERMS);
  const double W = 760, left = 40, right = 40, plot_w = W - left - right;
  const double bar_y = 70, bar_h = 44, axis_y = bar_y + bar_h + 6;
  const double legend_y = axis_y + 52, row_h = 22;
  const double H = legend_y + row_h * (double)nt + 16;
  const double T_ms = r->iteration_s * 1e3;

  fprintf(out,
          "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
          "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%.0f\" "
          "height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" font-family=\"DejaVu Sans, Helvetica, "
          "Arial, sans-serif\" font-size=\"12\">\n",
          W, H, W, H);
  fprintf(out, "<rect class=\"background\" x=\"0\" y=\"0\" width=\"%.0f\" height=\"%.0f\" "
               "fill=\"#ffffff\"/>\n", W, H);
  fputs("<text x=\"40\" y=\"24\" font-size=\"15\" font-weight=\"bold\">Iteration time "
        "breakdown: ", out);
  xml_text(out, r->model[0] ? r->model : "model");
  fputs("</text>\n", out);
  fprintf(out, "<text x=\"40\" y=\"44\" fill=\"#333333\">");
  char line[256];
  snprintf(line, sizeof line,
           "%s, %u GPUs (TP %u, PP %u, DP %u, CP %u), %s: %.3f ms per iteration, "
           "stage %u",
           r->hardware[0] ? r->hardware : "hardware", r->gpus, r->parallel.tp, r->parallel.pp,
           r->parallel.dp, r->parallel.cp, sc_schedule_kind_name(r->parallel.schedule), T_ms,
           r->breakdown.stage);
  xml_text(out, line);
  fputs("</text>\n", out);

  /* the stacked bar */
  fputs("<g class=\"bar\">\n", out);
  double x = left;
  for (size_t i = 0; i < nt; i++) {
    double w = plot_w * t[i].seconds / r->iteration_s;
    if (!(w >= 0)) w = 0;
    fprintf(out,
            "<rect class=\"term\" data-term=\"%s\" x=\"%.3f\" y=\"%.1f\" width=\"%.3f\" "
            "height=\"%.1f\" fill=\"%s\"><title>",
            t[i].key, x, bar_y, w, bar_h, term_colour(&t[i], i));
    snprintf(line, sizeof line, "%s: %.3f ms (%.1f %%)", t[i].label, t[i].seconds * 1e3,
             100.0 * t[i].seconds / r->iteration_s);
    xml_text(out, line);
    fputs("</title></rect>\n", out);
    x += w;
  }
  fputs("</g>\n", out);

  /* the time axis */
  fprintf(out, "<g class=\"axis\" stroke=\"#000000\">\n<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
               "y2=\"%.1f\"/>\n", left, axis_y, left + plot_w, axis_y);
  double step = nice_step(T_ms, 6);
  int nticks = 0;
  for (double v = 0; v <= T_ms * (1 + 1e-9) && nticks < 64; v += step, nticks++) {
    double tx = left + plot_w * v / T_ms;
    fprintf(out, "<line x1=\"%.2f\" y1=\"%.1f\" x2=\"%.2f\" y2=\"%.1f\"/>\n", tx, axis_y, tx,
            axis_y + 5);
  }
  fputs("</g>\n<g class=\"tick-labels\" text-anchor=\"middle\">\n", out);
  nticks = 0;
  for (double v = 0; v <= T_ms * (1 + 1e-9) && nticks < 64; v += step, nticks++) {
    double tx = left + plot_w * v / T_ms;
    fprintf(out, "<text x=\"%.2f\" y=\"%.1f\">%g</text>\n", tx, axis_y + 18, v);
  }
  fprintf(out, "</g>\n<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">time within the "
               "iteration (ms)</text>\n", left + plot_w / 2, axis_y + 36);

  /* the legend */
  fputs("<g class=\"legend\">\n", out);
  for (size_t i = 0; i < nt; i++) {
    double ly = legend_y + row_h * (double)i;
    fprintf(out,
            "<rect class=\"swatch\" x=\"%.1f\" y=\"%.1f\" width=\"14\" height=\"14\" "
            "fill=\"%s\" stroke=\"#333333\" stroke-width=\"0.5\"/>\n",
            left, ly, term_colour(&t[i], i));
    fprintf(out, "<text x=\"%.1f\" y=\"%.1f\">", left + 22, ly + 11.5);
    xml_text(out, t[i].label);
    fprintf(out, "</text>\n<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%.3f ms</text>\n",
            left + 380, ly + 11.5, t[i].seconds * 1e3);
    fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%.1f %%</text>\n", left + 460,
            ly + 11.5, 100.0 * t[i].seconds / r->iteration_s);
  }
  fputs("</g>\n</svg>\n", out);
  return sc__io_status(out, "svg", err);
}

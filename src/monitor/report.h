/*
 * report.h -- `infera monitor report REF --log SRC ... --html OUT` (issue
 * 23): one self-contained static HTML file with the drift and quality views
 * (inline SVG charts, inline CSS, no script and no external asset: it opens
 * offline, from a mail attachment, from a CI artifact).
 *
 * The caller assembles the report's data as one JSON object:
 *   {"model","version","generated","rows",
 *    "overall":   drift JSON of the whole log (profile.h),
 *    "window_s":  window length, "windows": [drift JSON + "start","end", ...],
 *    "histograms": inf__mon_histograms_json,
 *    "quality":   {"task","rows_joined",...,"metrics":{...}} or absent,
 *    "quality_windows": [{"start","rows","metrics":{...}}, ...] or absent}
 * and the report embeds it verbatim (a <script type="application/json"
 * id="report-data"> block, never executed) so machines can read the numbers
 * the charts show.
 */
#ifndef INF_MONITOR_REPORT_H
#define INF_MONITOR_REPORT_H

#include <stdio.h>

#include <cjson/cJSON.h>

#include "infera/infera.h"

/* Writes the HTML to f.  INF_EIO (a write failed), INF_ENOMEM. */
inf_status inf__mon_report_html(FILE *f, const cJSON *report, inf_error *err);

#endif /* INF_MONITOR_REPORT_H */

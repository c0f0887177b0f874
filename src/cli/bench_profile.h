/*
 * bench_profile.h -- `infera bench --profile`: printing a session's per-node
 * profile (inf_session_profile) after the timed runs (bench_profile.c).
 */
#ifndef INF_CLI_BENCH_PROFILE_H
#define INF_CLI_BENCH_PROFILE_H

#include <stdbool.h>

#include "infera/session.h"

/* Prints the profile of session (created with options.profile) as a table
 * sorted by time with a summary by op type, or, with json, as
 * `,"profile":[...],"profile_run_us":MEAN` to go inside bench's JSON object
 * (the caller prints the braces).  Returns 0, or 1 (after a message naming
 * cmd on stderr) when out of memory. */
int bench_profile_print(const char *cmd, const inf_session *session, bool json);

#endif /* INF_CLI_BENCH_PROFILE_H */

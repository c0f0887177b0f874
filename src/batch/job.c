/*
 * job.c -- a batch job's identity, its checkpoint file and the job log.
 *
 * The checkpoint is HOME/jobs/<job id>.json, one JSON object replaced
 * atomically (written to <id>.json.tmp, then rename(2)), so a crash at any
 * point leaves either the old or the new checkpoint, never a torn one.  The
 * job id is 16 hex chars of SHA-256("model version key \n input \n output \n
 * shard"), so re-running the same command finds the same job; --job-id
 * overrides it.  URIs in the file are redacted (no passwords).
 * The checkpoint records what identifies the job's work -- input, output,
 * errors and shard (redacted URIs), model version and SHA-256, pipeline hash
 * -- and the device:inode of each file the job writes, so a resume can
 * refuse a different command and never truncates a file it did not write
 * (cmd_batch.c checks them; docs/batch.md "Crashes").
 * The job log HOME/jobs/jobs.jsonl gets one line per finished job when the
 * model is a file (a registry model's jobs go to the registry instead).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "batch/batch_int.h"

void inf__job_make_id(const char *model_key, const char *input, const char *output, const char *shard, char out[80]) {
    inf_sha256 c;
    uint8_t d[32];
    char hex[65];
    inf_sha256_init(&c);
    const char *parts[4] = {model_key, input, output, shard ? shard : ""};
    for (int i = 0; i < 4; i++) {
        inf_sha256_update(&c, parts[i], strlen(parts[i]));
        inf_sha256_update(&c, "\n", 1);
    }
    inf_sha256_final(&c, d);
    inf_sha256_to_hex(d, hex);
    snprintf(out, 80, "%.16s", hex);
}

static int mkdirs(const char *path) {
    char buf[4200];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            if (mkdir(buf, 0755) && errno != EEXIST) return -1;
            *p = '/';
        }
    return mkdir(buf, 0755) && errno != EEXIST ? -1 : 0;
}

inf_status inf__job_prepare(inf__job *job, const char *home, inf_error *err) {
    char dir[4100];
    snprintf(dir, sizeof dir, "%s/jobs", home);
    if (mkdirs(dir)) return inf_error_set(err, INF_EIO, "batch: cannot create the job directory %s: %s", dir, strerror(errno));
    for (const char *p = job->id; *p; p++)
        if (!(*p == '-' || *p == '_' || *p == '.' || (*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') ||
              (*p >= 'A' && *p <= 'Z')) || !strcmp(job->id, "..") || !strcmp(job->id, "."))
            return inf_error_set(err, INF_EINVAL, "batch: job id '%s' may hold only letters, digits, '-', '_' and '.'",
                                 job->id);
    snprintf(job->path, sizeof job->path, "%s/%s.json", dir, job->id);
    return INF_OK;
}

static void iso_now(char out[40]) {
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, 40, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static void get_str(const cJSON *o, const char *k, char *out, size_t size) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    if (cJSON_IsString(v) && v->valuestring) snprintf(out, size, "%s", v->valuestring);
}

static int64_t get_int(const cJSON *o, const char *k, int64_t dflt) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) ? (int64_t)v->valuedouble : dflt;
}

inf_status inf__job_load(inf__job *job, inf_error *err) {
    FILE *f = fopen(job->path, "rb");
    if (!f) {
        if (errno == ENOENT) return inf_error_set(err, INF_ENOENT, "batch: no checkpoint %s to resume from", job->path);
        return inf_error_set(err, INF_EIO, "batch: cannot read the checkpoint %s: %s", job->path, strerror(errno));
    }
    char buf[65536];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    cJSON *o = cJSON_Parse(buf);
    if (!o || !cJSON_IsObject(o)) {
        cJSON_Delete(o);
        return inf_error_set(err, INF_EFORMAT, "batch: the checkpoint %s is not a JSON object", job->path);
    }
    get_str(o, "state", job->state, sizeof job->state);
    get_str(o, "model", job->model, sizeof job->model);
    get_str(o, "model_name", job->model_name, sizeof job->model_name);
    get_str(o, "model_version", job->model_version, sizeof job->model_version);
    get_str(o, "pipeline_hash", job->pipeline_hash, sizeof job->pipeline_hash);
    get_str(o, "model_sha256", job->model_sha256, sizeof job->model_sha256);
    get_str(o, "input", job->input, sizeof job->input);
    get_str(o, "output", job->output, sizeof job->output);
    get_str(o, "errors", job->errors, sizeof job->errors);
    get_str(o, "shard", job->shard, sizeof job->shard);
    get_str(o, "output_file_id", job->output_file_id, sizeof job->output_file_id);
    get_str(o, "errors_file_id", job->errors_file_id, sizeof job->errors_file_id);
    get_str(o, "started_at", job->started_at, sizeof job->started_at);
    get_str(o, "updated_at", job->updated_at, sizeof job->updated_at);
    get_str(o, "message", job->message, sizeof job->message);
    job->source_done = get_int(o, "source_done", 0);
    job->rows_read = get_int(o, "rows_read", 0);
    job->rows_scored = get_int(o, "rows_scored", 0);
    job->rows_written = get_int(o, "rows_written", 0);
    job->rows_rejected = get_int(o, "rows_rejected", 0);
    job->output_bytes = get_int(o, "output_bytes", -1);
    job->errors_bytes = get_int(o, "errors_bytes", -1);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "cpu_seconds");
    job->cpu_seconds = cJSON_IsNumber(v) ? v->valuedouble : 0;
    v = cJSON_GetObjectItemCaseSensitive(o, "wall_seconds");
    job->wall_seconds = cJSON_IsNumber(v) ? v->valuedouble : 0;
    cJSON_Delete(o);
    return INF_OK;
}

static cJSON *job_json(const inf__job *job, const char *input, const char *output, const char *errors) {
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    int ok = cJSON_AddStringToObject(o, "job_id", job->id) && cJSON_AddStringToObject(o, "state", job->state) &&
             cJSON_AddStringToObject(o, "model", job->model) &&
             cJSON_AddStringToObject(o, "model_name", job->model_name) &&
             cJSON_AddStringToObject(o, "model_version", job->model_version) &&
             cJSON_AddStringToObject(o, "pipeline_hash", job->pipeline_hash) &&
             cJSON_AddStringToObject(o, "model_sha256", job->model_sha256) &&
             cJSON_AddStringToObject(o, "shard", job->shard) &&
             cJSON_AddStringToObject(o, "output_file_id", job->output_file_id) &&
             cJSON_AddStringToObject(o, "errors_file_id", job->errors_file_id) &&
             cJSON_AddStringToObject(o, "input", input ? input : "") &&
             cJSON_AddStringToObject(o, "output", output ? output : "") &&
             (errors ? cJSON_AddStringToObject(o, "errors", errors) : cJSON_AddNullToObject(o, "errors")) &&
             cJSON_AddNumberToObject(o, "source_done", (double)job->source_done) &&
             cJSON_AddNumberToObject(o, "rows_read", (double)job->rows_read) &&
             cJSON_AddNumberToObject(o, "rows_scored", (double)job->rows_scored) &&
             cJSON_AddNumberToObject(o, "rows_written", (double)job->rows_written) &&
             cJSON_AddNumberToObject(o, "rows_rejected", (double)job->rows_rejected) &&
             cJSON_AddNumberToObject(o, "output_bytes", (double)job->output_bytes) &&
             cJSON_AddNumberToObject(o, "errors_bytes", (double)job->errors_bytes) &&
             cJSON_AddNumberToObject(o, "cpu_seconds", job->cpu_seconds) &&
             cJSON_AddNumberToObject(o, "wall_seconds", job->wall_seconds) &&
             cJSON_AddStringToObject(o, "started_at", job->started_at) &&
             cJSON_AddStringToObject(o, "updated_at", job->updated_at) &&
             cJSON_AddStringToObject(o, "message", job->message);
    if (!ok) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

inf_status inf__job_save(const inf__job *job, const char *input, const char *output, const char *errors,
                         inf_error *err) {
    inf__job tmp_job = *job;
    iso_now(tmp_job.updated_at);
    cJSON *o = job_json(&tmp_job, input, output, errors);
    char *text = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    if (!text) return inf_error_set(err, INF_ENOMEM, "batch: out of memory writing the checkpoint %s", job->path);
    char tmp[4300];
    snprintf(tmp, sizeof tmp, "%s.tmp", job->path);
    FILE *f = fopen(tmp, "wb");
    int bad = !f;
    if (f) {
        bad |= fputs(text, f) == EOF;
        bad |= fputc('\n', f) == EOF;
        bad |= fclose(f) != 0;
    }
    free(text);
    if (bad || rename(tmp, job->path))
        return inf_error_set(err, INF_EIO, "batch: cannot write the checkpoint %s: %s", job->path, strerror(errno));
    return INF_OK;
}

inf_status inf__job_log(const inf__job *job, const char *home, const char *input, const char *output,
                        const char *principal, inf_error *err) {
    char path[4200];
    snprintf(path, sizeof path, "%s/jobs/jobs.jsonl", home);
    cJSON *o = job_json(job, input, output, NULL);
    if (o && principal) cJSON_AddStringToObject(o, "principal", principal);
    char *text = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    if (!text) return inf_error_set(err, INF_ENOMEM, "batch: out of memory writing the job log %s", path);
    FILE *f = fopen(path, "ab");
    int bad = !f;
    if (f) {
        bad |= fprintf(f, "%s\n", text) < 0;
        bad |= fclose(f) != 0;
    }
    free(text);
    if (bad) return inf_error_set(err, INF_EIO, "batch: cannot append to the job log %s: %s", path, strerror(errno));
    return INF_OK;
}

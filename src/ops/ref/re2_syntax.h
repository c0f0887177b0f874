/*
 * re2_syntax.h -- RE2 regular expressions checked and rewritten for PCRE2
 * (re2_syntax.c), for RegexFullMatch (regex_full_match.c).
 *
 * ONNX's RegexFullMatch takes RE2 syntax; the engine is C, so it matches with
 * PCRE2 (Debian's libpcre2-8), whose syntax is a superset.  The rewrite makes
 * a PCRE2 pattern that matches what the RE2 pattern matches and refuses what
 * RE2 refuses (look-arounds, backreferences, atomic groups, possessive or
 * stacked repetitions, counts over 1000, \Z, \G, ...), so a model behaves as
 * in ONNX Runtime (which uses RE2) or fails at load.
 */
#ifndef INF_OPS_REF_RE2_SYNTAX_H
#define INF_OPS_REF_RE2_SYNTAX_H

#include <stddef.h>

/* Rewrites the NUL-terminated RE2 pattern into a PCRE2 pattern for
 * compilation with PCRE2_UTF (code points, not bytes).  On success returns a
 * heap string (inf__free) and leaves why untouched; on a pattern RE2 refuses
 * or out of memory returns NULL with the reason in why ("... at offset N"). */
char *inf__re2_to_pcre2(const char *pattern, char *why, size_t why_size);

#endif /* INF_OPS_REF_RE2_SYNTAX_H */

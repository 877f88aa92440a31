#!/bin/sh
# Collapse pmix-client output (from several ranks) to one line per query:
#   <id> <status> <type> <value>                 if all ranks agree
#   <id> r0: <status> <type> <value> | r1: ...   otherwise
# Usage: summarize.sh OUTPUT [CORPUS]  (with CORPUS, each line also shows
# the query text; lines keep corpus order)
out="$1"; corpus="$2"
awk -v corpus="$corpus" '
FNR == 1 { fileno++ }
fileno == 1 && corpus != "" {
    if ($0 ~ /^[ \t]*(#|$)/) next
    q = $0; sub(/^[^ \t]+[ \t]+/, "", q)
    id = ($1 == "put") ? "put:" $3 : $1
    if (!(id in query)) { query[id] = q; order[++n] = id }
    next
}
{
    id = $1; rank = $2
    ans = $0; sub(/^[^ ]+ [^ ]+ /, "", ans)
    if (!(id in seen)) { seen[id] = 1; if (corpus == "") order[++n] = id }
    a[id, rank] = ans; ranks[rank] = 1
    if (!((id, "first") in a)) a[id, "first"] = ans
    else if (a[id, "first"] != ans) differ[id] = 1
}
END {
    nr = 0; for (r in ranks) rl[++nr] = r + 0
    for (i = 1; i <= nr; i++) for (j = i + 1; j <= nr; j++) if (rl[j] < rl[i]) { t = rl[i]; rl[i] = rl[j]; rl[j] = t }
    for (k = 1; k <= n; k++) {
        id = order[k]; line = id
        if (id in query) line = line " | " query[id] " |"
        if (!(id in seen)) { print line " (no answer)"; continue }
        if (!(id in differ)) { print line " " a[id, "first"]; continue }
        for (i = 1; i <= nr; i++) line = line " r" rl[i] ": " a[id, rl[i]] (i < nr ? " ;" : "")
        print line
    }
}' ${corpus:+"$corpus"} "$out"

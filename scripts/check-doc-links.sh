#!/usr/bin/env bash
# Every relative Markdown link in README.md, CHANGELOG.md and docs/*.md resolves to a file or
# directory of the repository, every `docs/NAME.md` they mention exists, and every section they
# name as `docs/NAME.md "Title"` is a heading (or a bold label) of that document. Exits 1 and
# lists each broken one otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
status=0
for f in README.md CHANGELOG.md docs/*.md; do
    dir=$(dirname "$f")
    # [text](target): the target up to ')' or a space, external and in-page links left out.
    while IFS= read -r target; do
        path=${target%%#*}
        [ -z "$path" ] && continue
        if [ ! -e "$dir/$path" ]; then
            echo "$f: broken link ($target)"
            status=1
        fi
    done < <(grep -o '\]([^) ]*)' "$f" | sed 's/^](//; s/)$//' | grep -Ev '^(https?:|mailto:|#)' || true)
    # Plain mentions of a document: docs/NAME.md.
    while IFS= read -r doc; do
        if [ ! -e "$doc" ]; then
            echo "$f: names $doc, which does not exist"
            status=1
        fi
    done < <(grep -o 'docs/[A-Za-z0-9_-]*\.md' "$f" | sort -u || true)
    # Named sections: docs/NAME.md "Title" (or docs/NAME.md, "Title").
    while IFS= read -r ref; do
        doc=${ref%%.md*}.md
        title=${ref#*\"}
        title=${title%\"}
        [ -e "$doc" ] || continue
        if ! grep -E '^#|\*\*' "$doc" | grep -qF -- "$title"; then
            echo "$f: names section \"$title\" of $doc, which has none"
            status=1
        fi
    done < <(grep -oE 'docs/[A-Za-z0-9_-]+\.md,? "[^"]+"' "$f" | sort -u || true)
done
exit $status

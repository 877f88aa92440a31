#!/bin/sh
# Self-test for pmix-host / pmix-client (run by `make check`).
#  1. regex mode: compare against the strings OpenPMIx 4.2.2 produced;
#  2. the 2-node, 8-rank job (4 local clients) with the full registration;
#  3. the same job with the minimal registration;
#  4. the realm corpus (examples/corpus-realms.txt) on the full job with
#     PMIX_MCA_gds=hash -> examples/expected-realms.out (~1 s);
#  5. examples/corpus-toplevel.txt on job-slurm.txt and job-toplevel.txt
#     (gds=hash) -> examples/expected-slurm.out, expected-toplevel.out;
#  (2./3. also dump the registration, --dump-registration, compared with
#  examples/expected-*.reg after replacing the working directory by @CWD@);
#  6. every expected and recorded dump replayed (--replay-registration) and dumped again
# each client output is sorted and compared with examples/expected-*.out
# (recorded from OpenPMIx 4.2.2 with its default gds). Set
# REGEN=1 to rewrite the expected files instead of comparing. The answers
# examples/races.txt lists may take their documented alternative status.
set -u
cd "$(dirname "$0")"
out=check-out
rm -rf "$out"; mkdir -p "$out"
fail=0

# Rewrite the answers examples/races.txt lists as timing-dependent from their
# alternative status back to the expected one, naming each line rewritten.
races() { # name produced
    awk -v name="$1" '
        FNR == NR { if ($1 == name) { alt[$2 " " $3 " " $5] = $4 } next }
        { k1 = $1 " " $2 " " $3; k2 = $1 " * " $3
          k = (k1 in alt) ? k1 : ((k2 in alt) ? k2 : "")
          if (k != "" && $4 == "-" && $5 == "-") {
              print "check: " name ": known race: " $1 " " $2 " answered " $3 > "/dev/stderr"
              $3 = alt[k]
          }
          print }' examples/races.txt "$2" > "$2.tmp" && mv "$2.tmp" "$2"
}

compare() { # name produced expected
    if [ "${REGEN:-0}" = 1 ]; then
        cp "$2" "$3"; echo "check: $1: regenerated $3"; return
    fi
    races "$1" "$2"
    if diff -u "$3" "$2" > "$out/$1.diff"; then
        echo "check: $1: ok"
    else
        echo "check: $1: FAILED (see $out/$1.diff)"; fail=1
    fi
}

# 1. regex / ppn strings
{
    ./pmix-host --regex "node001,node002,node003,node004" --ppn "0,1;2,3"
    ./pmix-host --regex "node1,node2,node3,node10,node11" --ppn "0,1,2,3;4,5,6,7"
    ./pmix-host --regex "alpha,beta,gamma,node001,node003,node002" --ppn "0,2;1,3"
} > "$out/regex.out" 2>&1
compare regex "$out/regex.out" examples/expected-regex.out

# 2./3. the job, full and minimal registration
for v in 2node 2node-minimal; do
    timeout 120 ./pmix-host --job "examples/job-$v.txt" --timeout 60 \
        --dump-registration "$out/$v.reg.raw" \
        --client-cmd "./pmix-client -t examples/corpus-2node.txt" \
        > "$out/$v.raw" 2> "$out/$v.err"
    rc=$?
    if [ $rc -ne 0 ]; then
        echo "check: $v: pmix-host exited $rc"; cat "$out/$v.err"; fail=1
    fi
    grep register_nspace_us "$out/$v.err"
    sort -k1,1 -k2,2n "$out/$v.raw" > "$out/$v.out"
    compare "$v" "$out/$v.out" "examples/expected-$v.out"
    ./summarize.sh "$out/$v.out" examples/corpus-2node.txt > "$out/$v.summary"
    # the app arrays hold PMIX_WDIR = our cwd: make the dump location-independent
    sed "s|\"$(pwd)\"|\"@CWD@\"|" "$out/$v.reg.raw" > "$out/$v.reg"
    compare "$v-reg" "$out/$v.reg" "examples/expected-$v.reg"
done

# 4. realm rules of the standard, ch. 6 (gds=hash; README.md lists the
# answers that differ under the default ds21)
PMIX_MCA_gds=hash timeout 120 ./pmix-host --job examples/job-2node.txt --timeout 60 \
    --client-cmd "./pmix-client -t examples/corpus-realms.txt" \
    > "$out/realms.raw" 2> "$out/realms.err"
rc=$?
if [ $rc -ne 0 ]; then
    echo "check: realms: pmix-host exited $rc"; cat "$out/realms.err"; fail=1
fi
# r613-13 answers PMIX_WDIR = our cwd
sort -k1,1 -k2,2n "$out/realms.raw" | sed "s|\"$(pwd)\"|\"@CWD@\"|" > "$out/realms.out"
compare realms "$out/realms.out" examples/expected-realms.out
./summarize.sh "$out/realms.out" examples/corpus-realms.txt > "$out/realms.summary"

# 5. realm keys given outside their arrays (gds=hash): Slurm 22.05's shape, and
# top-level node and app keys and node arrays the maps contradict
for v in slurm toplevel; do
    PMIX_MCA_gds=hash timeout 120 ./pmix-host --job "examples/job-$v.txt" --timeout 60 \
        --client-cmd "./pmix-client examples/corpus-toplevel.txt" \
        > "$out/$v.raw" 2> "$out/$v.err"
    rc=$?
    if [ $rc -ne 0 ]; then
        echo "check: $v: pmix-host exited $rc"; cat "$out/$v.err"; fail=1
    fi
    sort -k1,1 -k2,2n "$out/$v.raw" > "$out/$v.out"
    compare "$v" "$out/$v.out" "examples/expected-$v.out"
done

# 6. --replay-registration: each expected dump (and each recorded one) registered again and
# dumped: the same infos (@CWD@ back to our cwd, then replaced again). No clients: their
# answers are compared with the component's in component/tests/recorded.rs.
for f in examples/expected-2node.reg examples/expected-2node-minimal.reg examples/recorded/*.reg; do
    v=replay-$(basename "$f" .reg)
    if timeout 60 ./pmix-host --replay-registration "$f" --clients 0 \
        --dump-registration "$out/$v.raw" > /dev/null 2> "$out/$v.err"; then
        grep -v '^#' "$f" > "$out/$v.want"
        grep -v '^#' "$out/$v.raw" | sed "s|\"$(pwd)\"|\"@CWD@\"|" > "$out/$v.got"
        compare "$v" "$out/$v.got" "$out/$v.want"
    else
        echo "check: $v: pmix-host failed"; cat "$out/$v.err"; fail=1
    fi
done

[ $fail -eq 0 ] && echo "check: all ok" || echo "check: FAILED"
exit $fail

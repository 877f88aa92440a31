# The median of the numbers following the word KEY on the input's lines, divided by DIV and
# printed with printf FMT (all in awk: its plain print writes 1.2e+06 for large numbers).
# Exits 1, printing nothing, when there is no such number or one is not a number.
#   awk -v key=init_us -v div=1000 -v fmt=%.1f -f median.awk FILE...
{
    for (i = 1; i < NF; i++) {
        if ($i == key) {
            if ($(i + 1) !~ /^[0-9]+(\.[0-9]+)?$/) {
                bad = $(i + 1)
            }
            v = $(i + 1) + 0
            # insertion sort: a few values per column (ranks x rounds)
            for (j = n; j > 0 && a[j] > v; j--) {
                a[j + 1] = a[j]
            }
            a[j + 1] = v
            n++
        }
    }
}
END {
    if (bad != "" || n == 0) {
        printf "median.awk: %s: %s\n", key, (n == 0 ? "no value" : "not a number: " bad) > "/dev/stderr"
        exit 1
    }
    m = n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    printf fmt "\n", m / (div == "" ? 1 : div)
}

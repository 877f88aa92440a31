#!/usr/bin/env python3
"""Regenerates openpmix-4.2.2.txt (next to this script) from tools/pmix-host/pmix-host
--regex/--ppn (build it with `make -C tools/pmix-host`); one pmix-host run per pair.

    python3 gds/tests/data/maps/gen-openpmix-corpus.py > gds/tests/data/maps/openpmix-4.2.2.txt
"""
import os, random, re, subprocess, sys

HERE = os.path.dirname(os.path.abspath(__file__))
H = os.path.join(HERE, "../../../../tools/pmix-host/pmix-host")
rng = random.Random(42)

def gen(kind, inp):
    r = subprocess.run([H, "--" + kind, inp], capture_output=True, text=True, timeout=30)
    if r.returncode != 0:
        sys.exit(f"pmix-host failed on {kind} {inp!r}: rc={r.returncode} {r.stderr}")
    m = re.fullmatch(r'(\w+) "(.*)" => "(.*)"\n', r.stdout, re.S)
    assert m and m.group(1) == kind and m.group(2) == inp, r.stdout
    out = m.group(3)
    assert "\\" not in out and '"' not in out and "\t" not in out
    return out

# (input, decoded) - decoded is None when the output must decode to the input,
# "!error" when the output is malformed, else what the output really encodes.
regex = [
    ("node001,node002,node003,node004", None),
    ("node001", None),
    ("node001,node002", None),
    ("node1,node2,node3,node10,node11", None),
    ("n01,n02,n03,n05,n06,n10", None),
    ("alpha,beta,gamma,node001,node003,node002", None),
    ("node001,node001", None),
    ("node001,node001,node001", None),
    ("c1-1,c1-2,c2-1,c2-2", None),
    ("node001.cluster,node002.cluster", None),
    ("host-a,host-b", None),
    ("vm", None),
    ("a.1,a.2", None),
    ("x-1,x-2", None),
    ("h_1,h_2", None),
    ("N01,N02", None),
    ("c1n01,c1n02,c2n01", None),
    (",".join(f"c{c}n{n:02}" for c in range(1, 5) for n in range(1, 17)), None),
    ("a28n01,a99n02,a28n02", None),
    ("n01a,n02a,n03a", None),
    ("n01a,n02b", None),
    ("node01x,node02x,node03y", None),
    ("node9,node10,node11,node100", None),
    ("node999,node1000", None),
    ("n10,n9,n8", None),
    ("node007,node008,node009,node010", None),
    ("n1,n3,n5", None),
    ("node,node1", None),
    ("node0,node00,node000", None),
    ("node1,node01,node001", None),
    ("1,2,3", None),
    ("01,02", None),
    ("n1,n2,1,2", None),
    ("a1,a2,b1,b2,a3", None),
    ("n1,m1,n2", None),
    ("n01,n02,m01,n03", None),
    ("node001,node002,n001,node003", None),
    ("c1n01,c1n02,c2n01,n01a,7,node999,node1000", None),
    (",".join(f"node{i:04}" for i in range(1, 1001)), None),
    (",".join(f"cn{i}" for i in range(1, 1201)), None),
    (",".join(rng.sample([f"node{i:03}" for i in range(1, 201)], 200)), None),
    (",".join(f"r{r:02}n{n:03}" for r in range(1, 4) for n in range(1, 41)), None),
    (",".join(f"h{rng.choice('ab')}-{rng.randrange(100000)}" for _ in range(300)), None),
    # OpenPMIx lost information: verbatim names are not in the order
    # bookkeeping, so later numbered names jump over them (checked with a
    # job: PMIX_NODE_LIST and PMIX_HOSTNAME of the ranks follow the output).
    ("node1,alpha,node2,beta,node3", "node1,node2,node3,alpha,beta"),
    ("node1,node2,alpha,node3", "node1,node2,node3,alpha"),
    ("1,n1,2", "1,2,n1"),
    ("x,node1,x,node2", "x,node1,node2,x"),
    ("alpha,node1,beta,node2", "alpha,node1,node2,beta"),
    # empty names: moved to the end / dropped, or a trailing empty entry
    ("node001,,node002", "!error"),
    ("a,", "a"),
    (",", "!error"),
    ("", "!error"),
    # names OpenPMIx cannot express
    ("x[1],x[2]", "!error"),
    ("node18446744073709551616,node18446744073709551617", "!error"),
    ("n4294967296,n4294967297", "n0000000000,n0000000001"),
    ("n2147483647,n2147483648", "!error"),
]

def block(nodes, per):
    return ";".join(",".join(str(n * per + i) for i in range(per)) for n in range(nodes))

def cyclic(nodes, per):
    return ";".join(",".join(str(n + i * nodes) for i in range(per)) for n in range(nodes))

perm = list(range(200))
rng.shuffle(perm)
ppn = [
    ("0,1;2,3", None),
    ("0,1,2,3", None),
    ("0;1", None),
    ("0;1;2;3;4", None),
    ("0", None),
    ("0,2,4,6;1,3,5,7", None),
    ("0-3;4-7", None),
    ("0-3,8;4-7", None),
    ("0,1,2,3;4,5,6,7", None),
    ("0,1,2,3;4,5,6,7;8,9,10,11", None),
    ("0,1,2,3,8,9,10,11;4,5,6,7", None),
    ("0,1,2;3,4,5", None),
    ("3,2,1,0;7,6,5,4", None),
    ("0,1,2,3,5;4", None),
    ("0,0,1,2,3;4,5,6,7", None),
    ("10,11,12,13;0,1,2,3", None),
    ("0,1,2,3,4,5,6,7,8,9", None),
    (block(2, 16), None),
    (";".join(str(i) for i in range(64)), None),
    (block(1, 1000), None),
    (block(1000, 16), None),
    (cyclic(100, 16), None),
    (";".join(",".join(map(str, perm[i:i + 8])) for i in range(0, 200, 8)), None),
    ("0,1,2,3,4;5,6;7,8,9,10,11,12,13,14;15", None),
    ("2147483647", None),
    ("2147483648", None),
    # OpenPMIx lost information: empty nodes / empty ranks are dropped by
    # the native form and kept (but meaningless) in the raw form
    ("0;;1", "!error"),
    ("0;1;", "!error"),
    (";0", "!error"),
    ("0,1,2,3;;4,5,6,7", "0,1,2,3;4,5,6,7"),
    ("0,1,2,3;4,5,6,7;", "0,1,2,3;4,5,6,7"),
    ("0,,1;2,3,4,5,6,7", "0,1;2,3,4,5,6,7"),
    # not ranks: passed through raw, or overflowed to -1
    ("a,b;c", "!error"),
    ("0, 1;2", "!error"),
    # ranks >= 2^31 overflow a C int when the native form is chosen
    ("4294967279", "!error"),
    ("2147483646,2147483647,2147483648", "!error"),
    ("4294967295", "!error"),
    ("0,1,2,3,4294967295", "!error"),
]

print("# OpenPMIx 4.2.2 (Debian 12 libpmix2) PMIx_generate_regex / PMIx_generate_ppn outputs,")
print("# produced by tools/pmix-host/pmix-host --regex/--ppn via gen-openpmix-corpus.py.")
print("# One pair per line, fields separated by one TAB:")
print("#   regex<TAB>node list given<TAB>generated PMIX_NODE_MAP[<TAB>decoded]")
print("#   ppn<TAB>proc map given<TAB>generated PMIX_PROC_MAP[<TAB>decoded]")
print("# Without a 4th field the generated string must parse back to the input (ranges")
print("# in a ppn input expanded). A 4th field marks a pair where OpenPMIx lost or")
print("# garbled information: it holds what the generated string really encodes")
print("# (plain list), or !error when the generated string is malformed and must be refused.")
print("# Lines starting with # are comments.")
for kind, cases in (("regex", regex), ("ppn", ppn)):
    for inp, dec in cases:
        out = gen(kind, inp)
        fields = [kind, inp, out] + ([dec] if dec is not None else [])
        print("\t".join(fields))

#!/usr/bin/env python3
"""Which b-trees the last commits of a SQLite WAL wrote: frames per commit,
and per table or index the pages per commit. Usage: python3 bench/wal_pages.py DB [LAST]

Run it while the daemon serves (a clean shutdown checkpoints the WAL
away); the pages of the last LAST commits (default 100) are counted,
as far back as the WAL goes since its last checkpoint."""
import collections, sqlite3, struct, sys

db = sys.argv[1]
last = int(sys.argv[2]) if len(sys.argv) > 2 else 100
try:
    wal = open(db + "-wal", "rb").read()
except FileNotFoundError:
    sys.exit(f"{db}-wal: no WAL (the daemon checkpoints it away when it stops)")
if len(wal) < 32:
    sys.exit(f"{db}-wal: empty")
magic, ver, psize, ckseq, s1, s2, c1, c2 = struct.unpack(">IIIIIIII", wal[:32])
commits, cur, off = [], [], 32
while off + 24 + psize <= len(wal):
    pg, size, fs1, fs2 = struct.unpack(">IIII", wal[off:off + 16])
    if (fs1, fs2) != (s1, s2):
        break
    cur.append(pg)
    if size:
        commits.append(cur)
        cur = []
    off += 24 + psize
conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
owner = {p: n for n, p in conn.execute("SELECT name, pageno FROM dbstat")}
owner[1] = owner.get(1, "sqlite_schema")
tail = commits[-last:]
if not tail:
    sys.exit("no commit in the WAL since its last checkpoint")
sizes = sorted(len(c) for c in tail)
print(f"{len(commits)} commits in the WAL; the last {len(tail)}: frames per commit "
      f"median {sizes[len(sizes)//2]}, min {sizes[0]}, max {sizes[-1]}, mean {sum(sizes)/len(sizes):.1f}")
by = collections.Counter()
for c in tail:
    for p in c:
        by[owner.get(p, "(free or new)")] += 1
for name, n in by.most_common():
    print(f"  {n/len(tail):6.2f}  {name}")

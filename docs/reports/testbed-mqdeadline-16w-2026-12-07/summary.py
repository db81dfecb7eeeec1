"""Per run of guest.sh: MB/s and writers served a second (>2 MB/s), from the 5th second on;
the state: round-robin when most seconds serve 12 or more writers. Usage: summary.py DIR..."""
import glob, collections, os, sys
for base in sys.argv[1:]:
    for d in sorted(glob.glob(base + '/*/')):
        per = collections.defaultdict(dict)
        for f in glob.glob(d + 'bw_bw.*.log'):
            k = int(f.split('.')[-2])
            for line in open(f):
                t, v = line.split(',')[:2]
                per[int(t) // 1000][k] = int(v)
        secs = sorted(per)[5:-1]
        if not secs: continue
        mb = [sum(per[s].values()) / 1024 for s in secs]
        act = [sum(1 for v in per[s].values() if v > 2048) for s in secs]
        rr = sum(a >= 12 for a in act)
        print(f"{os.path.basename(d[:-1]):10s} {sum(mb)/len(mb):5.1f} MB/s  writers a second {sum(act)/len(act):4.1f}  "
              f"seconds with >=12 writers {rr}/{len(secs)}  {'round-robin' if rr > len(secs)/2 else 'one at a time'}")

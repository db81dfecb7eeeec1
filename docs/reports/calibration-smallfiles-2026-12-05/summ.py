import json, sys, glob, os
d0 = sys.argv[1]
for f in sorted(glob.glob(f'{d0}/*.json')):
    n = f[:-5]
    if not os.path.exists(n + '.after'):
        continue
    t = open(f).read(); d = json.loads(t[t.index('{'):])
    r = sum(j['read']['bw_bytes'] for j in d['jobs']) / 1e6
    w = sum(j['write']['bw_bytes'] for j in d['jobs']) / 1e6
    b = open(n + '.before').read().split(); a = open(n + '.after').read().split()
    t0, t1 = map(float, open(n + '.time').read().split())
    dr = (int(a[5]) - int(b[5])) * 512 / 1e6 / (t1 - t0); dw = (int(a[9]) - int(b[9])) * 512 / 1e6 / (t1 - t0)
    print('%-12s fio r %5.1f w %5.1f = %5.1f | disk r %5.1f w %5.1f = %5.1f over %.1f s' % (
        os.path.basename(n), r, w, r + w, dr, dw, dr + dw, t1 - t0))

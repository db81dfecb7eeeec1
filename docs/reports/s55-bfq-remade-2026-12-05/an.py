import json,glob,sys
def series(name):
    rows=[l.split() for l in open(name+'.stat')]
    t=[float(r[0]) for r in rows]; rd=[int(r[6]) for r in rows]; wr=[int(r[10]) for r in rows]
    return t,rd,wr
for r in (0,1):
  for v in ('bfq','bfqbfq','mq-deadline','stream'):
    n=f'{v}.{r}'
    t,rd,wr=series(n)
    t0=t[0]
    def mb(a,b):
        i=next(i for i,x in enumerate(t) if x-t0>=a); j=next((i for i,x in enumerate(t) if x-t0>=b), len(t)-1)
        dt=t[j]-t[i]; return ((rd[j]-rd[i])*512/1e6/dt,(wr[j]-wr[i])*512/1e6/dt)
    segs=[(0,8),(10,30),(30,60),(60,90)]
    s='  '.join('%2d-%2d r%5.1f w%5.1f'%(a,b,*mb(a,b)) for a,b in segs)
    tot=mb(0,91)
    print('%-14s %s  all %.1f'%(n,s,tot[0]+tot[1]))

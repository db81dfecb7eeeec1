"""ioaz-lab bench soak's run (bench_scale.soak on 8 loop devices), with the probe's thread
retirement on (`retire`) or off (`keep`: every thread kept, as before df32d5c), and at the end
the size of the daemon's switch history and damping states; Python's allocated blocks and live
objects at the tenths. As root, from the repository: python3 THIS SECONDS retire|keep"""
import gc, json, sys, types
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "agent"))
from ioaz.probe import bpf_source
from ioaz.lab import bench_scale
from ioaz.daemon import core
if sys.argv[2] == "keep":       # the reader before retirement: every thread kept
    d = list(bpf_source.BpfSource.__init__.__defaults__)
    d[-1] = 1e12
    bpf_source.BpfSource.__init__.__defaults__ = tuple(d)
daemons = []
orig = core.Daemon.start
def start(self, *a, **k):
    daemons.append(self); return orig(self, *a, **k)
core.Daemon.start = start
SKIP = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType, types.MethodType)
def deep(root):
    seen, n, stack = set(), 0, [root]
    while stack:
        o = stack.pop()
        if id(o) in seen or isinstance(o, SKIP): continue
        seen.add(id(o)); n += sys.getsizeof(o); stack.extend(gc.get_referents(o))
    return n
marks = []
_init = bench_scale.Marks.__init__
def init(self, *a, **k):
    marks.append(self); _init(self, *a, **k)
bench_scale.Marks.__init__ = init
_sample = bench_scale._sample
bench_scale._sample = lambda: {**_sample(), "blocks": sys.getallocatedblocks(),
                               "objects": len(gc.get_objects())}
r = bench_scale.soak(8, float(sys.argv[1]))
d = daemons[0]
r["history_entries"] = len(d.history)
r["history_bytes"] = deep(d.history)
r["states_bytes"] = deep({k: v.state for k, v in d.devices.items()})
r["blocks_tenths"] = marks[0].of("blocks")
r["objects_tenths"] = marks[0].of("objects")
print(json.dumps(r), flush=True)

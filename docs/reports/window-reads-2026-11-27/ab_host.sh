#!/bin/bash
# `ioaz-lab bench daemon --seconds 30` (16 busy loop devices), the code before and after
# alternated, the order reversed every round. /tmp/wold and /tmp/wcpu are worktrees of the
# repository at 6c6c192 (before) and fac7703 (after): git worktree add /tmp/wold 6c6c192
cd /work/main
for r in 1 2 3 4; do
  if [ $((r % 2)) = 1 ]; then order="old new"; else order="new old"; fi
  for side in $order; do
    if [ $side = old ]; then P=/tmp/wold/agent; else P=/tmp/wcpu/agent; fi
    printf "round %s %s " $r $side
    PYTHONPATH=$P IOAZ_BPF_OBJECT=/work/main/bpf/build/ioaz.bpf.o .venv/bin/python -c "from ioaz.lab.main import main; main(['bench','daemon','--seconds','30','--json'])" 2>/dev/null | tr -d "\n "; echo
  done
done

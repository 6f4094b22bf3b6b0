#!/bin/bash
# On the GPU machine (the device tool), from the repository root: measure_torch.py into
# $OUT, with the GPU's clocks and power once a second beside it (smi.csv). BUDGET seconds
# (default 270) bound the measurement.
set -u
: "${OUT:?}"
here=docs/validation/torch-kernels
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active \
  --format=csv -lms 1000 >"$OUT/smi.csv" 2>&1 &
smi=$!
PYTHONUNBUFFERED=1 timeout $(( ${BUDGET:-270} + 60 )) python3 $here/measure_torch.py --out "$OUT" \
  --budget "${BUDGET:-270}" 2>&1 | tee "$OUT/log.txt"
echo "rc ${PIPESTATUS[0]}"
kill $smi
wc -l "$OUT"/*.csv

#!/bin/sh
# Regenerate the runtime evidence on a CUDA machine, from the checkout's root:
#   OUT=some/dir sh scripts/gpu_evidence.sh
# Needs torch with CUDA (the linter itself, libcst and click, is not needed: the reference loop
# and `loopcheck verify`'s runner import neither). Writes into $OUT (default ./gpu_out):
#   RESULTS.md          python -m reference_loop.results (reference loop fp32/bf16/fp16+GradScaler,
#                       every rule's fixtures under the probes, GPU variants, LC501 conversion
#                       matrix with cuda(), LC401 memory on the CPU and the GPU)
#   reference_loop.log  python -m reference_loop (its default on CUDA: fp16 autocast + GradScaler)
#   device.txt          GPU, driver, torch and CUDA versions
#   *.err               what each step printed on stderr
set -u
OUT=${OUT:-gpu_out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
PY=${PYTHON:-python3}
{
  date -u
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  "$PY" -c "import torch, platform; print('torch', torch.__version__, 'CUDA', torch.version.cuda, 'cuDNN', torch.backends.cudnn.version(), 'device', torch.cuda.get_device_name(0) if torch.cuda.is_available() else None, 'Python', platform.python_version())"
} > "$OUT/device.txt" 2>&1
cat "$OUT/device.txt"
start=$(date +%s)
"$PY" -m reference_loop --epochs 20 > "$OUT/reference_loop.log" 2> "$OUT/reference_loop.err"
echo "reference loop: exit $? after $(( $(date +%s) - start )) s"; tail -2 "$OUT/reference_loop.log"
start=$(date +%s)
"$PY" -m reference_loop.results > "$OUT/RESULTS.md" 2> "$OUT/results.err"
echo "results: exit $? after $(( $(date +%s) - start )) s"
grep -E "rules reproduced|^Generated" "$OUT/RESULTS.md"
tail -5 "$OUT/results.err"

#!/usr/bin/env bash
# Records the real CUDA sample sessions (sample_traces/cuda_*) with trnscope's own
# capture module, on a host with an NVIDIA GPU where torch and trnscope import:
#
#     examples/record_cuda_samples.sh OUTDIR
#
# Each capture has its own time limit and log (OUTDIR/NAME.log), so one that fails
# leaves the others.  DEVICE=cpu runs the same steps without a GPU (a dry run);
# ONLY="NAME ..." records only the sessions named (without the device prefix).
set -u
out=${1:?usage: record_cuda_samples.sh OUTDIR}
py=${PYTHON:-python3}
device=${DEVICE:-cuda}
limit=${STEP_LIMIT_S:-150}
mkdir -p "$out"

step() {
    local name=$1 start rc
    shift
    if [ -n "${ONLY:-}" ] && [[ " $ONLY " != *" ${name#"${device}"_} "* ]]; then
        return
    fi
    start=$(date +%s)
    timeout "$limit" "$@" >"$out/$name.log" 2>&1
    rc=$?
    echo "== $name: exit $rc after $(($(date +%s) - start)) s"
    tail -n 4 "$out/$name.log"
}

{
    date -u
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
    "$py" -c "import platform, torch; print('python', platform.python_version(), 'torch', torch.__version__, 'cuda', torch.version.cuda)"
    echo "cpus $(nproc)"
} >"$out/machine.txt" 2>&1
cat "$out/machine.txt"

for demo in rmsnorm attention; do
    step "${device}_${demo}_session" "$py" -m trnscope capture --demo "$demo" --device "$device" \
        --out "$out/${device}_${demo}_session"
    step "${device}_${demo}_large_session" "$py" -m trnscope capture --demo "$demo" --device "$device" \
        --size large --out "$out/${device}_${demo}_large_session"
done
step "${device}_train_tiny_session" "$py" -m trnscope capture run examples/train_tiny.py --device "$device" \
    --out "$out/${device}_train_tiny_session" -- --device "$device"
# profile_memory=True: key_averages()' memory columns, host and device, kept to check ours
step "${device}_train_tiny_memory_session" "$py" -m trnscope capture run examples/train_tiny.py --device "$device" \
    --memory --out "$out/${device}_train_tiny_memory_session" -- --device "$device"
step "${device}_rmsnorm_memory_session" "$py" -m trnscope capture --demo rmsnorm --device "$device" --memory \
    --out "$out/${device}_rmsnorm_memory_session"
# a small Transformer LM trained with AdamW (autograd's own thread, fused optimizer)
step "${device}_transformer_session" "$py" -m trnscope capture run examples/train_transformer.py --device "$device" \
    --out "$out/${device}_transformer_session" -- --device "$device"
step "${device}_transformer_memory_session" "$py" -m trnscope capture run examples/train_transformer.py \
    --device "$device" --memory --out "$out/${device}_transformer_memory_session" -- --device "$device"
# CUDA graphs: replayed by hand, by torch.compile(mode="reduce-overhead"), and eager beside them
for mode in graph reduce-overhead eager; do
    case $mode in graph) name=graph_replay ;; reduce-overhead) name=graph_compiled ;; *) name=graph_eager ;; esac
    step "${device}_${name}_session" "$py" -m trnscope capture run examples/infer_cuda_graph.py \
        --device "$device" --out "$out/${device}_${name}_session" -- --mode "$mode"
done
# two ranks on gloo sharing one GPU (nccl needs a GPU per rank); rank 1 is held back
step "${device}_ddp_gloo_session" "$py" -m torch.distributed.run --standalone --nproc-per-node 2 \
    -m trnscope capture run examples/train_ddp.py --device "$device" --out "$out/${device}_ddp_gloo_session" \
    -- --device "$device" --slow-rank 1

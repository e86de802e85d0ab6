"""A small DistributedDataParallel training loop for a multi-rank capture: every rank
profiled by trnscope, each into its own folder, read together by ``trnscope ranks``.

    torchrun --standalone --nproc-per-node 2 -m trnscope capture run examples/train_ddp.py --out /tmp/ddp
    trnscope ranks /tmp/ddp

On CPU it runs on gloo (``--backend nccl`` on GPUs, one per rank).  ``--device cuda``
keeps the model and data on the GPU; with gloo, several ranks may share one GPU.  ``--slow-rank R`` makes rank R
sleep before each step's backward pass, as a rank held back by its input would: the
others then wait for it in the gradients' all-reduce.
"""

import argparse
import os
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--iters", type=int, default=12)
    parser.add_argument("--backend", default="gloo")
    parser.add_argument("--slow-rank", type=int, default=-1)
    parser.add_argument("--slow-ms", type=float, default=30.0)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()

    dist.init_process_group(args.backend)
    rank = dist.get_rank()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    device = torch.device(args.device)
    if device.type == "cuda" and args.backend == "nccl":  # nccl: one GPU per rank
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", rank)))
    model = DistributedDataParallel(
        torch.nn.Sequential(torch.nn.Linear(128, 256), torch.nn.GELU(), torch.nn.Linear(256, 10)).to(device)
    )
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = torch.nn.CrossEntropyLoss()
    for _ in range(args.iters):
        x, y = torch.randn(64, 128, device=device), torch.randint(0, 10, (64,), device=device)
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        if rank == args.slow_rank:
            time.sleep(args.slow_ms / 1000.0)
        loss.backward()  # DDP all-reduces the gradients here: the ranks meet
        optimizer.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

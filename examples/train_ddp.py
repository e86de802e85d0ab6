"""A small DistributedDataParallel training loop for a multi-rank capture: every rank
profiled by trnscope, each into its own folder, read together by ``trnscope ranks``.

    torchrun --standalone --nproc-per-node 2 -m trnscope capture run examples/train_ddp.py --out /tmp/ddp
    trnscope ranks /tmp/ddp

On CPU it runs on gloo (``--backend nccl`` on GPUs).  ``--slow-rank R`` makes rank R
sleep before each step's backward pass, as a rank held back by its input would: the
others then wait for it in the gradients' all-reduce.
"""

import argparse
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
    args = parser.parse_args()

    dist.init_process_group(args.backend)
    rank = dist.get_rank()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = DistributedDataParallel(
        torch.nn.Sequential(torch.nn.Linear(128, 256), torch.nn.GELU(), torch.nn.Linear(256, 10))
    )
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = torch.nn.CrossEntropyLoss()
    for _ in range(args.iters):
        x, y = torch.randn(64, 128), torch.randint(0, 10, (64,))
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        if rank == args.slow_rank:
            time.sleep(args.slow_ms / 1000.0)
        loss.backward()  # DDP all-reduces the gradients here: the ranks meet
        optimizer.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

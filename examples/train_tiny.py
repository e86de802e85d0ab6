"""A tiny training loop: an unmodified script to profile with

    trnscope capture run examples/train_tiny.py --out /tmp/tiny_session

Each optimizer step advances trnscope's profiler schedule.  On a GPU, give the
script the device too (what follows ``--`` is the script's):

    trnscope capture run examples/train_tiny.py --device cuda --out /tmp/tiny_cuda -- --device cuda
"""

import argparse

import torch


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()

    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(128, args.hidden),
        torch.nn.GELU(),
        torch.nn.Linear(args.hidden, args.hidden),
        torch.nn.LayerNorm(args.hidden),
        torch.nn.Linear(args.hidden, 10),
    ).to(args.device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    for _ in range(args.iters):
        x = torch.randn(64, 128, device=args.device)
        y = torch.randint(0, 10, (64,), device=args.device)
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
    print(f"final loss {loss.item():.4f}")


if __name__ == "__main__":
    main()

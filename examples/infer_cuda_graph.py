"""An inference loop that replays a CUDA graph: work a trace attributes through
``cudaGraphLaunch`` rather than one launch per kernel.  A step is a call to
``trnscope.capture.mark_step()`` (there is no optimizer):

    trnscope capture run examples/infer_cuda_graph.py --device cuda --out /tmp/graph
    trnscope capture run examples/infer_cuda_graph.py --device cuda --out /tmp/ro -- --mode reduce-overhead

``--mode graph`` records the model into a ``torch.cuda.CUDAGraph`` by hand and replays
it; ``--mode reduce-overhead`` leaves that to ``torch.compile(mode="reduce-overhead")``;
``--mode eager`` runs the same model without a graph, to compare against.
"""

import argparse

import torch

from trnscope.capture import mark_step


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--hidden", type=int, default=1024)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--mode", choices=("graph", "reduce-overhead", "eager"), default="graph")
    args = parser.parse_args()

    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(args.hidden, args.hidden),
        torch.nn.GELU(),
        torch.nn.Linear(args.hidden, args.hidden),
        torch.nn.LayerNorm(args.hidden),
        torch.nn.Linear(args.hidden, args.hidden),
    ).cuda()
    model.eval()
    static_x = torch.randn(args.batch, args.hidden, device="cuda")

    with torch.no_grad():
        if args.mode == "graph":
            side = torch.cuda.Stream()  # warm-up on a side stream, as the CUDA graphs docs do
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                for _ in range(3):
                    model(static_x)
            torch.cuda.current_stream().wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                static_y = model(static_x)

            def forward(x: torch.Tensor) -> torch.Tensor:
                static_x.copy_(x)
                graph.replay()
                return static_y

        elif args.mode == "reduce-overhead":
            forward = torch.compile(model, mode="reduce-overhead")
        else:
            forward = model

        for _ in range(args.iters):
            x = torch.randn(args.batch, args.hidden, device="cuda")
            y = forward(x)
            y.sum().item()  # the host waits for the step's device work
            mark_step()


if __name__ == "__main__":
    main()

"""A small Transformer language model trained with AdamW: an unmodified script with
what real training steps hold (attention, layer norms, dropout, autograd on its own
thread, a fused optimizer step), to profile with

    trnscope capture run examples/train_transformer.py --out /tmp/lm
    trnscope capture run examples/train_transformer.py --device cuda --out /tmp/lm_cuda -- --device cuda

Each optimizer step advances trnscope's profiler schedule.
"""

import argparse

import torch


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--width", type=int, default=256)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--vocab", type=int, default=4096)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()

    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(
        args.width, nhead=4, dim_feedforward=4 * args.width, batch_first=True, norm_first=True
    )
    model = torch.nn.ModuleDict(
        {
            "embed": torch.nn.Embedding(args.vocab, args.width),
            "blocks": torch.nn.TransformerEncoder(layer, args.layers, enable_nested_tensor=False),
            "head": torch.nn.Linear(args.width, args.vocab),
        }
    ).to(args.device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    mask = torch.nn.Transformer.generate_square_subsequent_mask(args.seq, device=args.device)
    for _ in range(args.iters):
        tokens = torch.randint(0, args.vocab, (args.batch, args.seq + 1), device=args.device)
        hidden = model["blocks"](model["embed"](tokens[:, :-1]), mask=mask, is_causal=True)
        loss = torch.nn.functional.cross_entropy(model["head"](hidden).flatten(0, 1), tokens[:, 1:].flatten())
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
    print(f"final loss {loss.item():.4f}")


if __name__ == "__main__":
    main()

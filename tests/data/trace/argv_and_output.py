"""Prints its arguments to standard output and trains a few clean steps; exits with the status
given by --exit (to test how trace passes sys.argv, moves the program's output and reports exits)."""
import argparse
import sys

import torch
import torch.nn as nn

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=6)
parser.add_argument("--exit", type=int, default=0)
parser.add_argument("--fail", action="store_true")
args = parser.parse_args()
print("argv:", " ".join(sys.argv[1:]), "| name:", __name__, "| file:", __file__.endswith("argv_and_output.py"))

torch.manual_seed(0)
model = nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(args.steps):
    optimizer.zero_grad()
    loss = model(torch.randn(8, 4)).pow(2).mean()
    loss.backward()
    optimizer.step()
    print(f"step {step + 1} done")
if args.fail:
    raise ValueError("the program failed on purpose")
sys.exit(args.exit)

"""``python -m reference_loop``: train the reference loop and print its per-epoch log."""

from __future__ import annotations

import argparse


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m reference_loop", description=__doc__)
    ap.add_argument("--precision", choices=("fp32", "bf16", "fp16"), default=None,
                    help="default: fp16 (AMP + GradScaler) on CUDA, fp32 on CPU")
    ap.add_argument("--device", default=None)
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--conversion", action="store_true",
                    help="print the LC501 model-conversion matrix instead of training")
    args = ap.parse_args(argv)
    if args.conversion:
        from .conversion import main as conversion_main
        return conversion_main()
    from .loop import default_device, train
    device = args.device or default_device()
    precision = args.precision or ("fp16" if device == "cuda" else "fp32")
    r = train(precision=precision, device=device, epochs=args.epochs, verbose=True)
    print(f"{r['device']} {r['precision']} torch {r['torch']}: val acc {r['val_acc']:.3f} "
          f"in {r['seconds']:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

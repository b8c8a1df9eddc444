"""The reference training loop behind loopcheck's rules.

It is the complete loop of the crib sheet (``shared/seeds/annotated-training-loop.md``):
3-class spiral data (2,000 training points, 2 features), an MLP with BatchNorm and Dropout,
``CrossEntropyLoss``, ``Adam``, ``CosineAnnealingLR`` stepped once per epoch, ``clip_grad_norm_``,
validation under ``model.eval()`` + ``torch.no_grad()`` and ``loss.item()`` logging.

Precision modes (see :func:`reference_loop.loop.train`):

* ``fp32``  - plain float32 (CPU and CUDA);
* ``bf16``  - ``torch.autocast(dtype=torch.bfloat16)`` without a GradScaler (CPU and CUDA);
* ``fp16``  - ``torch.autocast(dtype=torch.float16)`` with ``torch.amp.GradScaler`` (CUDA; also
  runs on CPU, where PyTorch 2.13 supports float16 autocast and a CPU GradScaler).

``reference_loop.conversion`` measures what converting a model after building its optimizer
really does (rule LC501), ``reference_loop.memory`` what keeping loss tensors costs (LC401), and
``python -m reference_loop.results`` regenerates ``RESULTS.md`` (all of it plus ``loopcheck
verify``).  The probes that observe a training script at runtime are in ``loopcheck.verify``;
``loopcheck verify`` runs them over the rule fixtures.

torch is imported by the submodules only, so ``import reference_loop`` is cheap.
"""

__all__ = ["data", "model", "loop", "conversion", "memory", "results"]

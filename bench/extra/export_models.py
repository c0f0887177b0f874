"""export_models.py -- the command line and export loop that bench/extra's model generators share.

    import export_models
    sys.exit(export_models.main("gen_x_models", __doc__, build))

A generator module defines build(), yielding (name, module, example input,
opset) in the order the seed is consumed, and calls main(), which:

  - parses --out DIR (default bench/extra/models/) and --force (re-export
    models that exist), with the generator's docstring as --help;
  - seeds torch (torch.manual_seed(0)) before the first model is built;
  - builds every model, also the ones it skips, so that each model's
    weights do not depend on which files were already there; prepare(module),
    if given, runs on each model at that point too (before the skip);
  - skips a model whose DIR/<name>.onnx exists, unless --force;
  - exports the rest in eval mode: input "x", output "y", dynamic batch axis
    "N" on both, the model's opset; under torch.no_grad() when no_grad; with
    the exporter dynamo picks (None: torch's default);
  - prints "<prog>: wrote PATH" on stderr for each file written.

Used by gen_extra_models.py, gen_conv1d_models.py and gen_vision_models.py (this folder is on
sys.path when they run as scripts).
"""
import argparse
import contextlib
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))


def parse_args(doc):
    """--out and --force, with doc as the --help text."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(HERE, "models"))
    ap.add_argument("--force", action="store_true", help="re-export models that exist")
    return ap.parse_args()


def export_one(module, example, path, opset, no_grad, dynamo=None):
    """module (eval mode) to the ONNX file path, batch axis "N" dynamic.  dynamo None: the torch version's
    default exporter (torch 1.13 has only TorchScript); False / True: pick it (torch >= 2.5)."""
    module.eval()
    kw = {} if dynamo is None else {"dynamo": dynamo}
    with torch.no_grad() if no_grad else contextlib.nullcontext():
        torch.onnx.export(module, example, path, input_names=["x"], output_names=["y"], opset_version=opset,
                          dynamic_axes={"x": {0: "N"}, "y": {0: "N"}}, **kw)


def main(prog, doc, build, prepare=None, no_grad=False, dynamo=None):
    """The generator's whole run (see the file's top); the exit status."""
    a = parse_args(doc)
    os.makedirs(a.out, exist_ok=True)
    torch.manual_seed(0)
    for name, module, example, opset in build():  # every model is built (same seed use) even when skipped
        if prepare:
            prepare(module)
        path = os.path.join(a.out, name + ".onnx")
        if os.path.exists(path) and not a.force:
            continue
        export_one(module, example, path, opset, no_grad, dynamo)
        print("%s: wrote %s" % (prog, path), file=sys.stderr)
    return 0

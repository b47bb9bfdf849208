"""The command line the kernel generators share: --isa, --table, --out."""
import argparse
import sys


def parser(doc, isas):
    """The shared options; a generator may add its own before parsing."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--isa", choices=sorted(isas))
    ap.add_argument("--table", action="store_true", help="emit the kernel table instead of kernels")
    ap.add_argument("--out", help="output file (default: stdout)")
    return ap


def write(text, out):
    """The generated text to `out`, or to stdout without one."""
    if out:
        with open(out, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0


def main(doc, isas, emit_isa, emit_table):
    """A generator of one unit per ISA (emit_isa(isa)) and a table (emit_table())."""
    ap = parser(doc, isas)
    args = ap.parse_args()
    if args.table:
        text = emit_table()
    elif args.isa:
        text = emit_isa(args.isa)
    else:
        ap.error("give --isa or --table")
    return write(text, args.out)

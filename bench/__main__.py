"""Run a benchmark: ``python -m bench <name> [--rounds N]``; ``python -m bench --list``."""

from __future__ import annotations

import argparse
import importlib
import sys

BENCHMARKS = {
    "canonical": "bench.canonical",
    "conversation": "bench.bench_conversation",
    "erase": "bench.bench_erase",
    "provider": "bench.bench_provider",
    "cartridge": "bench.bench_cartridge",
    "cartridge-cli": "bench.bench_cartridge_cli",
    "cli-start": "bench.bench_cli_start",
    "mcp": "bench.bench_mcp",
    "mcp-start": "bench.bench_mcp_start",
    "oci": "bench.bench_oci",
    "pam": "bench.bench_pam",
    "recall": "bench.bench_recall",
    "engines": "bench.bench_engines",
    "tamper": "bench.bench_tamper",
    "metrics": "bench.bench_metrics",
    "tamper-acx": "bench.bench_tamper_acx",
    "multilingual": "bench.bench_multilingual",
    "default-seat": "bench.bench_default_seat",
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("name", nargs="?", choices=sorted(BENCHMARKS), help="benchmark to run")
    parser.add_argument("--rounds", type=int, default=7, help="timed rounds per contender")
    parser.add_argument("--list", action="store_true", help="list the benchmarks and exit")
    args, rest = parser.parse_known_args(argv)
    if args.list or args.name is None:
        for name, module in sorted(BENCHMARKS.items()):
            doc = importlib.import_module(module).__doc__ or ""
            print(f"{name}\t{doc.strip().splitlines()[0] if doc.strip() else ''}")
        return 0
    chosen = importlib.import_module(BENCHMARKS[args.name])
    # Options of one benchmark (e.g. ``recall --n 1000000 --cache DIR``) go to it.
    status = chosen.main(rounds=args.rounds, argv=rest) if rest else chosen.main(rounds=args.rounds)
    return status if isinstance(status, int) else 0


if __name__ == "__main__":
    sys.exit(main())

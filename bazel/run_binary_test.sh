#!/bin/sh
# A test that runs a program (its first argument) with the remaining
# arguments and passes when the program exits 0.
set -e
program="$1"
shift
exec "${program}" "$@"

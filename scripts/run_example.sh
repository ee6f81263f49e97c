#!/usr/bin/env bash
# The main job: installs what is missing, builds hvdc, and trains a small convolutional network
# on the 8x8 handwritten digits with 2 local processes (hvdcrun, no MPI needed), the way Horovod
# trains a Gluon model: parameters broadcast from rank 0, gradients averaged by named async
# allreduces during backward, metrics averaged over the ranks, rank 0 logging.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
digits=/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz
if [ -f "$digits" ]; then
  data=(--data digits --model cnn --epochs 10)
else
  echo "run_example: $digits is missing (apt-get install python3-sklearn);" \
    "training on the built-in synthetic data instead"
  data=(--data synthetic --model mlp --epochs 20)
fi
build/src/hvdcrun -np 2 build/examples/trainer/hvdc-train "${data[@]}" --verify-sync

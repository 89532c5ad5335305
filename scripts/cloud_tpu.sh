#!/usr/bin/env bash
# Train transformer_librispeech_tpu on a Cloud TPU VM with t2t-lite.
#
#   PROJECT=my-project ZONE=us-central2-b BUCKET=gs://my-bucket bash scripts/cloud_tpu.sh
#
# Creates a TPU VM, installs t2t-lite on it, generates LibriSpeech (960 h)
# into $BUCKET/data, then trains with --tpu; checkpoints, hparams.json and
# TensorBoard summaries go to $BUCKET/train. Rerunning resumes training.
# Untested on a real TPU so far (see README, "Cloud TPU").
set -euo pipefail

: "${PROJECT:?set PROJECT to your GCP project}"
: "${ZONE:?set ZONE to a zone with TPUs, e.g. us-central2-b}"
: "${BUCKET:?set BUCKET to a gs:// bucket the TPU VM can write}"
TPU_NAME=${TPU_NAME:-t2t-lite-tpu}
ACCELERATOR=${ACCELERATOR:-v4-8}
RUNTIME=${RUNTIME:-tpu-vm-tf-2.21.0-pjrt}
TRAIN_STEPS=${TRAIN_STEPS:-250000}
REPO=${REPO:-https://example.invalid/t2t-lite.git}  # where you host this repository

gcloud compute tpus tpu-vm create "$TPU_NAME" --project="$PROJECT" --zone="$ZONE" \
  --accelerator-type="$ACCELERATOR" --version="$RUNTIME"

run_on_tpu() {
  gcloud compute tpus tpu-vm ssh "$TPU_NAME" --project="$PROJECT" --zone="$ZONE" --command="$1"
}

run_on_tpu "git clone $REPO t2t-lite || (cd t2t-lite && git pull); pip install -e './t2t-lite[audio]'"

# Datagen runs on the VM's CPUs; shards are written straight to the bucket.
run_on_tpu "t2t-lite-datagen --problem=librispeech --data_dir=$BUCKET/data --tmp_dir=/tmp/librispeech"

# The TPU VM's own TPU is local: --tpu=local. Static shapes are automatic with --tpu.
run_on_tpu "t2t-lite-trainer --problem=librispeech --model=transformer \
  --hparams_set=transformer_librispeech_tpu --tpu=local \
  --data_dir=$BUCKET/data --output_dir=$BUCKET/train \
  --train_steps=$TRAIN_STEPS --iterations_per_loop=1000 --save_checkpoints_steps=5000 \
  --local_eval_frequency=5000"

echo "Training output: $BUCKET/train (tensorboard --logdir=$BUCKET/train)."
echo "Delete the TPU when done: gcloud compute tpus tpu-vm delete $TPU_NAME --zone=$ZONE"

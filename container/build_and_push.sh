#!/usr/bin/env bash
# Build the Captioner STT image and push it to Amazon ECR.
set -euo pipefail

usage() {
    cat <<'USAGE'
usage: build_and_push.sh REGION ACCOUNT_ID [REPOSITORY] [TAG]

Builds container/ (linux/amd64), creates the ECR repository if missing, logs
in to ECR, tags and pushes, then prints the image URI for the STT deploy.

  REGION       AWS region, e.g. us-east-1
  ACCOUNT_ID   12-digit AWS account id that owns the repository
  REPOSITORY   ECR repository name (default: captioner-stt)
  TAG          image tag (default: latest)

Environment: BASE_IMAGE overrides the vLLM DLC base image; AWS credentials
come from the usual AWS CLI configuration.
USAGE
}

if [[ "${1:-}" == "-h" || "${1:-}" == "--help" ]]; then
    usage
    exit 0
fi
if (( $# < 2 || $# > 4 )); then
    usage >&2
    exit 2
fi

region="$1"
account="$2"
repository="${3:-captioner-stt}"
tag="${4:-latest}"

[[ "$account" =~ ^[0-9]{12}$ ]] || { echo "error: ACCOUNT_ID must be 12 digits, got '$account'" >&2; exit 2; }
[[ "$region" =~ ^[a-z]{2}(-[a-z]+)+-[0-9]+$ ]] || { echo "error: '$region' is not an AWS region" >&2; exit 2; }

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
registry="$account.dkr.ecr.$region.amazonaws.com"
image="$registry/$repository:$tag"
build_args=()
if [[ -n "${BASE_IMAGE:-}" ]]; then
    build_args+=(--build-arg "BASE_IMAGE=$BASE_IMAGE")
fi

if ! aws ecr describe-repositories --region "$region" --repository-names "$repository" >/dev/null 2>&1; then
    echo "creating ECR repository $repository in $region" >&2
    aws ecr create-repository --region "$region" --repository-name "$repository" >/dev/null
fi

aws ecr get-login-password --region "$region" \
    | docker login --username AWS --password-stdin "$registry"

docker build --platform linux/amd64 ${build_args[@]+"${build_args[@]}"} -t "$repository:$tag" "$here"
docker tag "$repository:$tag" "$image"
docker push "$image"

echo "$image"

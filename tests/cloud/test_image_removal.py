"""Removing the captions image and what built it, against a moto server: what is found,
what goes, and what is left alone."""

from __future__ import annotations

import json
from dataclasses import replace

import boto3
import pytest

from captioner.cloud import image_build as ib
from captioner.cloud.account import AccountClients
from captioner.cloud.errors import DeployConfigError
from captioner.cloud.image_removal import find_leftovers, remove_leftovers
from tests.support.aws_account import RunningCodeBuild

ACCOUNT = "123456789012"
REGION = "eu-west-1"
PLAN = ib.BuildPlan(ACCOUNT, REGION)
MANIFEST = json.dumps({"schemaVersion": 2, "mediaType":
                       "application/vnd.docker.distribution.manifest.v2+json",
                       "config": {"digest": "sha256:" + "c" * 64, "size": 7,
                                  "mediaType": "application/vnd.docker.container.image.v1+json"},
                       "layers": []})


def clients(moto_url: str) -> AccountClients:
    return AccountClients.from_factory(
        lambda service: boto3.client(service, region_name=REGION, endpoint_url=moto_url))


def built(aws: AccountClients) -> None:
    """What a build leaves: its repository (with the pushed image), bucket, role, project."""
    ib.start_build(aws, PLAN, b"build files", installation_id="0123456789abcdef",
                   principal_arn=f"arn:aws:iam::{ACCOUNT}:user/moto")
    aws.ecr.put_image(repositoryName="captioner-stt", imageManifest=MANIFEST,
                      imageTag="latest")


def test_everything_a_build_left_is_found_and_removed(moto_url: str) -> None:
    aws = clients(moto_url)
    assert find_leftovers(aws, PLAN).empty  # a fresh account: nothing to remove
    built(aws)
    aws.s3.put_object(Bucket=PLAN.bucket, Key="stt-image/old.zip", Body=b"older files")

    found = find_leftovers(aws, PLAN)
    assert (found.images, found.bucket, found.project, found.role) == (1, True, True, True)
    lines = found.lines()
    assert lines[0].startswith("ECR repository captioner-stt (1 image") and "a month" in lines[0]
    big = replace(found, image_bytes=9_800_000_000).lines()[0]
    assert big == "ECR repository captioner-stt (1 image, 9.1 GB): about $0.91 a month"
    assert lines[1:] == [
        f"S3 bucket {PLAN.bucket} (the build files): under a cent a month",
        "CodeBuild project captioner-stt-image: free while it does not build",
        "IAM role captioner-codebuild (the build's role): free"]

    assert remove_leftovers(aws, found) == [what for what, _cost in found.items()]
    assert aws.ecr.describe_repositories()["repositories"] == []
    assert PLAN.bucket not in [b["Name"] for b in aws.s3.list_buckets()["Buckets"]]
    assert aws.codebuild.batch_get_projects(names=[ib.PROJECT])["projects"] == []
    assert ib.ROLE_NAME not in [r["RoleName"] for r in aws.iam.list_roles()["Roles"]]
    assert find_leftovers(aws, PLAN).empty
    assert len(remove_leftovers(aws, found)) == 4  # removed meanwhile elsewhere: no error


def test_a_role_of_that_name_not_made_by_captioner_stays(moto_url: str) -> None:
    aws = clients(moto_url)
    trust = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action":
             "sts:AssumeRole", "Principal": {"Service": "codebuild.amazonaws.com"}}]}
    aws.iam.create_role(RoleName=ib.ROLE_NAME, AssumeRolePolicyDocument=json.dumps(trust))
    found = find_leftovers(aws, PLAN)
    assert found.empty and not found.role
    remove_leftovers(aws, found)
    assert aws.iam.get_role(RoleName=ib.ROLE_NAME)["Role"]["RoleName"] == ib.ROLE_NAME


def test_nothing_is_removed_while_a_build_runs(moto_url: str) -> None:
    aws = clients(moto_url)
    built(aws)
    found = find_leftovers(aws, PLAN)
    with pytest.raises(DeployConfigError, match="An image build is running"):
        remove_leftovers(replace(aws, codebuild=RunningCodeBuild()), found)
    assert [r["repositoryName"] for r in aws.ecr.describe_repositories()["repositories"]] == [
        "captioner-stt"]

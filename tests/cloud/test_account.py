"""Account queries of the set-up against a moto server: who am I, SageMaker roles, the
least-privilege role Captioner creates, ECR images, model sources and the instance pool."""

from __future__ import annotations

import json

import boto3
import pytest
from botocore.stub import Stubber

from captioner.cloud import account as acct
from captioner.cloud.errors import AccessDeniedError, DeployConfigError
from captioner.cloud.images import (
    build_and_push_command,
    find_image,
    list_images,
    parse_image_uri,
)
from captioner.cloud.model_source import S3SourceState, inspect_s3_source, parse_model_source
from captioner.cloud.pricing import PriceTable, instance_options
from captioner.settings import EndpointDeploySettings
from tests.support.aws_account import ACCOUNT, REGION, STT_IMAGE, FakeAccount

INSTALLATION = "0123456789abcdef"


def policies(model_source: str = "") -> acct.RolePolicies:
    return acct.execution_role_policies(partition="aws", region=REGION, account=ACCOUNT,
                                        image_uri=STT_IMAGE, model_source=model_source)


def test_caller_identity(fake_account: FakeAccount) -> None:
    me = acct.caller_identity(fake_account.clients.sts)
    assert (me.account, me.display_name, me.is_root) == (ACCOUNT, "user/moto", False)


def test_only_roles_that_trust_sagemaker_are_listed(fake_account: FakeAccount) -> None:
    fake_account.add_role("b-sagemaker")
    fake_account.add_role("A-Sagemaker-too", trust={"Statement": [{
        "Effect": "Allow", "Action": ["sts:AssumeRole", "sts:TagSession"],
        "Principal": {"Service": ["ec2.amazonaws.com", "sagemaker.amazonaws.com"]}}]})
    fake_account.add_role("lambda-only", trust={"Statement": [{
        "Effect": "Allow", "Action": "sts:AssumeRole",
        "Principal": {"Service": "lambda.amazonaws.com"}}]})
    fake_account.add_role("denied", trust={"Statement": [{
        "Effect": "Deny", "Action": "sts:AssumeRole",
        "Principal": {"Service": "sagemaker.amazonaws.com"}}]})
    roles = acct.list_sagemaker_roles(fake_account.clients.iam)
    assert [r.name for r in roles] == ["A-Sagemaker-too", "b-sagemaker"]
    assert roles[1].arn == f"arn:aws:iam::{ACCOUNT}:role/b-sagemaker"
    assert acct.get_role(fake_account.clients.iam, f"arn:aws:iam::{ACCOUNT}:role/nope") is None


def test_the_execution_role_policy_is_least_privilege() -> None:
    assert policies().trust == {"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Principal": {"Service": "sagemaker.amazonaws.com"},
        "Action": "sts:AssumeRole"}]}
    statements = {s["Sid"]: s for s in policies().permissions["Statement"]}
    assert set(statements) == {"EcrLogin", "PullImage", "OwnLogs", "Metrics"}  # no S3
    assert statements["EcrLogin"]["Action"] == "ecr:GetAuthorizationToken"
    assert statements["PullImage"]["Resource"] == (
        f"arn:aws:ecr:{REGION}:{ACCOUNT}:repository/captioner-stt")
    assert statements["OwnLogs"]["Resource"][0] == (
        f"arn:aws:logs:{REGION}:{ACCOUNT}:log-group:/aws/sagemaker/Endpoints/captioner-*")
    with_s3 = {s["Sid"]: s for s in policies("s3://models/voxtral").permissions["Statement"]}
    assert with_s3["ReadModel"] == {"Sid": "ReadModel", "Effect": "Allow",
                                    "Action": "s3:GetObject",
                                    "Resource": "arn:aws:s3:::models/voxtral/*"}
    assert with_s3["ListModel"]["Resource"] == "arn:aws:s3:::models"
    assert with_s3["ListModel"]["Condition"] == {"StringLike": {"s3:prefix": ["voxtral/*"]}}
    every_action = [a for s in with_s3.values() for a in
                    (s["Action"] if isinstance(s["Action"], list) else [s["Action"]])]
    assert not any(a.endswith("*") for a in every_action)
    assert json.loads(policies().permissions_json()) == policies().permissions
    with pytest.raises(DeployConfigError, match="not an ECR image URI"):
        acct.execution_role_policies(partition="aws", region=REGION, account=ACCOUNT,
                                     image_uri="docker.io/vllm:latest")


def test_create_execution_role(fake_account: FakeAccount) -> None:
    me = acct.caller_identity(fake_account.clients.sts)
    role = acct.create_execution_role(
        fake_account.clients.iam, acct.default_role_name("stt"), policies("s3://models/v/"),
        installation_id=INSTALLATION, principal_arn=me.arn)
    assert role.name == "captioner-endpoint-stt" and role.trusts_sagemaker
    assert role.created_by_captioner
    iam = fake_account.client("iam")
    stored = acct.get_role(iam, role.arn)
    assert stored is not None and stored.trusts_sagemaker
    assert stored.tags == {"captioner:managed": "true", "captioner:installation": INSTALLATION,
                           "captioner:owner": me.arn}
    inline = iam.get_role_policy(RoleName=role.name, PolicyName="captioner-endpoint")
    assert inline["PolicyDocument"] == policies("s3://models/v/").permissions
    assert [r.name for r in acct.list_sagemaker_roles(iam)] == ["captioner-endpoint-stt"]
    with pytest.raises(DeployConfigError, match="not a valid role name"):
        acct.create_execution_role(iam, "bad name", policies(), installation_id=INSTALLATION,
                                   principal_arn="")


def test_a_role_whose_policy_is_refused_is_removed_again(fake_account: FakeAccount) -> None:
    iam = fake_account.client("iam")
    refusing = Stubber(iam)
    refusing.add_response("create_role", {"Role": {
        "Path": "/", "RoleName": "r", "RoleId": "AROAEXAMPLEEXAMPLE1", "CreateDate": "2026-12-01",
        "Arn": f"arn:aws:iam::{ACCOUNT}:role/r"}})
    refusing.add_client_error("put_role_policy", "AccessDenied", "no iam:PutRolePolicy", 403)
    refusing.add_response("delete_role", {}, {"RoleName": "r"})
    with refusing, pytest.raises(AccessDeniedError, match="put_role_policy"):
        acct.create_execution_role(iam, "r", policies(), installation_id=INSTALLATION,
                                   principal_arn="")
    refusing.assert_no_pending_responses()


def test_images_are_listed_stt_first_and_found_by_uri(fake_account: FakeAccount) -> None:
    fake_account.add_image("web-frontend", "v1")
    fake_account.add_image("captioner-stt", "latest")
    fake_account.add_image("captioner-stt", "v2")
    images = list_images(fake_account.clients.ecr)
    assert [i.looks_like_stt for i in images] == [True, True, False]
    assert {i.uri for i in images[:2]} == {STT_IMAGE, STT_IMAGE.replace(":latest", ":v2")}
    assert images[2].uri.endswith("/web-frontend:v1")
    found = find_image(fake_account.clients.ecr, STT_IMAGE)
    assert found is not None and found.ref.repository == "captioner-stt"
    assert find_image(fake_account.clients.ecr, STT_IMAGE.replace("latest", "v9")) is None
    assert find_image(fake_account.clients.ecr,
                      STT_IMAGE.replace("captioner-stt", "missing")) is None


def test_image_uris_and_the_build_command() -> None:
    ref = parse_image_uri(f"{ACCOUNT}.dkr.ecr.eu-west-1.amazonaws.com/team/stt@sha256:{'b' * 64}")
    assert (ref.region, ref.repository, ref.tag) == ("eu-west-1", "team/stt", None)
    assert ref.image_id == {"imageDigest": "sha256:" + "b" * 64}
    assert parse_image_uri(f"{ACCOUNT}.dkr.ecr.{REGION}.amazonaws.com/stt").tag == "latest"
    for bad in ("", "stt:latest", "public.ecr.aws/x/y:1", f"{ACCOUNT}.dkr.ecr.{REGION}.x.com/a"):
        with pytest.raises(DeployConfigError):
            parse_image_uri(bad)
    assert build_and_push_command(REGION, ACCOUNT) == (
        f"container/build_and_push.sh {REGION} {ACCOUNT}")


def test_model_source_parsing() -> None:
    assert parse_model_source("", "org/default").model_id == "org/default"
    s3 = parse_model_source("s3://bucket/a/b")
    assert (s3.is_s3, s3.bucket, s3.prefix, s3.uri) == (True, "bucket", "a/b/", "s3://bucket/a/b/")
    assert parse_model_source("s3://bucket").prefix == ""
    for bad in ("s3://B", "two words", "no-slash"):
        with pytest.raises(DeployConfigError):
            parse_model_source(bad)


def test_instance_pool_with_prices() -> None:
    prices = PriceTable(regions={"us-east-1": {"ml.g6.xlarge": 1.0, "ml.g5.xlarge": 1.4,
                                               "ml.g4dn.xlarge": 0.7},
                                 "eu-west-1": {"ml.g5.xlarge": 1.6}})
    options = instance_options(prices, "eu-west-1", preferred=["ml.g5.xlarge", "ml.new.type"])
    assert [o.instance_type for o in options] == [
        "ml.g5.xlarge", "ml.new.type", "ml.g4dn.xlarge", "ml.g6.xlarge"]
    g5, new, g4 = options[0].price, options[1].price, options[2].price
    assert g5 is not None and (g5.hourly, g5.exact) == (1.6, True)
    assert new is None
    assert g4 is not None and (g4.hourly, g4.exact) == (0.7, False)  # from the fallback region


def test_role_policies_follow_the_saved_plan() -> None:
    me = acct.CallerIdentity(ACCOUNT, f"arn:aws:iam::{ACCOUNT}:user/ana")
    tts = acct.role_policies_for("tts", EndpointDeploySettings(), "eu-west-1", me)
    pull = next(s for s in tts.permissions["Statement"] if s["Sid"] == "PullImage")
    assert pull["Resource"] == "arn:aws:ecr:eu-west-1:763104351884:repository/vllm"
    plan = EndpointDeploySettings(image_uri=STT_IMAGE, model_source="s3://models/v/")
    stt = acct.role_policies_for("stt", plan, REGION, me)
    assert stt == policies("s3://models/v/")
    with pytest.raises(DeployConfigError, match="Choose the image first"):
        acct.role_policies_for("stt", EndpointDeploySettings(), REGION, me)


def test_legacy_bucket_locations_name_their_region() -> None:
    s3 = boto3.Session(aws_access_key_id="x", aws_secret_access_key="y",
                       region_name=REGION).client("s3")
    with Stubber(s3) as stub:
        stub.add_response("get_bucket_location", {"LocationConstraint": "EU"},
                          {"Bucket": "old-bucket"})
        stub.add_response("list_objects_v2", {"KeyCount": 1},
                          {"Bucket": "old-bucket", "Prefix": "m/", "MaxKeys": 1})
        state = inspect_s3_source(s3, parse_model_source("s3://old-bucket/m"))
    assert state == S3SourceState(bucket_exists=True, bucket_region="eu-west-1", has_objects=True)

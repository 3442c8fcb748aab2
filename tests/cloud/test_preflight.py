"""Preflight against a moto account (IAM, STS, ECR, S3); IAM policy simulation and
Service Quotas answer from Stubbers, which validate each request against the real API."""

from __future__ import annotations

from datetime import UTC, datetime

import boto3
import pytest
from botocore.stub import Stubber

from captioner.cloud.account import AccountClients
from captioner.cloud.preflight import (
    ORDER,
    CheckId,
    PreflightFailedError,
    Status,
    require,
    run_preflight,
)
from captioner.cloud.pricing import PriceTable
from captioner.settings import EndpointDeploySettings
from tests.support.aws_account import (
    ACCOUNT,
    REGION,
    ROLE_ARN,
    STT_IMAGE,
    STT_REPO,
    FakeAccount,
)

PRICES = PriceTable(regions={REGION: {"ml.g6.4xlarge": 1.654, "ml.g6.xlarge": 1.006,
                                      "ml.g5.xlarge": 1.408}})


def stt(**changes) -> EndpointDeploySettings:
    base = {"image_uri": STT_IMAGE, "role_arn": ROLE_ARN, "instance_types": ["ml.g6.4xlarge"]}
    return EndpointDeploySettings(**{**base, **changes})


def run(account: FakeAccount, settings: EndpointDeploySettings, kind="stt", **kwargs):
    return run_preflight(kind, settings, account.clients, region=REGION, prices=PRICES,
                         **kwargs)


def statuses(preflight) -> dict[str, str]:
    return {c.id.value: c.status.value for c in preflight.checks}


def test_a_complete_setup_passes_every_check_in_order(fake_account: FakeAccount) -> None:
    fake_account.add_role()
    fake_account.add_image()
    fake_account.add_model("voxtral-weights", "voxtral/config.json")
    fake_account.allow_pass_role()
    fake_account.allow_role_access(model=("voxtral-weights", "voxtral/"))
    fake_account.quota("ml.g6.4xlarge", 1)
    preflight = run(fake_account, stt(model_source="s3://voxtral-weights/voxtral"))
    assert [c.id for c in preflight.checks] == list(ORDER)
    assert preflight.all_passed and preflight.may_deploy, preflight.lines()
    assert preflight.first_failure is None
    assert preflight.identity is not None and preflight.identity.account == ACCOUNT
    assert require(preflight) is preflight
    text = "\n".join(preflight.lines())
    assert f"Account {ACCOUNT} as user/moto" in text
    assert "Role CaptionerSageMaker exists and SageMaker may assume it" in text
    assert "user/moto may pass CaptionerSageMaker to SageMaker" in text
    assert "Role CaptionerSageMaker may pull the image and read the model" in text
    assert f"{STT_REPO}:latest exists" in text
    assert "s3://voxtral-weights/voxtral/ is readable and not empty" in text
    assert "“ml.g6.4xlarge for endpoint usage” is 1 (needs 1)" in text
    assert "about $1.65/hour" in text


def test_nothing_set_up_fails_at_the_role_and_names_what_is_missing(
        fake_account: FakeAccount) -> None:
    fake_account.quota("ml.g6.4xlarge", 1)
    preflight = run(fake_account, stt())
    assert statuses(preflight) == {
        "credentials": "PASS", "role": "FAIL", "pass-role": "UNKNOWN",
        "role-access": "UNKNOWN", "image": "FAIL",
        "model": "PASS", "quota": "PASS", "price": "PASS"}
    assert not preflight.may_deploy
    assert preflight.first_failure is preflight.check(CheckId.ROLE)
    assert [c.section for c in CheckId] == [
        "credentials", "role", "role", "role", "image", "model", "quota", "price"]
    assert preflight.check(CheckId.ROLE).detail == (
        f"Role CaptionerSageMaker does not exist in account {ACCOUNT}.")
    image = preflight.check(CheckId.IMAGE)
    assert image.detail == (
        f"No image latest in repository {STT_REPO} (account {ACCOUNT}, {REGION}).")
    assert f"container/build_and_push.sh {REGION} {ACCOUNT}" in image.fix
    with pytest.raises(PreflightFailedError, match="Execution role: Role CaptionerSageMaker does "
                                                   "not exist") as info:
        require(preflight)
    assert info.value.preflight is preflight


def test_empty_settings_say_what_to_choose(fake_account: FakeAccount) -> None:
    preflight = run(fake_account, stt(role_arn="", image_uri="", instance_types=["ml.x.big"]))
    assert preflight.check(CheckId.ROLE).detail == "No execution role is chosen."
    assert "let Captioner create one" in preflight.check(CheckId.ROLE).fix
    assert preflight.check(CheckId.IMAGE).detail == "No STT image is chosen."
    assert "build and push one" in preflight.check(CheckId.IMAGE).fix
    assert preflight.check(CheckId.QUOTA).status is Status.UNKNOWN  # no such quota
    fake_account.quotas.assert_no_pending_responses()


def test_a_role_sagemaker_cannot_assume_fails(fake_account: FakeAccount) -> None:
    ec2_trust = {"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"},
        "Action": "sts:AssumeRole"}]}
    fake_account.add_role(trust=ec2_trust)
    fake_account.add_image()
    fake_account.quota("ml.g6.4xlarge", 1)
    role = run(fake_account, stt()).check(CheckId.ROLE)
    assert role.status is Status.FAIL
    assert "does not let SageMaker assume it" in role.detail
    assert "sagemaker.amazonaws.com" in role.fix


def test_a_role_of_another_account_fails_without_asking_iam(fake_account: FakeAccount) -> None:
    fake_account.quota("ml.g6.4xlarge", 1)
    role = run(fake_account, stt(role_arn="arn:aws:iam::210987654321:role/Theirs")
               ).check(CheckId.ROLE)
    assert role.status is Status.FAIL
    assert "belongs to account 210987654321" in role.detail


@pytest.mark.parametrize("decision, words", [("implicitDeny", "does not allow"),
                                             ("explicitDeny", "explicitly denies")])
def test_pass_role_denied_fails_with_the_permission_to_ask_for(
        fake_account: FakeAccount, decision: str, words: str) -> None:
    fake_account.add_role()
    fake_account.add_image()
    fake_account.allow_pass_role(decision)
    fake_account.allow_role_access()
    fake_account.quota("ml.g6.4xlarge", 1)
    preflight = run(fake_account, stt())
    check = preflight.check(CheckId.PASS_ROLE)
    assert check.status is Status.FAIL and words in check.detail
    assert f"iam:PassRole on {ROLE_ARN}" in check.fix
    assert preflight.first_failure is check
    assert not preflight.with_overrides(["pass-role"]).may_deploy  # a FAIL cannot be overridden


def test_checks_that_cannot_be_read_are_unknown_and_may_be_overridden(
        fake_account: FakeAccount) -> None:
    fake_account.add_role()
    fake_account.add_image()
    fake_account.simulator.add_client_error(
        "simulate_principal_policy", "AccessDenied", "not authorized to perform "
        "iam:SimulatePrincipalPolicy", 403)
    fake_account.simulator.add_client_error(
        "simulate_principal_policy", "AccessDenied", "not authorized", 403)
    fake_account.quotas.add_client_error(
        "list_service_quotas", "AccessDeniedException", "no servicequotas access", 400)
    preflight = run(fake_account, stt())
    pass_role, quota = preflight.check(CheckId.PASS_ROLE), preflight.check(CheckId.QUOTA)
    assert pass_role.status is Status.UNKNOWN and quota.status is Status.UNKNOWN
    assert "iam:SimulatePrincipalPolicy" in pass_role.detail
    assert "servicequotas:ListServiceQuotas" in quota.detail and "override" in quota.fix
    assert not preflight.may_deploy and preflight.first_failure is pass_role
    partly = preflight.with_overrides(["pass-role", "role-access"])
    assert not partly.may_deploy and partly.first_failure is quota
    assert preflight.check(CheckId.ROLE_ACCESS).status is Status.UNKNOWN
    both = preflight.with_overrides([CheckId.PASS_ROLE, "role-access", "quota"])
    assert both.may_deploy and not both.all_passed
    assert ("overridden checks: Permission to pass the role, Role's own permissions, "
            "Endpoint quota") in both.summary()
    assert any(line.startswith("OVERRIDE") for line in both.lines())


def test_quota_zero_fails_and_a_missing_applied_value_uses_the_default(
        fake_account: FakeAccount) -> None:
    fake_account.add_role()
    fake_account.add_image()
    fake_account.allow_pass_role()
    fake_account.allow_role_access()
    fake_account.quota("ml.g6.4xlarge", None, default=0)
    fake_account.quota_requests(None)  # may not read the requests: still a plain FAIL
    quota = run(fake_account, stt()).check(CheckId.QUOTA)
    assert quota.status is Status.FAIL
    assert quota.detail == (f"The quota “ml.g6.4xlarge for endpoint usage” is 0 in {REGION}; "
                            "the deploy needs 1.")
    assert quota.fix.startswith("Ask AWS for 1 (free): “Ask AWS for more quota”")

    fake_account.allow_pass_role()
    fake_account.allow_role_access()
    fake_account.quota("ml.g6.4xlarge", 2)
    fake_account.quota_requests([
        {"DesiredValue": 1.0, "Status": "APPROVED", "Created": datetime(2026, 11, 2, tzinfo=UTC)},
        {"DesiredValue": 3.0, "Status": "CASE_OPENED",
         "Created": datetime(2026, 12, 5, 9, 30, tzinfo=UTC)}])
    autoscaled = run(fake_account, stt(autoscale_min=1, autoscale_max=3)).check(CheckId.QUOTA)
    assert autoscaled.status is Status.FAIL and "the deploy needs 3" in autoscaled.detail
    assert autoscaled.detail.endswith("An increase to 3 was asked for on 2026-12-05 "
                                      "(case opened).")
    assert autoscaled.fix.startswith("Wait for AWS's answer")

    # An open request for fewer than the deploy needs: waiting for it is not enough, and
    # AWS takes no second request for the quota until it answers this one.
    fake_account.quota("ml.g6.4xlarge", 1)
    fake_account.quota_requests([{"DesiredValue": 2.0, "Status": "PENDING"}])
    fewer = run(fake_account, stt(autoscale_min=1, autoscale_max=3)).check(CheckId.QUOTA)
    assert fewer.status is Status.FAIL and not fewer.can_ask_quota
    assert fewer.detail.endswith("the deploy needs 3. An increase to 2 was asked for "
                                 "(pending), fewer than the deploy needs.")
    assert fewer.fix == ("Set Scaling (above) to at most 2 instances to deploy once AWS grants "
                         "them, or ask for 3 when AWS has answered (by email, often within a day): "
                         "AWS takes one request per quota at a time; or put a type with "
                         "quota first in the pool.")


def test_model_sources(fake_account: FakeAccount) -> None:
    fake_account.add_model("empty-bucket", "")
    fake_account.add_model("far-bucket", "m/x", region="eu-west-1")
    cases = {
        "": ("PASS", "Hugging Face model mistralai/Voxtral-Mini-4B-Realtime-2602"),
        "org/model-1.5": ("PASS", "Hugging Face model org/model-1.5"),
        "s3://no-such-bucket/m/": ("FAIL", "Bucket no-such-bucket does not exist."),
        "s3://empty-bucket/m": ("FAIL", "Nothing is stored under s3://empty-bucket/m/."),
        "s3://far-bucket/m/": ("FAIL", "Bucket far-bucket is in eu-west-1"),
        "not a model": ("FAIL", "'not a model' is neither an s3:// prefix nor"),
    }
    for source, (status, words) in cases.items():
        fake_account.quota("ml.g6.4xlarge", 1)
        check = run(fake_account, stt(model_source=source)).check(CheckId.MODEL)
        assert (check.status.value, words in check.detail) == (status, True), (source, check)


def test_image_in_another_region_fails(fake_account: FakeAccount) -> None:
    fake_account.quota("ml.g6.4xlarge", 1)
    image = STT_IMAGE.replace(REGION, "eu-west-1")
    check = run(fake_account, stt(image_uri=image)).check(CheckId.IMAGE)
    assert check.status is Status.FAIL
    assert "in eu-west-1; SageMaker pulls from the endpoint's region, us-east-1" in check.detail


def test_tts_uses_the_aws_image_for_the_region(fake_account: FakeAccount) -> None:
    fake_account.quota("ml.g6.xlarge", 1)
    check = run(fake_account, stt(image_uri="", instance_types=["ml.g6.xlarge"]),
                kind="tts").check(CheckId.IMAGE)
    assert check.status is Status.PASS
    assert f"763104351884.dkr.ecr.{REGION}.amazonaws.com/vllm:omni" in check.detail


def test_unknown_price_is_unknown_and_a_pool_shows_its_range(fake_account: FakeAccount) -> None:
    fake_account.quota("ml.p5.48xlarge", 1)
    price = run(fake_account, stt(instance_types=["ml.p5.48xlarge"])).check(CheckId.PRICE)
    assert price.status is Status.UNKNOWN and "No price is known for ml.p5.48xlarge" in price.detail
    fake_account.pool_quotas({"ml.g6.xlarge": 1}, defaults={})
    pool = run(fake_account, stt(instance_types=["ml.g6.xlarge", "ml.g5.xlarge", "ml.p5.48xlarge"])
               ).check(CheckId.PRICE)
    assert pool.status is Status.PASS
    assert "about $1.01–$1.41/hour (by the type that wins)" in pool.detail
    assert "no price known for ml.p5.48xlarge" in pool.detail


def test_rejected_credentials_fail_first_and_nothing_else_is_asked(
        fake_account: FakeAccount) -> None:
    sts = boto3.Session(aws_access_key_id="x", aws_secret_access_key="y",
                        region_name=REGION).client("sts")
    clients = AccountClients(sts=sts, iam=None, ecr=None, s3=None, service_quotas=None)
    with Stubber(sts) as stub:
        stub.add_client_error("get_caller_identity", "ExpiredToken",
                              "The security token included in the request is expired", 403)
        preflight = run_preflight("stt", stt(), clients, region=REGION, prices=PRICES)
    first = preflight.first_failure
    assert first is not None and first.id is CheckId.CREDENTIALS
    assert first.status is Status.FAIL and "have expired" in first.detail
    assert {c.status for c in preflight.checks[1:-1]} == {Status.UNKNOWN}
    assert all("Not checked" in c.detail for c in preflight.checks[1:-1])
    assert not preflight.with_overrides([c.id for c in preflight.checks]).may_deploy


def test_an_unreadable_answer_is_unknown_with_a_short_reason(fake_account: FakeAccount) -> None:
    fake_account.quotas.add_client_error(
        "list_service_quotas", "ServiceException",
        "<!doctype html>\n<html><title>500 Internal Server Error</title>…</html>", 500)
    quota = run(fake_account, stt()).check(CheckId.QUOTA)
    assert quota.status is Status.UNKNOWN
    assert quota.detail == ("Could not read Service Quotas: AWS error ServiceException "
                            "(list_service_quotas)")
    assert "override" in quota.fix


def test_a_role_that_may_not_pull_the_image_or_read_the_model_fails(
        fake_account: FakeAccount) -> None:
    fake_account.add_role()
    fake_account.add_image()
    fake_account.add_model("voxtral-weights", "voxtral/config.json")
    fake_account.allow_pass_role()
    fake_account.allow_role_access(model=("voxtral-weights", "voxtral/"),
                                   deny=frozenset({"ecr:BatchGetImage", "s3:GetObject"}))
    fake_account.quota("ml.g6.4xlarge", 1)
    preflight = run(fake_account, stt(model_source="s3://voxtral-weights/voxtral/"))
    access = preflight.check(CheckId.ROLE_ACCESS)
    assert access.status is Status.FAIL and preflight.first_failure is access
    assert access.detail == (
        "Role CaptionerSageMaker may not: ecr:BatchGetImage on "
        f"arn:aws:ecr:{REGION}:{ACCOUNT}:repository/{STT_REPO}; "
        "s3:GetObject on arn:aws:s3:::voxtral-weights/voxtral/.")
    assert "let Captioner create a role" in access.fix


POOL = ["ml.g6.xlarge", "ml.g5.xlarge", "ml.g4dn.xlarge"]


def test_every_pool_type_is_looked_up_in_one_pass(fake_account: FakeAccount) -> None:
    """The first type's quota decides; a fallback without quota is named, since the pool
    falls back on capacity only. The applied list is read page by page once, the
    default list once for the types it lacked (the Stubber fails on any other call)."""
    fake_account.pool_quotas({"ml.g6.xlarge": 1, "ml.p4d.24xlarge": 0}, {"ml.g5.xlarge": 2},
                             defaults={"ml.g4dn.xlarge": 0})
    quota = run(fake_account, stt(instance_types=POOL)).check(CheckId.QUOTA)
    assert quota.status is Status.PASS
    assert quota.detail == ("The quota “ml.g6.xlarge for endpoint usage” is 1 (needs 1). "
                            "No quota for 1 of ml.g4dn.xlarge: when ml.g6.xlarge has no "
                            "capacity, the deploy cannot fall back to it.")

    fake_account.pool_quotas({"ml.g6.xlarge": 1, "ml.g5.xlarge": 1, "ml.g4dn.xlarge": 3})
    whole = run(fake_account, stt(instance_types=POOL)).check(CheckId.QUOTA)
    assert whole.detail == "The quota “ml.g6.xlarge for endpoint usage” is 1 (needs 1)."


def test_a_first_type_without_quota_names_the_pool_types_that_have_it(
        fake_account: FakeAccount) -> None:
    fake_account.pool_quotas({"ml.g6.xlarge": 0, "ml.g4dn.xlarge": 1}, defaults={"ml.g5.xlarge": 0})
    fake_account.quota_requests([])
    quota = run(fake_account, stt(instance_types=POOL)).check(CheckId.QUOTA)
    assert quota.status is Status.FAIL and quota.can_ask_quota
    assert quota.move_first == "ml.g4dn.xlarge"  # the page offers to put it first
    assert quota.detail == (f"The quota “ml.g6.xlarge for endpoint usage” is 0 in {REGION}; "
                            "the deploy needs 1. Quota for 1 is there for ml.g4dn.xlarge in "
                            "the pool.")
    assert quota.fix == ("Put ml.g4dn.xlarge first in the pool to deploy now; or ask AWS for 1 "
                         "(free): “Ask AWS for more quota” under these checks in Settings → "
                         "Endpoints, or the Service Quotas console.")

    fake_account.pool_quotas({"ml.g6.xlarge": 0, "ml.g5.xlarge": 1, "ml.g4dn.xlarge": 1})
    fake_account.quota_requests([{"DesiredValue": 1.0, "Status": "PENDING"}])
    waiting = run(fake_account, stt(instance_types=POOL)).check(CheckId.QUOTA)
    assert "there for ml.g5.xlarge or ml.g4dn.xlarge in the pool" in waiting.detail
    assert waiting.detail.endswith("An increase to 1 was asked for (pending).")
    assert waiting.move_first == "ml.g5.xlarge"
    assert waiting.fix == ("Put ml.g5.xlarge first in the pool to deploy now; or wait for "
                           "AWS's answer (by email, often within a day), then press Check "
                           "set-up.")

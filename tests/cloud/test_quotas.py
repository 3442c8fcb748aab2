"""Asking AWS for more endpoint quota: one request, never two while one is open. Service
Quotas is a Stubber (moto has no model of it), validated against the real service model."""

from __future__ import annotations

from datetime import UTC, datetime

import boto3
from botocore.stub import Stubber

from captioner.cloud.quotas import Quota, find_quota, request_increase

CODE = "L-12345678"
QUOTA = Quota("ml.g6.4xlarge for endpoint usage", CODE, 0.0)
HISTORY = "list_requested_service_quota_change_history_by_quota"


def client():
    return boto3.client("service-quotas", region_name="us-east-1", aws_access_key_id="x",
                        aws_secret_access_key="x")


def test_an_increase_is_asked_for_once() -> None:
    quotas = client()
    with Stubber(quotas) as stub:
        stub.add_response(HISTORY, {"RequestedQuotas": [
            {"DesiredValue": 1.0, "Status": "DENIED",
             "Created": datetime(2026, 11, 1, tzinfo=UTC)}]},
            {"ServiceCode": "sagemaker", "QuotaCode": CODE})
        stub.add_response("request_service_quota_increase", {"RequestedQuota": {
            "DesiredValue": 1.0, "Status": "PENDING",
            "Created": datetime(2026, 12, 6, tzinfo=UTC)}},
            {"ServiceCode": "sagemaker", "QuotaCode": CODE, "DesiredValue": 1.0})
        made = request_increase(quotas, QUOTA, 1)
        stub.assert_no_pending_responses()
    assert (made.status, made.open) == ("PENDING", True)
    assert made.describe() == "An increase to 1 was asked for on 2026-12-06 (pending)"


def test_a_request_still_open_is_returned_not_made_again() -> None:
    quotas = client()
    with Stubber(quotas) as stub:  # no request_service_quota_increase answer: must not ask
        stub.add_response(HISTORY, {"RequestedQuotas": [
            {"DesiredValue": 2.0, "Status": "CASE_OPENED",
             "Created": datetime(2026, 12, 5, tzinfo=UTC)}]},
            {"ServiceCode": "sagemaker", "QuotaCode": CODE})
        waiting = request_increase(quotas, QUOTA, 1)
        stub.assert_no_pending_responses()
    assert (waiting.desired, waiting.status) == (2.0, "CASE_OPENED")


def test_the_quota_is_found_by_its_name_applied_first_then_default() -> None:
    quotas = client()
    params = {"ServiceCode": "sagemaker", "MaxResults": 100}
    with Stubber(quotas) as stub:
        stub.add_response("list_service_quotas", {"Quotas": [], "NextToken": "t"}, params)
        stub.add_response("list_service_quotas", {"Quotas": [
            {"QuotaName": "ml.g5.xlarge for endpoint usage", "QuotaCode": "L-1", "Value": 2.0}]},
            {**params, "NextToken": "t"})
        stub.add_response("list_aws_default_service_quotas", {"Quotas": [
            {"QuotaName": "ml.g6.4xlarge for endpoint usage", "QuotaCode": CODE,
             "Value": 0.0}]}, params)
        assert find_quota(quotas, "ml.g6.4xlarge") == QUOTA

"""`captioner endpoint ACTION`: the SageMaker endpoints and their image from a terminal.

Defaults come from settings (cloud.stt / cloud.tts, aws.region / aws.profile); flags
override them for this run only. ``check`` runs the preflight and exits 0 only when
every check passes. Deploy runs the same preflight and refuses unless it passes (an
UNKNOWN check may be accepted with ``--accept-unknown``), then shows the plan, its
estimated hourly cost and when AWS itself will delete it (the maximum lifetime), and
asks before creating anything (``--yes`` skips the question). Stop and list act on this
installation's endpoints; colleagues' are listed read-only, and deleting one is a
forced stop whose name must be typed. ``build-image`` has AWS CodeBuild build the captions
image in the account (no Docker), after saying what it creates and costs;
``remove-image`` removes that image (it bills storage every month) and what built it.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from typing import Any

from botocore.exceptions import BotoCoreError

from captioner import settings as settings_mod
from captioner.cloud import image_build, scaling
from captioner.cloud.account import AccountClients
from captioner.cloud.deploy_plan import KINDS, DeployPlan, Kind, lifetime_text
from captioner.cloud.endpoints import (
    CostEstimate,
    EndpointControl,
    account_clients_from_settings,
    control_from_settings,
)
from captioner.cloud.errors import (
    DeployConfigError,
    DeployFailedError,
    EndpointControlError,
    NotOwnedError,
    translate,
)
from captioner.cloud.image_removal import find_leftovers, remove_leftovers
from captioner.cloud.images import DEFAULT_STT_REPOSITORY
from captioner.cloud.preflight import CheckId, Preflight, Status, preflight_from_settings
from captioner.cloud.pricing import format_cost
from captioner.cloud.state import remember_region
from captioner.cloud.status import EndpointSnapshot
from captioner.cloud.watch import wait_for, wait_in_service

PRICING_URL = "https://aws.amazon.com/sagemaker/ai/pricing/"


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "endpoint", help="deploy, watch and stop the SageMaker endpoints",
        description=__doc__.splitlines()[0],
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)

    account = argparse.ArgumentParser(add_help=False)  # the captions image has no --kind
    account.add_argument("--region", help="AWS region (default: settings)")
    account.add_argument("--profile", help="AWS profile (default: settings)")
    account.add_argument("--poll-interval", type=float, default=15.0, help=argparse.SUPPRESS)
    common = argparse.ArgumentParser(add_help=False, parents=[account])
    common.add_argument("--kind", choices=KINDS, help="stt (captions) or tts (spoken replies)")

    plan_flags = argparse.ArgumentParser(add_help=False)
    plan_flags.add_argument("--image-uri", help="ECR image built from container/ (stt)")
    plan_flags.add_argument("--model-source", help="s3://bucket/prefix/ or a model id")
    plan_flags.add_argument("--instance-type", action="append", dest="instance_types",
                            metavar="TYPE", help="repeat for an ordered pool of up to 5 types")
    plan_flags.add_argument("--role-arn", help="SageMaker execution role ARN")
    plan_flags.add_argument("--max-lifetime", type=float, metavar="HOURS",
                            help="AWS deletes the endpoint this long after creation "
                                 "(0 = never; default: settings, 8)")

    actions.add_parser(
        "check", parents=[common, plan_flags],
        help="preflight: credentials, role, image, model, quota, price (exit 0 if all pass)")

    deploy = actions.add_parser("deploy", parents=[common, plan_flags],
                                help="create an endpoint")
    deploy.add_argument("--accept-unknown", action="append", default=[], metavar="CHECK",
                        choices=[c.value for c in CheckId],
                        help="deploy although this check could not be read (repeatable)")
    deploy.add_argument("--env", action="append", default=[], metavar="KEY=VALUE",
                        help="extra container environment (e.g. SM_VLLM_MAX_MODEL_LEN=30000)")
    deploy.add_argument("--autoscale", metavar="MIN:MAX",
                        help="team-shared endpoint: autoscale between MIN and MAX instances")
    deploy.add_argument("--yes", "-y", action="store_true", help="do not ask to confirm the cost")
    deploy.add_argument("--wait", action="store_true", help="wait until InService")

    status = actions.add_parser("status", parents=[common], help="show endpoint status")
    status.add_argument("name", nargs="?", help="endpoint name (default: all managed ones)")
    status.add_argument("--wait", action="store_true", help="wait until InService/Failed/gone")

    stop = actions.add_parser("stop", parents=[common],
                              help="delete endpoint, config and model")
    stop.add_argument("name", nargs="?", help="endpoint name (default: all of yours)")
    stop.add_argument("--yes", "-y", action="store_true", help="do not ask to confirm")
    stop.add_argument("--force", action="store_true",
                      help="delete an endpoint that is not this installation's "
                           "(asks you to type its name)")

    actions.add_parser("list", parents=[common],
                       help="list Captioner's endpoints in the account (yours and others')")

    build = actions.add_parser("build-image", parents=[account],
                               help="build the captions image in your account with AWS "
                                    "CodeBuild and push it to ECR (no Docker needed)")
    build.add_argument("--yes", "-y", action="store_true", help="do not ask to confirm")
    build.add_argument("--wait", action="store_true", help="follow the build to its end")
    remove = actions.add_parser("remove-image", parents=[account],
                                help="remove the captions image (it bills ECR storage every "
                                     "month) and what built it from the account")
    remove.add_argument("--yes", "-y", action="store_true", help="do not ask to confirm")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        settings = settings_mod.load()
        if args.action == "check":
            return _check(args, settings)
        if args.action == "build-image":
            return _build_image(args, settings)
        if args.action == "remove-image":
            return _remove_image(args, settings)
        control = make_control(args, settings)
        action = {"deploy": _deploy, "status": _status, "stop": _stop, "list": _list}
        return action[args.action](args, control, settings)
    except DeployConfigError as exc:
        _err(str(exc))
        return 2
    except EndpointControlError as exc:
        _err(str(exc))
        return 1
    except BotoCoreError as exc:  # e.g. ProfileNotFound while building clients
        _err(str(translate(exc)))
        return 1


def make_control(args: argparse.Namespace, settings: settings_mod.Settings) -> EndpointControl:
    return control_from_settings(settings, region=args.region, profile=args.profile)


# ---- actions ---------------------------------------------------------------------------


def _plan_settings(args: argparse.Namespace, settings: settings_mod.Settings, kind: Kind
                   ) -> settings_mod.EndpointDeploySettings:
    """The saved plan of ``kind`` with this run's flags laid over it."""
    base = getattr(settings.cloud, kind)
    return replace(
        base,
        image_uri=args.image_uri if args.image_uri is not None else base.image_uri,
        model_source=args.model_source if args.model_source is not None else base.model_source,
        instance_types=args.instance_types or list(base.instance_types),
        role_arn=args.role_arn if args.role_arn is not None else base.role_arn,
        max_lifetime_hours=(args.max_lifetime if args.max_lifetime is not None
                            else base.max_lifetime_hours),
    )


def _preflight(args: argparse.Namespace, settings: settings_mod.Settings, kind: Kind,
               deploy_settings: settings_mod.EndpointDeploySettings, *,
               overrides: list[str]) -> Preflight:
    return preflight_from_settings(kind, settings, deploy=deploy_settings, region=args.region,
                                   profile=args.profile, overrides=overrides)


def _print_preflight(preflight: Preflight) -> None:
    print(f"Preflight of the {preflight.kind} endpoint in {preflight.region}:")
    for line in preflight.lines():
        print(f"  {line}")


def _check(args: argparse.Namespace, settings: settings_mod.Settings) -> int:
    kind: Kind = args.kind or "stt"
    preflight = _preflight(args, settings, kind, _plan_settings(args, settings, kind),
                           overrides=[])
    _print_preflight(preflight)
    if preflight.all_passed:
        print("All checks passed.")
        return 0
    failing = [c for c in preflight.checks if not c.passed]
    print(f"{len(failing)} of {len(preflight.checks)} checks did not pass: "
          + ", ".join(c.id.value for c in failing) + ".")
    return 1


def _deploy(args: argparse.Namespace, control: EndpointControl,
            settings: settings_mod.Settings) -> int:
    kind: Kind = args.kind or "stt"
    deploy_settings = _plan_settings(args, settings, kind)
    policy = _autoscale_policy(args.autoscale, deploy_settings)
    if policy is not None and not args.wait:
        raise DeployConfigError("--autoscale needs --wait: scaling is set up once InService.")
    plan = control.plan(kind, deploy_settings, env=_parse_env(args.env))
    preflight = _preflight(args, settings, kind, deploy_settings,
                           overrides=[*deploy_settings.accepted_unknown, *args.accept_unknown])
    _print_preflight(preflight)
    if not preflight.may_deploy:
        _err(f"Not deploying: {preflight.summary()}")
        unknown = [c.id.value for c in preflight.blocking if c.status is Status.UNKNOWN]
        if unknown and len(unknown) == len(preflight.blocking):
            _err("If you know these are fine: "
                 + " ".join(f"--accept-unknown {name}" for name in unknown))
        print("Nothing was created.")
        return 1
    _print_plan(plan, control.estimate(plan), policy)
    if not args.yes and not _confirm("Deploy this endpoint?"):
        print("Nothing was created.")
        return 1
    remember_region(control.region)  # so a later start looks for orphans here too
    control.deploy(plan, on_step=lambda step: print(f"  {step}"))
    print(f"Endpoint {plan.name} is being created (first start takes many minutes).")
    if not args.wait:
        print(f"Follow it with: captioner endpoint status {plan.name} --wait")
        print(f"Stop it with:   captioner endpoint stop {plan.name}")
        return 0
    try:
        snap = wait_in_service(control, plan.name, on_snapshot=_print_progress,
                               poll_interval=args.poll_interval, timeout=None)
    except KeyboardInterrupt:
        print(f"\nStopped waiting; {plan.name} is still being created and will bill once up. "
              f"Stop it with: captioner endpoint stop {plan.name}")
        return 130
    except DeployFailedError as exc:
        _err(str(exc))
        print(f"Cleaning up {plan.name} …")
        control.stop(plan.name, poll_interval=args.poll_interval)
        return 1
    if policy is not None:
        control.apply_autoscaling(plan.name, policy)
        print(f"  autoscaling: {policy.min_capacity}–{policy.max_capacity} instances")
    print(f"Endpoint {plan.name} is InService on {snap.instance_type or 'an instance'}.")
    print(f"Use it as: sagemaker://{plan.name}?region={control.region}")
    print(f"It bills until stopped: captioner endpoint stop {plan.name} (the app also "
          "finds it when it starts, and asks before quitting).")
    return 0


def _status(args: argparse.Namespace, control: EndpointControl,
            settings: settings_mod.Settings) -> int:
    names = ([args.name] if args.name
             else [e.name for e in control.find_managed_endpoints(args.kind)])
    if not names:
        print(f"No Captioner endpoints in {control.region}.")
        return 0
    for name in names:
        if args.wait:
            wait_for(control, name, lambda s: s.stage.terminal, on_snapshot=_print_progress,
                     poll_interval=args.poll_interval)
        else:
            _print_snapshot(control.snapshot(name))
    return 0


def _stop(args: argparse.Namespace, control: EndpointControl,
          settings: settings_mod.Settings) -> int:
    if args.name:
        names = [args.name]
    else:
        found = control.find_managed_endpoints(args.kind)
        names = [e.name for e in found if e.mine]
        for other in (e for e in found if not e.mine):
            print(f"Leaving {other.name} alone: not yours ({other.owner}).")
        if not names:
            print(f"No endpoints of yours in {control.region}.")
            return 0
        print("Will stop: " + ", ".join(names))
        if not args.yes and not _confirm("Stop these endpoints?"):
            return 1
    for name in names:
        print(f"Stopping {name} …")
        try:
            report = control.stop(name, on_snapshot=_print_progress,
                                  poll_interval=args.poll_interval)
        except NotOwnedError as exc:
            if not args.force:
                raise DeployConfigError(f"{exc} (captioner endpoint stop {name} --force)"
                                        ) from exc
            print(f"{exc}")
            typed = _ask(f"Type {name} to delete it anyway: ")
            if typed.strip() != name:
                print("The name did not match; nothing was deleted.")
                return 1
            report = control.stop(name, on_snapshot=_print_progress,
                                  poll_interval=args.poll_interval, confirm_name=typed)
        for item in report.deleted:
            print(f"  deleted {item}")
        for item in report.already_gone:
            print(f"  already gone: {item}")
    return 0


def _list(args: argparse.Namespace, control: EndpointControl,
          settings: settings_mod.Settings) -> int:
    endpoints = control.find_managed_endpoints(args.kind)
    if not endpoints:
        print(f"No Captioner endpoints in {control.region}.")
        return 0
    for e in endpoints:
        created = e.created_at.strftime("%Y-%m-%d %H:%M") if e.created_at else "?"
        print(f"{e.name:40} {e.kind or '?':4} {e.status:12} created {created}  {e.owner}")
    if any(not e.mine for e in endpoints):
        print("Endpoints not yours are shown only; Captioner will not adopt or stop them.")
    return 0


# ---- helpers ---------------------------------------------------------------------------


def _autoscale_policy(text: str | None, deploy_settings: settings_mod.EndpointDeploySettings
                      ) -> scaling.AutoscalingPolicy | None:
    if text is None:
        return scaling.policy_from_settings(deploy_settings)
    low, sep, high = text.partition(":")
    if not sep or not low.strip().isdigit() or not high.strip().isdigit():
        raise DeployConfigError(f"--autoscale expects MIN:MAX (e.g. 1:3), not {text!r}.")
    return scaling.AutoscalingPolicy(int(low), int(high))


def _parse_env(pairs: list[str]) -> dict[str, str]:
    env = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise DeployConfigError(f"--env expects KEY=VALUE, not {pair!r}.")
        env[key] = value
    return env


def _print_plan(plan: DeployPlan, estimate: CostEstimate,
                policy: scaling.AutoscalingPolicy | None) -> None:
    container = plan.model_request["PrimaryContainer"]
    source = container.get("ModelDataSource", {}).get("S3DataSource", {}).get("S3Uri")
    print(f"Endpoint  {plan.name} ({plan.kind}, {plan.region})")
    print(f"Image     {container['Image']}")
    print(f"Model     {source or container['Environment'].get('SM_VLLM_MODEL')}")
    print(f"Instances {' → '.join(plan.instance_types)}")
    if estimate.low is None:
        cost = "unknown (no price for these types; see " + PRICING_URL + ")"
    elif estimate.low == estimate.high:
        cost = f"about {format_cost(estimate.low, estimate.currency)}/hour"
    else:
        cost = (f"about {format_cost(estimate.low, estimate.currency)}–"
                f"{format_cost(estimate.high, estimate.currency)}/hour, by the type that wins")
    if policy is not None:
        cost += f", per instance (autoscaling {policy.min_capacity}–{policy.max_capacity})"
    print(f"Cost      {cost}")
    print(f"          approximate, check the AWS pricing page: {PRICING_URL}")
    if estimate.unknown_types:
        print(f"          no price known for {', '.join(estimate.unknown_types)}")
    print(f"Lifetime  {lifetime_text(plan)}")
    print("It bills every hour until stopped (captioner endpoint stop)"
          + (" or deleted at its maximum lifetime." if plan.expires_at else "."))


def _print_snapshot(snap: EndpointSnapshot) -> None:
    line = f"{snap.name}: {snap.status or snap.stage.value}"
    if snap.created_at is not None:
        line += f", {_hms(snap.elapsed_seconds)} since creation"
    if snap.instance_type:
        line += f", {snap.instance_count or 1}× {snap.instance_type}"
    elif snap.candidate_types:
        line += f", pool {' → '.join(snap.candidate_types)}"
    if snap.hourly_price is not None and snap.stage.billing:
        line += f", {format_cost(snap.hourly_price, snap.currency)}/h"
        line += f", ~{format_cost(snap.cost_so_far, snap.currency)} so far"
    print(line)
    if snap.failure_reason:
        print(f"  reason: {snap.failure_reason}")


def _print_progress(snap: EndpointSnapshot) -> None:
    print("  ", end="")
    _print_snapshot(snap)
    sys.stdout.flush()


def _build_image(args: argparse.Namespace, settings: settings_mod.Settings) -> int:
    """What the GUI's "Build it in my account…" does, asked and followed in the terminal."""
    clients, plan = _image_account(args, settings)
    print(f"Image     {plan.image_uri}")
    print(f"Creates   (if missing) ECR repository {DEFAULT_STT_REPOSITORY}, S3 bucket "
          f"{plan.bucket}, IAM role {image_build.ROLE_NAME}, CodeBuild project "
          f"{image_build.PROJECT}")
    print(f"Cost      {plan.estimate}")
    if not args.yes and not _confirm("Build the image?"):
        print("nothing was created")
        return 1
    build_id = image_build.start_build_here(clients, plan)
    print(f"build {build_id} started; it goes on in AWS if this command stops")
    if not args.wait:
        return 0
    while (progress := image_build.build_progress(clients.codebuild, build_id)).running:
        print(f"  {progress.phase.lower()}, {_hms(progress.seconds)}", flush=True)
        time.sleep(args.poll_interval)
    if not progress.succeeded:
        _err(f"the build ended {progress.status.lower()}: {progress.failure or 'no reason'}")
        return 1
    print(f"pushed {plan.image_uri} ({_hms(progress.seconds)})")
    return 0


def _remove_image(args: argparse.Namespace, settings: settings_mod.Settings) -> int:
    """What the GUI's "Remove the image from AWS…" does."""
    clients, plan = _image_account(args, settings)
    serving = make_control(args, settings).find_managed_endpoints("stt")
    if serving:
        _err(f"a captions endpoint runs in {plan.region} ({serving[0].name}); a new instance "
             "of it would need the image: stop it first (captioner endpoint stop)")
        return 1
    found = find_leftovers(clients, plan)
    if found.empty:
        print(f"Nothing of the captions image is left in {plan.region}.")
        return 0
    print(f"In account {plan.account} ({plan.region}):")
    for line in found.lines():
        print(f"  {line}")
    if not args.yes and not _confirm("Remove all of it?"):
        print("nothing was removed")
        return 1
    for line in remove_leftovers(clients, found):
        print(f"removed {line}")
    if settings.cloud.stt.image_uri == plan.image_uri:
        settings.cloud.stt.image_uri = ""  # gone: the checks would only fail on it
        settings_mod.save(settings)
    return 0


def _image_account(args: argparse.Namespace, settings: settings_mod.Settings
                   ) -> tuple[AccountClients, image_build.BuildPlan]:
    """Clients and image-build names for this run's region and profile."""
    clients = account_clients_from_settings(settings, region=args.region,
                                            profile=args.profile)
    return clients, image_build.plan_for(clients)


def _hms(seconds: float) -> str:
    s = int(seconds)
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


def _ask(prompt: str) -> str:
    try:
        return input(prompt)
    except EOFError:
        return ""


def _confirm(question: str) -> bool:
    return _ask(f"{question} [y/N] ").strip().lower() in {"y", "yes"}


def _err(message: str) -> None:
    print(f"error: {message}", file=sys.stderr)

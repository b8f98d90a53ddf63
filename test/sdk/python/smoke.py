"""Smoke test of a Python client generated from proto/ by the recipe of docs/sdk.md
(protoc with Debian's grpc_python_plugin). It talks gRPC to a running service and prints
one JSON report on stdout, which test/sdk/sdk-smoke.test.ts checks against the service;
any failure to get an expected answer exits non-zero.

Environment: AUDIT_TARGET (host:port), AUDIT_API_KEY (pk_test_...), AUDIT_RUN_ID (a unique
entity id for this run). The generated modules must be on sys.path (PYTHONPATH).
"""

import json
import os
import sys

import grpc
from google.protobuf import json_format, struct_pb2

from audit.v1 import event_pb2, events_pb2, events_pb2_grpc, ingest_pb2_grpc
from google.rpc import error_details_pb2, status_pb2


def status_details(error: grpc.RpcError) -> list:
    """The google.rpc.Status details of a failed call (trailer grpc-status-details-bin)."""
    for key, value in error.trailing_metadata() or ():
        if key == "grpc-status-details-bin":
            return list(status_pb2.Status.FromString(value).details)
    return []


def main() -> None:
    target = os.environ["AUDIT_TARGET"]
    key = os.environ["AUDIT_API_KEY"]
    run_id = os.environ["AUDIT_RUN_ID"]
    channel = grpc.insecure_channel(
        target, options=[("grpc.max_receive_message_length", 16 * 1024 * 1024)]
    )
    grpc.channel_ready_future(channel).result(timeout=60)
    ingest = ingest_pb2_grpc.IngestServiceStub(channel)
    events = events_pb2_grpc.EventServiceStub(channel)
    auth = (("authorization", f"Bearer {key}"),)

    # google.protobuf.Value and Struct fields take plain Python values through json_format.
    event = event_pb2.Event(
        action_key="subscription.updated",
        entity_type="subscription",
        entity_id=run_id,
        actor_id="user_py",
        context=json_format.ParseDict({"ip": "203.0.113.7"}, struct_pb2.Struct()),
        changes=[
            event_pb2.Change(
                op="set",
                path="plan",
                before=json_format.ParseDict(None, struct_pb2.Value()),
                after=json_format.ParseDict({"plan": "pro", "seats": 2}, struct_pb2.Value()),
            )
        ],
    )
    report: dict = {}

    # Create with an Idempotency-Key, then the same call again: the replay.
    with_key = auth + (("idempotency-key", f"py-{run_id}"),)
    created = ingest.CreateEvent(event, metadata=with_key, timeout=30)
    report["eventId"], report["receivedAt"] = created.event_id, created.received_at
    replayed, call = ingest.CreateEvent.with_call(event, metadata=with_key, timeout=30)
    report["replayEventId"], report["replayReceivedAt"] = replayed.event_id, replayed.received_at
    report["replayHeader"] = dict(call.initial_metadata()).get("idempotent-replayed", "")

    # List with a filter.
    listed = events.ListEvents(events_pb2.ListEventsRequest(entity_id=run_id), metadata=auth, timeout=30)
    report["listedEventIds"] = [e.event_id for e in listed.events]
    report["listedAfter"] = json_format.MessageToDict(listed.events[0].changes[0].after) if listed.events else None

    # An invalid event (no entity_type, an unknown op): INVALID_ARGUMENT with BadRequest.
    invalid = event_pb2.Event(
        action_key="user.login",
        entity_id=run_id,
        actor_id="user_py",
        changes=[
            event_pb2.Change(
                op="rename",
                path="name",
                before=struct_pb2.Value(null_value=struct_pb2.NULL_VALUE),
                after=struct_pb2.Value(string_value="x"),
            )
        ],
    )
    try:
        ingest.CreateEvent(invalid, metadata=auth, timeout=30)
        sys.exit("an invalid event was accepted")
    except grpc.RpcError as error:
        report["validationCode"], report["validationMessage"] = error.code().value[0], error.details()
        report["violations"] = []
        for detail in status_details(error):
            bad_request = error_details_pb2.BadRequest()
            if detail.Unpack(bad_request):
                report["violations"] += [
                    {"field": v.field, "description": v.description, "reason": v.reason}
                    for v in bad_request.field_violations
                ]

    # Create until the rate limit answers RESOURCE_EXHAUSTED with RetryInfo.
    for _ in range(200):
        try:
            ingest.CreateEvent(event, metadata=auth, timeout=30)
        except grpc.RpcError as error:
            if error.code() != grpc.StatusCode.RESOURCE_EXHAUSTED:
                raise
            report["rateLimitCode"], report["rateLimitMessage"] = error.code().value[0], error.details()
            for detail in status_details(error):
                retry = error_details_pb2.RetryInfo()
                if detail.Unpack(retry):
                    report["retryDelaySeconds"] = retry.retry_delay.seconds
            break
    else:
        sys.exit("the rate limit never answered")

    print(json.dumps(report))


if __name__ == "__main__":
    main()

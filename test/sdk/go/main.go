// Smoke test of a Go client generated from proto/ by the recipe of docs/sdk.md (protoc with
// Debian's protoc-gen-go and protoc-gen-go-grpc). It talks gRPC to a running service and
// prints one JSON report on stdout, which test/sdk/sdk-smoke.test.ts checks against the
// service; any failure to get an expected answer exits non-zero.
//
// Environment: AUDIT_TARGET (host:port), AUDIT_API_KEY (pk_test_...), AUDIT_RUN_ID (a
// unique entity id for this run).
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	auditv1 "audit-event-service/gen/go/audit/v1"

	errdetails "audit-event-service/gen/go/google/rpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

type violation struct {
	Field       string `json:"field"`
	Description string `json:"description"`
	Reason      string `json:"reason"`
}

type report struct {
	EventID           string      `json:"eventId"`
	ReceivedAt        string      `json:"receivedAt"`
	ReplayEventID     string      `json:"replayEventId"`
	ReplayReceivedAt  string      `json:"replayReceivedAt"`
	ReplayHeader      string      `json:"replayHeader"`
	ListedEventIDs    []string    `json:"listedEventIds"`
	ListedAfter       interface{} `json:"listedAfter"`
	ValidationCode    uint32      `json:"validationCode"`
	ValidationMessage string      `json:"validationMessage"`
	Violations        []violation `json:"violations"`
	RateLimitCode     uint32      `json:"rateLimitCode"`
	RateLimitMessage  string      `json:"rateLimitMessage"`
	RetryDelaySeconds int64       `json:"retryDelaySeconds"`
}

func fail(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	os.Exit(1)
}

func main() {
	target, key, runID := os.Getenv("AUDIT_TARGET"), os.Getenv("AUDIT_API_KEY"), os.Getenv("AUDIT_RUN_ID")
	if target == "" || key == "" || runID == "" {
		fail("AUDIT_TARGET, AUDIT_API_KEY and AUDIT_RUN_ID are required")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	conn, err := grpc.DialContext(ctx, target, grpc.WithInsecure(), grpc.WithBlock(),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(16<<20)))
	if err != nil {
		fail("dial %s: %v", target, err)
	}
	defer conn.Close()
	ingest := auditv1.NewIngestServiceClient(conn)
	events := auditv1.NewEventServiceClient(conn)
	authorized := metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+key)

	// google.protobuf.Value fields take structpb values: NewValue converts plain Go values.
	after, err := structpb.NewValue(map[string]interface{}{"plan": "pro", "seats": 2})
	if err != nil {
		fail("structpb: %v", err)
	}
	eventContext, err := structpb.NewStruct(map[string]interface{}{"ip": "203.0.113.7"})
	if err != nil {
		fail("structpb: %v", err)
	}
	event := &auditv1.Event{
		ActionKey:  proto.String("subscription.updated"),
		EntityType: proto.String("subscription"),
		EntityId:   proto.String(runID),
		ActorId:    proto.String("user_go"),
		Context:    eventContext,
		Changes: []*auditv1.Change{{
			Op:     proto.String("set"),
			Path:   proto.String("plan"),
			Before: structpb.NewNullValue(),
			After:  after,
		}},
	}
	var rep report

	// Create with an Idempotency-Key, then the same call again: the replay.
	withKey := metadata.AppendToOutgoingContext(authorized, "idempotency-key", "go-"+runID)
	created, err := ingest.CreateEvent(withKey, event)
	if err != nil {
		fail("CreateEvent: %v", err)
	}
	rep.EventID, rep.ReceivedAt = created.GetEventId(), created.GetReceivedAt()
	var header metadata.MD
	replayed, err := ingest.CreateEvent(withKey, event, grpc.Header(&header))
	if err != nil {
		fail("CreateEvent (replay): %v", err)
	}
	rep.ReplayEventID, rep.ReplayReceivedAt = replayed.GetEventId(), replayed.GetReceivedAt()
	if values := header.Get("idempotent-replayed"); len(values) > 0 {
		rep.ReplayHeader = values[0]
	}

	// List with a filter.
	listed, err := events.ListEvents(authorized, &auditv1.ListEventsRequest{EntityId: proto.String(runID)})
	if err != nil {
		fail("ListEvents: %v", err)
	}
	rep.ListedEventIDs = []string{}
	for _, e := range listed.GetEvents() {
		rep.ListedEventIDs = append(rep.ListedEventIDs, e.GetEventId())
		if len(e.GetChanges()) > 0 {
			rep.ListedAfter = e.GetChanges()[0].GetAfter().AsInterface()
		}
	}

	// An invalid event (no entityType, an unknown op): InvalidArgument with BadRequest.
	invalid := &auditv1.Event{
		ActionKey: proto.String("user.login"),
		EntityId:  proto.String(runID),
		ActorId:   proto.String("user_go"),
		Changes: []*auditv1.Change{{
			Op: proto.String("rename"), Path: proto.String("name"),
			Before: structpb.NewNullValue(), After: structpb.NewStringValue("x"),
		}},
	}
	_, err = ingest.CreateEvent(authorized, invalid)
	st := status.Convert(err)
	rep.ValidationCode, rep.ValidationMessage = uint32(st.Code()), st.Message()
	for _, detail := range st.Details() {
		if badRequest, ok := detail.(*errdetails.BadRequest); ok {
			for _, v := range badRequest.GetFieldViolations() {
				rep.Violations = append(rep.Violations, violation{v.GetField(), v.GetDescription(), v.GetReason()})
			}
		}
	}

	// Create until the rate limit answers ResourceExhausted with RetryInfo.
	for i := 0; i < 200; i++ {
		_, err = ingest.CreateEvent(authorized, event)
		if status.Code(err) == codes.ResourceExhausted {
			break
		}
		if err != nil {
			fail("CreateEvent before the rate limit: %v", err)
		}
	}
	st = status.Convert(err)
	rep.RateLimitCode, rep.RateLimitMessage = uint32(st.Code()), st.Message()
	for _, detail := range st.Details() {
		if retry, ok := detail.(*errdetails.RetryInfo); ok {
			rep.RetryDelaySeconds = retry.GetRetryDelay().GetSeconds()
		}
	}

	out, err := json.Marshal(rep)
	if err != nil {
		fail("json: %v", err)
	}
	fmt.Println(string(out))
}

package spades

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	spadesv1 "github.com/spades-engine/spades/clients/go/gen/spades/v1"
)

// Domain is the ErrorInfo domain of every refusal the server makes.
const Domain = "spades.v1"

// ErrClosed is returned by a Session's methods once Close has been called.
var ErrClosed = errors.New("spades: session closed")

// Error is a refusal by the server: a unary call's status, a Play call's end,
// or a refused action's ActionResult.error. Get it with errors.As:
//
//	var e *spades.Error
//	if errors.As(err, &e) && e.Reason == "MUST_FOLLOW_SUIT" { ... }
//
// Switch on Code and Reason, never on Message, which is for people.
type Error struct {
	// Code is the gRPC status code.
	Code codes.Code
	// Message is the status message, for people.
	Message string
	// Reason is google.rpc.ErrorInfo.reason ("MUST_FOLLOW_SUIT",
	// "UNAUTHENTICATED", ...); empty if the status has no ErrorInfo (a
	// transport failure, a cancelled call).
	Reason string
	// Domain is google.rpc.ErrorInfo.domain ("spades.v1").
	Domain string
	// Metadata is google.rpc.ErrorInfo.metadata ("current_seq", "rule", ...).
	Metadata map[string]string
	// Rule is Metadata["rule"]: the broken rule in a sentence, on a refusal
	// by the rules of the game.
	Rule string
	// FieldViolations are google.rpc.BadRequest's: the request's fields at fault.
	FieldViolations []FieldViolation

	status *status.Status
	cause  error // the context's error when the call was cancelled or timed out
}

// FieldViolation names a field of the request at fault.
type FieldViolation struct {
	Field       string
	Description string
}

func (e *Error) Error() string {
	if e.Reason != "" {
		return fmt.Sprintf("spades: %s (%s): %s", codeName(e.Code), e.Reason, e.Message)
	}
	return fmt.Sprintf("spades: %s: %s", codeName(e.Code), e.Message)
}

// GRPCStatus makes status.FromError and status.Code work on an *Error.
func (e *Error) GRPCStatus() *status.Status { return e.status }

// Unwrap returns context.Canceled or context.DeadlineExceeded when the call
// ended because its context did, so errors.Is works on those too.
func (e *Error) Unwrap() error { return e.cause }

// CodeName is the canonical name of a gRPC code, as in the gRPC specification
// and other languages' libraries: "FAILED_PRECONDITION", "UNAUTHENTICATED", ...
func CodeName(c codes.Code) string { return codeName(c) }

var codeNames = map[codes.Code]string{
	codes.OK:                 "OK",
	codes.Canceled:           "CANCELLED",
	codes.Unknown:            "UNKNOWN",
	codes.InvalidArgument:    "INVALID_ARGUMENT",
	codes.DeadlineExceeded:   "DEADLINE_EXCEEDED",
	codes.NotFound:           "NOT_FOUND",
	codes.AlreadyExists:      "ALREADY_EXISTS",
	codes.PermissionDenied:   "PERMISSION_DENIED",
	codes.ResourceExhausted:  "RESOURCE_EXHAUSTED",
	codes.FailedPrecondition: "FAILED_PRECONDITION",
	codes.Aborted:            "ABORTED",
	codes.OutOfRange:         "OUT_OF_RANGE",
	codes.Unimplemented:      "UNIMPLEMENTED",
	codes.Internal:           "INTERNAL",
	codes.Unavailable:        "UNAVAILABLE",
	codes.DataLoss:           "DATA_LOSS",
	codes.Unauthenticated:    "UNAUTHENTICATED",
}

func codeName(c codes.Code) string {
	if n, ok := codeNames[c]; ok {
		return n
	}
	return fmt.Sprintf("CODE_%d", uint32(c))
}

// fromStatus reads the details of a status into an *Error.
func fromStatus(st *status.Status) *Error {
	e := &Error{Code: st.Code(), Message: st.Message(), status: st}
	for _, d := range st.Details() {
		switch d := d.(type) {
		case *errdetails.ErrorInfo:
			if e.Reason == "" { // the first ErrorInfo is the refusal's
				e.Reason, e.Domain, e.Metadata = d.GetReason(), d.GetDomain(), d.GetMetadata()
				e.Rule = d.GetMetadata()["rule"]
			}
		case *errdetails.BadRequest:
			for _, v := range d.GetFieldViolations() {
				e.FieldViolations = append(e.FieldViolations, FieldViolation{v.GetField(), v.GetDescription()})
			}
		}
	}
	return e
}

// fromActionError reads a Play call's refusal: an ActionError has the fields
// (and field numbers) of google.rpc.Status, so its bytes are one.
func fromActionError(ae *spadesv1.ActionError) *Error {
	raw, err := proto.Marshal(ae)
	if err != nil {
		return &Error{Code: codes.Internal, Message: "unreadable ActionError: " + err.Error(),
			status: status.New(codes.Internal, err.Error())}
	}
	var sp spb.Status
	if err := proto.Unmarshal(raw, &sp); err != nil {
		return &Error{Code: codes.Internal, Message: "unreadable ActionError: " + err.Error(),
			status: status.New(codes.Internal, err.Error())}
	}
	return fromStatus(status.FromProto(&sp))
}

// convert turns an error of a gRPC call made with ctx into an *Error (any
// error that carries a status) and keeps the context's error as its cause.
func convert(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	e = fromStatus(st)
	if ctx != nil && ctx.Err() != nil && (e.Code == codes.Canceled || e.Code == codes.DeadlineExceeded) {
		e.cause = ctx.Err()
	} else if ctx != nil && e.Code == codes.DeadlineExceeded && deadlineReached(ctx) {
		// The server's timer (its grpc-timeout, rounded down to the unit
		// sent) can end the call a moment before the context's does.
		e.cause = context.DeadlineExceeded
	}
	return e
}

// deadlineSlack: a DEADLINE_EXCEEDED from the server this close to the
// context's deadline is that deadline's.
const deadlineSlack = 50 * time.Millisecond

func deadlineReached(ctx context.Context) bool {
	d, ok := ctx.Deadline()
	return ok && time.Until(d) < deadlineSlack
}

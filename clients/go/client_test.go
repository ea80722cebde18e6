package spades_test

import (
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	spades "github.com/spades-engine/spades/clients/go"
	spadesv1 "github.com/spades-engine/spades/clients/go/gen/spades/v1"
)

// Tests of what a user of the wrapper sees, against serve.py.

// classic is a classic table, seat 0 human (first to bid), three bots.
func classic(seed uint64) *spadesv1.CreateMatchRequest {
	return &spadesv1.CreateMatchRequest{
		Ruleset: &spadesv1.Ruleset{Preset: "classic"},
		Seed:    seed, HasSeed: true,
		Seats: []*spadesv1.SeatConfig{
			{Name: "You"},
			{Name: "Easy", Bot: true, BotLevel: spadesv1.BotLevel_BOT_LEVEL_EASY},
			{Name: "Normal", Bot: true, BotLevel: spadesv1.BotLevel_BOT_LEVEL_NORMAL},
			{Name: "Hard", Bot: true, BotLevel: spadesv1.BotLevel_BOT_LEVEL_HARD},
		},
	}
}

// claimed is a runner on a new classic match whose seat 0 is claimed and
// whose session is open from the first event.
func claimed(t *testing.T, seed uint64) *runner {
	r := newRunner(t, server(t), classic(seed), 0)
	if _, err := r.seat.Claim(r.ctx); err != nil {
		t.Fatal(err)
	}
	ses, err := r.seat.Open(r.ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	r.ses = ses
	t.Cleanup(func() {
		if r.ses != nil {
			_ = r.ses.Close(context.Background())
		}
	})
	return r
}

// replay is every event seat 0 may see through seq last, read by a new
// session on a new connection (canonical lines, as the runner keeps them).
func (r *runner) replay(last uint64) *runner {
	r.t.Helper()
	c := r.srv.dial(r.t)
	ses, err := c.Seat(r.token).Open(r.ctx, 0)
	if err != nil {
		r.t.Fatal(err)
	}
	defer func() { _ = ses.Close(r.ctx) }()
	other := &runner{t: r.t, ctx: r.ctx, ses: ses, counts: map[string]int{}, byKind: map[string][]int{}}
	for other.seen < last {
		other.await()
	}
	return other
}

func asError(t *testing.T, err error) *spades.Error {
	t.Helper()
	var e *spades.Error
	if !errors.As(err, &e) {
		t.Fatalf("got %v (%T), want a *spades.Error", err, err)
	}
	return e
}

func wantRefusal(t *testing.T, err error, code codes.Code, reason string) *spades.Error {
	t.Helper()
	e := asError(t, err)
	if e.Code != code || e.Reason != reason {
		t.Fatalf("got %s %s (%q), want %s %s", spades.CodeName(e.Code), e.Reason, e.Message, spades.CodeName(code), reason)
	}
	if status.Code(err) != code {
		t.Errorf("status.Code(err) = %v, want %v", status.Code(err), code)
	}
	return e
}

func playCard(c *spadesv1.Card) *spadesv1.Action {
	return &spadesv1.Action{Kind: &spadesv1.Action_PlayCard{PlayCard: &spadesv1.PlayCardAction{Card: c}}}
}

var aceOfSpades = &spadesv1.Card{Suit: spadesv1.Suit_SUIT_SPADES, Rank: spadesv1.Rank_RANK_ACE}

func TestUnaryRefusals(t *testing.T) {
	srv := server(t)
	ctx := testContext(t, time.Minute)

	notOperator := srv.dial(t, spades.WithOperatorToken("not-the-operator"))
	_, err := notOperator.CreateMatch(ctx, classic(1))
	wantRefusal(t, err, codes.PermissionDenied, "NOT_OPERATOR")

	c := srv.dial(t)
	three := classic(1)
	three.Seats = three.Seats[:3]
	_, err = c.CreateMatch(ctx, three)
	e := wantRefusal(t, err, codes.InvalidArgument, "WRONG_SEAT_COUNT")
	if len(e.FieldViolations) == 0 || e.FieldViolations[0].Field != "seats" {
		t.Errorf("field violations %+v, want one on seats", e.FieldViolations)
	}
	if e.Domain != spades.Domain {
		t.Errorf("domain %q", e.Domain)
	}

	_, err = c.GetMatch(ctx, "no-such-match")
	wantRefusal(t, err, codes.NotFound, "MATCH_NOT_FOUND")

	r := newRunner(t, srv, classic(2), 0)
	_, err = r.c.Seat(r.seat.MatchID() + ".wrong-secret").Claim(ctx)
	wantRefusal(t, err, codes.Unauthenticated, "UNAUTHENTICATED")

	// A rule refusal: the rule's sentence and the field at fault.
	_, err = r.seat.Submit(ctx, playCard(aceOfSpades))
	e = wantRefusal(t, err, codes.FailedPrecondition, "WRONG_PHASE")
	if e.Rule == "" || e.Rule != e.Metadata["rule"] {
		t.Errorf("rule %q, metadata %v", e.Rule, e.Metadata)
	}
	if len(e.FieldViolations) != 1 || e.FieldViolations[0].Field != "action" {
		t.Errorf("field violations %+v, want one on action", e.FieldViolations)
	}
	if !strings.Contains(e.Error(), "WRONG_PHASE") {
		t.Errorf("Error() = %q", e.Error())
	}
}

func TestPlayRefusalKeepsTheSessionGoing(t *testing.T) {
	r := claimed(t, 3)
	view := r.turn(nil)
	if view.GetPhase() != spadesv1.Phase_PHASE_BIDDING {
		t.Fatalf("phase %v", view.GetPhase())
	}
	_, err := r.ses.Act(r.ctx, playCard(aceOfSpades))
	e := wantRefusal(t, err, codes.FailedPrecondition, "WRONG_PHASE")
	if e.Rule == "" || len(e.FieldViolations) != 1 || e.FieldViolations[0].Field != "action" {
		t.Errorf("rule %q, field violations %+v", e.Rule, e.FieldViolations)
	}
	// An expected_seq beyond the match is refused with the field named.
	_, err = r.ses.Act(r.ctx, view.GetLegalActions()[0], spades.WithExpectedSeq(1<<40))
	e = wantRefusal(t, err, codes.InvalidArgument, "FUTURE_SEQUENCE")
	if e.Metadata["current_seq"] == "" || len(e.FieldViolations) != 1 || e.FieldViolations[0].Field != "expected_seq" {
		t.Errorf("metadata %v, field violations %+v", e.Metadata, e.FieldViolations)
	}
	res, ok := r.act(view.GetLegalActions()[0])
	if !ok || res.FirstSeq == 0 || res.LastSeq < res.FirstSeq {
		t.Fatalf("the bid after the refusals: %+v", res)
	}
}

func TestPlayWithWrongTokenFailsAtOnce(t *testing.T) {
	srv := server(t)
	r := newRunner(t, srv, classic(4), 0)
	ctx := testContext(t, 30*time.Second)
	ses, err := r.c.Seat(r.seat.MatchID()+".wrong-secret").Open(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ses.Close(ctx) }()
	_, err = ses.Next(ctx)
	wantRefusal(t, err, codes.Unauthenticated, "UNAUTHENTICATED")
	if n := ses.Reconnects(); n != 0 {
		t.Errorf("a refused call was retried %d times", n)
	}
	if _, err := ses.Send(ctx, playCard(aceOfSpades)); err == nil {
		t.Error("Send on an ended session succeeded")
	}
}

// Cut every connection after each action (the bots play on meanwhile) and
// twice in a row now and then: the session's events must be exactly those a
// fresh session reads from the start, no gap and no duplicate.
func TestResumeWithoutGaps(t *testing.T) {
	r := claimed(t, 5)
	cuts := 0
	for range maxTurns {
		view := r.turn(func() bool { return r.counts["handScored"] >= 1 })
		if view == nil {
			break
		}
		if _, ok := r.act(view.GetLegalActions()[0]); !ok {
			continue
		}
		r.cut()
		cuts++
		if cuts%4 == 0 {
			time.Sleep(20 * time.Millisecond)
			r.cut()
		}
	}
	if r.counts["handScored"] != 1 {
		t.Fatalf("the hand did not finish: %v", r.counts)
	}
	if r.ses.Reconnects() == 0 {
		t.Fatalf("%d cuts, no reconnect", cuts)
	}
	got := r.events
	want := r.replay(r.seen).events
	if !slices.Equal(got, want) {
		t.Fatalf("events with cuts (%d) differ from a replay (%d):\n%s", len(got), len(want),
			firstDifference([]byte(strings.Join(got, "\n")), []byte(strings.Join(want, "\n"))))
	}
	t.Logf("%d events, %d cuts, %d reconnects", len(got), cuts, r.ses.Reconnects())
}

// An action retried with its id, on the session, after a cut, and with
// SubmitAction, is applied once and answered with the first result.
func TestRetriesAreIdempotent(t *testing.T) {
	r := claimed(t, 6)
	view := r.turn(nil)
	bid := view.GetLegalActions()[0]
	id := spades.NewActionID()
	first, ok := r.act(bid, spades.WithActionID(id))
	if !ok {
		t.Skip("stale view") // cannot happen after turn(); r.act explains
	}
	again, err := r.ses.Act(r.ctx, bid, spades.WithActionID(id))
	if err != nil || *again != *first {
		t.Fatalf("retry on the session: %+v, %v; first %+v", again, err, first)
	}
	unary, err := r.seat.Submit(r.ctx, bid, spades.WithActionID(id))
	if err != nil || unary.GetLastSeq() != first.LastSeq {
		t.Fatalf("retry with SubmitAction: %v, %v; first %+v", unary, err, first)
	}

	// Sent, then the connection drops before the result: resent with its id
	// once the session has reconnected.
	view = r.turn(nil)
	card := view.GetLegalActions()[0]
	p, err := r.ses.Send(r.ctx, card, spades.WithExpectedSeq(r.seen))
	if err != nil {
		t.Fatal(err)
	}
	r.cut()
	res, err := p.Wait(r.ctx)
	if err != nil {
		t.Fatalf("send then cut: %v", err)
	}
	again, err = r.ses.Act(r.ctx, card, spades.WithActionID(p.ActionID()))
	if err != nil || *again != *res {
		t.Fatalf("retry after the cut: %+v, %v; first %+v", again, err, res)
	}

	r.drain()
	mine := 0
	for _, ev := range r.replay(res.LastSeq).taken {
		if b := ev.GetBidMade(); b != nil && b.GetSeat() == 0 {
			mine++
		}
		if c := ev.GetCardPlayed(); c != nil && c.GetSeat() == 0 {
			mine++
		}
	}
	if mine != 2 {
		t.Fatalf("seat 0 acted %d times, want 2 (a bid and a card)", mine)
	}
}

func TestContextCancellation(t *testing.T) {
	r := claimed(t, 7)
	r.turn(nil)

	// Next gives up when its context does; the session goes on.
	short, cancel := context.WithTimeout(r.ctx, 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := r.ses.Next(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Next: %v, want context.DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Next took %v to give up", d)
	}
	view := r.turn(nil)
	if _, ok := r.act(view.GetLegalActions()[0]); !ok {
		t.Fatal("stale")
	}

	// A unary call with a cancelled context: both an *Error and context.Canceled.
	done, cancelNow := context.WithCancel(r.ctx)
	cancelNow()
	_, err := r.seat.View(done)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("View: %v, want context.Canceled", err)
	}
	if e := asError(t, err); e.Code != codes.Canceled {
		t.Errorf("View: code %v", e.Code)
	}

	// Cancelling Open's context ends the session.
	sctx, end := context.WithCancel(r.ctx)
	ses, err := r.seat.Open(sctx, r.seen)
	if err != nil {
		t.Fatal(err)
	}
	end()
	wait, stop := context.WithTimeout(r.ctx, 10*time.Second)
	defer stop()
	for {
		_, err := ses.Next(wait)
		if err == nil {
			continue
		}
		if !errors.Is(err, context.Canceled) || wait.Err() != nil {
			t.Fatalf("Next after the session's context ended: %v", err)
		}
		break
	}
}

// closedAddress is a loopback address nothing listens on.
func closedAddress(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}

func TestUnreachableServer(t *testing.T) {
	c, err := spades.Dial(closedAddress(t), spades.WithPlaintext(),
		spades.WithBackoff(spades.Backoff{Initial: 5 * time.Millisecond, Max: 20 * time.Millisecond, MaxAttempts: 3}))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	ctx := testContext(t, 30*time.Second)
	seat := c.Seat("m.secret")

	// An action waits for the connection until its context ends.
	ses, err := seat.Open(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	if _, err := ses.Act(short, playCard(aceOfSpades)); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Act: %v, want context.DeadlineExceeded", err)
	}

	// The session gives up after its attempts, with the last failure.
	_, err = ses.Next(ctx)
	e := asError(t, err)
	if e.Code != codes.Unavailable || !strings.Contains(err.Error(), "gave up after") {
		t.Errorf("Next: %v", err)
	}
	if n := ses.Reconnects(); n != 3 {
		t.Errorf("%d reconnects, want 3", n)
	}
	_ = ses.Close(ctx)

	// Reads are retried as often, then fail the same way.
	_, err = seat.View(ctx)
	if e := asError(t, err); e.Code != codes.Unavailable {
		t.Errorf("View: %v", err)
	}
}

func TestClose(t *testing.T) {
	r := claimed(t, 8)
	view := r.turn(nil)
	if _, ok := r.act(view.GetLegalActions()[0]); !ok {
		t.Fatal("stale")
	}
	if err := r.ses.Close(r.ctx); err != nil {
		t.Fatal(err)
	}
	for {
		_, err := r.ses.Next(r.ctx)
		if err == nil {
			continue // events received before the end stay
		}
		if !errors.Is(err, spades.ErrClosed) {
			t.Fatalf("Next after Close: %v", err)
		}
		break
	}
	if _, err := r.ses.Send(r.ctx, view.GetLegalActions()[0]); !errors.Is(err, spades.ErrClosed) {
		t.Fatalf("Send after Close: %v", err)
	}
	if err := r.ses.Close(r.ctx); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	r.ses = nil
}

func TestActionIDs(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id := spades.NewActionID()
		if len(id) != 36 || id[14] != '4' || seen[id] {
			t.Fatalf("bad or repeated id %q", id)
		}
		seen[id] = true
	}
}

func TestViewIsAtLeastAsNewAsWhatTheSeatSaw(t *testing.T) {
	srv := server(t)
	ctx := testContext(t, time.Minute)
	r := newRunner(t, srv, classic(3), 0)
	seat := r.c.Seat(r.token)
	view, err := seat.View(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if seat.SeenSeq() != view.GetAsOfSeq() {
		t.Fatalf("seen %d after a view as of %d", seat.SeenSeq(), view.GetAsOfSeq())
	}
	if len(view.GetLegalActions()) > 0 {
		done, err := seat.Submit(ctx, view.GetLegalActions()[0])
		if err != nil {
			t.Fatal(err)
		}
		if seat.SeenSeq() != done.GetLastSeq() {
			t.Fatalf("seen %d after an action up to %d", seat.SeenSeq(), done.GetLastSeq())
		}
	}
	_, err = seat.ViewAfter(ctx, seat.SeenSeq()+10_000)
	wantRefusal(t, err, codes.OutOfRange, "SEQ_AHEAD")
}

package spades

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"google.golang.org/grpc"

	spadesv1 "github.com/spades-engine/spades/clients/go/gen/spades/v1"
)

// healthyAfter: a Play call that stayed up this long, or delivered a message,
// was a working connection, and the count of failed attempts starts again.
const healthyAfter = time.Second

// Result is an accepted action's ActionResult.
type Result struct {
	ActionID string
	// FirstSeq and LastSeq are the sequence numbers of the first and last
	// events the action caused (the first time it was applied, for a retry).
	FirstSeq, LastSeq uint64
}

// Session is a seat's Play call: the seat's events in sequence order (Next),
// and actions whose results it awaits (Act). When the connection drops it
// reopens the call after the last sequence number it received (no gap, and
// an event seen twice is skipped), with exponential backoff and jitter, and
// sends again, with the same action ids, the actions whose results had not
// come: the server applies an action once whatever the number of times it
// is sent. It gives up after Backoff.MaxAttempts failed attempts in a row,
// or at once on a refusal of the call itself (a bad token, an unknown match);
// Next then returns that error.
//
// Events are kept until Next takes them, however many: a Session never
// stops reading the call, so an Act's result is never stuck behind events
// nobody has taken. Its methods are safe for concurrent use.
type Session struct {
	seat    *Seat
	backoff Backoff
	closeTO time.Duration
	ctx     context.Context // the session's lifetime: Open's context, until Close
	cancel  context.CancelFunc
	done    chan struct{} // closed when the run loop has ended

	// sendMu orders the messages sent on the call (gRPC allows one sender at
	// a time); a reconnect holds it from the new call's open message through
	// the actions it sends again, so an action sent meanwhile follows them.
	sendMu sync.Mutex

	mu         sync.Mutex
	stream     spadesv1.SpadesService_PlayClient // nil while reconnecting
	lastSeq    uint64
	events     []*spadesv1.MatchEvent
	wake       chan struct{} // closed (and replaced) whenever the state changes
	pending    []*Pending
	closing    bool
	err        error // why the session ended; set once
	reconnects int
}

// Pending is an action sent on a Session whose result may not have come yet.
type Pending struct {
	id   string
	req  *spadesv1.PlayRequest
	done chan struct{}
	res  *Result
	err  error
}

// ActionID is the id the action was sent with.
func (p *Pending) ActionID() string { return p.id }

// Wait returns the action's result: a *Result, or an *Error if the server
// refused it, or ErrClosed (or the session's end) if it never came.
func (p *Pending) Wait(ctx context.Context) (*Result, error) {
	select {
	case <-p.done:
		return p.res, p.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Open opens the seat's session: a Play call from after afterSeq (0: from the
// first event). The session lives until Close, or until ctx ends (use a
// context without a deadline for a long session). Open does not wait for the
// server: a failure to connect, after the retries, or a refused token comes
// out of Next.
func (s *Seat) Open(ctx context.Context, afterSeq uint64) (*Session, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	sctx, cancel := context.WithCancel(ctx)
	ses := &Session{
		seat:    s,
		backoff: s.c.cfg.backoff,
		closeTO: s.c.cfg.closeTimeout,
		ctx:     sctx,
		cancel:  cancel,
		done:    make(chan struct{}),
		lastSeq: afterSeq,
		wake:    make(chan struct{}),
	}
	go ses.run()
	return ses, nil
}

// LastSeq is the sequence number of the last event received (taken by Next
// or not); a new session opened after it would miss nothing.
func (s *Session) LastSeq() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastSeq
}

// Buffered is the number of events received that Next has not returned yet.
func (s *Session) Buffered() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.events)
}

// Reconnects is the number of times the session has reopened its Play call.
func (s *Session) Reconnects() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reconnects
}

// Next returns the next event, in sequence order, waiting for it until ctx
// ends. Once the session has ended and its events are all taken, it returns
// why: ErrClosed after Close, an *Error, or the context's error.
func (s *Session) Next(ctx context.Context) (*spadesv1.MatchEvent, error) {
	for {
		s.mu.Lock()
		if len(s.events) > 0 {
			ev := s.events[0]
			s.events[0] = nil
			s.events = s.events[1:]
			s.mu.Unlock()
			return ev, nil
		}
		if s.err != nil {
			err := s.err
			s.mu.Unlock()
			return nil, err
		}
		wake := s.wake
		s.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Send sends an action and returns at once; Wait on the result. The action
// goes with a fresh id unless WithActionID gives one. While the session is
// reconnecting it is sent as soon as the call is open again.
func (s *Session) Send(ctx context.Context, action *spadesv1.Action, opts ...ActOption) (*Pending, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	o := actOptions(opts)
	p := &Pending{
		id:   o.id,
		done: make(chan struct{}),
		req: &spadesv1.PlayRequest{Kind: &spadesv1.PlayRequest_Action{Action: &spadesv1.PlayAction{
			ActionId: o.id, Action: action, ExpectedSeq: o.expectedSeq,
		}}},
	}
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	s.mu.Lock()
	if s.closing || s.err != nil {
		err := s.err
		s.mu.Unlock()
		if err == nil {
			err = ErrClosed
		}
		return nil, err
	}
	s.pending = append(s.pending, p)
	st := s.stream
	s.mu.Unlock()
	if st != nil {
		// A failed send means a broken call: its reader sees why and
		// reconnects, and the action goes again on the new call.
		_ = st.Send(p.req)
	}
	return p, nil
}

// Act sends an action and waits for its result: a *Result, or an *Error if
// the server refused it. If ctx ends first the session forgets the action
// (which may or may not have been applied: sending it again with the same
// id, WithActionID, is safe) and Act returns ctx's error.
func (s *Session) Act(ctx context.Context, action *spadesv1.Action, opts ...ActOption) (*Result, error) {
	p, err := s.Send(ctx, action, opts...)
	if err != nil {
		return nil, err
	}
	res, err := p.Wait(ctx)
	if err != nil && ctx.Err() != nil {
		s.forget(p)
		return nil, fmt.Errorf("spades: action %s: %w", p.id, ctx.Err())
	}
	return res, err
}

func (s *Session) forget(p *Pending) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, q := range s.pending {
		if q == p {
			s.pending = append(s.pending[:i], s.pending[i+1:]...)
			return
		}
	}
}

// Close ends the session: it half-closes the call, waits (until ctx ends, or
// the Client's close timeout if ctx has no deadline) for the results of the
// actions already sent, then ends the call. The server never ends a Play call
// that has half-closed (it would go on sending events). Events received
// before the end stay for Next, which then returns ErrClosed.
func (s *Session) Close(ctx context.Context) error {
	if _, ok := ctx.Deadline(); !ok && s.closeTO > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.closeTO)
		defer cancel()
	}
	s.sendMu.Lock()
	s.mu.Lock()
	already := s.closing
	s.closing = true
	st := s.stream
	s.mu.Unlock()
	if st != nil && !already {
		_ = st.CloseSend()
	}
	s.sendMu.Unlock()
	for {
		s.mu.Lock()
		idle := len(s.pending) == 0 || s.err != nil
		wake := s.wake
		s.mu.Unlock()
		if idle {
			break
		}
		select {
		case <-wake:
			continue
		case <-ctx.Done():
		case <-s.done:
		}
		break
	}
	s.cancel()
	<-s.done // the run loop ends promptly once its context is cancelled
	return nil
}

// signal wakes everyone waiting on the state; s.mu held.
func (s *Session) signal() {
	close(s.wake)
	s.wake = make(chan struct{})
}

// finish records why the session ended and fails the actions still waiting.
func (s *Session) finish(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing && (errors.Is(err, context.Canceled) || err == io.EOF) {
		err = ErrClosed
	}
	s.err = err
	s.stream = nil
	for _, p := range s.pending {
		p.err = err
		close(p.done)
	}
	s.pending = nil
	s.signal()
}

// run opens the Play call, reads it, and opens it again after each failure
// until the session ends.
func (s *Session) run() {
	defer close(s.done)
	defer s.cancel()
	failures := 0
	for {
		began := time.Now()
		received, err := s.attempt()
		if s.ctx.Err() != nil {
			s.finish(s.ctx.Err())
			return
		}
		s.mu.Lock()
		closing := s.closing
		s.mu.Unlock()
		if closing {
			s.finish(ErrClosed)
			return
		}
		if err != io.EOF && !retryable(err) {
			s.finish(convert(s.ctx, err))
			return
		}
		if received || time.Since(began) >= healthyAfter {
			failures = 0
		}
		failures++
		if failures > s.backoff.MaxAttempts {
			s.finish(fmt.Errorf("spades: Play: gave up after %d attempts: %w", failures, convert(s.ctx, err)))
			return
		}
		if !sleep(s.ctx, s.backoff.delay(failures)) {
			s.finish(s.ctx.Err())
			return
		}
		s.mu.Lock()
		s.reconnects++
		s.mu.Unlock()
	}
}

// attempt runs one Play call until it fails; received tells whether it
// delivered anything.
func (s *Session) attempt() (received bool, err error) {
	ctx, cancel := context.WithCancel(withToken(s.ctx, s.seat.token))
	defer cancel()
	st, err := s.seat.c.rpc.Play(ctx)
	if err != nil {
		return false, err
	}
	defer func() {
		s.mu.Lock()
		if s.stream == st {
			s.stream = nil
		}
		s.mu.Unlock()
	}()
	if err := s.start(st); err != nil {
		if errors.Is(err, ErrClosed) {
			return false, err
		}
		// The reason comes out of Recv (Send only says io.EOF).
		if _, rerr := st.Recv(); rerr != nil {
			return false, rerr
		}
		return false, err
	}
	for {
		resp, err := st.Recv()
		if err != nil {
			return received, err
		}
		received = true
		s.deliver(resp)
	}
}

// start sends the open message (after the last event received) and the
// actions still waiting for their result, then makes st the call new actions
// go on.
func (s *Session) start(st grpc.BidiStreamingClient[spadesv1.PlayRequest, spadesv1.PlayResponse]) error {
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return ErrClosed
	}
	open := &spadesv1.PlayRequest{Kind: &spadesv1.PlayRequest_Open{Open: &spadesv1.PlayOpen{
		MatchId: s.seat.matchID, AfterSeq: s.lastSeq,
	}}}
	resend := make([]*spadesv1.PlayRequest, len(s.pending))
	for i, p := range s.pending {
		resend[i] = p.req
	}
	s.stream = st
	s.mu.Unlock()
	if err := st.Send(open); err != nil {
		return err
	}
	for _, req := range resend {
		if err := st.Send(req); err != nil {
			return err
		}
	}
	return nil
}

// deliver queues a message's new events (skipping any already received), then
// completes the actions its results answer.
func (s *Session) deliver(resp *spadesv1.PlayResponse) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ev := range resp.GetEvents() {
		if ev.GetSeq() <= s.lastSeq {
			continue
		}
		s.lastSeq = ev.GetSeq()
		s.seat.saw(s.lastSeq)
		s.events = append(s.events, ev)
	}
	for _, r := range resp.GetResults() {
		for i, p := range s.pending {
			if p.id != r.GetActionId() {
				continue
			}
			s.pending = append(s.pending[:i], s.pending[i+1:]...)
			if r.GetError() != nil {
				p.err = fromActionError(r.GetError())
			} else {
				p.res = &Result{ActionID: r.GetActionId(), FirstSeq: r.GetFirstSeq(), LastSeq: r.GetLastSeq()}
			}
			close(p.done)
			break
		}
	}
	s.signal()
}

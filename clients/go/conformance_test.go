package spades_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	spades "github.com/spades-engine/spades/clients/go"
	spadesv1 "github.com/spades-engine/spades/clients/go/gen/spades/v1"
)

// The conformance runner: every clients/conformance/scenarios/*.json, run as
// clients/conformance/README.md says, against serve.py; each transcript is
// written to build/conformance/go/<name>.jsonl and must equal
// clients/conformance/expected/<name>.jsonl byte for byte.

var (
	scenarioDir = filepath.Join(repoRoot, "clients", "conformance", "scenarios")
	outDir      = filepath.Join(repoRoot, "build", "conformance", "go")
)

// expectedDir is clients/conformance/expected, or $SPADES_EXPECTED_DIR (to
// compare with transcripts from elsewhere).
func expectedDir() string {
	if d := os.Getenv("SPADES_EXPECTED_DIR"); d != "" {
		return d
	}
	return filepath.Join(repoRoot, "clients", "conformance", "expected")
}

type scenario struct {
	Name   string          `json:"name"`
	Create json.RawMessage `json:"create"`
	Seat   int32           `json:"seat"`
	Lobby  *lobbySpec      `json:"lobby"` // a lobby scenario: no create, no seat
	Steps  []step          `json:"steps"`
}

// lobbySpec is a lobby scenario's players and rules (the seed and bot level
// are reference.py's: serve.py gives them to the server).
type lobbySpec struct {
	Me      string          `json:"me"`
	Friend  string          `json:"friend"`
	Ruleset json.RawMessage `json:"ruleset"`
}

type step struct {
	Do    string         `json:"do"`
	Until map[string]int `json:"until"`
}

// Bounds: no wait in the runner is unbounded.
const (
	scenarioTimeout = 3 * time.Minute
	eventWait       = 20 * time.Second // for the next event when one must come
	maxTurns        = 2000             // loop iterations of one step
	// How long the runner lets the stream catch up with a view before it
	// acts (expected_seq makes the server refuse it if it has not).
	lagWait = 100 * time.Millisecond
)

func TestConformance(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join(scenarioDir, "*.json"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no scenarios in %s (%v)", scenarioDir, err)
	}
	srv := server(t)
	for _, path := range paths {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var sc scenario
		if err := json.Unmarshal(raw, &sc); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		t.Run(sc.Name, func(t *testing.T) {
			transcript := runScenario(t, srv, &sc)
			if err := os.MkdirAll(outDir, 0o755); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(outDir, sc.Name+".jsonl")
			if err := os.WriteFile(out, transcript, 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(expectedDir()); errors.Is(err, os.ErrNotExist) {
				t.Skipf("%s does not exist yet: transcript written to %s, not compared", expectedDir(), out)
			}
			want, err := os.ReadFile(filepath.Join(expectedDir(), sc.Name+".jsonl"))
			if err != nil {
				t.Fatalf("expected transcript: %v", err)
			}
			if !bytes.Equal(transcript, want) {
				t.Errorf("%s differs from %s:\n%s", out, filepath.Join(expectedDir(), sc.Name+".jsonl"), firstDifference(transcript, want))
			}
		})
	}
}

// firstDifference shows the first line where two transcripts differ.
func firstDifference(got, want []byte) string {
	g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := 0; i < len(g) || i < len(w); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return fmt.Sprintf("line %d:\n got  %s\n want %s", i+1, gl, wl)
		}
	}
	return "(equal lines, different bytes)"
}

// runner holds one scenario's run.
type runner struct {
	t          *testing.T
	ctx        context.Context
	srv        *testServer
	c          *spades.Client
	seat       *spades.Seat
	token      string
	ses        *spades.Session
	seen       uint64         // the last sequence number taken from the session
	counts     map[string]int // events taken, by kind
	events     []string
	taken      []*spadesv1.MatchEvent
	byKind     map[string][]int // indexes in events, by kind
	eventsEnd  int              // events[:eventsEnd] go in the transcript (-1: all)
	outcomes   []string
	cuts       int
	reconnects int

	// A lobby scenario's: the client's player, and the invite-only table it
	// opened (its id, invite code, version, and the seat token it gave).
	lobby       *lobbySpec
	player      *spades.Player
	ruleset     *spadesv1.Ruleset
	ticket      *spadesv1.Ticket
	inviteTable *spadesv1.OpenTableResponse
}

func runScenario(t *testing.T, srv *testServer, sc *scenario) []byte {
	var r *runner
	if sc.Lobby != nil {
		r = newLobbyRunner(t, srv, sc.Lobby)
	} else {
		create := &spadesv1.CreateMatchRequest{}
		if err := protojson.Unmarshal(sc.Create, create); err != nil {
			t.Fatalf("create: %v", err)
		}
		r = newRunner(t, srv, create, sc.Seat)
	}
	for i, s := range sc.Steps {
		r.do(i, s)
	}
	if r.ses != nil {
		t.Fatal("the scenario did not close its session")
	}
	if r.cuts > 0 && r.reconnects == 0 {
		t.Errorf("%d cuts but the session never reconnected", r.cuts)
	}
	// The events up to the one that ended the last play step: the bots play
	// on after it, so what comes later depends on when the session closed.
	events := r.events
	if r.eventsEnd >= 0 {
		events = events[:r.eventsEnd]
	}
	var b bytes.Buffer
	for _, l := range events {
		b.WriteString(l + "\n")
	}
	for _, l := range r.outcomes {
		b.WriteString(l + "\n")
	}
	return b.Bytes()
}

// newRunner creates the match (operator credential) and holds the token of
// the seat given.
func newRunner(t *testing.T, srv *testServer, create *spadesv1.CreateMatchRequest, seat int32) *runner {
	r := &runner{t: t, ctx: testContext(t, scenarioTimeout), srv: srv, c: srv.dial(t), counts: map[string]int{}, byKind: map[string][]int{}, eventsEnd: -1}
	created, err := r.c.CreateMatch(r.ctx, create)
	if err != nil {
		t.Fatalf("CreateMatch: %v", err)
	}
	for _, st := range created.GetSeatTokens() {
		if st.GetSeat() == seat {
			r.seat = r.c.Seat(st.GetToken())
			r.token = st.GetToken()
		}
	}
	if r.seat == nil {
		t.Fatalf("no seat token for seat %d", seat)
	}
	return r
}

func (r *runner) fatalf(format string, args ...any) {
	r.t.Helper()
	r.t.Fatalf(format, args...)
}

func (r *runner) do(i int, s step) {
	r.t.Helper()
	switch s.Do {
	case "claim_wrong_token":
		wrong := r.c.Seat(r.seat.MatchID() + ".wrong-secret")
		_, err := wrong.Claim(r.ctx)
		var e *spades.Error
		if !errors.As(err, &e) {
			r.fatalf("step %d: ClaimSeat with a wrong token: %v, want a refusal", i, err)
		}
		r.outcome(map[string]any{"step": s.Do, "code": spades.CodeName(e.Code), "reason": e.Reason})
	case "claim":
		resp, err := r.seat.Claim(r.ctx)
		if err != nil {
			r.fatalf("step %d: ClaimSeat: %v", i, err)
		}
		r.outcome(map[string]any{"step": s.Do, "seat": int(resp.GetSeat())})
	case "open":
		ses, err := r.seat.Open(r.ctx, 0)
		if err != nil {
			r.fatalf("step %d: Open: %v", i, err)
		}
		r.ses = ses
	case "play":
		if len(s.Until) != 1 {
			r.fatalf("step %d: play needs one `until` kind, got %v", i, s.Until)
		}
		for kind, k := range s.Until {
			r.play(kind, k)
		}
	case "cut":
		r.cut()
	case "send_then_cut":
		r.sendThenCut()
	case "retry":
		r.retry()
	case "illegal_card":
		r.illegalCard()
	case "close":
		r.close()
	case "friend_quickplay", "quickplay", "await_placement", "open_invite_table", "friend_join_by_code", "await_start":
		if r.lobby == nil {
			r.fatalf("step %d: %q needs a lobby scenario", i, s.Do)
		}
		r.lobbyStep(s.Do)
	default:
		r.fatalf("step %d: unknown step %q", i, s.Do)
	}
}

// take records one event: its line, and its kind's count.
func (r *runner) take(ev *spadesv1.MatchEvent) {
	if ev.GetSeq() <= r.seen {
		r.fatalf("event %d after %d: sequence numbers must increase", ev.GetSeq(), r.seen)
	}
	r.seen = ev.GetSeq()
	kind := ev.ProtoReflect().WhichOneof(ev.ProtoReflect().Descriptor().Oneofs().ByName("kind"))
	if kind == nil {
		r.fatalf("event %d has no kind", ev.GetSeq())
	}
	r.counts[kind.JSONName()]++
	r.byKind[kind.JSONName()] = append(r.byKind[kind.JSONName()], len(r.events))
	r.taken = append(r.taken, ev)
	v := r.value(ev)
	delete(v, "timeMs")
	r.events = append(r.events, canonical(map[string]any{"event": v}))
}

// drain takes every event already received.
func (r *runner) drain() {
	for r.ses.Buffered() > 0 {
		ev, err := r.ses.Next(r.ctx)
		if err != nil {
			r.fatalf("Next: %v", err)
		}
		r.take(ev)
	}
}

// await takes the next event, which must come.
func (r *runner) await() {
	ctx, cancel := context.WithTimeout(r.ctx, eventWait)
	defer cancel()
	ev, err := r.ses.Next(ctx)
	if err != nil {
		r.fatalf("no event for %s (last seen %d): %v", eventWait, r.seen, err)
	}
	r.take(ev)
}

// awaitBriefly takes the next event if it comes within lagWait; false if
// none came (the events between the last one taken and the view's as_of_seq
// may all be hidden from the seat).
func (r *runner) awaitBriefly() bool {
	ctx, cancel := context.WithTimeout(r.ctx, lagWait)
	defer cancel()
	ev, err := r.ses.Next(ctx)
	if err != nil {
		if ctx.Err() != nil && r.ctx.Err() == nil {
			return false
		}
		r.fatalf("Next: %v", err)
	}
	r.take(ev)
	return true
}

// turn waits for the seat's turn (GetView shows legal actions), taking the
// events meanwhile; it returns nil if stop() holds first.
func (r *runner) turn(stop func() bool) *spadesv1.SeatView {
	for range maxTurns {
		r.drain()
		if stop != nil && stop() {
			return nil
		}
		view, err := r.seat.View(r.ctx)
		if err != nil {
			r.fatalf("GetView: %v", err)
		}
		if len(view.GetLegalActions()) > 0 {
			if r.seen < view.GetAsOfSeq() && r.awaitBriefly() {
				continue // the stream was behind the view: look again
			}
			return view
		}
		r.await()
	}
	r.fatalf("no turn after %d events", maxTurns)
	return nil
}

// stale tells whether err is a STALE_SEQUENCE refusal, and if so takes the
// events up to the one it names: the seat's turn came before the session had
// delivered everything before it, and the caller looks again.
func (r *runner) stale(err error) bool {
	var e *spades.Error
	if !errors.As(err, &e) || e.Reason != "STALE_SEQUENCE" {
		return false
	}
	r.t.Logf("stale at %d: %s", r.seen, e.Message)
	current, perr := strconv.ParseUint(e.Metadata["current_seq"], 10, 64)
	if perr != nil {
		r.fatalf("STALE_SEQUENCE without current_seq: %v", err)
	}
	for r.seen < current {
		r.await()
	}
	return true
}

// act sends an action at the seat's turn and waits for its result. A play
// step's actions carry the last sequence number taken as expected_seq, so
// that the server accepts one only if the runner has seen every event before
// the turn (whatever the timing, the runner checks `until` on the same
// events); false: stale, look again.
func (r *runner) act(action *spadesv1.Action, opts ...spades.ActOption) (*spades.Result, bool) {
	res, err := r.ses.Act(r.ctx, action, opts...)
	if r.stale(err) {
		return nil, false
	}
	if err != nil {
		r.fatalf("action %v: %v", action, err)
	}
	return res, true
}

func (r *runner) play(kind string, k int) {
	stop := func() bool { return r.counts[kind] >= k }
	for range maxTurns {
		view := r.turn(stop)
		if view == nil {
			r.eventsEnd = r.byKind[kind][k-1] + 1 // the K-th ends the step
			return
		}
		action := view.GetLegalActions()[0]
		if res, ok := r.act(action, spades.WithExpectedSeq(r.seen)); ok {
			r.actionLine("play", action, res)
		}
	}
	r.fatalf("play until %s %d: not reached after %d turns", kind, k, maxTurns)
}

func (r *runner) cut() {
	if r.ses == nil {
		r.fatalf("cut: no session open")
	}
	r.srv.cut(r.t)
	r.cuts++
	r.t.Logf("cut %d at seen %d, reconnects so far %d", r.cuts, r.seen, r.ses.Reconnects())
}

// sendThenCut: the result comes after the session has reconnected and sent
// the action again with its id.
func (r *runner) sendThenCut() {
	view := r.turn(nil)
	action := view.GetLegalActions()[0]
	p, err := r.ses.Send(r.ctx, action)
	if err != nil {
		r.fatalf("send: %v", err)
	}
	r.cut()
	res, err := p.Wait(r.ctx)
	if err != nil {
		r.fatalf("send_then_cut: %v", err)
	}
	r.actionLine("send_then_cut", action, res)
}

func (r *runner) retry() {
	view := r.turn(nil)
	action := view.GetLegalActions()[0]
	id := spades.NewActionID()
	first, _ := r.act(action, spades.WithActionID(id))
	r.actionLine("retry", action, first)
	again, _ := r.act(action, spades.WithActionID(id))
	r.actionLine("retry_again", action, again)
}

func (r *runner) illegalCard() {
	for range maxTurns {
		view := r.turn(nil)
		card := illegalCard(view)
		if card == nil {
			action := view.GetLegalActions()[0]
			res, _ := r.act(action)
			r.actionLine("play", action, res)
			continue
		}
		action := &spadesv1.Action{Kind: &spadesv1.Action_PlayCard{PlayCard: &spadesv1.PlayCardAction{Card: card}}}
		_, err := r.ses.Act(r.ctx, action)
		var e *spades.Error
		if !errors.As(err, &e) {
			r.fatalf("illegal card %v: %v, want a refusal", card, err)
		}
		r.outcome(map[string]any{
			"step": "illegal_card", "action": r.value(action),
			"code": spades.CodeName(e.Code), "reason": e.Reason, "rule": e.Rule,
		})
		return
	}
}

// illegalCard is the first card of the hand that is not a legal play, or nil
// (every card is legal, or it is not the play phase).
func illegalCard(view *spadesv1.SeatView) *spadesv1.Card {
	if view.GetPhase() != spadesv1.Phase_PHASE_PLAYING {
		return nil
	}
	legal := map[[2]int32]bool{}
	for _, a := range view.GetLegalActions() {
		if c := a.GetPlayCard().GetCard(); c != nil {
			legal[[2]int32{int32(c.GetSuit()), int32(c.GetRank())}] = true
		}
	}
	for _, c := range view.GetHand() {
		if !legal[[2]int32{int32(c.GetSuit()), int32(c.GetRank())}] {
			return c
		}
	}
	return nil
}

func (r *runner) close() {
	if r.ses == nil {
		r.fatalf("close: no session open")
	}
	if err := r.ses.Close(r.ctx); err != nil {
		r.fatalf("Close: %v", err)
	}
	r.reconnects = r.ses.Reconnects()
	r.ses = nil
}

func (r *runner) actionLine(name string, action *spadesv1.Action, res *spades.Result) {
	r.outcome(map[string]any{
		"step": name, "action": r.value(action),
		"firstSeq": strconv.FormatUint(res.FirstSeq, 10), "lastSeq": strconv.FormatUint(res.LastSeq, 10),
	})
}

func (r *runner) outcome(o map[string]any) {
	r.outcomes = append(r.outcomes, canonical(map[string]any{"outcome": o}))
}

func (r *runner) value(m proto.Message) map[string]any {
	v, err := protoValue(m)
	if err != nil {
		r.fatalf("proto JSON: %v", err)
	}
	return v
}

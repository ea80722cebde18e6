package spades_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	spades "github.com/spades-engine/spades/clients/go"
	spadesv1 "github.com/spades-engine/spades/clients/go/gen/spades/v1"
)

// Tests of the lobby (LobbyService) against serve.py, which signs player
// credentials (POST /credential) and deals every table from seed 11, with
// quick play's bots after 1 s. The server is shared by the package's tests
// (and lobby_party plays quick play on classic rules), so each test queues
// and lists on rules of its own (lobbyRules), and each player is new.

var playerCount atomic.Int64

// player is a new player ("<prefix>-<n>") with a credential serve.py signed.
func (s *testServer) player(t testing.TB, c *spades.Client, prefix string) (*spades.Player, string) {
	t.Helper()
	id := fmt.Sprintf("go-%s-%d-%d", prefix, time.Now().UnixNano()%1e6, playerCount.Add(1))
	return c.Player(s.credential(t, id, strings.ToUpper(prefix[:1])+prefix[1:])), id
}

// lobbyRules are classic rules with a target score of their own: a quick play
// queue and a lobby filter no other test shares.
func lobbyRules(n int32) *spadesv1.Ruleset {
	return &spadesv1.Ruleset{Preset: "classic", TargetScore: proto.Int32(300 + n)}
}

func seatStateList(table *spadesv1.Table) []spadesv1.TableSeatState {
	var out []spadesv1.TableSeatState
	for _, s := range table.GetSeats() {
		out = append(out, s.GetState())
	}
	return out
}

const (
	seatOpen     = spadesv1.TableSeatState_TABLE_SEAT_STATE_OPEN
	seatPlayer   = spadesv1.TableSeatState_TABLE_SEAT_STATE_PLAYER
	seatBot      = spadesv1.TableSeatState_TABLE_SEAT_STATE_BOT
	tableWaiting = spadesv1.TableState_TABLE_STATE_WAITING
	tableStarted = spadesv1.TableState_TABLE_STATE_STARTED
)

// Open, join (by id, at a seat, twice), leave, start early with bots; the
// host's seat token plays the match on a Session once the table has started.
func TestTablesOpenJoinLeaveStart(t *testing.T) {
	srv := server(t)
	ctx := testContext(t, time.Minute)
	c := srv.dial(t)
	alice, aliceID := srv.player(t, c, "alice")
	bob, bobID := srv.player(t, c, "bob")
	carol, _ := srv.player(t, c, "carol")

	opened, err := alice.OpenTable(ctx, &spadesv1.OpenTableRequest{Ruleset: lobbyRules(1)})
	if err != nil {
		t.Fatal(err)
	}
	table := opened.GetTable()
	tableID := table.GetTableId()
	if table.GetState() != tableWaiting || table.GetHostPlayerId() != aliceID || opened.GetSeat() != 0 ||
		fmt.Sprint(seatStateList(table)) != fmt.Sprint([]spadesv1.TableSeatState{seatPlayer, seatOpen, seatOpen, seatOpen}) {
		t.Fatalf("opened: %v", opened)
	}
	// The seat token exists from the start; it plays once the table has started.
	seat := c.Seat(opened.GetSeatToken())
	if seat.MatchID() != tableID {
		t.Fatalf("seat token of %q, table %q", seat.MatchID(), tableID)
	}
	_, err = seat.View(ctx)
	wantRefusal(t, err, codes.FailedPrecondition, "TABLE_NOT_STARTED")

	joined, err := bob.JoinTable(ctx, tableID, spades.WithSeat(2))
	if err != nil || joined.GetSeat() != 2 || joined.GetTable().GetState() != tableWaiting {
		t.Fatalf("bob joins: %v, %v", joined, err)
	}
	again, err := bob.JoinTable(ctx, tableID)
	if err != nil || again.GetSeat() != 2 || again.GetSeatToken() != joined.GetSeatToken() {
		t.Fatalf("joining again: %v, %v (want the same seat and token)", again, err)
	}
	_, err = carol.JoinTable(ctx, tableID, spades.WithSeat(2))
	wantRefusal(t, err, codes.FailedPrecondition, "SEAT_TAKEN")
	if _, err := carol.JoinTable(ctx, tableID); err != nil {
		t.Fatal(err)
	}
	left, err := carol.LeaveTable(ctx, tableID)
	if err != nil || left.GetSeats()[1].GetState() != seatOpen {
		t.Fatalf("carol leaves: %v, %v", left, err)
	}
	_, err = carol.LeaveTable(ctx, tableID)
	wantRefusal(t, err, codes.FailedPrecondition, "NOT_SEATED")

	_, err = bob.StartTable(ctx, tableID)
	wantRefusal(t, err, codes.PermissionDenied, "NOT_HOST")
	begun, err := alice.StartTable(ctx, tableID)
	if err != nil || begun.GetState() != tableStarted || begun.GetMatchId() != tableID {
		t.Fatalf("StartTable: %v, %v", begun, err)
	}
	if got := seatStateList(begun); fmt.Sprint(got) != fmt.Sprint([]spadesv1.TableSeatState{seatPlayer, seatBot, seatPlayer, seatBot}) {
		t.Fatalf("seats after the start: %v", got)
	}
	_, err = carol.JoinTable(ctx, tableID)
	wantRefusal(t, err, codes.FailedPrecondition, "TABLE_STARTED")
	if got, err := bob.GetTable(ctx, tableID); err != nil || got.GetState() != tableStarted || got.GetSeats()[2].GetPlayerId() != bobID {
		t.Fatalf("GetTable: %v, %v", got, err)
	}

	// The table's seat token plays as one from CreateMatch does.
	view, err := seat.View(ctx)
	if err != nil || view.GetSeat() != 0 || len(view.GetHand()) != 13 {
		t.Fatalf("GetView: %v, %v", view, err)
	}
	ses, err := seat.Open(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ses.Close(context.Background()) }()
	if ev, err := ses.Next(ctx); err != nil || ev.GetSeq() != 1 {
		t.Fatalf("first event: %v, %v", ev, err)
	}
}

// An invite-only table: found and joined by its code (spoken: any case,
// spaces), refused by id without it, a wrong code INVITE_NOT_FOUND; the host
// watches it until it starts.
func TestInviteByCode(t *testing.T) {
	srv := server(t)
	ctx := testContext(t, time.Minute)
	c := srv.dial(t)
	host, _ := srv.player(t, c, "host")
	friend, friendID := srv.player(t, c, "friend")
	stranger, _ := srv.player(t, c, "stranger")

	opened, err := host.OpenTable(ctx, &spadesv1.OpenTableRequest{
		Ruleset: lobbyRules(2), BotSeats: []int32{1}, Visibility: spadesv1.TableVisibility_TABLE_VISIBILITY_INVITE_ONLY,
	})
	if err != nil {
		t.Fatal(err)
	}
	tableID, code := opened.GetTable().GetTableId(), opened.GetTable().GetInviteCode()
	if len(code) != 11 {
		t.Fatalf("invite code %q", code)
	}
	_, err = stranger.JoinTable(ctx, tableID)
	wantRefusal(t, err, codes.PermissionDenied, "INVITE_REQUIRED")
	_, err = stranger.JoinTableByCode(ctx, "ZZZZZ-00000")
	wantRefusal(t, err, codes.NotFound, "INVITE_NOT_FOUND")

	spoken := strings.ToLower(strings.ReplaceAll(code, "-", " "))
	seen, err := friend.GetTableByCode(ctx, spoken)
	if err != nil || seen.GetTableId() != tableID {
		t.Fatalf("GetTableByCode: %v, %v", seen, err)
	}

	// The host follows the table until it starts; the iteration ends then.
	var (
		wg      sync.WaitGroup
		watched []*spadesv1.Table
		werr    error
	)
	first := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for table, err := range host.WatchTable(ctx, tableID) {
			if err != nil {
				werr = err
				return
			}
			watched = append(watched, table)
			if len(watched) == 1 {
				close(first)
			}
		}
	}()
	<-first
	joined, err := friend.JoinTableByCode(ctx, spoken, spades.WithSeat(2))
	if err != nil || joined.GetSeat() != 2 || joined.GetTable().GetSeats()[2].GetPlayerId() != friendID {
		t.Fatalf("JoinTableByCode: %v, %v", joined, err)
	}
	if _, err := host.StartTable(ctx, tableID); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if werr != nil {
		t.Fatalf("WatchTable: %v", werr)
	}
	last := watched[len(watched)-1]
	if watched[0].GetState() != tableWaiting || last.GetState() != tableStarted {
		t.Fatalf("watched %d tables, first %v, last %v", len(watched), watched[0].GetState(), last.GetState())
	}
	for i := 1; i < len(watched); i++ {
		if watched[i].GetVersion() <= watched[i-1].GetVersion() {
			t.Fatalf("versions not increasing: %d then %d", watched[i-1].GetVersion(), watched[i].GetVersion())
		}
	}
	if table, err := friend.AwaitTableStart(ctx, tableID); err != nil || table.GetState() != tableStarted {
		t.Fatalf("AwaitTableStart: %v, %v", table, err)
	}
}

// The lobby: every page, oldest first; a watch from the listed version sees a
// join and the start (also across a dropped connection); PollLobby the same.
func TestLobbyListAndWatch(t *testing.T) {
	srv := server(t)
	ctx := testContext(t, time.Minute)
	c := srv.dial(t)
	rules := lobbyRules(3)
	filter := &spadesv1.LobbyFilter{Ruleset: rules}
	viewer, _ := srv.player(t, c, "viewer")

	var ids []string
	for range 3 {
		host, _ := srv.player(t, c, "host")
		opened, err := host.OpenTable(ctx, &spadesv1.OpenTableRequest{Ruleset: rules})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, opened.GetTable().GetTableId())
	}
	var listed []string
	pages := 0
	for page, err := range viewer.TablePages(ctx, filter, 2) {
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, table := range page.GetTables() {
			listed = append(listed, table.GetTableId())
		}
	}
	if pages < 2 || fmt.Sprint(listed) != fmt.Sprint(ids) {
		t.Fatalf("%d pages: %v, want %v", pages, listed, ids)
	}
	all, version, err := viewer.AllTables(ctx, filter)
	if err != nil || len(all) != 3 || version == 0 {
		t.Fatalf("AllTables: %d tables, version %d, %v", len(all), version, err)
	}

	// Watch from the listed version: a new table, a join, a cut, the start.
	host, _ := srv.player(t, c, "host")
	guest, _ := srv.player(t, c, "guest")
	batches := make(chan *spadesv1.WatchLobbyResponse, 100)
	wctx, stop := context.WithCancel(ctx)
	ended := make(chan error, 1) // why the watch ended
	go func() {
		for batch, err := range viewer.WatchLobby(wctx, filter, version) {
			if err != nil {
				ended <- err
				return
			}
			batches <- batch
		}
		ended <- nil
	}()
	// until reads batches until one satisfies ok.
	until := func(what string, ok func(*spadesv1.WatchLobbyResponse) bool) {
		t.Helper()
		timeout := time.After(10 * time.Second)
		for {
			select {
			case b := <-batches:
				if ok(b) {
					return
				}
			case err := <-ended:
				t.Fatalf("the lobby's watch ended (%v) before it showed %s", err, what)
			case <-timeout:
				t.Fatalf("the lobby's watch never showed %s", what)
			}
		}
	}
	opened, err := host.OpenTable(ctx, &spadesv1.OpenTableRequest{Ruleset: rules})
	if err != nil {
		t.Fatal(err)
	}
	tableID := opened.GetTable().GetTableId()
	until("the new table", func(b *spadesv1.WatchLobbyResponse) bool {
		for _, table := range b.GetTables() {
			if table.GetTableId() == tableID {
				return true
			}
		}
		return false
	})
	srv.cut(t) // the watch reopens after the last version it saw
	if _, err := guest.JoinTable(ctx, tableID); err != nil {
		t.Fatal(err)
	}
	until("the join", func(b *spadesv1.WatchLobbyResponse) bool {
		for _, table := range b.GetTables() {
			if table.GetTableId() == tableID && table.GetSeats()[1].GetState() == seatPlayer {
				return true
			}
		}
		return false
	})
	if _, err := host.StartTable(ctx, tableID); err != nil {
		t.Fatal(err)
	}
	until("the start", func(b *spadesv1.WatchLobbyResponse) bool {
		for _, id := range b.GetRemovedTableIds() {
			if id == tableID {
				return true
			}
		}
		return false
	})
	stop()
	if err := <-ended; !errors.Is(err, context.Canceled) {
		t.Fatalf("WatchLobby ended with %v, want the context's end", err)
	}

	// The long poll: the same changes from the same version, at once...
	polled, err := viewer.PollLobby(ctx, filter, spades.WithAfterVersion(version))
	if err != nil || !strings.Contains(strings.Join(polled.GetRemovedTableIds(), " "), tableID) {
		t.Fatalf("PollLobby: %v, %v", polled, err)
	}
	// ...and, with nothing new, after the wait, empty at the latest version.
	began := time.Now()
	quiet, err := viewer.PollLobby(ctx, filter, spades.WithAfterVersion(polled.GetVersion()), spades.WithWait(300*time.Millisecond))
	if err != nil || len(quiet.GetTables())+len(quiet.GetRemovedTableIds()) != 0 || quiet.GetVersion() < polled.GetVersion() {
		t.Fatalf("a quiet PollLobby: %v, %v", quiet, err)
	}
	if d := time.Since(began); d < 250*time.Millisecond {
		t.Fatalf("a quiet PollLobby answered after %v, want the wait", d)
	}
}

// Alone: bots take the other seats after serve.py's 1 s; GetTicket("") gives
// the same placement again; the seat token plays on a Session.
func TestQuickPlayAlone(t *testing.T) {
	srv := server(t)
	ctx := testContext(t, time.Minute)
	c := srv.dial(t)
	alone, aloneID := srv.player(t, c, "alone")

	ticket, err := alone.QuickPlay(ctx, lobbyRules(4))
	if err != nil || ticket.GetState() != spadesv1.TicketState_TICKET_STATE_SEARCHING {
		t.Fatalf("QuickPlay: %v, %v", ticket, err)
	}
	if d := ticket.GetBotsAtMs() - ticket.GetCreatedMs(); d != 1000 {
		t.Errorf("bots after %d ms, want serve.py's 1000", d)
	}
	_, err = alone.QuickPlay(ctx, lobbyRules(4))
	e := wantRefusal(t, err, codes.AlreadyExists, "ALREADY_QUEUED")
	if e.Metadata["ticket_id"] != ticket.GetTicketId() {
		t.Errorf("ALREADY_QUEUED names %q", e.Metadata["ticket_id"])
	}
	began := time.Now()
	placement, err := alone.AwaitPlacement(ctx, ticket.GetTicketId())
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(began); d < 500*time.Millisecond || d > 5*time.Second {
		t.Errorf("placed after %v, want about 1 s", d)
	}
	table := placement.GetTable()
	bots := 0
	for _, s := range table.GetSeats() {
		if s.GetState() == seatBot {
			bots++
		}
	}
	if bots != 3 || table.GetKind() != spadesv1.TableKind_TABLE_KIND_QUICK_PLAY ||
		table.GetSeats()[placement.GetSeat()].GetPlayerId() != aloneID || placement.GetMatchId() != table.GetMatchId() {
		t.Fatalf("placement: %v", placement)
	}

	// After a lost connection: the latest ticket, the same seat token.
	latest, err := alone.GetTicket(ctx, "")
	if err != nil || latest.GetTicketId() != ticket.GetTicketId() || latest.GetPlacement().GetSeatToken() != placement.GetSeatToken() {
		t.Fatalf("GetTicket again: %v, %v", latest, err)
	}
	_, err = alone.CancelTicket(ctx, ticket.GetTicketId())
	wantRefusal(t, err, codes.FailedPrecondition, "TICKET_PLACED")

	// The placement plays on a Session, as a CreateMatch seat token does.
	seat := c.Seat(placement.GetSeatToken())
	ses, err := seat.Open(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ses.Close(context.Background()) }()
	for {
		view, err := seat.View(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(view.GetLegalActions()) == 0 {
			if _, err := ses.Next(ctx); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if view.GetSeat() != placement.GetSeat() || view.GetPhase() != spadesv1.Phase_PHASE_BIDDING {
			t.Fatalf("view: seat %d, phase %v", view.GetSeat(), view.GetPhase())
		}
		res, err := ses.Act(ctx, view.GetLegalActions()[0])
		if err != nil || res.FirstSeq == 0 {
			t.Fatalf("the first bid: %v, %v", res, err)
		}
		break
	}
}

// A QuickPlay resent with its request id (after its answer was lost) answers
// with the ticket it made, even once placed: the same ticket, the same seat
// token. Another id is refused while that ticket is live; an id over 64
// characters is BAD_REQUEST_ID.
func TestQuickPlayResentWithItsRequestID(t *testing.T) {
	srv := server(t)
	ctx := testContext(t, time.Minute)
	c := srv.dial(t)
	alone, _ := srv.player(t, c, "resend")
	rules := lobbyRules(7)

	ticket, err := alone.QuickPlay(ctx, rules, spades.WithRequestID("go-alone-game-1"))
	if err != nil || ticket.GetState() != spadesv1.TicketState_TICKET_STATE_SEARCHING {
		t.Fatalf("QuickPlay: %v, %v", ticket, err)
	}
	again, err := alone.QuickPlay(ctx, rules, spades.WithRequestID("go-alone-game-1"))
	if err != nil || again.GetTicketId() != ticket.GetTicketId() || again.GetState() != spadesv1.TicketState_TICKET_STATE_SEARCHING {
		t.Fatalf("resent while searching: %v, %v; want ticket %s", again, err, ticket.GetTicketId())
	}
	placement, err := alone.AwaitPlacement(ctx, ticket.GetTicketId())
	if err != nil {
		t.Fatal(err)
	}
	resent, err := alone.QuickPlay(ctx, rules, spades.WithRequestID("go-alone-game-1"))
	if err != nil {
		t.Fatal(err)
	}
	if resent.GetTicketId() != ticket.GetTicketId() || resent.GetState() != spadesv1.TicketState_TICKET_STATE_PLACED ||
		resent.GetPlacement().GetSeatToken() != placement.GetSeatToken() || !proto.Equal(resent.GetPlacement(), placement) {
		t.Fatalf("resent once placed: %v; want ticket %s placed at %v", resent, ticket.GetTicketId(), placement)
	}

	_, err = alone.QuickPlay(ctx, rules, spades.WithRequestID(strings.Repeat("x", 65)))
	e := wantRefusal(t, err, codes.InvalidArgument, "BAD_REQUEST_ID")
	if len(e.FieldViolations) != 1 || e.FieldViolations[0].Field != "request_id" {
		t.Errorf("field violations %+v, want one on request_id", e.FieldViolations)
	}
}

// QuickPlay is retried while the server is unreachable, with one request id:
// an attempt whose answer is lost (the server made the ticket, the client saw
// UNAVAILABLE) is retried and answered with that ticket, not refused
// ALREADY_QUEUED. Each call has a fresh random id of its own.
func TestQuickPlayRetriedWithOneRequestID(t *testing.T) {
	srv := server(t)
	ctx := testContext(t, time.Minute)
	var (
		mu  sync.Mutex
		ids []string
	)
	loseFirstAnswer := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn,
		invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		r, ok := req.(*spadesv1.QuickPlayRequest)
		if !ok {
			return invoker(ctx, method, req, reply, cc, opts...)
		}
		mu.Lock()
		ids = append(ids, r.GetRequestId())
		first := len(ids) == 1
		mu.Unlock()
		err := invoker(ctx, method, req, reply, cc, opts...)
		if first && err == nil {
			return status.Error(codes.Unavailable, "the answer was lost")
		}
		return err
	}
	c := srv.dial(t,
		spades.WithBackoff(spades.Backoff{Initial: 5 * time.Millisecond, Max: 20 * time.Millisecond, MaxAttempts: 3}),
		spades.WithDialOptions(grpc.WithChainUnaryInterceptor(loseFirstAnswer)))
	p, _ := srv.player(t, c, "lost")
	rules := lobbyRules(8)

	ticket, err := p.QuickPlay(ctx, rules)
	if err != nil || ticket.GetState() != spadesv1.TicketState_TICKET_STATE_SEARCHING {
		t.Fatalf("QuickPlay with its first answer lost: %v, %v", ticket, err)
	}
	mu.Lock()
	sent := append([]string(nil), ids...)
	mu.Unlock()
	if len(sent) != 2 || sent[0] == "" || sent[0] != sent[1] {
		t.Fatalf("request ids sent %q, want one id twice", sent)
	}
	latest, err := p.GetTicket(ctx, "")
	if err != nil || latest.GetTicketId() != ticket.GetTicketId() {
		t.Fatalf("the latest ticket: %v, %v; want %s (one ticket)", latest, err, ticket.GetTicketId())
	}
	// Another call is another game: a fresh id, refused while the ticket waits.
	_, err = p.QuickPlay(ctx, rules)
	e := wantRefusal(t, err, codes.AlreadyExists, "ALREADY_QUEUED")
	if e.Metadata["ticket_id"] != ticket.GetTicketId() {
		t.Errorf("ALREADY_QUEUED names %q", e.Metadata["ticket_id"])
	}
	mu.Lock()
	sent = append([]string(nil), ids...)
	mu.Unlock()
	if len(sent) != 3 || sent[2] == "" || sent[2] == sent[0] {
		t.Fatalf("request ids sent %q, want a fresh one for the second call", sent)
	}
	if _, err := p.CancelTicket(ctx, ticket.GetTicketId()); err != nil {
		t.Fatal(err)
	}
}

// A party of two: the first waits for the partner, the second joins the same
// ticket, both are placed opposite each other (bots in the other seats).
func TestQuickPlayParty(t *testing.T) {
	srv := server(t)
	ctx := testContext(t, time.Minute)
	c := srv.dial(t)
	ann, annID := srv.player(t, c, "ann")
	ben, benID := srv.player(t, c, "ben")
	rules := lobbyRules(5)

	first, err := ann.QuickPlay(ctx, rules, spades.WithPartner(benID))
	if err != nil || first.GetState() != spadesv1.TicketState_TICKET_STATE_WAITING_FOR_PARTNER {
		t.Fatalf("the first asks: %v, %v", first, err)
	}
	second, err := ben.QuickPlay(ctx, rules, spades.WithPartner(annID))
	if err != nil || second.GetTicketId() != first.GetTicketId() ||
		second.GetState() != spadesv1.TicketState_TICKET_STATE_SEARCHING ||
		fmt.Sprint(second.GetPlayerIds()) != fmt.Sprint([]string{annID, benID}) {
		t.Fatalf("the partner asks: %v, %v", second, err)
	}
	var (
		wg     sync.WaitGroup
		annAt  *spadesv1.Placement
		annErr error
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		annAt, annErr = ann.AwaitPlacement(ctx, first.GetTicketId())
	}()
	var benAt *spadesv1.Placement
	for ticket, err := range ben.WatchTicket(ctx, "") {
		if err != nil {
			t.Fatal(err)
		}
		benAt = ticket.GetPlacement()
	}
	wg.Wait()
	if annErr != nil || benAt == nil {
		t.Fatalf("placements: %v, %v", annErr, benAt)
	}
	if annAt.GetMatchId() != benAt.GetMatchId() || (annAt.GetSeat()+2)%4 != benAt.GetSeat() ||
		annAt.GetSeatToken() == benAt.GetSeatToken() {
		t.Fatalf("ann %v, ben %v: want partners at one table", annAt, benAt)
	}
}

// Cancelling: a watch sees it and ends; cancelling again is fine;
// AwaitPlacement says ErrTicketCancelled.
func TestCancelTicket(t *testing.T) {
	srv := server(t)
	ctx := testContext(t, time.Minute)
	c := srv.dial(t)
	p, _ := srv.player(t, c, "quitter")

	ticket, err := p.QuickPlay(ctx, lobbyRules(6))
	if err != nil {
		t.Fatal(err)
	}
	states := make(chan spadesv1.TicketState, 10)
	go func() {
		defer close(states)
		for tk, err := range p.WatchTicket(ctx, ticket.GetTicketId()) {
			if err != nil {
				t.Error(err)
				return
			}
			states <- tk.GetState()
		}
	}()
	if s := <-states; s != spadesv1.TicketState_TICKET_STATE_SEARCHING {
		t.Fatalf("watched %v first", s)
	}
	cancelled, err := p.CancelTicket(ctx, "")
	if err != nil || cancelled.GetState() != spadesv1.TicketState_TICKET_STATE_CANCELLED || cancelled.GetCancelReason() != "cancelled" {
		t.Fatalf("CancelTicket: %v, %v", cancelled, err)
	}
	var rest []spadesv1.TicketState
	for s := range states {
		rest = append(rest, s)
	}
	if fmt.Sprint(rest) != fmt.Sprint([]spadesv1.TicketState{spadesv1.TicketState_TICKET_STATE_CANCELLED}) {
		t.Fatalf("then watched %v", rest)
	}
	if again, err := p.CancelTicket(ctx, ticket.GetTicketId()); err != nil || again.GetState() != spadesv1.TicketState_TICKET_STATE_CANCELLED {
		t.Fatalf("cancelling again: %v, %v", again, err)
	}
	if _, err := p.AwaitPlacement(ctx, ticket.GetTicketId()); !errors.Is(err, spades.ErrTicketCancelled) {
		t.Fatalf("AwaitPlacement of a cancelled ticket: %v", err)
	}
	// The player may ask again; a context that ends stops the wait.
	if _, err := p.QuickPlay(ctx, lobbyRules(6)); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if _, err := p.AwaitPlacement(short, ""); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("AwaitPlacement with a short context: %v", err)
	}
	if _, err := p.CancelTicket(ctx, ""); err != nil {
		t.Fatal(err)
	}
}

// playOut plays every seat given by the first legal action, each on a
// Session, until the match is over.
func playOut(t *testing.T, ctx context.Context, seats ...*spades.Seat) {
	t.Helper()
	playOutBy(t, ctx, func(legal []*spadesv1.Action) *spadesv1.Action { return legal[0] }, seats...)
}

// playOutBy plays every seat given by choose (of the legal actions), each on
// a Session, until the match is over.
func playOutBy(t *testing.T, ctx context.Context, choose func([]*spadesv1.Action) *spadesv1.Action, seats ...*spades.Seat) {
	t.Helper()
	sessions := make([]*spades.Session, len(seats))
	for i, seat := range seats {
		ses, err := seat.Open(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = ses.Close(context.Background()) }()
		sessions[i] = ses
	}
	for {
		acted := false
		for i, seat := range seats {
			view, err := seat.View(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if view.GetPhase() == spadesv1.Phase_PHASE_MATCH_OVER {
				return
			}
			if len(view.GetLegalActions()) > 0 {
				if _, err := sessions[i].Act(ctx, choose(view.GetLegalActions())); err != nil {
					t.Fatalf("seat %d: %v", view.GetSeat(), err)
				}
				acted = true
			}
		}
		if !acted { // the bots' turn: wait for their move
			wait, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
			_, _ = sessions[0].Next(wait)
			cancel()
		}
		if ctx.Err() != nil {
			t.Fatal("the match did not end")
		}
	}
}

// A short match (target 1, no mercy score: the first hand ends it) between two
// players and two bots, then a rematch both accept: the same seats, new tokens.
func TestRematch(t *testing.T) {
	srv := server(t)
	ctx := testContext(t, 2*time.Minute)
	c := srv.dial(t)
	host, hostID := srv.player(t, c, "host")
	guest, guestID := srv.player(t, c, "guest")
	quick := &spadesv1.Ruleset{Preset: "classic", TargetScore: proto.Int32(1), NoMercyScore: proto.Bool(true)}

	opened, err := host.OpenTable(ctx, &spadesv1.OpenTableRequest{Ruleset: quick, BotSeats: []int32{1, 3}})
	if err != nil {
		t.Fatal(err)
	}
	matchID := opened.GetTable().GetTableId()
	joined, err := guest.JoinTable(ctx, matchID)
	if err != nil || joined.GetTable().GetState() != tableStarted {
		t.Fatalf("JoinTable: %v, %v", joined, err)
	}
	hostSeat, guestSeat := c.Seat(opened.GetSeatToken()), c.Seat(joined.GetSeatToken())
	_, err = hostSeat.Rematch(ctx)
	wantRefusal(t, err, codes.FailedPrecondition, "MATCH_NOT_OVER")
	// Rematch takes a seat token of the match, not a player credential.
	_, err = c.RawLobby().Rematch(spades.WithCredential(ctx, srv.credential(t, hostID, "")),
		&spadesv1.RematchRequest{MatchId: matchID})
	// (UNAUTHENTICATED when the JWT is longer than a seat token may be, else
	// PERMISSION_DENIED WRONG_MATCH: read as <match_id>.<secret>, its match
	// id is the JWT's header.)
	if code := status.Code(err); code != codes.Unauthenticated && code != codes.PermissionDenied {
		t.Fatalf("Rematch with a player credential: %v", err)
	}
	playOut(t, ctx, hostSeat, guestSeat)

	first, err := hostSeat.Rematch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	table := first.GetTable()
	if table.GetState() != tableWaiting || table.GetRematchOf() != matchID || first.GetSeat() != 0 ||
		table.GetKind() != spadesv1.TableKind_TABLE_KIND_REMATCH {
		t.Fatalf("the rematch opens: %v", first)
	}
	var accepted []bool
	var players []string
	for _, s := range table.GetSeats() {
		accepted = append(accepted, s.GetAccepted())
		players = append(players, s.GetPlayerId())
	}
	if fmt.Sprint(accepted) != "[true false false false]" || fmt.Sprint(players) != fmt.Sprint([]string{hostID, "", guestID, ""}) {
		t.Fatalf("accepted %v, players %v", accepted, players)
	}
	// The host waits (long polls) while the guest accepts.
	type answer struct {
		resp *spadesv1.RematchResponse
		err  error
	}
	hostDone := make(chan answer, 1)
	go func() {
		resp, err := hostSeat.AwaitRematch(ctx)
		hostDone <- answer{resp, err}
	}()
	second, err := guestSeat.AwaitRematch(ctx)
	if err != nil || second.GetTable().GetState() != tableStarted || second.GetSeat() != 2 {
		t.Fatalf("the guest accepts: %v, %v", second, err)
	}
	newID := second.GetTable().GetMatchId()
	got := <-hostDone
	if got.err != nil || got.resp.GetTable().GetMatchId() != newID || newID == matchID {
		t.Fatalf("the host's wait: %v, %v", got.resp, got.err)
	}
	for want, token := range map[int32]string{0: got.resp.GetSeatToken(), 2: second.GetSeatToken()} {
		view, err := c.Seat(token).View(ctx)
		if err != nil || view.GetSeat() != want || view.GetSeats()[1].GetControl() != spadesv1.SeatControl_SEAT_CONTROL_BOT {
			t.Fatalf("seat %d of the rematch: %v, %v", want, view, err)
		}
	}
	// Asking again, or declining, after the start changes nothing.
	if again, err := guestSeat.DeclineRematch(ctx); err != nil || again.GetTable().GetMatchId() != newID || again.GetTable().GetState() != tableStarted {
		t.Fatalf("declining after the start: %v, %v", again, err)
	}
}

// hs256 is a JWT signed with a key the server does not trust.
func hs256(claims string) string {
	enc := base64.RawURLEncoding
	unsigned := enc.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`)) + "." + enc.EncodeToString([]byte(claims))
	mac := hmac.New(sha256.New, []byte("not-the-server-secret-not-the-server-secret"))
	mac.Write([]byte(unsigned))
	return unsigned + "." + enc.EncodeToString(mac.Sum(nil))
}

// Refused credentials are UNAUTHENTICATED with the reason, on unary calls and
// streams alike, and never retried; a credential source's error is returned.
func TestCredentialRefusals(t *testing.T) {
	srv := server(t)
	ctx := testContext(t, time.Minute)
	c := srv.dial(t)
	exp := time.Now().Add(time.Hour).Unix()
	none := `{"alg":"none","typ":"JWT"}`
	for reason, credential := range map[string]string{
		"CREDENTIAL_REQUIRED":   "",
		"MALFORMED_CREDENTIAL":  "not.a.jwt",
		"BAD_SIGNATURE":         hs256(fmt.Sprintf(`{"sub":"x","iss":"spades-conformance","aud":"spades","exp":%d}`, exp)),
		"ALGORITHM_NOT_ALLOWED": base64.RawURLEncoding.EncodeToString([]byte(none)) + "." + base64.RawURLEncoding.EncodeToString([]byte(`{"sub":"x"}`)) + ".",
	} {
		p := c.Player(credential)
		_, err := p.ListTables(ctx, &spadesv1.ListTablesRequest{})
		wantRefusal(t, err, codes.Unauthenticated, reason)
		for _, err := range p.WatchLobby(ctx, nil, 0) {
			wantRefusal(t, err, codes.Unauthenticated, reason)
		}
	}

	// A credential source is asked before each call; its error is the call's.
	good := srv.credential(t, "go-source", "")
	var asked atomic.Int32
	broken := errors.New("the identity provider is down")
	p := c.PlayerFunc(func(context.Context) (string, error) {
		if asked.Add(1) > 1 {
			return "", broken
		}
		return good, nil
	})
	if _, err := p.GetTicket(ctx, ""); err != nil {
		if e := asError(t, err); e.Reason != "TICKET_NOT_FOUND" {
			t.Fatalf("GetTicket with no ticket: %v", err)
		}
	}
	if _, err := p.ListTables(ctx, &spadesv1.ListTablesRequest{}); !errors.Is(err, broken) {
		t.Fatalf("ListTables with a failing source: %v", err)
	}

}

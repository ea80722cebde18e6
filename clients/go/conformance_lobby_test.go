package spades_test

import (
	"testing"

	"google.golang.org/protobuf/encoding/protojson"

	spades "github.com/spades-engine/spades/clients/go"
	spadesv1 "github.com/spades-engine/spades/clients/go/gen/spades/v1"
)

// The lobby scenario's steps (clients/conformance/README.md, "The lobby
// scenario"): the client's player is lobby.me, with a credential serve.py
// signs; serve.py drives lobby.friend.

// newLobbyRunner is a runner with no match yet: the placement gives its seat.
func newLobbyRunner(t *testing.T, srv *testServer, spec *lobbySpec) *runner {
	r := &runner{t: t, ctx: testContext(t, scenarioTimeout), srv: srv, c: srv.dial(t),
		counts: map[string]int{}, byKind: map[string][]int{}, eventsEnd: -1, lobby: spec}
	r.ruleset = &spadesv1.Ruleset{}
	if err := protojson.Unmarshal(spec.Ruleset, r.ruleset); err != nil {
		t.Fatalf("lobby.ruleset: %v", err)
	}
	r.player = r.c.Player(srv.credential(t, spec.Me, ""))
	return r
}

// friend is POST {control}/friend; the answer's numbers are json.Numbers,
// which canonical writes as they came.
func (r *runner) friend(request map[string]any) map[string]any {
	r.t.Helper()
	var answer map[string]any
	r.srv.control(r.t, "/friend", request, &answer)
	return answer
}

// seatStates is each seat's state, by name.
func seatStates(table *spadesv1.Table) []any {
	states := make([]any, 0, len(table.GetSeats()))
	for _, s := range table.GetSeats() {
		states = append(states, s.GetState().String())
	}
	return states
}

func (r *runner) lobbyStep(do string) {
	r.t.Helper()
	switch do {
	case "friend_quickplay":
		answer := r.friend(map[string]any{
			"do": "quickplay", "playerId": r.lobby.Friend, "partner": r.lobby.Me, "ruleset": r.lobby.Ruleset,
		})
		r.outcome(map[string]any{"step": do, "state": answer["state"]})
	case "quickplay":
		ticket, err := r.player.QuickPlay(r.ctx, r.ruleset, spades.WithPartner(r.lobby.Friend))
		if err != nil {
			r.fatalf("QuickPlay: %v", err)
		}
		r.ticket = ticket
		ids := []any{}
		for _, id := range ticket.GetPlayerIds() {
			ids = append(ids, id)
		}
		r.outcome(map[string]any{"step": do, "state": ticket.GetState().String(), "playerIds": ids})
	case "await_placement":
		if r.ticket == nil {
			r.fatalf("await_placement: no ticket (quickplay first)")
		}
		placement, err := r.player.AwaitPlacement(r.ctx, r.ticket.GetTicketId())
		if err != nil {
			r.fatalf("await placement: %v", err)
		}
		table := placement.GetTable()
		partner := -1
		for _, s := range table.GetSeats() {
			if s.GetPlayerId() == r.lobby.Friend {
				partner = int(s.GetSeat())
			}
		}
		if partner < 0 {
			r.fatalf("the friend %s is not at the table: %v", r.lobby.Friend, table)
		}
		// From here on the scenario's seat is the placement's.
		r.token = placement.GetSeatToken()
		r.seat = r.c.Seat(r.token)
		if r.seat.MatchID() != placement.GetMatchId() {
			r.fatalf("seat token %q is not of match %s", r.token, placement.GetMatchId())
		}
		r.outcome(map[string]any{
			"step": do, "state": spadesv1.TicketState_TICKET_STATE_PLACED.String(),
			"seat": int(placement.GetSeat()), "partnerSeat": partner,
			"kind": table.GetKind().String(), "seats": seatStates(table),
		})
	case "open_invite_table":
		opened, err := r.player.OpenTable(r.ctx, &spadesv1.OpenTableRequest{
			Ruleset: r.ruleset, BotSeats: []int32{1, 3}, Visibility: spadesv1.TableVisibility_TABLE_VISIBILITY_INVITE_ONLY,
		})
		if err != nil {
			r.fatalf("OpenTable: %v", err)
		}
		r.inviteTable = opened
		table := opened.GetTable()
		r.outcome(map[string]any{
			"step": do, "seat": int(opened.GetSeat()), "state": table.GetState().String(),
			"visibility": table.GetVisibility().String(), "inviteCodeLength": len([]rune(table.GetInviteCode())),
		})
	case "friend_join_by_code":
		if r.inviteTable == nil {
			r.fatalf("friend_join_by_code: no table (open_invite_table first)")
		}
		answer := r.friend(map[string]any{
			"do": "join", "playerId": r.lobby.Friend, "code": r.inviteTable.GetTable().GetInviteCode(), "seat": 2,
		})
		r.outcome(map[string]any{"step": do, "seat": answer["seat"], "state": answer["state"]})
	case "await_start":
		if r.inviteTable == nil {
			r.fatalf("await_start: no table (open_invite_table first)")
		}
		opened := r.inviteTable.GetTable()
		table := opened
		for table.GetState() != spadesv1.TableState_TABLE_STATE_STARTED {
			got, err := r.player.GetTable(r.ctx, opened.GetTableId(),
				spades.WithAfterVersion(table.GetVersion()), spades.WithWait(eventWait))
			if err != nil {
				r.fatalf("GetTable: %v", err)
			}
			if got.GetState() == spadesv1.TableState_TABLE_STATE_CLOSED {
				r.fatalf("the table closed: %v", got)
			}
			table = got
		}
		seat := r.c.Seat(r.inviteTable.GetSeatToken())
		if seat.MatchID() != table.GetMatchId() {
			r.fatalf("seat token of %s, table started as match %s", seat.MatchID(), table.GetMatchId())
		}
		view, err := seat.View(r.ctx)
		if err != nil {
			r.fatalf("GetView: %v", err)
		}
		r.outcome(map[string]any{
			"step": do, "state": table.GetState().String(), "seats": seatStates(table), "viewSeat": int(view.GetSeat()),
		})
	}
}

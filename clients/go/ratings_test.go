package spades_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	spades "github.com/spades-engine/spades/clients/go"
	spadesv1 "github.com/spades-engine/spades/clients/go/gen/spades/v1"
)

// Tests of rated play (issue 26): a rated table of four players played out,
// then their profiles and the pool's leaderboard, page by page, on a server
// of the test's own (ratedServer: --rating-min-games 1, a leaderboard of
// these four only); rated quick play and the refusals on the shared server.

// quickRules end a match after its first hand: target 1, no mercy score.
func quickRules() *spadesv1.Ruleset {
	return &spadesv1.Ruleset{Preset: "classic", TargetScore: proto.Int32(1), NoMercyScore: proto.Bool(true)}
}

// quickChoice keeps a match short: look at the cards (never blind nil), bid
// 3, else the first legal action.
func quickChoice(legal []*spadesv1.Action) *spadesv1.Action {
	for _, a := range legal {
		if a.GetLook() != nil {
			return a
		}
	}
	for _, a := range legal {
		if a.GetBid() != nil && a.GetBid().GetTricks() == 3 {
			return a
		}
	}
	return legal[0]
}

// awaitProfile polls GetProfile until the player's finished match is
// recorded (a moment after it ends), for up to 20 s.
func awaitProfile(t *testing.T, ctx context.Context, p *spades.Player, playerID string) *spadesv1.PlayerProfile {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		profile, err := p.Profile(ctx, playerID)
		if err == nil && profile.GetWithHumans().GetMatches() > 0 {
			return profile
		}
		var e *spades.Error
		if err != nil && (!errors.As(err, &e) || e.Reason != "PLAYER_NOT_FOUND") {
			t.Fatalf("GetProfile %s: %v", playerID, err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("GetProfile %s: not recorded after 20 s (%v, %v)", playerID, profile, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// ratedPlayers are four new players, with credentials the server signed.
func ratedPlayers(t *testing.T, srv *testServer, c *spades.Client) (players []*spades.Player, ids, names []string) {
	t.Helper()
	for i := range 4 {
		id := fmt.Sprintf("go-rated-%d-%d", time.Now().UnixNano()%1e6, playerCount.Add(1))
		name := fmt.Sprintf("Rated %d", i)
		players = append(players, c.Player(srv.credential(t, id, name)))
		ids, names = append(ids, id), append(names, name)
	}
	return players, ids, names
}

// playRatedTable: the first player opens a rated table (quickRules), the
// others join it at seats 1, 2 and 3, and the four play it out.
func playRatedTable(t *testing.T, ctx context.Context, c *spades.Client, players []*spades.Player) {
	t.Helper()
	opened, err := players[0].OpenTable(ctx, &spadesv1.OpenTableRequest{Ruleset: quickRules(), Rated: true})
	if err != nil {
		t.Fatal(err)
	}
	table := opened.GetTable()
	if !table.GetRated() || table.GetRatingPool() != "classic" {
		t.Fatalf("the rated table: rated %v, pool %q", table.GetRated(), table.GetRatingPool())
	}
	seats := []*spades.Seat{c.Seat(opened.GetSeatToken())}
	var last *spadesv1.JoinTableResponse
	for i := 1; i < 4; i++ {
		last, err = players[i].JoinTable(ctx, table.GetTableId(), spades.WithSeat(int32(i)))
		if err != nil || last.GetSeat() != int32(i) {
			t.Fatalf("player %d joins: %v, %v", i, last, err)
		}
		seats = append(seats, c.Seat(last.GetSeatToken()))
	}
	if started := last.GetTable(); started.GetState() != tableStarted || !started.GetRated() || started.GetRatingPool() != "classic" {
		t.Fatalf("the table after the last join: state %v, rated %v, pool %q",
			started.GetState(), started.GetRated(), started.GetRatingPool())
	}
	playOutBy(t, ctx, quickChoice, seats...)
}

func entryIDs(entries []*spadesv1.LeaderboardEntry) []string {
	var ids []string
	for _, e := range entries {
		ids = append(ids, e.GetPlayerId())
	}
	return ids
}

func entryRanks(entries []*spadesv1.LeaderboardEntry) []int32 {
	var ranks []int32
	for _, e := range entries {
		ranks = append(ranks, e.GetRank())
	}
	return ranks
}

// Four players at a rated table (opened rated, joined at seats 1, 2, 3)
// play it out; each then has a rating in "classic" of one game and one
// match with humans, and the leaderboard ranks the four, page by page
// (forward with LeaderboardPages, back with previous tokens, around a
// player).
func TestRatedTableProfilesAndLeaderboard(t *testing.T) {
	srv := ratedServer(t)
	ctx := testContext(t, 3*time.Minute)
	c := srv.dial(t)
	players, ids, names := ratedPlayers(t, srv, c)

	// Nobody has played yet: no profile, an empty leaderboard.
	_, err := players[0].Profile(ctx, "")
	wantRefusal(t, err, codes.NotFound, "PLAYER_NOT_FOUND")
	empty, err := players[0].Leaderboard(ctx, "classic")
	if err != nil || empty.GetPool() != "classic" || len(empty.GetEntries()) != 0 || empty.GetTotalPlayers() != 0 ||
		empty.GetMinGames() != 1 || empty.GetNextPageToken() != "" || empty.GetPreviousPageToken() != "" {
		t.Fatalf("the leaderboard before any match: %v, %v", empty, err)
	}

	playRatedTable(t, ctx, c, players)

	// Each profile, once recorded: a rating of one game in classic, one
	// match with humans only, none with bots.
	ratings := map[string]*spadesv1.PlayerRating{}
	wins := 0
	for i, id := range ids {
		asker := players[(i+1)%4] // anyone may read anyone's profile
		profile := awaitProfile(t, ctx, asker, id)
		if profile.GetPlayerId() != id || profile.GetName() != names[i] || profile.GetLastPlayedMs() <= 0 {
			t.Fatalf("profile of %s: %v", id, profile)
		}
		if len(profile.GetRatings()) != 1 {
			t.Fatalf("profile of %s: ratings %v, want one (classic)", id, profile.GetRatings())
		}
		r := profile.GetRatings()[0]
		if r.GetPool() != "classic" || r.GetGames() != 1 || r.GetWins()+r.GetLosses() != 1 ||
			r.GetRank() < 1 || r.GetRank() > 4 || r.GetSigma() <= 0 {
			t.Fatalf("rating of %s: %v", id, r)
		}
		humans, bots := profile.GetWithHumans(), profile.GetWithBots()
		if humans.GetMatches() != 1 || humans.GetWins() != r.GetWins() || humans.GetHands() < 1 || bots.GetMatches() != 0 {
			t.Fatalf("records of %s: with humans %v, with bots %v", id, humans, bots)
		}
		ratings[id] = r
		wins += int(r.GetWins())
	}
	if wins != 2 && wins != 4 { // one side won, or both tied first
		t.Fatalf("%d players won", wins)
	}
	// The caller's own profile ("") is the same.
	if own, err := players[2].Profile(ctx, ""); err != nil || own.GetPlayerId() != ids[2] {
		t.Fatalf("own profile: %v, %v", own, err)
	}

	// The whole board on one page ("": the default pool, classic).
	board, err := players[0].Leaderboard(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if board.GetPool() != "classic" || board.GetTotalPlayers() != 4 || board.GetMinGames() != 1 ||
		fmt.Sprint(entryRanks(board.GetEntries())) != "[1 2 3 4]" ||
		board.GetNextPageToken() != "" || board.GetPreviousPageToken() != "" {
		t.Fatalf("the leaderboard: %v", board)
	}
	order := entryIDs(board.GetEntries())
	sorted := slices.Clone(order)
	slices.Sort(sorted)
	want := slices.Clone(ids)
	slices.Sort(want)
	if !slices.Equal(sorted, want) {
		t.Fatalf("the leaderboard holds %v, want %v", order, ids)
	}
	for i, e := range board.GetEntries() {
		r := ratings[e.GetPlayerId()]
		if e.GetRating().GetRank() != e.GetRank() || r.GetRank() != e.GetRank() || e.GetName() == "" ||
			e.GetRating().GetConservative() != r.GetConservative() {
			t.Fatalf("entry %d: %v, profile's rating %v", i, e, r)
		}
		if i > 0 && e.GetRating().GetConservative() > board.GetEntries()[i-1].GetRating().GetConservative() {
			t.Fatalf("not best first: %v", board.GetEntries())
		}
	}

	// One player a page: four pages, each linked to the ones around it.
	var pages []*spadesv1.GetLeaderboardResponse
	for page, err := range players[1].LeaderboardPages(ctx, "classic", spades.WithPageSize(1)) {
		if err != nil {
			t.Fatal(err)
		}
		pages = append(pages, page)
	}
	if len(pages) != 4 {
		t.Fatalf("%d pages of one, want 4", len(pages))
	}
	var walked []string
	for i, page := range pages {
		if len(page.GetEntries()) != 1 || page.GetEntries()[0].GetRank() != int32(i+1) || page.GetTotalPlayers() != 4 {
			t.Fatalf("page %d: %v", i+1, page)
		}
		if (page.GetPreviousPageToken() == "") != (i == 0) || (page.GetNextPageToken() == "") != (i == 3) {
			t.Fatalf("page %d's tokens: previous %q, next %q", i+1, page.GetPreviousPageToken(), page.GetNextPageToken())
		}
		walked = append(walked, page.GetEntries()[0].GetPlayerId())
	}
	if !slices.Equal(walked, order) {
		t.Fatalf("walked %v, the board is %v", walked, order)
	}
	// Back: the last page's previous token is the third place.
	back, err := players[1].Leaderboard(ctx, "classic", spades.WithPageSize(1), spades.WithPageToken(pages[3].GetPreviousPageToken()))
	if err != nil || fmt.Sprint(entryIDs(back.GetEntries())) != fmt.Sprint(order[2:3]) {
		t.Fatalf("the page before the last: %v, %v", back, err)
	}

	// Two a page: the second page, then back to the first.
	top, err := players[1].Leaderboard(ctx, "classic", spades.WithPageSize(2))
	if err != nil || fmt.Sprint(entryRanks(top.GetEntries())) != "[1 2]" || top.GetNextPageToken() == "" || top.GetPreviousPageToken() != "" {
		t.Fatalf("the top two: %v, %v", top, err)
	}
	second, err := players[1].Leaderboard(ctx, "classic", spades.WithPageSize(2), spades.WithPageToken(top.GetNextPageToken()))
	if err != nil || fmt.Sprint(entryRanks(second.GetEntries())) != "[3 4]" ||
		!slices.Equal(entryIDs(second.GetEntries()), order[2:]) || second.GetNextPageToken() != "" || second.GetPreviousPageToken() == "" {
		t.Fatalf("the second page of two: %v, %v", second, err)
	}
	first, err := players[1].Leaderboard(ctx, "classic", spades.WithPageSize(2), spades.WithPageToken(second.GetPreviousPageToken()))
	if err != nil || !slices.Equal(entryIDs(first.GetEntries()), order[:2]) {
		t.Fatalf("back to the first page: %v, %v", first, err)
	}
	// A token is its pool's: another pool refuses it.
	_, err = players[1].Leaderboard(ctx, "polish", spades.WithPageToken(top.GetNextPageToken()))
	wantRefusal(t, err, codes.InvalidArgument, "BAD_PAGE_TOKEN")

	// Around a player: the page that holds them; the pages from there on.
	around, err := players[3].Leaderboard(ctx, "classic", spades.WithPageSize(2), spades.WithAroundPlayer(order[2]))
	if err != nil || !slices.Equal(entryIDs(around.GetEntries()), order[2:]) || around.GetPreviousPageToken() == "" {
		t.Fatalf("around the third: %v, %v", around, err)
	}
	var from []int32
	for page, err := range players[3].LeaderboardPages(ctx, "classic", spades.WithPageSize(1), spades.WithAroundPlayer(order[1])) {
		if err != nil {
			t.Fatal(err)
		}
		from = append(from, entryRanks(page.GetEntries())...)
	}
	if fmt.Sprint(from) != "[2 3 4]" {
		t.Fatalf("pages from around the second: ranks %v", from)
	}
	// Breaking out of the loop stops the pages.
	n := 0
	for _, err := range players[3].LeaderboardPages(ctx, "classic", spades.WithPageSize(1)) {
		if err != nil {
			t.Fatal(err)
		}
		n++
		break
	}
	if n != 1 {
		t.Fatalf("%d pages after a break", n)
	}

	// Another pool has nobody.
	if polish, err := players[0].Leaderboard(ctx, "polish"); err != nil || polish.GetTotalPlayers() != 0 || len(polish.GetEntries()) != 0 {
		t.Fatalf("the polish leaderboard: %v, %v", polish, err)
	}
}

// Rated quick play waits in a queue of its own; bots filling the table make
// it unrated. A rated table started early with bots is unrated too.
func TestRatedQuickPlayAndBots(t *testing.T) {
	srv := server(t)
	ctx := testContext(t, time.Minute)
	c := srv.dial(t)
	alone, _ := srv.player(t, c, "ratedalone")
	ticket, err := alone.QuickPlay(ctx, lobbyRules(26), spades.WithRated())
	if err != nil || !ticket.GetRated() {
		t.Fatalf("rated quick play: %v, %v", ticket, err)
	}
	placement, err := alone.AwaitPlacement(ctx, ticket.GetTicketId())
	if err != nil {
		t.Fatal(err)
	}
	if placement.GetTable().GetRated() || placement.GetTable().GetRatingPool() != "" {
		t.Fatalf("a table bots filled: rated %v, pool %q", placement.GetTable().GetRated(), placement.GetTable().GetRatingPool())
	}

	host, _ := srv.player(t, c, "ratedhost")
	opened, err := host.OpenTable(ctx, &spadesv1.OpenTableRequest{Ruleset: quickRules(), Rated: true})
	if err != nil || !opened.GetTable().GetRated() {
		t.Fatalf("a rated table: %v, %v", opened, err)
	}
	begun, err := host.StartTable(ctx, opened.GetTable().GetTableId())
	if err != nil || begun.GetState() != tableStarted || begun.GetRated() {
		t.Fatalf("started with bots: %v, %v (want unrated)", begun, err)
	}
}

// The refusals: a rated table with bot seats, unknown or malformed pools,
// bad page tokens and sizes, a token with a player, a player not rated, a
// profile of nobody.
func TestRatingRefusals(t *testing.T) {
	srv := server(t)
	ctx := testContext(t, time.Minute)
	c := srv.dial(t)
	p, id := srv.player(t, c, "refused")

	_, err := p.OpenTable(ctx, &spadesv1.OpenTableRequest{Ruleset: quickRules(), Rated: true, BotSeats: []int32{1}})
	wantRefusal(t, err, codes.InvalidArgument, "RATED_WITHOUT_BOTS")

	_, err = p.Leaderboard(ctx, "no-such-pool")
	wantRefusal(t, err, codes.NotFound, "POOL_NOT_FOUND")
	_, err = p.Leaderboard(ctx, "Not A Pool!")
	wantRefusal(t, err, codes.InvalidArgument, "BAD_POOL")
	_, err = p.Leaderboard(ctx, "classic", spades.WithPageToken("bogus"))
	wantRefusal(t, err, codes.InvalidArgument, "BAD_PAGE_TOKEN")
	_, err = p.Leaderboard(ctx, "classic", spades.WithPageSize(201))
	wantRefusal(t, err, codes.InvalidArgument, "BAD_PAGE_SIZE")
	_, err = p.Leaderboard(ctx, "classic", spades.WithPageToken("bogus"), spades.WithAroundPlayer(id))
	wantRefusal(t, err, codes.InvalidArgument, "TOKEN_AND_PLAYER")
	_, err = p.Leaderboard(ctx, "classic", spades.WithAroundPlayer(id))
	wantRefusal(t, err, codes.NotFound, "PLAYER_NOT_RATED")

	// The pages' iterator yields the refusal, once, and ends.
	var errs []error
	for page, err := range p.LeaderboardPages(ctx, "no-such-pool") {
		if page != nil {
			t.Fatalf("a page of an unknown pool: %v", page)
		}
		errs = append(errs, err)
	}
	if len(errs) != 1 {
		t.Fatalf("LeaderboardPages of an unknown pool: %v", errs)
	}
	wantRefusal(t, errs[0], codes.NotFound, "POOL_NOT_FOUND")

	_, err = p.Profile(ctx, "go-nobody-ever")
	wantRefusal(t, err, codes.NotFound, "PLAYER_NOT_FOUND")
	_, err = p.Profile(ctx, "")
	wantRefusal(t, err, codes.NotFound, "PLAYER_NOT_FOUND")
	_, err = p.Profile(ctx, strings.Repeat("x", 129))
	wantRefusal(t, err, codes.InvalidArgument, "BAD_PLAYER_ID")

	// Refused credentials are refused here as on every lobby call.
	_, err = c.Player("").Leaderboard(ctx, "")
	wantRefusal(t, err, codes.Unauthenticated, "CREDENTIAL_REQUIRED")
	_, err = c.Player("").Profile(ctx, "")
	wantRefusal(t, err, codes.Unauthenticated, "CREDENTIAL_REQUIRED")
}

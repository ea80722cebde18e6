// Command leaderboard prints a rating pool's leaderboard, page by page, then
// the player's own rating in that pool and their record against humans.
//
//	go run ./examples/leaderboard -addr localhost:50051 -credential "$SPADES_PLAYER_CREDENTIAL" -pool classic
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"time"

	spades "github.com/spades-engine/spades/clients/go"
)

func main() {
	addr := flag.String("addr", "localhost:50051", "the server's address")
	credential := flag.String("credential", os.Getenv("SPADES_PLAYER_CREDENTIAL"), "the player credential (a JWT)")
	pool := flag.String("pool", "classic", "the rating pool: a ruleset preset")
	pageSize := flag.Int("page-size", 25, "players a page (at most 200)")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := leaderboard(ctx, *addr, *credential, *pool, int32(*pageSize)); err != nil {
		log.Fatal(err)
	}
}

func leaderboard(ctx context.Context, addr, credential, pool string, pageSize int32) error {
	client, err := spades.Dial(addr, spades.WithPlaintext())
	if err != nil {
		return err
	}
	defer client.Close()
	player := client.Player(credential)

	// Every page from the top; each page's next token asks for the one after.
	first := true
	for page, err := range player.LeaderboardPages(ctx, pool, spades.WithPageSize(pageSize)) {
		if err != nil {
			return fmt.Errorf("leaderboard: %w", err)
		}
		if first {
			fmt.Printf("%s: %d players (%d rated games to be shown)\n",
				page.GetPool(), page.GetTotalPlayers(), page.GetMinGames())
			first = false
		}
		for _, e := range page.GetEntries() {
			r := e.GetRating()
			fmt.Printf("%4d. %-20s %6.2f  %d games, %d won\n",
				e.GetRank(), e.GetName(), r.GetConservative(), r.GetGames(), r.GetWins())
		}
	}

	profile, err := player.Profile(ctx, "") // "": the caller's
	var refusal *spades.Error
	if errors.As(err, &refusal) && refusal.Reason == "PLAYER_NOT_FOUND" {
		fmt.Println("you have finished no match yet")
		return nil
	}
	if err != nil {
		return fmt.Errorf("profile: %w", err)
	}
	for _, r := range profile.GetRatings() {
		if r.GetPool() != pool {
			continue
		}
		if r.GetRank() == 0 { // fewer rated games than the leaderboard asks
			fmt.Printf("you: %.2f, not ranked yet (%d games)\n", r.GetConservative(), r.GetGames())
		} else {
			fmt.Printf("you: rank %d, %.2f (mu %.2f, sigma %.2f)\n", r.GetRank(), r.GetConservative(), r.GetMu(), r.GetSigma())
		}
	}
	h := profile.GetWithHumans()
	fmt.Printf("with humans: %d matches, %d won, %.0f%% of contracts made\n",
		h.GetMatches(), h.GetWins(), 100*h.GetContractsMadeShare())
	return nil
}
